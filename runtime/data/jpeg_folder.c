#include "data/jpeg_folder.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <turbojpeg.h>

#include "core/fileio.h"
#include "data/names.h"
#include "data/resample.h"

/* Largest decoded image accepted, in pixels (a guard against absurd headers). */
#define JF_MAX_PIXELS (1L << 28)
/* Largest JPEG file read. */
#define JF_MAX_FILE ((size_t)1 << 30)

void jpeg_folder_opts_default(jpeg_folder_opts *o)
{
    memset(o, 0, sizeof *o);
    o->channels = 3;
    o->stored_size = JPEG_FOLDER_STORED_SIZE;
    o->max_fail_fraction = JPEG_FOLDER_MAX_FAIL;
    o->threads = 1;
}

/* ---- names and folder listings ---------------------------------------- */

static int is_jpeg_name(const char *name)
{
    size_t n = strlen(name);
    return (n > 4 && strcasecmp(name + n - 4, ".jpg") == 0) ||
           (n > 5 && strcasecmp(name + n - 5, ".jpeg") == 0);
}

enum { ENT_DIR = 1, ENT_FILE = 2 };

/*
 * List the non-hidden entries of @p dir whose kind (stat, following links)
 * is in @p kinds; others are counted in @p other (may be NULL).
 */
static manta_status list_dir(const char *dir, int kinds, name_list *out, int *other, manta_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot open folder: %s", dir, strerror(errno));
    manta_status st = MANTA_OK;
    struct dirent *e;
    while (st == MANTA_OK && (errno = 0, e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *p = data_name_path(dir, e->d_name);
        if (!p) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory listing", dir);
            break;
        }
        struct stat sb;
        int kind = 0;
        if (stat(p, &sb) == 0)
            kind = S_ISDIR(sb.st_mode) ? ENT_DIR : S_ISREG(sb.st_mode) ? ENT_FILE : 0;
        free(p);
        if (kind & kinds) {
            if (!data_name_list_push(out, e->d_name))
                st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory listing", dir);
        } else if (other) {
            (*other)++;
        }
    }
    if (st == MANTA_OK && errno != 0)
        st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot list folder: %s", dir, strerror(errno));
    closedir(d);
    if (st == MANTA_OK)
        data_name_list_sort(out);
    return st;
}

/* ---- decoding ----------------------------------------------------------- */

enum { RES_OK = 0, RES_WARNED, RES_FAILED };

/* One file to decode and what came of it. */
typedef struct job {
    char *path;
    int label;
    int state;       /* RES_* */
    char *reason;    /* failed: why (malloc'd) */
    uint8_t *pixels; /* (h, w, c) when loaded */
    int h, w;
} job;

typedef struct worker {
    job *jobs;
    int n_jobs, first, stride;
    const jpeg_folder_opts *o;
    manta_status st; /* out of memory only; decode failures stay in the jobs */
    manta_err err;
} worker;

static char *fmt_reason(const char *what, const char *detail)
{
    size_t n = strlen(what) + (detail ? strlen(detail) + 2 : 0) + 1;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    return r;
}

/* Read a job's file: NULL and the job failed with the cause when it cannot be
 * read or is empty; NULL with the job untouched when out of memory. */
static unsigned char *read_job_file(job *jb, unsigned long *size)
{
    char *data;
    size_t len = 0;
    manta_err why;
    manta_status st = manta_file_read(jb->path, JF_MAX_FILE, &data, &len, &why);
    if (st == MANTA_ERR_NO_MEMORY)
        return NULL;
    if (st == MANTA_OK && len > 0) {
        *size = (unsigned long)len;
        return (unsigned char *)data;
    }
    free(data);
    /* The report names the file: keep the cause after the message's "<path>: ". */
    const char *cause = why.msg;
    size_t n = strlen(jb->path);
    if (st != MANTA_OK && !strncmp(cause, jb->path, n) && !strncmp(cause + n, ": ", 2))
        cause += n + 2;
    jb->reason = fmt_reason(st == MANTA_OK ? "empty file" : cause, NULL);
    if (jb->reason)
        jb->state = RES_FAILED;
    return NULL;
}

