/* What manta search writes (search/results.h): search.json parses and holds the settings,
 * the re-rank and the best with their figures, the copy is the file, arch.json is the best,
 * the front's files are there; the uniform seeds are every uniform sub-network once; the
 * results' sizes are the cache's; the candidates' callbacks predict accuracy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "common/testutil.h"

#include "core/fileio.h"
#include "search/results.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))

/* A finished search of two front points, two re-ranked candidates (the second chosen). */
typedef struct fixture {
    ofa_space sp;
    evo_config c;
    evo_result r;
    evo_point front[2], top[2];
    double val[2];
} fixture;

static void make(fixture *x, bool rerank)
{
    memset(x, 0, sizeof *x);
    ofa_space_cpu_default(&x->sp);
    evo_config_default(&x->c);
    x->c.seed = 7;
    x->c.n_seeds = 81;
    x->c.budget[EVO_LATENCY] = 1.5;
    x->c.budget[EVO_MACS] = 2e6;
    x->c.top_min_genes = 2;
    x->c.top_by_res = 1;
    x->c.keep_top = rerank ? 2 : 0;
    for (int i = 0; i < 2; i++) {
        evo_point *p = &x->front[i];
        if (i == 0)
            ofa_arch_min(&x->sp, 0, &p->arch);
        else
            ofa_arch_max(&x->sp, 0, &p->arch);
        p->acc = 0.5 + 0.1 * i;
        p->f.v[EVO_LATENCY] = 0.7 + 0.5 * i;
        p->f.v[EVO_MACS] = 1e6 * (1 + i);
        x->top[1 - i] = *p;
        x->val[i] = 0.4 + 0.3 * i;
    }
    x->r.front = x->front;
    x->r.n_front = 2;
    x->r.axis = EVO_LATENCY;
    x->r.best = x->front[1];
    x->r.evaluated = 100;
    x->r.measured = 120;
    x->r.rejected = 20;
    x->r.n_seeds_in = 9;
    if (rerank) {
        x->r.top = x->top;
        x->r.n_top = 2;
        x->r.n_top_seeds = 1;
        x->r.best = x->top[1];
    }
}

static search_report report(const fixture *x)
{
    return (search_report){.space = &x->sp,
                           .config = &x->c,
                           .result = &x->r,
                           .provenance = "\"version\":\"0.0.0\",\"git\":\"abc\"",
                           .ckpt = "run/latest.ckpt",
                           .lut = "lut \"q\".json",
                           .device = "vm (manta engine)",
                           .acc_model = "acc.accp",
                           .val = x->val,
                           .chosen = 1,
                           .rerank_images = 40,
                           .recal_images = 30,
                           .models_planned = 3,
                           .seconds = 1.25};
}

static char *slurp(const char *path)
{
    manta_err e;
    char *text = NULL;
    size_t len = 0;
    TU_OK_ERR(manta_file_read(path, 1 << 20, &text, &len, &e));
    return text;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_non_null(v);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_non_null(v);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static void test_results_written(void **state)
{
    (void)state;
    fixture x;
    make(&x, true);
    search_report rep = report(&x);
    char dir[] = "/tmp/manta_search_resultsXXXXXX", sub[128], path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/out", dir); /* made by the writer */
    char *copy = NULL;
    size_t copy_len = 0;
    FILE *f = open_memstream(&copy, &copy_len);
    assert_non_null(f);
    manta_err e;
    TU_OK_ERR(search_results_write(&rep, sub, f, &e));
    fclose(f);

    snprintf(path, sizeof path, "%s/search.json", sub);
    char *text = slurp(path);
    assert_string_equal(text, copy);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    assert_string_equal(str(j, "format"), "manta-search");
    assert_int_equal(num(j, "version"), 1);
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(j, "provenance");
    assert_string_equal(str(prov, "git"), "abc");
    assert_string_equal(str(j, "space"), x.sp.name);
    assert_string_equal(str(j, "lut"), "lut \"q\".json");
    assert_string_equal(str(j, "device"), "vm (manta engine)");
    assert_int_equal(num(j, "seed"), 7);
    assert_int_equal(num(j, "uniform_seeds"), 81);
    assert_int_equal(num(j, "uniform_within_budget"), 9);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "budget");
    NEAR(num(b, "max_latency_ms"), 1.5, 1e-12);
    NEAR(num(b, "max_macs"), 2e6, 1e-6);
    NEAR(num(b, "max_arena_bytes"), 0, 0);
    const cJSON *rr = cJSON_GetObjectItemCaseSensitive(j, "rerank");
    assert_true(cJSON_IsObject(rr));
    assert_int_equal(num(rr, "spread_genes"), 2);
    assert_int_equal(num(rr, "uniform_added"), 1);
    assert_int_equal(num(rr, "images"), 40);
    assert_int_equal(num(rr, "recal_images"), 30);
    assert_int_equal(num(rr, "chosen"), 2);
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(rr, "candidates");
    assert_int_equal(cJSON_GetArraySize(cands), 2);
    NEAR(num(cJSON_GetArrayItem(cands, 1), "validation_top1"), 0.7, 1e-6);
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(j, "best");
    NEAR(num(best, "predicted_top1"), x.r.best.acc, 1e-6);
    NEAR(num(best, "predicted_latency_ms"), x.r.best.f.v[EVO_LATENCY], 1e-6);
    NEAR(num(best, "macs"), x.r.best.f.v[EVO_MACS], 0.5);
    char *enc = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(best, "arch"));
    ofa_arch a;
    TU_OK_ERR(ofa_arch_parse(&x.sp, enc, &a, &e));
    assert_memory_equal(&a, &x.r.best.arch, sizeof a);
    free(enc);
    assert_int_equal(num(j, "front_points"), 2);
    assert_int_equal(num(j, "evaluated"), 100);
    assert_int_equal(num(j, "models_planned"), 3);
    NEAR(num(j, "seconds"), 1.25, 1e-9);
    cJSON_Delete(j);

    /* arch.json: the best, one line */
    snprintf(path, sizeof path, "%s/arch.json", sub);
    char *arch = slurp(path);
    assert_int_equal(arch[strlen(arch) - 1], '\n');
    TU_OK_ERR(ofa_arch_parse(&x.sp, arch, &a, &e));
    assert_memory_equal(&a, &x.r.best.arch, sizeof a);
    /* front.csv: a header and a row per point; front.svg */
    snprintf(path, sizeof path, "%s/front.csv", sub);
    char *csv = slurp(path);
    int lines = 0;
    for (const char *p = csv; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 3);
    snprintf(path, sizeof path, "%s/front.svg", sub);
    char *svg = slurp(path);
    assert_non_null(strstr(svg, "<svg"));
    assert_non_null(strstr(svg, "budget 1.5 ms"));

    const char *names[] = {"arch.json", "front.csv", "front.svg", "search.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        assert_int_equal(unlink(path), 0);
    }
    assert_int_equal(rmdir(sub), 0);
    assert_int_equal(rmdir(dir), 0);
    free(text);
    free(copy);
    free(arch);
    free(csv);
    free(svg);
}

