/* What `manta report` draws, found and read (inputs.h). */
#include "report/inputs.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "core/json.h"

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* @p dir/@p name into @p buf when it is a file. */
static bool find_in(char *buf, const char *dir, const char *name)
{
    if (!dir)
        return false;
    return snprintf(buf, REP_PATH_CAP, "%s/%s", dir, name) < REP_PATH_CAP && is_file(buf);
}

/* @p path with its last extension replaced by @p ext (".json"), into @p buf. */
static void with_ext(char *buf, const char *path, const char *ext)
{
    snprintf(buf, REP_PATH_CAP, "%s", path);
    char *dot = strrchr(buf, '.'), *slash = strrchr(buf, '/');
    if (dot && (!slash || dot > slash))
        *dot = '\0';
    size_t n = strlen(buf);
    snprintf(buf + n, REP_PATH_CAP - n, "%s", ext);
}

/* The folder of @p path into @p buf ("." for a bare name). */
static void dir_of(char *buf, const char *path)
{
    snprintf(buf, REP_PATH_CAP, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash)
        snprintf(buf, REP_PATH_CAP, ".");
    else if (slash == buf)
        buf[1] = '\0';
    else
        *slash = '\0';
}

/* Note an input that is missing and what is left out for it. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
skip(rep_inputs *r, const char *fmt, ...)
{
    if (r->n_skipped == REP_MAX_SKIPS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->skipped[r->n_skipped++], sizeof r->skipped[0], fmt, ap);
    va_end(ap);
}

/* Read a whole text file into *text (freed by the caller). */
static manta_status read_text(const char *path, char **text, manta_err *err)
{
    *text = NULL;
    return manta_file_read(path, 512u << 20, text, NULL, err);
}

/* A number of a small JSON file (test.json, bench.json): NaN when absent or unreadable. */
static double json_file_number(const char *path, const char *obj, const char *key)
{
    char *text = NULL;
    double v = NAN;
    if (!is_file(path) || manta_file_read(path, 1u << 20, &text, NULL, NULL) != MANTA_OK)
        return NAN;
    cJSON *doc = cJSON_Parse(text);
    const cJSON *o = obj ? manta_json_object(doc, obj) : doc;
    if (!manta_json_number(o, key, -INFINITY, INFINITY, &v))
        v = NAN;
    cJSON_Delete(doc);
    free(text);
    return v;
}

static manta_status load_training(const rep_input_opts *o, rep_inputs *r, manta_err *err)
{
    if (o->metrics) {
        snprintf(r->metrics_path, REP_PATH_CAP, "%s", o->metrics);
    } else if (!o->run) {
        skip(r, "training curves and per-rank throughput: no --metrics FILE given");
        return MANTA_OK;
    } else if (!find_in(r->metrics_path, o->run, "metrics.jsonl") &&
               !find_in(r->metrics_path, o->run, "supernet/metrics.jsonl")) {
        skip(r,
             "training curves and per-rank throughput: no metrics.jsonl in %s or %s/supernet "
             "(--metrics FILE)",
             o->run, o->run);
        return MANTA_OK;
    }
    MANTA_TRY(manta_run_history_load(r->metrics_path, &r->train, err));
    r->have_metrics = true;
    if (r->train.loss.n == 0) {
        skip(r, "training curves and per-rank throughput: %s has no progress records",
             r->metrics_path);
        return MANTA_OK;
    }
    r->have_train = true;
    if (r->train.n_ranks == 0)
        skip(r, "per-rank throughput: the progress records of %s have no \"ranks\"",
             r->metrics_path);
    return MANTA_OK;
}

static manta_status load_search(const rep_input_opts *o, rep_inputs *r, manta_err *err)
{
    if (o->search) {
        if (is_dir(o->search))
            snprintf(r->search_path, REP_PATH_CAP, "%s/search.json", o->search);
        else
            snprintf(r->search_path, REP_PATH_CAP, "%s", o->search);
    } else if (!o->run) {
        skip(r, "search plot: no --search FILE given");
        return MANTA_OK;
    } else if (!find_in(r->search_path, o->run, "search.json") &&
               !find_in(r->search_path, o->run, "search/search.json")) {
        skip(r, "search plot: no search.json in %s or %s/search (--search FILE)", o->run, o->run);
        return MANTA_OK;
    }
    char *text;
    MANTA_TRY(read_text(r->search_path, &text, err));
    manta_status st = rep_search_parse(text, r->search_path, &r->search, err);
    free(text);
    MANTA_TRY(st);
    r->have_search = true;
    char dir[REP_PATH_CAP];
    dir_of(dir, r->search_path);
    if (!find_in(r->front_path, dir, "front.csv")) {
        skip(r, "Pareto front: no front.csv beside %s", r->search_path);
        return MANTA_OK;
    }
    MANTA_TRY(read_text(r->front_path, &text, err));
    st = rep_front_parse(text, r->front_path, &r->search, err);
    free(text);
    MANTA_TRY(st);
    r->have_front = true;
    return MANTA_OK;
}