/* Largest DCT scaling (<= 1) whose shorter side still reaches @p want. */
static tjscalingfactor pick_scale(int w, int h, int want)
{
    tjscalingfactor best = {1, 1};
    int n = 0;
    tjscalingfactor *sf = tjGetScalingFactors(&n);
    if (!sf || want <= 0)
        return best;
    int best_short = w < h ? w : h;
    for (int i = 0; i < n; i++) {
        if (sf[i].num > sf[i].denom)
            continue;
        int sw = TJSCALED(w, sf[i]), sh = TJSCALED(h, sf[i]);
        int s = sw < sh ? sw : sh;
        if (s >= want && s < best_short) {
            best = sf[i];
            best_short = s;
        }
    }
    return best;
}

/* Decode one job. Returns MANTA_ERR_NO_MEMORY only; decode errors go in the job. */
static manta_status decode_one(tjhandle tj, job *jb, const jpeg_folder_opts *o, manta_err *err)
{
    unsigned long size = 0;
    unsigned char *buf = read_job_file(jb, &size);
    if (!buf) {
        if (!jb->reason)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory reading", jb->path);
        return MANTA_OK;
    }
    const int c = o->channels, pf = c == 1 ? TJPF_GRAY : TJPF_RGB;
    int w = 0, h = 0, subsamp = 0, cs = 0;
    uint8_t *px = NULL;
    manta_status st = MANTA_OK;
    if (tjDecompressHeader3(tj, buf, size, &w, &h, &subsamp, &cs) != 0) {
        jb->state = RES_FAILED;
        jb->reason = fmt_reason("not a readable JPEG", tjGetErrorStr2(tj));
    } else if (w <= 0 || h <= 0 || (long)w * h > JF_MAX_PIXELS) {
        jb->state = RES_FAILED;
        jb->reason = fmt_reason("image size out of range", NULL);
    } else {
        tjscalingfactor sf = pick_scale(w, h, o->stored_size);
        int sw = TJSCALED(w, sf), sh = TJSCALED(h, sf);
        px = malloc((size_t)sw * sh * c);
        if (!px) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for %dx%d pixels",
                               jb->path, sw, sh);
        } else if (tjDecompress2(tj, buf, size, px, sw, 0, sh, pf, TJFLAG_ACCURATEDCT) != 0) {
            if (tjGetErrorCode(tj) == TJERR_WARNING && !o->fail_on_warning) {
                jb->state = RES_WARNED;
            } else {
                jb->state = RES_FAILED;
                jb->reason = fmt_reason("cannot decode", tjGetErrorStr2(tj));
            }
        }
        if (st == MANTA_OK && jb->state != RES_FAILED) {
            jb->pixels = px;
            jb->h = sh;
            jb->w = sw;
            px = NULL;
        }
    }
    free(px);
    free(buf);
    if (st != MANTA_OK || jb->state == RES_FAILED) {
        if (st == MANTA_OK && !jb->reason)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", jb->path);
        return st;
    }
    /* Resize so the shorter side is the stored size; the longer side follows
     * the aspect ratio of the file (not of the DCT-scaled decode, which rounds). */
    if (o->stored_size > 0) {
        const int S = o->stored_size;
        int th, tw;
        if (h <= w) {
            th = S;
            tw = (int)((double)w * S / h + 0.5);
        } else {
            tw = S;
            th = (int)((double)h * S / w + 0.5);
        }
        if (th < 1)
            th = 1;
        if (tw < 1)
            tw = 1;
        if (th == jb->h && tw == jb->w)
            return MANTA_OK;
        uint8_t *dst = malloc((size_t)th * tw * c);
        if (!dst)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory resizing", jb->path);
        st = data_rs_resize_u8(jb->pixels, jb->h, jb->w, c, dst, th, tw, err);
        if (st != MANTA_OK) {
            free(dst);
            return st;
        }
        free(jb->pixels);
        jb->pixels = dst;
        jb->h = th;
        jb->w = tw;
    }
    return MANTA_OK;
}

static void *worker_run(void *arg)
{
    worker *wk = arg;
    tjhandle tj = tjInitDecompress();
    if (!tj) {
        wk->st = manta_err_set(&wk->err, MANTA_ERR_NO_MEMORY, "TurboJPEG: cannot create a decoder");
        return NULL;
    }
    for (int i = wk->first; i < wk->n_jobs && wk->st == MANTA_OK; i += wk->stride)
        wk->st = decode_one(tj, &wk->jobs[i], wk->o, &wk->err);
    tjDestroy(tj);
    return NULL;
}