static void test_json_without_rerank(void **state)
{
    (void)state;
    fixture x;
    make(&x, false);
    search_report rep = report(&x);
    rep.val = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    manta_err e;
    TU_OK_ERR(search_json_put(f, &rep, &e));
    fclose(f);
    assert_non_null(strstr(text, "\"rerank\":null,\"best\":"));
    assert_int_equal(text[len - 1], '\n');
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "rerank")));
    cJSON_Delete(j);
    free(text);
}

static void test_uniform_seeds(void **state)
{
    (void)state;
    ofa_space sp;
    ofa_space_cpu_default(&sp);
    ofa_arch *seeds;
    int n;
    manta_err e;
    TU_OK_ERR(search_uniform_seeds(&sp, &seeds, &n, &e));
    assert_int_equal(n, sp.n_res * sp.n_d * sp.n_e * sp.n_ks);
    for (int i = 0; i < n; i++) {
        TU_OK_ERR(ofa_arch_validate(&sp, &seeds[i], &e));
        for (int j = 0; j < i; j++)
            assert_true(memcmp(&seeds[i], &seeds[j], sizeof seeds[i]) != 0);
    }
    ofa_arch first;
    ofa_arch_uniform(&sp, sp.ks[0], sp.e[0], sp.d[0], sp.res[0], &first);
    assert_memory_equal(&seeds[0], &first, sizeof first);
    free(seeds);
}

static void test_results_sized(void **state)
{
    (void)state;
    fixture x;
    make(&x, false);
    search_sizes c;
    search_sizes_init(&c, &x.sp, NULL);
    manta_err e;
    TU_OK_ERR(search_results_size(&c, &x.r, &e));
    assert_int_equal(c.built, 2); /* the best is the second front point */
    for (int i = 0; i < 2; i++) {
        size_t arena, file;
        TU_OK_ERR(search_sizes_get(&c, &x.front[i].arch, &arena, &file, &e));
        NEAR(x.front[i].f.v[EVO_ARENA], (double)arena, 0);
        NEAR(x.front[i].f.v[EVO_FLASH], (double)file, 0);
    }
    NEAR(x.r.best.f.v[EVO_FLASH], x.front[1].f.v[EVO_FLASH], 0);
    search_sizes_free(&c);
}

/* A stereo search's callbacks: "latency" grows with every gene, "EPE" falls with it. */
static double stereo_size(const stereo_space *s, const ofa_arch *a)
{
    double v = 0;
    for (int u = 0; u < s->n_units; u++)
        for (int j = 0; j < a->d[u]; j++)
            v += a->ks[u * s->max_depth + j] + a->e[u * s->max_depth + j];
    for (int l = 0; l < s->n_levels; l++)
        v += 4.0 * a->dw[l] / s->dec_width[l];
    return v;
}

static manta_status stereo_measure(void *ctx, const ofa_arch *a, evo_figures *f, manta_err *err)
{
    MANTA_TRY(stereo_arch_validate(ctx, a, err));
    f->v[EVO_LATENCY] = stereo_size(ctx, a);
    return MANTA_OK;
}