/* --latency FILE: the validation CSV, its JSON summary, or the latency table (validate.csv
 * beside it); without it, RUN_DIR/validate.csv. */
static manta_status load_latency(const rep_input_opts *o, rep_inputs *r, manta_err *err)
{
    if (o->latency) {
        const char *dot = strrchr(o->latency, '.');
        if (dot && !strcmp(dot, ".json")) {
            char *text;
            MANTA_TRY(read_text(o->latency, &text, err));
            cJSON *doc = cJSON_Parse(text);
            const char *fmt = manta_json_string(doc, "format");
            bool table = fmt && !strcmp(fmt, "manta-latency-table");
            cJSON_Delete(doc);
            free(text);
            if (table) {
                char dir[REP_PATH_CAP];
                dir_of(dir, o->latency);
                if (!find_in(r->lat_path, dir, "validate.csv")) {
                    skip(r,
                         "latency validation plot: no validate.csv beside the latency table %s "
                         "(manta-profile --lut %s --validate K --csv FILE)",
                         o->latency, o->latency);
                    return MANTA_OK;
                }
                find_in(r->lat_summary_path, dir, "validate.json");
            } else {
                snprintf(r->lat_summary_path, REP_PATH_CAP, "%s", o->latency);
                with_ext(r->lat_path, o->latency, ".csv");
            }
        } else {
            snprintf(r->lat_path, REP_PATH_CAP, "%s", o->latency);
            with_ext(r->lat_summary_path, o->latency, ".json");
        }
    } else if (!o->run) {
        skip(r, "latency validation plot: no --latency FILE given");
        return MANTA_OK;
    } else if (!find_in(r->lat_path, o->run, "validate.csv")) {
        skip(r, "latency validation plot: no validate.csv in %s (--latency FILE)", o->run);
        return MANTA_OK;
    } else {
        find_in(r->lat_summary_path, o->run, "validate.json");
    }
    char *text;
    MANTA_TRY(read_text(r->lat_path, &text, err));
    manta_status st = rep_latency_parse_csv(text, r->lat_path, &r->lat, err);
    free(text);
    MANTA_TRY(st);
    if (r->lat_summary_path[0] && is_file(r->lat_summary_path)) {
        MANTA_TRY(read_text(r->lat_summary_path, &text, err));
        st = rep_latency_parse_summary(text, r->lat_summary_path, &r->lat, err);
        free(text);
        MANTA_TRY(st);
    }
    if (r->lat.n == 0) {
        skip(r, "latency validation plot: %s has no sub-network with a prediction", r->lat_path);
        return MANTA_OK;
    }
    r->have_lat = true;
    return MANTA_OK;
}

manta_status rep_inputs_load(const rep_input_opts *o, rep_inputs *in, manta_err *err)
{
    if (!o || !in)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "report: no options or no inputs");
    memset(in, 0, sizeof *in);
    in->test_top1 = in->bench_p10 = in->bench_med = NAN;
    if (!o->run && !o->metrics && !o->search && !o->latency)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "report: no run folder and no input file given");
    struct stat st;
    if (o->run && stat(o->run, &st) != 0)
        return manta_err_set(err, MANTA_ERR_IO, "%s: %s", o->run, strerror(errno));
    if (o->run && !S_ISDIR(st.st_mode))
        return manta_err_set(err, MANTA_ERR_IO, "%s: not a folder (RUN_DIR is a run's folder)",
                             o->run);
    MANTA_TRY(load_training(o, in, err));
    MANTA_TRY(load_search(o, in, err));
    MANTA_TRY(load_latency(o, in, err));
    if (!in->have_train && !in->have_search && !in->have_lat)
        return manta_err_set(err, MANTA_ERR_IO,
                             "%s: nothing to report: no training progress, search result or "
                             "latency validation found (see manta report --help)",
                             o->run ? o->run : "the inputs");
    char p[REP_PATH_CAP];
    if (o->run && find_in(p, o->run, "test.json"))
        in->test_top1 = in->search.stereo ? json_file_number(p, "all", "epe") /* px */
                                          : json_file_number(p, NULL, "top1");
    if (o->run && find_in(p, o->run, "bench.json")) {
        in->bench_p10 = json_file_number(p, "bench", "p10_ms");
        in->bench_med = json_file_number(p, "bench", "median_ms");
    }
    return MANTA_OK;
}

void rep_inputs_free(rep_inputs *in)
{
    if (!in)
        return;
    manta_run_history_free(&in->train);
    rep_search_free(&in->search);
    rep_latency_free(&in->lat);
}
