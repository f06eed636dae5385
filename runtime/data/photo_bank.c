#include "data/photo_bank.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <turbojpeg.h>

#include "core/fileio.h"
#include "data/names.h"
#include "data/png_io.h"
#include "data/resample.h"

/* Largest decoded image accepted, in pixels (a guard against absurd headers). */
#define PB_MAX_PIXELS (1L << 28)
/* Largest file read. */
#define PB_MAX_FILE ((size_t)1 << 30)

void photo_bank_opts_default(photo_bank_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_short_side = PHOTO_BANK_MAX_SHORT;
}

void photo_bank_opts_for_pairs(photo_bank_opts *o, int width, int height)
{
    photo_bank_opts_default(o);
    o->min_width = width;
    o->min_height = height;
    int s = 3 * height;
    o->max_short_side = s < 96 ? 96 : s > PHOTO_BANK_MAX_SHORT ? PHOTO_BANK_MAX_SHORT : s;
}

const char *photo_bank_dir(const char *arg)
{
    return arg && strcmp(arg, "default") == 0 ? PHOTO_BANK_DEFAULT_DIR : arg;
}

static int ends_with(const char *name, const char *ext)
{
    size_t n = strlen(name), k = strlen(ext);
    return n > k && strcasecmp(name + n - k, ext) == 0;
}

static int is_png(const char *name) { return ends_with(name, ".png"); }

static int is_image_name(const char *name)
{
    return ends_with(name, ".jpg") || ends_with(name, ".jpeg") || is_png(name);
}

/* The image files of @p dir (regular files, following links), sorted. */
static manta_status list_images(const char *dir, name_list *out, manta_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot open folder: %s", dir, strerror(errno));
    manta_status st = MANTA_OK;
    struct dirent *e;
    while (st == MANTA_OK && (errno = 0, e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !is_image_name(e->d_name))
            continue;
        char *p = data_name_path(dir, e->d_name);
        if (!p) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory listing", dir);
            break;
        }
        struct stat sb;
        int regular = stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
        free(p);
        if (regular && !data_name_list_push(out, e->d_name))
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory listing", dir);
    }
    if (st == MANTA_OK && errno != 0)
        st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot list folder: %s", dir, strerror(errno));
    closedir(d);
    if (st == MANTA_OK)
        data_name_list_sort(out);
    return st;
}

/* Size kept for a photograph of w x h: shorter side at most max_short, never below the
 * smallest size needed, never enlarged. */
static void kept_size(int w, int h, const photo_bank_opts *o, int *kw, int *kh)
{
    double s = (double)o->max_short_side / (w < h ? w : h);
    if (s < (double)o->min_width / w)
        s = (double)o->min_width / w;
    if (s < (double)o->min_height / h)
        s = (double)o->min_height / h;
    if (s >= 1.0) {
        *kw = w, *kh = h;
        return;
    }
    *kw = (int)(w * s + 0.5), *kh = (int)(h * s + 0.5);
    if (*kw < o->min_width)
        *kw = o->min_width;
    if (*kh < o->min_height)
        *kh = o->min_height;
    if (*kw < 1)
        *kw = 1;
    if (*kh < 1)
        *kh = 1;
}

/* Decode a JPEG held in memory to RGB, with the largest DCT scaling that keeps at least
 * @p want_w x @p want_h. Failures leave a reason in @p why (MANTA_ERR_FORMAT). */