static manta_status stereo_fitness(void *ctx, const ofa_arch *a, double *acc, manta_err *err)
{
    (void)err;
    *acc = -(100.0 / (1 + stereo_size(ctx, a))); /* minus an EPE */
    return MANTA_OK;
}

/* A stereo search: every candidate a stereo sub-network (decoder widths included), the
 * uniform seeds with one width ratio, the writers' EPE and "dw", exact stereo sizes. */
static void test_stereo_search(void **state)
{
    (void)state;
    stereo_space ss;
    stereo_space_cpu(&ss);
    ofa_space v;
    stereo_space_ofa_view(&ss, &v);
    ofa_arch *seeds;
    int n;
    manta_err e;
    TU_OK_ERR(search_uniform_seeds_stereo(&ss, &seeds, &n, &e));
    assert_int_equal(n, ss.n_dec_ratios * ss.n_d * ss.n_e * ss.n_ks);
    for (int i = 0; i < n; i++)
        TU_OK_ERR(stereo_arch_validate(&ss, &seeds[i], &e));
    evo_config c;
    evo_config_default(&c);
    c.generations = 15;
    c.population = 30;
    c.stereo = &ss;
    c.seeds = seeds;
    c.n_seeds = n;
    ofa_arch lo, hi;
    stereo_arch_min(&ss, &lo);
    stereo_arch_max(&ss, &hi);
    c.budget[EVO_LATENCY] = 0.5 * (stereo_size(&ss, &lo) + stereo_size(&ss, &hi));
    evo_callbacks cb = {stereo_measure, &ss, stereo_fitness, &ss, NULL, NULL};
    evo_result r;
    TU_OK_ERR(evo_search(&v, &c, &cb, &r, &e));
    assert_ptr_equal(r.stereo, &ss);
    TU_OK_ERR(stereo_arch_validate(&ss, &r.best.arch, &e));
    assert_true(r.best.f.v[EVO_LATENCY] <= c.budget[EVO_LATENCY]);
    for (int i = 0; i < n; i++) /* at least as fit as every uniform one within budget */
        if (stereo_size(&ss, &seeds[i]) <= c.budget[EVO_LATENCY])
            assert_true(r.best.acc >= -(100.0 / (1 + stereo_size(&ss, &seeds[i]))));
    bool widths_differ = false; /* the decoder widths are searched */
    for (size_t i = 0; i < r.n_front; i++) {
        TU_OK_ERR(stereo_arch_validate(&ss, &r.front[i].arch, &e));
        widths_differ |= r.front[i].arch.dw[0] != r.front[0].arch.dw[0];
    }
    assert_true(widths_differ);
    /* exact sizes of the exported stereo graph, then the files */
    search_sizes sz;
    search_sizes_init_stereo(&sz, &ss);
    TU_OK_ERR(search_results_size(&sz, &r, &e));
    assert_true(r.best.f.v[EVO_FLASH] > 0 && r.best.f.v[EVO_ARENA] > 0);
    search_sizes_free(&sz);
    char tmpl[] = "/tmp/manta_stereo_search_XXXXXX", path[256];
    assert_non_null(mkdtemp(tmpl));
    const search_report rep = {.space = &v,
                               .config = &c,
                               .result = &r,
                               .provenance = "\"version\":\"0.0.0\"",
                               .device = "vm"};
    TU_OK_ERR(search_results_write(&rep, tmpl, NULL, &e));
    snprintf(path, sizeof path, "%s/arch.json", tmpl);
    char *text = slurp(path);
    ofa_arch back;
    TU_OK_ERR(stereo_arch_parse(&ss, text, &back, &e));
    assert_memory_equal(&back, &r.best.arch, sizeof back);
    free(text);
    snprintf(path, sizeof path, "%s/front.csv", tmpl);
    text = slurp(path);
    assert_non_null(strstr(text, "rank,epe,latency_ms"));
    assert_non_null(strstr(text, "\"\"dw\"\":["));
    free(text);
    snprintf(path, sizeof path, "%s/search.json", tmpl);
    text = slurp(path);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    assert_string_equal(str(j, "task"), "stereo");
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(j, "best");
    NEAR(num(best, "predicted_epe"), -r.best.acc, 1e-5);
    assert_null(cJSON_GetObjectItemCaseSensitive(best, "predicted_top1"));
    cJSON_Delete(j);
    free(text);
    snprintf(path, sizeof path, "%s/front.svg", tmpl);
    text = slurp(path);
    assert_non_null(strstr(text, "predicted EPE (px)"));
    free(text);
    const char *names[] = {"arch.json", "front.csv", "front.svg", "search.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpl, names[i]);
        unlink(path);
    }
    rmdir(tmpl);
    evo_result_free(&r);
    free(seeds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results_written), cmocka_unit_test(test_json_without_rerank),
        cmocka_unit_test(test_uniform_seeds),   cmocka_unit_test(test_results_sized),
        cmocka_unit_test(test_stereo_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