static manta_status decode_all(job *jobs, int n, const jpeg_folder_opts *o, manta_err *err)
{
    int nt = o->threads > 1 ? o->threads : 1;
    if (nt > n)
        nt = n;
    worker *wk = calloc((size_t)nt, sizeof *wk);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    char *started = calloc((size_t)nt, 1);
    if (!wk || !th || !started) {
        free(wk), free(th), free(started);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "jpeg folder: out of memory for threads");
    }
    for (int t = 0; t < nt; t++) {
        wk[t] = (worker){.jobs = jobs, .n_jobs = n, .first = t, .stride = nt, .o = o};
        if (t > 0 && pthread_create(&th[t], NULL, worker_run, &wk[t]) == 0)
            started[t] = 1;
    }
    for (int t = 0; t < nt; t++) /* worker 0, and any that could not be started, run here */
        if (!started[t])
            worker_run(&wk[t]);
    manta_status st = MANTA_OK;
    for (int t = 0; t < nt; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        if (st == MANTA_OK && wk[t].st != MANTA_OK)
            st = manta_err_set(err, wk[t].st, "%s", wk[t].err.msg);
    }
    free(wk), free(th), free(started);
    return st;
}

/* ---- the load ----------------------------------------------------------- */

static manta_status check_opts(const jpeg_folder_opts *o, manta_err *err)
{
    if (o->channels != 1 && o->channels != 3)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "jpeg folder: channels is %d (must be 1 or 3)", o->channels);
    if (o->stored_size < 0 || o->stored_size > 65535)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "jpeg folder: stored size is %d (must be in [0, 65535])",
                             o->stored_size);
    if (!(o->max_fail_fraction >= 0.0 && o->max_fail_fraction <= 1.0))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "jpeg folder: max_fail_fraction is %g (must be in [0, 1])",
                             o->max_fail_fraction);
    return MANTA_OK;
}

static manta_status check_match(const char *root, const name_list *cls, const dataset *m,
                                manta_err *err)
{
    for (int k = 0; k < cls->n || k < m->classes; k++) {
        const char *have = k < cls->n ? cls->v[k] : NULL;
        const char *want = k < m->classes ? m->class_names[k] : NULL;
        if (!have || !want || strcmp(have, want) != 0)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: classes differ from the reference set at label %d: "
                                 "folder has '%s', expected '%s' (%d vs %d classes)",
                                 root, k, have ? have : "(none)", want ? want : "(none)", cls->n,
                                 m->classes);
    }
    return MANTA_OK;
}

/* List the class folders and their JPEG files into jobs (sorted). */
static manta_status collect(const char *root, name_list *cls, job **jobs_out, int *n_out,
                            jpeg_folder_report *rep, manta_err *err)
{
    struct stat sb;
    if (stat(root, &sb) != 0)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot open: %s", root, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return manta_err_set(err, MANTA_ERR_IO, "%s: not a folder", root);
    manta_status st = list_dir(root, ENT_DIR, cls, NULL, err);
    if (st != MANTA_OK)
        return st;
    if (cls->n == 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: no class subfolders (expected %s/<class>/<image>.jpg)", root,
                             root);
    job *jobs = NULL;
    int n = 0, cap = 0;
    for (int k = 0; k < cls->n && st == MANTA_OK; k++) {
        char *dir = data_name_path(root, cls->v[k]);
        name_list files = {0};
        if (!dir) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", root);
            break;
        }
        st = list_dir(dir, ENT_FILE, &files, &rep->ignored, err);
        int found = 0;
        for (int i = 0; i < files.n && st == MANTA_OK; i++) {
            if (!is_jpeg_name(files.v[i])) {
                rep->ignored++;
                continue;
            }
            if (n == cap) {
                int nc = cap ? cap * 2 : 256;
                job *nj = realloc(jobs, (size_t)nc * sizeof *nj);
                if (!nj) {
                    st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory listing", dir);
                    break;
                }
                jobs = nj;
                cap = nc;
            }
            memset(&jobs[n], 0, sizeof jobs[n]);
            jobs[n].label = k;
            jobs[n].path = data_name_path(dir, files.v[i]);
            if (!jobs[n].path) {
                st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory listing", dir);
                break;
            }
            n++;
            found++;
        }
        if (st == MANTA_OK && found == 0)
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: class folder holds no .jpg or .jpeg files", dir);
        data_name_list_free(&files);
        free(dir);
    }
    *jobs_out = jobs;
    *n_out = n;
    return st;
}

