#include "data/stereo_folder.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "data/names.h"
#include "data/pfm.h"
#include "data/png_io.h"

const char *stereo_layout_name(stereo_layout l)
{
    switch (l) {
    case STEREO_LAYOUT_KITTI: return "kitti";
    case STEREO_LAYOUT_MIDDLEBURY: return "middlebury";
    default: return "auto";
    }
}

/* ---- paths and listings ---------------------------------------------------- */

enum { KIND_NONE = 0, KIND_DIR = 1, KIND_FILE = 2 };

static int kind_of(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return KIND_NONE;
    return S_ISDIR(sb.st_mode) ? KIND_DIR : S_ISREG(sb.st_mode) ? KIND_FILE : KIND_NONE;
}

/* kind_of(dir/name); -1 when out of memory. */
static int kind_in(const char *dir, const char *name)
{
    char *p = data_name_path(dir, name);
    if (!p)
        return -1;
    int k = kind_of(p);
    free(p);
    return k;
}

static int has_png_ext(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcasecmp(name + n - 4, ".png") == 0;
}

/* Sorted names of the non-hidden entries of @p dir of @p kind (files: .png only). */
static manta_status list_dir(const char *dir, int kind, name_list *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot open folder: %s", dir, strerror(errno));
    manta_status st = MANTA_OK;
    struct dirent *e;
    while ((errno = 0, e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || (kind == KIND_FILE && !has_png_ext(e->d_name)))
            continue;
        int k = kind_in(dir, e->d_name);
        if (k < 0) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory listing", dir);
            break;
        }
        if (k != kind)
            continue;
        if (!data_name_list_push(out, e->d_name)) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory listing", dir);
            break;
        }
    }
    if (st == MANTA_OK && errno != 0)
        st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot list folder: %s", dir, strerror(errno));
    closedir(d);
    if (st != MANTA_OK)
        data_name_list_free(out);
    else
        data_name_list_sort(out);
    return st;
}

/* ---- the set ------------------------------------------------------------------ */

void stereo_set_free(stereo_set *s)
{
    if (!s)
        return;
    /* noc before disp: noc[i] may be the disp[i] string (KITTI with disp_noc alone) */
    char **arrays[5] = {s->name, s->left, s->right, s->noc, s->disp};
    for (int a = 0; a < 5; a++) {
        if (!arrays[a])
            continue;
        for (int i = 0; i < s->count; i++)
            if (!(a == 3 && s->disp && s->noc[i] == s->disp[i]))
                free(arrays[a][i]);
        free(arrays[a]);
    }
    memset(s, 0, sizeof *s);
}

/* Append an entry; the strings are taken over (freed here on failure). */
static manta_status set_push(stereo_set *s, int *cap, char *name, char *left, char *right,
                             char *disp, char *noc, manta_err *err)
{
    if (!name || !left || !right) {
        free(name), free(left), free(right), free(disp);
        if (noc != disp)
            free(noc);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "stereo folder: out of memory listing");
    }
    if (s->count == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        char ***arrays[5] = {&s->name, &s->left, &s->right, &s->disp, &s->noc};
        int ok = 1;
        for (int a = 0; a < 5 && ok; a++) {
            char **v = realloc(*arrays[a], sizeof *v * (size_t)nc);
            if (v)
                *arrays[a] = v;
            else
                ok = 0;
        }
        if (!ok) {
            free(name), free(left), free(right), free(disp);
            if (noc != disp)
                free(noc);
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "stereo folder: out of memory listing");
        }
        *cap = nc;
    }
    int i = s->count++;
    s->name[i] = name;
    s->left[i] = left;
    s->right[i] = right;
    s->disp[i] = disp;
    s->noc[i] = noc;
    return MANTA_OK;
}

/* The first of @p cands that is a folder in @p root (malloc'd path), or NULL;
 * *oom set when out of memory. */
static char *find_dir(const char *root, const char *const *cands, int n, int *oom)
{
    for (int k = 0; k < n; k++) {
        char *p = data_name_path(root, cands[k]);
        if (!p) {
            *oom = 1;
            return NULL;
        }
        if (kind_of(p) == KIND_DIR)
            return p;
        free(p);
    }
    return NULL;
}

/* View folder families of KITTI: left, right. */
static const char *const kitti_left[] = {"image_2", "colored_0", "image_0"};
static const char *const kitti_right[] = {"image_3", "colored_1", "image_1"};
static const char *const kitti_occ[] = {"disp_occ_0", "disp_occ"};
static const char *const kitti_noc[] = {"disp_noc_0", "disp_noc"};

