#include "profile/summary.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"

manta_status prof_space_load(const char *spec, ofa_space *sp, stereo_space *ss, bool *stereo,
                             manta_err *err)
{
    *stereo = false;
    manta_status s = stereo_spec_is_stereo(spec, stereo, err);
    if (s != MANTA_OK)
        return s;
    if (!*stereo)
        return ofa_space_load(spec, sp, err);
    if ((s = stereo_space_load(spec, ss, err)) == MANTA_OK)
        stereo_space_ofa_view(ss, sp);
    return s;
}

manta_status lat_arch_resolve(const ofa_space *sp, const stereo_space *ss, const char *spec,
                              ofa_arch *a, manta_err *err)
{
    if (!strcmp(spec, "max") || !strcmp(spec, "min")) {
        const bool max = spec[1] == 'a';
        if (ss)
            (max ? stereo_arch_max : stereo_arch_min)(ss, a);
        else
            (max ? ofa_arch_max : ofa_arch_min)(sp, 0, a);
        return MANTA_OK;
    }
    char *text = NULL;
    const char *json = spec;
    manta_status s = MANTA_OK;
    if (spec[0] != '{' && (s = manta_file_read(spec, 1 << 20, &text, NULL, err)) == MANTA_OK)
        json = text;
    if (s == MANTA_OK)
        s = ss ? stereo_arch_parse(ss, json, a, err) : ofa_arch_parse(sp, json, a, err);
    free(text);
    return s;
}

manta_status lat_table_load_complete(const char *path, const ofa_space *sp, const stereo_space *ss,
                                     lat_dtype want, lat_table *t, manta_err *err)
{
    manta_status s =
        ss ? lat_table_load_stereo(path, ss, t, err) : lat_table_load_dtype(path, sp, want, t, err);
    return s == MANTA_OK ? lat_table_check_complete(t, err) : s;
}

manta_status lat_table_check_host(const lat_table *t, const char *path, manta_err *err)
{
    char cpu[LAT_META_MAX];
    lat_host_cpu(cpu, sizeof cpu);
    if (!strcmp(cpu, t->cpu))
        return MANTA_OK;
    return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                         "%s was measured on another device: CPU '%s' (device '%s'); this "
                         "machine's CPU is '%s'",
                         path, t->cpu, t->device, cpu);
}

manta_status lat_enumerate_space(const ofa_space *sp, const stereo_space *ss, lat_layer **out,
                                 size_t *n, manta_err *err)
{
    return ss ? lat_stereo_enumerate(ss, out, n, err) : lat_enumerate(sp, out, n, err);
}

manta_status prof_write_text(const char *path, const manta_strbuf *b, manta_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    bool ok = (b->n == 0 || fwrite(b->p, 1, b->n, f) == b->n) && !b->oom;
    if (fclose(f) != 0 || !ok)
        return manta_err_set(err, MANTA_ERR_IO, "%s: write failed", path);
    return MANTA_OK;
}

manta_status lat_table_name(lat_table *t, const char *device, pt_clock clock, const char *flags,
                            manta_err *err)
{
    char host[128] = "host", name[LAT_META_MAX], cpu[LAT_META_MAX], date[64];
    if (!device) {
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = 0;
        device = host;
    }
    snprintf(name, sizeof name, "%.120s (manta engine, 1 thread, %s)", device,
             pt_clock_name(clock));
    lat_host_cpu(cpu, sizeof cpu);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return lat_table_set_meta(t, name, cpu, flags, date, err);
}

char *prof_format_secs(char *buf, size_t cap, double s)
{
    long t = (long)(s + 0.5);
    if (t >= 60)
        snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, cap, "%lds", t);
    return buf;
}