static manta_status decode_jpeg(const unsigned char *buf, size_t size, int want_w, int want_h,
                                uint8_t **px, int *w, int *h, int *full_w, int *full_h,
                                manta_err *why)
{
    tjhandle tj = tjInitDecompress();
    if (!tj)
        return manta_err_set(why, MANTA_ERR_NO_MEMORY, "cannot create a JPEG decoder");
    int fw = 0, fh = 0, sub = 0, cs = 0;
    manta_status st = MANTA_OK;
    if (tjDecompressHeader3(tj, buf, (unsigned long)size, &fw, &fh, &sub, &cs) != 0) {
        st = manta_err_set(why, MANTA_ERR_FORMAT, "not a readable JPEG: %s", tjGetErrorStr2(tj));
    } else if (fw <= 0 || fh <= 0 || (long)fw * fh > PB_MAX_PIXELS) {
        st = manta_err_set(why, MANTA_ERR_FORMAT, "image size %dx%d out of range", fw, fh);
    } else {
        tjscalingfactor best = {1, 1};
        int n = 0;
        tjscalingfactor *sf = tjGetScalingFactors(&n);
        for (int i = 0; sf && i < n; i++) {
            if (sf[i].num > sf[i].denom)
                continue;
            int sw = TJSCALED(fw, sf[i]), sh = TJSCALED(fh, sf[i]);
            if (sw >= want_w && sh >= want_h && sw < TJSCALED(fw, best))
                best = sf[i];
        }
        int sw = TJSCALED(fw, best), sh = TJSCALED(fh, best);
        *px = malloc((size_t)sw * sh * 3);
        if (!*px)
            st = manta_err_set(why, MANTA_ERR_NO_MEMORY, "out of memory for %dx%d pixels", sw, sh);
        else if (tjDecompress2(tj, buf, (unsigned long)size, *px, sw, 0, sh, TJPF_RGB,
                               TJFLAG_ACCURATEDCT) != 0 &&
                 tjGetErrorCode(tj) != TJERR_WARNING)
            st = manta_err_set(why, MANTA_ERR_FORMAT, "cannot decode: %s", tjGetErrorStr2(tj));
        *w = sw, *h = sh, *full_w = fw, *full_h = fh;
    }
    if (st != MANTA_OK) {
        free(*px);
        *px = NULL;
    }
    tjDestroy(tj);
    return st;
}

/* Decode one file to RGB at its kept size. MANTA_ERR_FORMAT / MANTA_ERR_IO: the file is
 * skipped (the reason in @p why); MANTA_ERR_NO_MEMORY stops the load. @p full_w, full_h:
 * the photograph's size in the file. */
static manta_status load_one(const char *path, const photo_bank_opts *o, photo *ph, int *full_w,
                             int *full_h, manta_err *why)
{
    uint8_t *px = NULL;
    int w = 0, h = 0;
    manta_status st;
    if (is_png(path)) {
        st = mpng_read_u8(path, 3, &px, &h, &w, why);
        *full_w = w, *full_h = h;
        if (st == MANTA_OK) /* keep only the cause: the report names the file */
            why->msg[0] = '\0';
    } else {
        char *data = NULL;
        size_t len = 0;
        st = manta_file_read(path, PB_MAX_FILE, &data, &len, why);
        if (st == MANTA_OK && len == 0)
            st = manta_err_set(why, MANTA_ERR_FORMAT, "empty file");
        if (st == MANTA_OK) {
            /* decode at least at the size kept from the file's own size */
            int fw = 0, fh = 0, kw = 0, kh = 0;
            tjhandle tj = tjInitDecompress();
            int sub = 0, cs = 0;
            if (tj &&
                tjDecompressHeader3(tj, (unsigned char *)data, (unsigned long)len, &fw, &fh, &sub,
                                    &cs) == 0 &&
                fw > 0 && fh > 0)
                kept_size(fw, fh, o, &kw, &kh);
            if (tj)
                tjDestroy(tj);
            st = decode_jpeg((unsigned char *)data, len, kw, kh, &px, &w, &h, full_w, full_h, why);
        }
        free(data);
    }
    if (st != MANTA_OK)
        return st;
    if (*full_w < o->min_width || *full_h < o->min_height) {
        free(px);
        return MANTA_ERR_UNSUPPORTED; /* too small: counted, not a failure */
    }
    int kw, kh;
    kept_size(*full_w, *full_h, o, &kw, &kh);
    if (kw > w) /* a DCT-scaled decode a pixel short of the kept size after rounding */
        kw = w;
    if (kh > h)
        kh = h;
    if (kw != w || kh != h) {
        uint8_t *dst = malloc((size_t)kw * kh * 3);
        st = dst ? data_rs_resize_u8(px, h, w, 3, dst, kh, kw, why)
                 : manta_err_set(why, MANTA_ERR_NO_MEMORY, "out of memory resizing");
        free(px);
        if (st != MANTA_OK) {
            free(dst);
            return st;
        }
        px = dst, w = kw, h = kh;
    }
    *ph = (photo){.width = w, .height = h, .rgb = px};
    return MANTA_OK;
}