/* Index of the first KITTI view family present under root, -1 if none, -2 out of memory. */
static int kitti_family(const char *root)
{
    for (int f = 0; f < 3; f++) {
        int a = kind_in(root, kitti_left[f]), b = kind_in(root, kitti_right[f]);
        if (a < 0 || b < 0)
            return -2;
        if (a == KIND_DIR && b == KIND_DIR)
            return f;
    }
    return -1;
}

/* A file's path in @p dir when it exists there, else NULL; *oom on failure. */
static char *file_in(const char *dir, const char *name, int *oom)
{
    if (!dir)
        return NULL;
    char *p = data_name_path(dir, name);
    if (!p) {
        *oom = 1;
        return NULL;
    }
    if (kind_of(p) == KIND_FILE)
        return p;
    free(p);
    return NULL;
}

static manta_status open_kitti(const char *root, int fam, stereo_set *s, manta_err *err)
{
    int oom = 0, cap = 0;
    char *ldir = data_name_path(root, kitti_left[fam]),
         *rdir = data_name_path(root, kitti_right[fam]);
    char *occ = find_dir(root, kitti_occ, 2, &oom), *noc = find_dir(root, kitti_noc, 2, &oom);
    name_list files = {0};
    manta_status st = MANTA_OK;
    if (!ldir || !rdir || oom) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
        goto done;
    }
    st = list_dir(ldir, KIND_FILE, &files, err);
    const int has_gt_dir = occ || noc;
    for (int i = 0; i < files.n && st == MANTA_OK; i++) {
        const char *f = files.v[i];
        char *right = data_name_path(rdir, f);
        if (!right) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
            break;
        }
        if (kind_of(right) != KIND_FILE) {
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: missing: the right view of %s/%s", right,
                               ldir, f);
            free(right);
            break;
        }
        char *d_occ = file_in(occ, f, &oom), *d_noc = file_in(noc, f, &oom);
        if (oom) {
            free(right), free(d_occ), free(d_noc);
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
            break;
        }
        if (has_gt_dir && !d_occ && !d_noc) {
            s->skipped++;
            free(right);
            continue;
        }
        char *disp = d_occ ? d_occ : d_noc;
        st = set_push(s, &cap, strdup(f), data_name_path(ldir, f), right, disp, d_noc, err);
    }
    if (st == MANTA_OK && s->count == 0)
        st = manta_err_set(
            err, MANTA_ERR_FORMAT,
            "%s: no stereo pairs: %s/ holds no .png file with the same name in %s/%s", root, ldir,
            rdir, has_gt_dir ? " and a disparity map (disp_occ_0/ or disp_noc_0/)" : "");
done:
    data_name_list_free(&files);
    free(ldir), free(rdir), free(occ), free(noc);
    return st;
}

/* Add the Middlebury scene in folder @p dir (holding im0.png) named @p name. */
static manta_status push_scene(const char *dir, const char *name, stereo_set *s, int *cap,
                               manta_err *err)
{
    int oom = 0;
    char *left = file_in(dir, "im0.png", &oom), *right = file_in(dir, "im1.png", &oom);
    char *disp = file_in(dir, "disp0GT.pfm", &oom);
    if (!disp && !oom)
        disp = file_in(dir, "disp0.pfm", &oom);
    char *noc = file_in(dir, "mask0nocc.png", &oom);
    if (oom || !left || !right) {
        free(left), free(right), free(disp), free(noc);
        if (oom)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", dir);
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s/im1.png: missing: the right view of scene %s", dir, name);
    }
    return set_push(s, cap, strdup(name), left, right, disp, noc, err);
}

static const char *base_name(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    return path + b;
}

/* @p any: the layout was not asked for (the message then names both layouts). */
static manta_status open_middlebury(const char *root, int any, stereo_set *s, manta_err *err)
{
    int cap = 0;
    int k = kind_in(root, "im0.png");
    if (k < 0)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
    if (k == KIND_FILE) { /* root is one scene */
        char name[256];
        snprintf(name, sizeof name, "%s", base_name(root));
        size_t n = strlen(name);
        while (n > 1 && name[n - 1] == '/')
            name[--n] = '\0';
        return push_scene(root, name, s, &cap, err);
    }
    name_list dirs;
    MANTA_TRY(list_dir(root, KIND_DIR, &dirs, err));
    manta_status st = MANTA_OK;
    for (int i = 0; i < dirs.n && st == MANTA_OK; i++) {
        char *dir = data_name_path(root, dirs.v[i]);
        if (!dir) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
            break;
        }
        int kk = kind_in(dir, "im0.png");
        if (kk < 0)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
        else if (kk == KIND_FILE)
            st = push_scene(dir, dirs.v[i], s, &cap, err);
        else
            s->skipped++;
        free(dir);
    }
    data_name_list_free(&dirs);
    if (st == MANTA_OK && s->count == 0)
        st = any ? manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: no stereo pairs: expected image_2/ and image_3/ (KITTI) or "
                                 "im0.png and im1.png in the folder or its scene subfolders "
                                 "(Middlebury)",
                                 root)
                 : manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: no stereo pairs: no im0.png in it or in any of its %d "
                                 "subfolders",
                                 root, s->skipped);
    return st;
}