static void free_jobs(job *jobs, int n)
{
    for (int i = 0; i < n; i++) {
        free(jobs[i].path);
        free(jobs[i].reason);
        free(jobs[i].pixels);
    }
    free(jobs);
}

/* Move the decoded images into the dataset. */
static manta_status assemble(job *jobs, int n, const name_list *cls, const jpeg_folder_opts *o,
                             int loaded, dataset *out, manta_err *err)
{
    const int c = o->channels;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (jobs[i].pixels)
            total += (size_t)jobs[i].h * jobs[i].w * c;
    out->pixels = malloc(total ? total : 1);
    out->offset = malloc((size_t)loaded * sizeof *out->offset);
    out->height = malloc((size_t)loaded * sizeof *out->height);
    out->width = malloc((size_t)loaded * sizeof *out->width);
    out->labels = malloc((size_t)loaded * sizeof *out->labels);
    out->class_names = calloc((size_t)cls->n, sizeof *out->class_names);
    out->classes = cls->n;
    if (!out->pixels || !out->offset || !out->height || !out->width || !out->labels ||
        !out->class_names) {
        data_set_free(out);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "jpeg folder: out of memory for %zu bytes",
                             total);
    }
    for (int k = 0; k < cls->n; k++) { /* steal the names */
        out->class_names[k] = cls->v[k];
        cls->v[k] = NULL;
    }
    size_t off = 0;
    int m = 0, shared = -1;
    for (int i = 0; i < n; i++) {
        job *jb = &jobs[i];
        if (!jb->pixels)
            continue;
        size_t sz = (size_t)jb->h * jb->w * c;
        memcpy(out->pixels + off, jb->pixels, sz);
        free(jb->pixels);
        jb->pixels = NULL;
        out->offset[m] = off;
        out->height[m] = jb->h;
        out->width[m] = jb->w;
        out->labels[m] = jb->label;
        int s = jb->h < jb->w ? jb->h : jb->w;
        shared = shared == -1 ? s : shared == s ? s : 0;
        off += sz;
        m++;
    }
    out->count = m;
    out->channels = c;
    out->stored_size = shared > 0 ? shared : 0;
    return MANTA_OK;
}

manta_status jpeg_folder_load(const char *root, const jpeg_folder_opts *opts, dataset *out,
                              jpeg_folder_report *report, manta_err *err)
{
    jpeg_folder_opts def;
    jpeg_folder_report local;
    jpeg_folder_report *rep = report ? report : &local;
    memset(rep, 0, sizeof *rep);
    memset(out, 0, sizeof *out);
    if (!opts) {
        jpeg_folder_opts_default(&def);
        opts = &def;
    }
    manta_status st = check_opts(opts, err);
    if (st != MANTA_OK)
        return st;
    name_list cls = {0};
    job *jobs = NULL;
    int n = 0;
    st = collect(root, &cls, &jobs, &n, rep, err);
    if (st == MANTA_OK && opts->match_classes)
        st = check_match(root, &cls, opts->match_classes, err);
    rep->files = n;
    if (st == MANTA_OK)
        st = decode_all(jobs, n, opts, err);
    if (st == MANTA_OK) {
        for (int i = 0; i < n; i++) {
            if (jobs[i].state == RES_FAILED) {
                if (rep->reported < JPEG_FOLDER_REPORTED) {
                    snprintf(rep->failures[rep->reported], JPEG_FOLDER_LINE, "%s: %s", jobs[i].path,
                             jobs[i].reason);
                    rep->reported++;
                }
                rep->failed++;
            } else {
                rep->loaded++;
                rep->warned += jobs[i].state == RES_WARNED;
            }
        }
        if (rep->loaded == 0)
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: none of the %d JPEG files decoded; first: %s", root, n,
                               rep->failures[0]);
        else if ((double)rep->failed > opts->max_fail_fraction * n)
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: %d of %d JPEG files failed to decode (more than %g%% allowed); "
                               "first: %s",
                               root, rep->failed, n, opts->max_fail_fraction * 100.0,
                               rep->failures[0]);
    }
    if (st == MANTA_OK)
        st = assemble(jobs, n, &cls, opts, rep->loaded, out, err);
    if (st != MANTA_OK)
        rep->loaded = 0;
    free_jobs(jobs, n);
    data_name_list_free(&cls);
    return st;
}