static manta_status check_opts(const photo_bank_opts *o, manta_err *err)
{
    if (o->min_width < 0 || o->min_height < 0 || o->min_width > 65535 || o->min_height > 65535)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "photo bank: smallest size %dx%d out of range [0, 65535]",
                             o->min_width, o->min_height);
    if (o->max_short_side < 8 || o->max_short_side > 65535)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "photo bank: max_short_side is %d (must be in [8, 65535])",
                             o->max_short_side);
    return MANTA_OK;
}

manta_status photo_bank_load(const char *dir, const photo_bank_opts *opts, photo_bank *out,
                             photo_bank_report *report, manta_err *err)
{
    photo_bank_opts defaults;
    photo_bank_report rep_local;
    photo_bank_report *rep = report ? report : &rep_local;
    memset(rep, 0, sizeof *rep);
    memset(out, 0, sizeof *out);
    if (!opts) {
        photo_bank_opts_default(&defaults);
        opts = &defaults;
    }
    MANTA_TRY(check_opts(opts, err));
    name_list names = {0};
    MANTA_TRY(list_images(dir, &names, err));
    rep->files = names.n;
    manta_status st = MANTA_OK;
    if (names.n > 0) {
        out->photos = calloc((size_t)names.n, sizeof *out->photos);
        out->names = calloc((size_t)names.n, sizeof *out->names);
        if (!out->photos || !out->names)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", dir);
    }
    long largest = 0;
    for (int i = 0; i < names.n && st == MANTA_OK; i++) {
        char *path = data_name_path(dir, names.v[i]);
        if (!path) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", dir);
            break;
        }
        manta_err why = {0};
        int fw = 0, fh = 0;
        photo ph;
        manta_status one = load_one(path, opts, &ph, &fw, &fh, &why);
        if (fw > 0 && fh > 0 && (long)fw * fh > largest) {
            largest = (long)fw * fh;
            rep->largest_w = fw, rep->largest_h = fh;
        }
        if (one == MANTA_OK) {
            out->photos[out->count] = ph;
            out->names[out->count] = strdup(names.v[i]);
            if (!out->names[out->count]) {
                free(ph.rgb);
                st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", dir);
            } else {
                out->count++;
            }
        } else if (one == MANTA_ERR_NO_MEMORY) {
            st = manta_err_set(err, one, "%s: %s", path, why.msg);
        } else if (one == MANTA_ERR_UNSUPPORTED) {
            rep->too_small++;
        } else {
            /* the cause after a "<path>: " its reader may have put first */
            const char *cause = why.msg;
            size_t n = strlen(path);
            if (!strncmp(cause, path, n) && !strncmp(cause + n, ": ", 2))
                cause += n + 2;
            if (rep->failed++ == 0)
                snprintf(rep->first_failure, sizeof rep->first_failure, "%s: %s", names.v[i],
                         cause);
        }
        free(path);
    }
    rep->loaded = out->count;
    if (st == MANTA_OK && out->count == 0) {
        if (rep->too_small > 0)
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: no photograph of at least %dx%d px (the largest is %dx%d)", dir,
                               opts->min_width, opts->min_height, rep->largest_w, rep->largest_h);
        else if (rep->failed > 0)
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: no readable JPEG or PNG image (%d failed; first: %s)", dir,
                               rep->failed, rep->first_failure);
        else
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: no readable JPEG or PNG image (no .jpg, .jpeg or .png file)",
                               dir);
    }
    data_name_list_free(&names);
    if (st != MANTA_OK)
        photo_bank_free(out);
    return st;
}

void photo_bank_free(photo_bank *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->count; i++) {
        free(b->photos[i].rgb);
        free(b->names[i]);
    }
    free(b->photos);
    free(b->names);
    memset(b, 0, sizeof *b);
}