manta_status stereo_folder_open(const char *root, stereo_layout layout, stereo_set *out,
                                manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (layout != STEREO_LAYOUT_AUTO && layout != STEREO_LAYOUT_KITTI &&
        layout != STEREO_LAYOUT_MIDDLEBURY)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: unknown stereo layout %d", root,
                             (int)layout);
    struct stat sb;
    if (stat(root, &sb) != 0)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot open: %s", root, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return manta_err_set(err, MANTA_ERR_IO, "%s: not a folder", root);
    int fam = kitti_family(root);
    if (fam == -2)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
    manta_status st;
    if (layout == STEREO_LAYOUT_KITTI || (layout == STEREO_LAYOUT_AUTO && fam >= 0)) {
        if (fam < 0)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: no KITTI views: expected the folders image_2/ and image_3/ "
                                 "(or colored_0/ and colored_1/, image_0/ and image_1/)",
                                 root);
        out->layout = STEREO_LAYOUT_KITTI;
        st = open_kitti(root, fam, out, err);
    } else {
        out->layout = STEREO_LAYOUT_MIDDLEBURY;
        st = open_middlebury(root, layout == STEREO_LAYOUT_AUTO, out, err);
    }
    if (st != MANTA_OK)
        stereo_set_free(out);
    return st;
}

/* ---- loading ------------------------------------------------------------------ */

static manta_status check_size(const char *path, const char *what, int h, int w, int vh, int vw,
                               const char *left, manta_err *err)
{
    if (h == vh && w == vw)
        return MANTA_OK;
    return manta_err_set(err, MANTA_ERR_FORMAT, "%s: %s is %dx%d, but the left view %s is %dx%d",
                         path, what, w, h, left, vw, vh);
}

manta_status stereo_folder_load(const stereo_set *s, int i, stereo_pair *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (!s || i < 0 || i >= s->count)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo folder: pair %d is outside [0, %d)", i, s ? s->count : 0);
    const char *lp = s->left[i], *dp = s->disp[i], *np = s->noc[i];
    const int kitti = s->layout == STEREO_LAYOUT_KITTI;
    uint8_t *l = NULL, *r = NULL, *m8 = NULL;
    uint16_t *d16 = NULL, *n16 = NULL;
    float *dpf = NULL;
    int h = 0, w = 0, rh = 0, rw = 0, th = 0, tw = 0, tc = 1;
    manta_status st = mpng_read_u8(lp, 3, &l, &h, &w, err);
    if (st == MANTA_OK)
        st = mpng_read_u8(s->right[i], 3, &r, &rh, &rw, err);
    if (st == MANTA_OK)
        st = check_size(s->right[i], "the right view", rh, rw, h, w, lp, err);
    if (st == MANTA_OK && dp) {
        if (kitti) {
            st = mpng_read_gray16(dp, &d16, &th, &tw, err);
        } else {
            st = pfm_read(dp, &dpf, &th, &tw, &tc, err);
            if (st == MANTA_OK && tc != 1)
                st = manta_err_set(err, MANTA_ERR_FORMAT,
                                   "%s: a %d-channel PFM, a disparity map has 1 channel", dp, tc);
        }
        if (st == MANTA_OK)
            st = check_size(dp, "the disparity map", th, tw, h, w, lp, err);
    }
    if (st == MANTA_OK && dp && np && np != dp) { /* without ground truth it is not needed */
        if (kitti)
            st = mpng_read_gray16(np, &n16, &th, &tw, err);
        else
            st = mpng_read_u8(np, 1, &m8, &th, &tw, err);
        if (st == MANTA_OK)
            st = check_size(np, kitti ? "the non-occluded disparity map" : "the occlusion mask", th,
                            tw, h, w, lp, err);
    }
    if (st == MANTA_OK)
        st = stereo_pair_alloc(out, h, w, err);
    if (st == MANTA_OK) {
        const size_t n = (size_t)h * w;
        for (size_t p = 0; p < n; p++)
            for (int c = 0; c < STEREO_CHANNELS; c++) {
                out->left[c * n + p] = l[p * 3 + c] / 255.0f;
                out->right[c * n + p] = r[p * 3 + c] / 255.0f;
            }
        if (dp) {
            out->has_noc = np != NULL;
            for (size_t p = 0; p < n; p++) {
                float d = kitti ? d16[p] * (1.0f / 256.0f) : dpf[p];
                int valid = kitti ? d16[p] > 0 : (isfinite(d) && d >= 0.0f);
                uint8_t m = 0;
                if (valid) {
                    out->disp[p] = d;
                    m = STEREO_VALID;
                    if (np && (np == dp || (kitti ? n16[p] > 0 : m8[p] == 255)))
                        m |= STEREO_NOC;
                }
                out->mask[p] = m;
            }
        }
    }
    free(l), free(r), free(m8), free(d16), free(n16), free(dpf);
    if (st != MANTA_OK)
        stereo_pair_free(out);
    return st;
}