int prof_progress_line(char *buf, size_t cap, const char *what, size_t done, size_t total,
                       double elapsed_s, const char *item, bool bar)
{
    const int pct = (int)(100 * done / total);
    char e[32], l[32];
    prof_format_secs(e, sizeof e, elapsed_s);
    prof_format_secs(l, sizeof l, done ? elapsed_s / (double)done * (double)(total - done) : 0);
    if (bar) {
        char b[31];
        const int fill = (int)(30 * done / total);
        for (int i = 0; i < 30; i++)
            b[i] = i < fill ? '=' : i == fill ? '>' : ' ';
        b[30] = 0;
        snprintf(buf, cap, "%s [%s] %3d%% %zu/%zu  %s elapsed, ETA %s  %-.40s", what, b, pct, done,
                 total, e, l, item ? item : "");
    } else
        snprintf(buf, cap, "%s: %3d%% (%zu/%zu), %s elapsed, ETA %s", what, pct, done, total, e, l);
    return pct;
}

bool lat_agreement_meets_targets(const lat_agreement *ag)
{
    return ag->within >= 0.95 && ag->kendall_tau >= 0.9;
}

static manta_status appended(const manta_strbuf *b, manta_err *err)
{
    return b->oom ? manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of memory building the JSON")
                  : MANTA_OK;
}

manta_status lat_results_json(manta_strbuf *b, const lat_results *r, const lat_table *t,
                              manta_err *err)
{
    manta_strbuf_printf(b, "\"space\":");
    manta_strbuf_json_str(b, r->space);
    manta_strbuf_printf(b, ",\"clock\":\"%s\",\"table\":", r->clock == PT_CPU ? "cpu" : "wall");
    manta_strbuf_json_str(b, r->table);
    if (r->profiled)
        manta_strbuf_printf(b,
                            ",\"keys\":%zu,\"method\":\"%s\",\"profile_seconds\":%.3f,"
                            "\"overhead_ms\":%.6f,\"empty_invoke_ms\":%.6f,\"clock_read_ms\":%.6f",
                            t->n, r->method, r->profile_s, t->overhead_ms, r->rep.empty_ms,
                            r->rep.clock_ms);
    const char *const meta[][2] = {{"device", t->device},
                                   {"cpu", t->cpu},
                                   {"compiler_flags", t->cflags},
                                   {"date", t->date},
                                   {"dtype", lat_dtype_name(t->dtype)}};
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) {
        manta_strbuf_printf(b, ",\"%s\":", meta[i][0]);
        manta_strbuf_json_str(b, meta[i][1]);
    }
    const lat_agreement *ag = &r->ag;
    if (r->validated)
        manta_strbuf_printf(b,
                            ",\"validation\":{\"networks\":%zu,\"seed\":%ld,\"seconds\":%.3f,"
                            "\"mean_abs_pct\":%.4f,\"max_abs_pct\":%.4f,\"mean_pct\":%.4f,"
                            "\"within_10pct\":%.4f,\"kendall_tau\":%.4f,\"rmse_ms\":%.6f,"
                            "\"max_abs_ms\":%.6f,\"meets_targets\":%s}",
                            ag->n, r->seed, r->validate_s, ag->mean_abs_pct, ag->max_abs_pct,
                            ag->mean_pct, ag->within, ag->kendall_tau, ag->rmse, ag->max_abs,
                            lat_agreement_meets_targets(ag) ? "true" : "false");
    return appended(b, err);
}

manta_status lat_arch_json(manta_strbuf *b, const char *arch_json, double pred_ms,
                           const lat_stats *st, size_t arena, size_t file, manta_err *err)
{
    manta_strbuf_printf(b,
                        "\"arch\":%s,\"predicted_ms\":%.6f,\"measured_ms\":%.6f,\"median_ms\":%.6f,"
                        "\"mean_ms\":%.6f,\"runs\":%ld,\"error_pct\":%.3f,\"arena_bytes\":%zu,"
                        "\"file_bytes\":%zu",
                        arch_json, pred_ms, st->p10_ms, st->median_ms, st->mean_ms, st->count,
                        100 * (pred_ms - st->p10_ms) / st->p10_ms, arena, file);
    return appended(b, err);
}