/* ---- writing ------------------------------------------------------------------ */

static uint8_t to_u8(float v)
{
    v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    return (uint8_t)lrintf(v * 255.0f);
}

manta_status stereo_folder_write_kitti(const char *root, int index, const stereo_pair *p,
                                       manta_err *err)
{
    if (index < 0 || index > 999999)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: KITTI pair index %d is outside [0, 999999]", root, index);
    if (!p || !p->left || !p->right || !p->disp || !p->mask || p->height < 1 || p->width < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: empty stereo pair", root);
    const int H = p->height, W = p->width;
    const size_t n = (size_t)H * W;
    char file[32];
    snprintf(file, sizeof file, "%06d_10.png", index);
    /* encode everything first */
    uint8_t *l = malloc(n * 3), *r = malloc(n * 3);
    uint16_t *occ = calloc(n, sizeof *occ), *noc = calloc(n, sizeof *noc);
    char *paths[4] = {NULL, NULL, NULL, NULL};
    const char *dirs[4] = {"image_2", "image_3", "disp_occ_0", "disp_noc_0"};
    manta_status st = MANTA_OK;
    if (!l || !r || !occ || !noc) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for a %dx%d pair", root, W,
                           H);
        goto done;
    }
    for (size_t q = 0; q < n; q++)
        for (int c = 0; c < 3; c++) {
            l[q * 3 + c] = to_u8(p->left[c * n + q]);
            r[q * 3 + c] = to_u8(p->right[c * n + q]);
        }
    int any_gt = 0;
    for (size_t q = 0; q < n; q++) {
        if (!(p->mask[q] & STEREO_VALID))
            continue;
        float d = p->disp[q];
        if (!(d >= 0.0f && d * 256.0f <= 65535.0f)) {
            st =
                manta_err_set(err, MANTA_ERR_INVALID_ARG,
                              "%s/disp_occ_0/%s: disparity %g at (x %zu, y %zu) does not fit "
                              "KITTI's 16-bit encoding ([0, %g])",
                              root, file, (double)d, q % (size_t)W, q / (size_t)W, 65535.0 / 256.0);
            goto done;
        }
        long v = lrintf(d * 256.0f);
        occ[q] = (uint16_t)(v < 1 ? 1 : v);
        if (p->has_noc && (p->mask[q] & STEREO_NOC))
            noc[q] = occ[q];
        any_gt = 1;
    }
    const int nfiles = any_gt ? (p->has_noc ? 4 : 3) : 2;
    for (int k = 0; k < nfiles && st == MANTA_OK; k++) {
        char *dir = data_name_path(root, dirs[k]);
        if (dir)
            paths[k] = data_name_path(dir, file);
        if (!dir || !paths[k])
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
        else
            st = manta_file_mkdir_p(dir, err);
        free(dir);
    }
    if (st == MANTA_OK)
        st = mpng_write_rgb8(paths[0], l, H, W, err);
    if (st == MANTA_OK)
        st = mpng_write_rgb8(paths[1], r, H, W, err);
    if (st == MANTA_OK && nfiles > 2)
        st = mpng_write_gray16(paths[2], occ, H, W, err);
    if (st == MANTA_OK && nfiles > 3)
        st = mpng_write_gray16(paths[3], noc, H, W, err);
done:
    free(l), free(r), free(occ), free(noc);
    for (int k = 0; k < 4; k++)
        free(paths[k]);
    return st;
}
