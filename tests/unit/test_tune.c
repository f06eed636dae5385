/* CLBlast tuning: reading tuner output (real samples from this project's
 * machine in tests/data/tuner/), tuning files and their device key, applying
 * them at mcl_open(), GEMM results that do not change with tuning, and the
 * choice between CLBlast's parameters and tuned ones. The tuners themselves
 * are not run here (minutes; tests/unit/test_tuner.c runs stand-ins). */
#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl/blas.h"
#include "cl/tune.h"
#include "common/testutil.h"

#define DATA "tests/data/tuner/"

/* ---- helpers ----------------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run the tests from the repository root)", path);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static size_t param(const mcl_tune_kernel *k, const char *name)
{
    for (size_t i = 0; i < k->count; i++)
        if (strcmp(k->names[i], name) == 0)
            return k->values[i];
    fail_msg("kernel %s has no parameter %s", k->kernel, name);
    return 0;
}

static void parse_ok(const char *file, mcl_tune_kernel *k, char *device, size_t cap)
{
    manta_err err;
    manta_err_clear(&err);
    manta_status st = mcl_tune_parse_tuner(file, k, device, cap, &err);
    if (st != MANTA_OK)
        fail_msg("%s: %s", file, err.msg);
}

/* The three real samples and a kernel-selection threshold. */
static void sample_set(mcl_tune_set *set, size_t min_indirect)
{
    memset(set, 0, sizeof *set);
    mcl_tune_kernel k;
    const char *files[] = {DATA "clblast_xgemm_direct_2_32.json", DATA "clblast_xgemm_2_32.json",
                           DATA "clblast_copy_32.json"};
    for (size_t i = 0; i < 3; i++) {
        parse_ok(files[i], &k, NULL, 0);
        assert_int_equal(mcl_tune_set_put(set, &k, NULL), MANTA_OK);
    }
    memset(&k, 0, sizeof k);
    snprintf(k.kernel, sizeof k.kernel, "GemmRoutine");
    snprintf(k.names[0], sizeof k.names[0], "XGEMM_MIN_INDIRECT_SIZE");
    k.values[0] = min_indirect;
    k.count = 1;
    assert_int_equal(mcl_tune_set_put(set, &k, NULL), MANTA_OK);
}

static mcl_device_info *first_device(mcl_device_list **keep)
{
    mcl_device_list *l = malloc(sizeof *l);
    assert_non_null(l);
    manta_err err;
    if (mcl_enumerate(l, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    size_t idx = 0;
    if (mcl_select(l, NULL, &idx, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    *keep = l;
    return &l->dev[idx];
}

static mcl_dev *open_with(const mcl_device_info *info, const char *cache_dir, bool no_tuning)
{
    mcl_options opt = {0};
    opt.cache_dir = cache_dir;
    opt.no_tuning = no_tuning;
    mcl_dev *d = NULL;
    manta_err err;
    if (mcl_open(info, &opt, &d, &err) != MANTA_OK)
        fail_msg("open: %s", err.msg);
    return d;
}

/* ---- GEMM results with and without tuning ------------------------------------------ */

typedef struct gemm_case {
    bool ta, tb;
    size_t m, n, k;
} gemm_case;

static const gemm_case cases[] = {
    {false, false, 96, 1024, 16}, /* 1x1 convolution, forward */
    {false, false, 16, 1024, 96},
    {false, false, 37, 61, 29}, /* odd sizes: partial tiles */
    {true, false, 24, 40, 512}, /* weight gradient: A transposed */
};
#define N_CASES (sizeof cases / sizeof cases[0])

static void reference(const gemm_case *c, const double *a, const double *b, double *out)
{
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < c->n; j++) {
            double s = 0;
            for (size_t p = 0; p < c->k; p++) {
                double x = c->ta ? a[p * c->m + i] : a[i * c->k + p];
                double y = c->tb ? b[j * c->k + p] : b[p * c->n + j];
                s += x * y;
            }
            out[i * c->n + j] = 0.5 * s + 0.25 * out[i * c->n + j];
        }
}

/* C = 0.5 op(A) op(B) + 0.25 C for every case; results to out[case]. */
static void run_cases(mcl_dev *d, double **out)
{
    manta_rng r;
    manta_rng_seed(&r, 7, 3);
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const gemm_case *c = &cases[ci];
        size_t na = c->m * c->k, nb = c->k * c->n, nc = c->m * c->n;
        double *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
        double *want = malloc(nc * sizeof *want);
        assert_true(a && b && want);
        tu_fill_uniform(&r, a, na, -1, 1);
        tu_fill_uniform(&r, b, nb, -1, 1);
        tu_fill_uniform(&r, want, nc, -1, 1);
        mview va = tu_alloc_from(d, a, na), vb = tu_alloc_from(d, b, nb);
        mview vc = tu_alloc_from(d, want, nc);
        TU_OK(d, mcl_sgemm(d, c->ta, c->tb, c->m, c->n, c->k, 0.5f, va, c->ta ? c->m : c->k, vb,
                           c->tb ? c->k : c->n, 0.25f, vc, c->n));
        tu_download(d, vc, out[ci], nc);
        reference(c, a, b, want);
        char what[64];
        snprintf(what, sizeof what, "sgemm m%zu n%zu k%zu", c->m, c->n, c->k);
        tu_assert_close(out[ci], want, nc, 1e-4, what);
        tu_free(d, va);
        tu_free(d, vb);
        tu_free(d, vc);
        free(a);
        free(b);
        free(want);
    }
}

/* Runs first: CLBlast keeps overrides for the rest of the process, so the
 * untuned results must come before any tuning is applied. */
static void test_tuned_gemm_results_equal_untuned(void **state)
{
    (void)state;
    mcl_device_list *l;
    const mcl_device_info *info = first_device(&l);
    tu_tmpdir t;
    assert_int_equal(tu_tmpdir_make(&t, "tune"), 0);
    double *base[N_CASES], *tuned[N_CASES];
    for (size_t i = 0; i < N_CASES; i++) {
        base[i] = malloc(cases[i].m * cases[i].n * sizeof(double));
        tuned[i] = malloc(cases[i].m * cases[i].n * sizeof(double));
        assert_true(base[i] && tuned[i]);
    }

    mcl_dev *d = open_with(info, t.path, false); /* empty folder: CLBlast defaults */
    mcl_stats s;
    mcl_get_stats(d, &s);
    assert_false(s.blas_tuned);
    assert_false(mcl_get_tuning(d)->active);
    assert_string_equal(mcl_get_tuning(d)->warning, "");
    size_t limit = 0;
    TU_OK(d, mcl_sgemm_direct_limit(d, &limit));
    assert_true(limit > 1 && limit != 100); /* CLBlast's own choice (896 on PoCL's CPU) */
    run_cases(d, base);
    mcl_close(d);

    /* A tuning file with the samples. Its kernel-selection threshold of 100
     * (direct kernel below 100^3 multiply-adds) sends the two small cases
     * through XgemmDirect and the two larger ones through Xgemm with its
     * Copy/Pad/Transpose helpers, so one recompilation covers both kernels. */
    mcl_tune_set set;
    sample_set(&set, 100);
    mcl_tune_key key;
    mcl_tune_key_of(info, &key);
    char path[1200];
    assert_int_equal(mcl_tune_path(t.path, &key, path, sizeof path, NULL), MANTA_OK);
    manta_err err;
    if (mcl_tune_save(path, &key, &set, "test", &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    d = open_with(info, t.path, false);
    mcl_get_stats(d, &s);
    assert_true(s.blas_tuned);
    assert_true(mcl_get_tuning(d)->active);
    assert_int_equal(mcl_get_tuning(d)->kernels, 4);
    assert_string_equal(mcl_get_tuning(d)->path, path);
    TU_OK(d, mcl_sgemm_direct_limit(d, &limit));
    assert_int_equal(limit, 100); /* the override is live */
    run_cases(d, tuned);
    for (size_t i = 0; i < N_CASES; i++)
        tu_assert_close(tuned[i], base[i], cases[i].m * cases[i].n, 1e-4, "tuned vs default");
    mcl_close(d);

    for (size_t i = 0; i < N_CASES; i++) {
        free(base[i]);
        free(tuned[i]);
    }
    tu_tmpdir_remove(&t);
    free(l);
}

/* ---- tuner output ---------------------------------------------------------------- */

static void test_parse_real_tuner_samples(void **state)
{
    (void)state;
    mcl_tune_kernel k;
    char device[256];
    parse_ok(DATA "clblast_xgemm_direct_2_32.json", &k, device, sizeof device);
    assert_string_equal(k.kernel, "XgemmDirect");
    assert_string_equal(k.family, "xgemm_direct_2");
    assert_int_equal(k.count, 10); /* PRECISION dropped */
    /* the file's best_parameters line */
    assert_int_equal(param(&k, "KWID"), 2);
    assert_int_equal(param(&k, "MDIMAD"), 8);
    assert_int_equal(param(&k, "MDIMCD"), 32);
    assert_int_equal(param(&k, "NDIMBD"), 32);
    assert_int_equal(param(&k, "NDIMCD"), 8);
    assert_int_equal(param(&k, "PADA"), 1);
    assert_int_equal(param(&k, "PADB"), 1);
    assert_int_equal(param(&k, "VWMD"), 2);
    assert_int_equal(param(&k, "VWND"), 2);
    assert_int_equal(param(&k, "WGD"), 64);
    for (size_t i = 0; i < k.count; i++)
        assert_string_not_equal(k.names[i], "PRECISION");
    assert_true(k.time_ms > 2.90 && k.time_ms < 2.92); /* best_time "2.91" */
    assert_int_equal(k.m, 2048);
    assert_int_equal(k.n, 128);
    assert_int_equal(k.k, 128);
    assert_string_equal(device, "pthread-skylake-avx512-AMD EPYC");

    /* the fastest results in order; the first is the best one */
    mcl_tune_kernel top[8];
    size_t n = 0;
    manta_err err;
    assert_int_equal(mcl_tune_parse_tuner_ranked(DATA "clblast_xgemm_direct_2_32.json", top, 8, &n,
                                                 NULL, 0, &err),
                     MANTA_OK);
    assert_int_equal(n, 6); /* the file holds 6 results */
    for (size_t i = 1; i < n; i++)
        assert_true(top[i - 1].time_ms <= top[i].time_ms);
    assert_true(top[0].time_ms == k.time_ms);
    for (size_t i = 0; i < k.count; i++)
        assert_int_equal(param(&top[0], k.names[i]), k.values[i]);
    assert_int_equal(mcl_tune_parse_tuner_ranked(DATA "clblast_xgemm_direct_2_32.json", top, 2, &n,
                                                 NULL, 0, &err),
                     MANTA_OK);
    assert_int_equal(n, 2);

    parse_ok(DATA "clblast_xgemm_2_32.json", &k, NULL, 0);
    assert_string_equal(k.kernel, "Xgemm");
    assert_int_equal(k.count, 16);
    assert_int_equal(param(&k, "GEMMK"), 0);
    assert_int_equal(param(&k, "MWG"), 64);
    assert_int_equal(param(&k, "NWG"), 64);
    assert_int_equal(param(&k, "KWG"), 16);
    assert_int_equal(param(&k, "VWN"), 4);

    parse_ok(DATA "clblast_copy_32.json", &k, NULL, 0);
    assert_string_equal(k.kernel, "Copy");
    assert_int_equal(k.count, 4);
    assert_int_equal(param(&k, "COPY_DIMX"), 8);
    assert_int_equal(param(&k, "COPY_DIMY"), 32);
    assert_int_equal(param(&k, "COPY_VW"), 4);
    assert_int_equal(param(&k, "COPY_WPT"), 2);
}

static void test_family_names(void **state)
{
    (void)state;
    assert_string_equal(mcl_tune_kernel_of_family("xgemm_1"), "Xgemm");
    assert_string_equal(mcl_tune_kernel_of_family("xgemm_12"), "Xgemm");
    assert_string_equal(mcl_tune_kernel_of_family("xgemm_direct_2"), "XgemmDirect");
    assert_string_equal(mcl_tune_kernel_of_family("copy"), "Copy");
    assert_string_equal(mcl_tune_kernel_of_family("pad"), "Pad");
    assert_string_equal(mcl_tune_kernel_of_family("transpose"), "Transpose");
    assert_string_equal(mcl_tune_kernel_of_family("padtranspose"), "Padtranspose");
    assert_string_equal(mcl_tune_kernel_of_family("gemm_routine"), "GemmRoutine");
    assert_null(mcl_tune_kernel_of_family("xgemv"));
    assert_null(mcl_tune_kernel_of_family("xgemm_"));
    assert_null(mcl_tune_kernel_of_family("copyx"));
    assert_null(mcl_tune_kernel_of_family(NULL));
}

/* Broken tuner output: a clear error naming the file, never a crash. */
static void test_parse_rejects_bad_tuner_output(void **state)
{
    (void)state;
    tu_tmpdir t;
    assert_int_equal(tu_tmpdir_make(&t, "tune"), 0);
    char *good = read_text(DATA "clblast_xgemm_direct_2_32.json");
    char path[128];
    snprintf(path, sizeof path, "%s/bad.json", t.path);
    static const char *const bad[] = {
        "",
        "not json at all",
        "[1, 2, 3]",
        "{\"kernel_family\": \"xgemv\", \"precision\": \"32\", \"results\": []}",
        "{\"kernel_family\": \"copy\", \"precision\": \"64\", \"results\": [{\"time\": 1, "
        "\"parameters\": {\"COPY_DIMX\": 8, \"COPY_DIMY\": 8, \"COPY_VW\": 1, \"COPY_WPT\": 1}}]}",
        "{\"kernel_family\": \"copy\", \"precision\": \"32\", \"results\": []}",
        "{\"kernel_family\": \"copy\", \"precision\": \"32\", \"results\": [{\"time\": 1, "
        "\"parameters\": {\"COPY_DIMX\": 8, \"COPY_DIMY\": 8, \"COPY_VW\": 1}}]}",
        "{\"kernel_family\": \"copy\", \"precision\": \"32\", \"results\": [{\"time\": 1, "
        "\"parameters\": {\"COPY_DIMX\": 0, \"COPY_DIMY\": 8, \"COPY_VW\": 1, \"COPY_WPT\": 1}}]}",
        "{\"kernel_family\": \"copy\", \"precision\": \"32\", \"results\": [{\"time\": 1, "
        "\"parameters\": {\"COPY_DIMX\": 8.5, \"COPY_DIMY\": 8, \"COPY_VW\": 1, \"COPY_WPT\": "
        "1}}]}",
        "{\"kernel_family\": \"copy\", \"precision\": \"32\", \"results\": [{\"time\": \"x\"}]}",
    };
    manta_err err;
    mcl_tune_kernel k;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i]);
        manta_err_clear(&err);
        assert_int_equal(mcl_tune_parse_tuner(path, &k, NULL, 0, &err), MANTA_ERR_FORMAT);
        assert_non_null(strstr(err.msg, path));
    }
    /* a real file cut in half */
    good[strlen(good) / 2] = '\0';
    write_text(path, good);
    assert_int_equal(mcl_tune_parse_tuner(path, &k, NULL, 0, &err), MANTA_ERR_FORMAT);
    assert_int_equal(mcl_tune_parse_tuner("/nonexistent/x.json", &k, NULL, 0, &err), MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.json"));
    free(good);
    tu_tmpdir_remove(&t);
}

static void test_kernel_check_rejects_bad_values(void **state)
{
    (void)state;
    mcl_tune_kernel k;
    parse_ok(DATA "clblast_xgemm_2_32.json", &k, NULL, 0);
    manta_err err;
    assert_int_equal(mcl_tune_kernel_check(&k, &err), MANTA_OK);
    mcl_tune_kernel bad = k;
    for (size_t i = 0; i < bad.count; i++)
        if (strcmp(bad.names[i], "MWG") == 0)
            bad.values[i] = 0; /* would divide by zero */
    assert_int_equal(mcl_tune_kernel_check(&bad, &err), MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "MWG"));
    bad = k;
    for (size_t i = 0; i < bad.count; i++)
        if (strcmp(bad.names[i], "SA") == 0)
            bad.values[i] = 2; /* a switch */
    assert_int_equal(mcl_tune_kernel_check(&bad, &err), MANTA_ERR_FORMAT);
    bad = k;
    for (size_t i = 0; i < bad.count; i++)
        if (strcmp(bad.names[i], "MWG") == 0)
            bad.values[i] = 24; /* not a multiple of MDIMC*VWM = 16 */
    assert_int_equal(mcl_tune_kernel_check(&bad, &err), MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "multiple"));
    bad = k;
    snprintf(bad.names[0], sizeof bad.names[0], "BOGUS");
    assert_int_equal(mcl_tune_kernel_check(&bad, &err), MANTA_ERR_FORMAT);
    bad = k;
    snprintf(bad.kernel, sizeof bad.kernel, "Xgemv");
    assert_int_equal(mcl_tune_kernel_check(&bad, &err), MANTA_ERR_FORMAT);
}

/* ---- tuning files ----------------------------------------------------------------- */

static void fake_info(mcl_device_info *d, const char *platform, const char *name,
                      const char *driver)
{
    memset(d, 0, sizeof *d);
    snprintf(d->platform_name, sizeof d->platform_name, "%s", platform);
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->driver_version, sizeof d->driver_version, "%s", driver);
}

static void test_save_load_round_trip(void **state)
{
    (void)state;
    tu_tmpdir t;
    assert_int_equal(tu_tmpdir_make(&t, "tune"), 0);
    mcl_device_info info;
    fake_info(&info, "Portable Computing Language", "pthread-skylake-avx512-AMD EPYC", "3.1");
    mcl_tune_key key;
    mcl_tune_key_of(&info, &key);
    mcl_tune_set set, back;
    sample_set(&set, 300);
    char path[1200];
    manta_err err;
    assert_int_equal(mcl_tune_path(t.path, &key, path, sizeof path, &err), MANTA_OK);
    assert_int_equal(mcl_tune_save(path, &key, &set, "made by a test", &err), MANTA_OK);
    if (mcl_tune_load(path, &key, &back, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(back.count, set.count);
    for (size_t i = 0; i < set.count; i++) {
        const mcl_tune_kernel *a = &set.k[i], *b = mcl_tune_set_find(&back, a->kernel);
        assert_non_null(b);
        assert_string_equal(a->family, b->family);
        assert_int_equal(a->count, b->count);
        for (size_t j = 0; j < a->count; j++)
            assert_int_equal(a->values[j], param(b, a->names[j]));
        assert_true(a->time_ms == b->time_ms || (a->time_ms - b->time_ms) < 1e-9);
        assert_int_equal(a->m, b->m);
    }
    assert_int_equal(param(mcl_tune_set_find(&back, "GemmRoutine"), "XGEMM_MIN_INDIRECT_SIZE"),
                     300);
    char *text = read_text(path);
    assert_non_null(strstr(text, "manta-clblast-tuning"));
    assert_non_null(strstr(text, "pthread-skylake-avx512-AMD EPYC"));
    assert_non_null(strstr(text, "made by a test"));
    free(text);
    /* a set holding a bad kernel is not written */
    set.k[0].values[0] = 0;
    assert_int_equal(mcl_tune_save(path, &key, &set, NULL, &err), MANTA_ERR_INVALID_ARG);
    tu_tmpdir_remove(&t);
}

static void test_key_distinguishes_devices(void **state)
{
    (void)state;
    mcl_device_info a, b, c, e;
    fake_info(&a, "Portable Computing Language", "pthread-skylake-avx512-AMD EPYC", "3.1");
    fake_info(&b, "Portable Computing Language", "NVIDIA H100 80GB HBM3", "3.1");
    fake_info(&c, "NVIDIA CUDA", "pthread-skylake-avx512-AMD EPYC", "3.1"); /* same name */
    fake_info(&e, "Portable Computing Language", "pthread-skylake-avx512-AMD EPYC", "4.0");
    mcl_tune_key ka, kb, kc, ke, ka2;
    mcl_tune_key_of(&a, &ka);
    mcl_tune_key_of(&a, &ka2);
    mcl_tune_key_of(&b, &kb);
    mcl_tune_key_of(&c, &kc);
    mcl_tune_key_of(&e, &ke);
    char ver[32];
    snprintf(ver, sizeof ver, "%d.%d.%d", CLBLAST_VERSION_MAJOR, CLBLAST_VERSION_MINOR,
             CLBLAST_VERSION_PATCH);
    assert_string_equal(ka.clblast, ver);
    assert_true(mcl_tune_key_equal(&ka, &ka2));
    assert_false(mcl_tune_key_equal(&ka, &kb));
    assert_false(mcl_tune_key_equal(&ka, &kc));
    assert_false(mcl_tune_key_equal(&ka, &ke)); /* driver upgrade */
    mcl_tune_key kv = ka;
    snprintf(kv.clblast, sizeof kv.clblast, "9.9.9"); /* CLBlast upgrade */
    assert_false(mcl_tune_key_equal(&ka, &kv));

    char pa[1200], pa2[1200], pb[1200], pc[1200], pe[1200];
    assert_int_equal(mcl_tune_path("/c", &ka, pa, sizeof pa, NULL), MANTA_OK);
    assert_int_equal(mcl_tune_path("/c", &ka2, pa2, sizeof pa2, NULL), MANTA_OK);
    assert_int_equal(mcl_tune_path("/c", &kb, pb, sizeof pb, NULL), MANTA_OK);
    assert_int_equal(mcl_tune_path("/c", &kc, pc, sizeof pc, NULL), MANTA_OK);
    assert_int_equal(mcl_tune_path("/c", &ke, pe, sizeof pe, NULL), MANTA_OK);
    assert_string_equal(pa, pa2);
    assert_string_not_equal(pa, pb);
    assert_string_not_equal(pa, pc);
    /* same device, new driver: same file, found and reported stale */
    assert_string_equal(pa, pe);
    assert_non_null(strstr(pa, "/c/clblast-tuning-pthread-skylake-avx512-AMD-EPYC-"));
    assert_null(strchr(pa + 3, ' '));
    assert_int_equal(mcl_tune_path("", &ka, pa, sizeof pa, NULL), MANTA_ERR_INVALID_ARG);

    tu_tmpdir t;
    assert_int_equal(tu_tmpdir_make(&t, "tune"), 0);
    mcl_tune_set set;
    sample_set(&set, 300);
    char path[1200];
    manta_err err;
    assert_int_equal(mcl_tune_path(t.path, &ka, path, sizeof path, NULL), MANTA_OK);
    assert_int_equal(mcl_tune_save(path, &ka, &set, NULL, &err), MANTA_OK);
    assert_int_equal(mcl_tune_load(path, &ke, &set, &err), MANTA_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "driver 3.1"));
    assert_non_null(strstr(err.msg, "driver 4.0"));
    assert_int_equal(set.count, 0);
    tu_tmpdir_remove(&t);
}

/* mcl_open() with a corrupt, foreign or invalid tuning file: the device opens
 * untuned and the reason is in the warning; nothing is printed. */
static void test_bad_tuning_file_ignored_with_warning(void **state)
{
    (void)state;
    mcl_device_list *l;
    const mcl_device_info *info = first_device(&l);
    tu_tmpdir t;
    assert_int_equal(tu_tmpdir_make(&t, "tune"), 0);
    mcl_tune_key key;
    mcl_tune_key_of(info, &key);
    char path[1200];
    assert_int_equal(mcl_tune_path(t.path, &key, path, sizeof path, NULL), MANTA_OK);

    /* foreign: a valid file of another driver version at this device's path */
    mcl_tune_key other = key;
    snprintf(other.driver, sizeof other.driver, "0.0-other");
    mcl_tune_set set;
    sample_set(&set, 300);
    manta_err err;
    assert_int_equal(mcl_tune_save(path, &other, &set, NULL, &err), MANTA_OK);
    char *foreign = read_text(path);
    char *zero_mwg = strdup(foreign), *p;
    assert_non_null(zero_mwg);
    /* "MWG": 64 -> "MWG": 0 */
    p = strstr(zero_mwg, "\"MWG\":");
    assert_non_null(p);
    p += strlen("\"MWG\":");
    while (*p == ' ' || *p == '\t')
        p++;
    *p++ = '0';
    while (*p >= '0' && *p <= '9')
        *p++ = ' ';

    struct {
        const char *text;
        const char *expect;
    } bad[] = {
        {"garbage \x01\x02", "not a JSON object"},
        {"{\"format\": \"manta-clblast-tuning\", \"version\": 1, \"kernels\": [",
         "not a JSON object"},
        {"{\"format\": \"something-else\"}", "not a manta CLBlast tuning file"},
        {"{\"format\": \"manta-clblast-tuning\", \"version\": 7}", "version"},
        {foreign, "0.0-other"},
        {NULL, "MWG"}, /* same file for this device with MWG = 0 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (bad[i].text) {
            write_text(path, bad[i].text);
        } else {
            char *text = strdup(zero_mwg);
            assert_non_null(text);
            /* re-key it for this device */
            char *d = strstr(text, "0.0-other");
            assert_non_null(d);
            size_t keep = (size_t)(d - text);
            char *fixed = malloc(strlen(text) + strlen(key.driver) + 1);
            assert_non_null(fixed);
            memcpy(fixed, text, keep);
            strcpy(fixed + keep, key.driver);
            strcat(fixed, d + strlen("0.0-other"));
            write_text(path, fixed);
            free(fixed);
            free(text);
        }
        mcl_dev *dv = open_with(info, t.path, false);
        const mcl_tuning *tu = mcl_get_tuning(dv);
        mcl_stats s;
        mcl_get_stats(dv, &s);
        assert_false(tu->active);
        assert_false(s.blas_tuned);
        assert_int_equal(tu->kernels, 0);
        if (!strstr(tu->warning, bad[i].expect) || !strstr(tu->warning, path))
            fail_msg("case %zu: warning '%s' lacks '%s' or the path", i, tu->warning,
                     bad[i].expect);
        assert_null(strchr(tu->warning, '\n'));
        mcl_close(dv);
    }

    /* switched off: the file is not even looked at */
    mcl_dev *dv = open_with(info, t.path, true);
    assert_false(mcl_get_tuning(dv)->active);
    assert_string_equal(mcl_get_tuning(dv)->warning, "");
    assert_string_equal(mcl_get_tuning(dv)->path, "");
    mcl_close(dv);
    setenv("MANTA_NO_TUNING", "1", 1);
    dv = open_with(info, t.path, false);
    assert_string_equal(mcl_get_tuning(dv)->warning, "");
    mcl_close(dv);
    unsetenv("MANTA_NO_TUNING");
    /* no file: untuned, no warning */
    assert_int_equal(unlink(path), 0);
    dv = open_with(info, t.path, false);
    assert_false(mcl_get_tuning(dv)->active);
    assert_string_equal(mcl_get_tuning(dv)->warning, "");
    assert_string_equal(mcl_get_tuning(dv)->path, path);
    mcl_close(dv);

    free(foreign);
    free(zero_mwg);
    tu_tmpdir_remove(&t);
    free(l);
}

/* ---- the choice ---------------------------------------------------------------------- */

/* Four shapes of distinct sizes 8^3 < 64^3 < 128^3 < 512^3 and CLBlast's own
 * threshold 100: the two small ones run the direct kernel by default. */
#define CH_N 4
static const uint64_t ch_mnk[CH_N] = {512, 262144, 2097152, 134217728};
#define CH_T_DEF 100

static mcl_tune_option opt_of(bool tuned, double g0, double g1, double g2, double g3)
{
    mcl_tune_option o;
    memset(&o, 0, sizeof o);
    o.tuned = tuned;
    o.gflops[0] = g0, o.gflops[1] = g1, o.gflops[2] = g2, o.gflops[3] = g3;
    if (tuned)
        snprintf(o.k.kernel, sizeof o.k.kernel, "tuned");
    return o;
}

/* CLBlast's defaults: direct {10, 10, 5, 2}, indirect {2, 5, 10, 20}; before
 * (direct below 100^3) {10, 10, 10, 20}. */
static void ch_defaults(mcl_tune_option *dopt, mcl_tune_option *iopt, double *before)
{
    dopt[0] = opt_of(false, 10, 10, 5, 2);
    iopt[0] = opt_of(false, 2, 5, 10, 20);
    for (size_t s = 0; s < CH_N; s++)
        before[s] =
            mcl_tune_runs_direct(ch_mnk[s], CH_T_DEF) ? dopt[0].gflops[s] : iopt[0].gflops[s];
}

static mcl_tune_choice choose_ok(const double *before, const mcl_tune_option *dopt, size_t nd,
                                 const mcl_tune_option *iopt, size_t ni)
{
    mcl_tune_choice ch;
    manta_err err;
    if (mcl_tune_choose(ch_mnk, before, CH_N, CH_T_DEF, dopt, nd, iopt, ni, &ch, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    /* the threshold does what the choice says, and "after" follows it */
    for (size_t s = 0; s < CH_N; s++) {
        assert_int_equal(ch.runs_direct[s], mcl_tune_runs_direct(ch_mnk[s], ch.threshold));
        double want = ch.runs_direct[s] ? dopt[ch.direct].gflops[s] : iopt[ch.indirect].gflops[s];
        assert_true(ch.gflops[s] == want);
    }
    assert_true(ch.threshold <= MCL_TUNE_ALL_DIRECT);
    return ch;
}

static void test_choice_keeps_defaults_unless_faster(void **state)
{
    (void)state;
    mcl_tune_option dopt[2], iopt[3];
    double before[CH_N];
    ch_defaults(dopt, iopt, before);
    assert_true(before[0] == 10 && before[1] == 10 && before[2] == 10 && before[3] == 20);
    dopt[1] = opt_of(true, 9, 9, 4, 1);   /* slower everywhere */
    iopt[1] = opt_of(true, 2, 5, 10, 20); /* a tie: CLBlast's parameters stay */
    mcl_tune_choice ch = choose_ok(before, dopt, 2, iopt, 2);
    assert_int_equal(ch.direct, 0);
    assert_int_equal(ch.indirect, 0);
    assert_int_equal(ch.threshold, CH_T_DEF); /* splits the shapes as the best choice does */
    for (size_t s = 0; s < CH_N; s++)
        assert_true(ch.gflops[s] == before[s]);

    /* faster on the shapes the indirect kernel runs, 5% slower on one: taken */
    iopt[1] = opt_of(true, 1, 1, 30, 19);
    /* faster still in sum, but 12.5% slower on the last shape: refused */
    iopt[2] = opt_of(true, 1, 1, 100, 17.5);
    ch = choose_ok(before, dopt, 2, iopt, 3);
    assert_int_equal(ch.direct, 0);
    assert_int_equal(ch.indirect, 1);
    assert_int_equal(ch.threshold, CH_T_DEF);
    assert_true(ch.gflops[2] == 30 && ch.gflops[3] == 19);
}

/* Every shape runs the direct kernel (@p direct) or none does. */
static void assert_one_kernel(const mcl_tune_choice *ch, bool direct)
{
    for (size_t s = 0; s < CH_N; s++)
        assert_int_equal(ch->runs_direct[s], direct);
}

static void test_choice_moves_the_threshold(void **state)
{
    (void)state;
    mcl_tune_option dopt[2], iopt[2];
    double before[CH_N];
    ch_defaults(dopt, iopt, before);

    /* a direct kernel fast up to 128^3: the threshold moves between 128 and 512 */
    dopt[1] = opt_of(true, 20, 20, 40, 2);
    mcl_tune_choice ch = choose_ok(before, dopt, 2, iopt, 1);
    assert_int_equal(ch.direct, 1);
    assert_true(ch.runs_direct[0] && ch.runs_direct[1] && ch.runs_direct[2] && !ch.runs_direct[3]);
    assert_true(ch.threshold >= 255 && ch.threshold <= 256); /* the geometric mean of 128, 512 */

    /* an indirect kernel faster everywhere: every shape indirect, the threshold
     * at half the smallest cube root, and the direct option that is fastest over
     * all shapes kept for sizes not timed */
    ch_defaults(dopt, iopt, before);
    dopt[1] = opt_of(true, 11, 11, 6, 3);
    iopt[1] = opt_of(true, 20, 20, 20, 40);
    ch = choose_ok(before, dopt, 2, iopt, 2);
    assert_true(ch.direct == 1 && ch.indirect == 1);
    assert_one_kernel(&ch, false);
    assert_true(ch.threshold >= 3 && ch.threshold <= 4); /* 8 / 2 */

    /* a direct kernel faster everywhere: all direct, twice the largest cube root */
    ch_defaults(dopt, iopt, before);
    dopt[1] = opt_of(true, 40, 40, 40, 40);
    iopt[1] = opt_of(true, 3, 6, 11, 21);
    ch = choose_ok(before, dopt, 2, iopt, 2);
    assert_true(ch.direct == 1 && ch.indirect == 1);
    assert_one_kernel(&ch, true);
    assert_int_equal(ch.threshold, 1024);
}

/* Shapes of equal m*n*k cannot be split by a threshold: they go together. */
static void test_choice_groups_equal_sizes(void **state)
{
    (void)state;
    const uint64_t mnk[3] = {262144, 262144, 134217728}; /* 64^3 twice (64x64x64, 32x128x64) */
    mcl_tune_option dopt[2], iopt[1];
    dopt[0] = opt_of(false, 10, 10, 2, 0);
    iopt[0] = opt_of(false, 5, 10, 20, 0);
    double before[3] = {10, 10, 20};
    /* best for shape 0 alone, useless for shape 1: were the two split, shape 0
     * direct with it and shape 1 indirect would win */
    dopt[1] = opt_of(true, 100, 1, 1, 0);
    mcl_tune_choice ch;
    assert_int_equal(mcl_tune_choose(mnk, before, 3, CH_T_DEF, dopt, 2, iopt, 1, &ch, NULL),
                     MANTA_OK);
    assert_int_equal(ch.direct, 0);
    assert_int_equal(ch.runs_direct[0], ch.runs_direct[1]);
    assert_true(ch.runs_direct[0] && !ch.runs_direct[2]);
    assert_int_equal(ch.threshold, CH_T_DEF);
}

static void test_choice_rejects_bad_counts(void **state)
{
    (void)state;
    mcl_tune_option dopt[1], iopt[1];
    double before[CH_N];
    ch_defaults(dopt, iopt, before);
    mcl_tune_choice ch;
    manta_err err;
    assert_int_equal(mcl_tune_choose(ch_mnk, before, 0, CH_T_DEF, dopt, 1, iopt, 1, &ch, &err),
                     MANTA_ERR_INVALID_ARG);
    assert_int_equal(mcl_tune_choose(ch_mnk, before, MCL_TUNE_MAX_SHAPES + 1, CH_T_DEF, dopt, 1,
                                     iopt, 1, &ch, &err),
                     MANTA_ERR_INVALID_ARG);
    assert_int_equal(mcl_tune_choose(ch_mnk, before, CH_N, CH_T_DEF, dopt, 0, iopt, 1, &ch, &err),
                     MANTA_ERR_INVALID_ARG);
    assert_int_equal(mcl_tune_choose(ch_mnk, before, CH_N, CH_T_DEF, dopt, 1, iopt, 0, &ch, &err),
                     MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "indirect"));
}

static void test_fastest_and_relative_time(void **state)
{
    (void)state;
    const double before[2] = {10, 20};
    mcl_tune_option o[4];
    memset(o, 0, sizeof o);
    o[0].gflops[0] = 10, o[0].gflops[1] = 20; /* 1 + 1 */
    o[1].gflops[0] = 20, o[1].gflops[1] = 10; /* 0.5 + 2 */
    o[2].gflops[0] = 20, o[2].gflops[1] = 40; /* 0.5 + 0.5 */
    o[3] = o[2];                              /* a tie: the first stays */
    assert_true(fabs(mcl_tune_rel_time(before, 2, &o[0]) - 2.0) < 1e-12);
    assert_true(fabs(mcl_tune_rel_time(before, 2, &o[1]) - 2.5) < 1e-12);
    assert_int_equal(mcl_tune_fastest(before, 2, o, 0, 4), 2);
    assert_int_equal(mcl_tune_fastest(before, 2, o, 0, 2), 0);
    assert_int_equal(mcl_tune_fastest(before, 2, o, 1, 2), 1);
    assert_int_equal(mcl_tune_fastest(before, 2, o, 3, 3), 3); /* empty range */
    assert_true(mcl_tune_runs_direct(999, 10) && !mcl_tune_runs_direct(1000, 10));
    assert_false(mcl_tune_runs_direct(0, MCL_TUNE_ALL_INDIRECT));
}

/* The file a choice gives: the chosen tuned kernels, the helpers with the
 * indirect option timed with them, the threshold; a valid tuning set. */
static void test_choice_set(void **state)
{
    (void)state;
    mcl_tune_option dopt[2], iopt[2];
    memset(dopt, 0, sizeof dopt);
    memset(iopt, 0, sizeof iopt);
    parse_ok(DATA "clblast_xgemm_direct_2_32.json", &dopt[1].k, NULL, 0);
    parse_ok(DATA "clblast_xgemm_2_32.json", &iopt[1].k, NULL, 0);
    dopt[1].tuned = iopt[1].tuned = iopt[1].helpers = true;
    mcl_tune_set helpers, set;
    memset(&helpers, 0, sizeof helpers);
    mcl_tune_kernel copy;
    parse_ok(DATA "clblast_copy_32.json", &copy, NULL, 0);
    assert_int_equal(mcl_tune_set_put(&helpers, &copy, NULL), MANTA_OK);

    mcl_tune_choice ch = {.direct = 1, .indirect = 1, .threshold = 300};
    manta_err err;
    assert_int_equal(mcl_tune_choice_set(&ch, dopt, iopt, &helpers, &set, &err), MANTA_OK);
    assert_int_equal(set.count, 4);
    assert_non_null(mcl_tune_set_find(&set, "XgemmDirect"));
    assert_non_null(mcl_tune_set_find(&set, "Xgemm"));
    assert_non_null(mcl_tune_set_find(&set, "Copy"));
    const mcl_tune_kernel *gr = mcl_tune_set_find(&set, "GemmRoutine");
    assert_non_null(gr);
    assert_int_equal(param(gr, "XGEMM_MIN_INDIRECT_SIZE"), 300);
    for (size_t i = 0; i < set.count; i++)
        if (mcl_tune_kernel_check(&set.k[i], &err) != MANTA_OK)
            fail_msg("%s", err.msg);

    /* CLBlast's parameters chosen: only the threshold; a second one replaces it */
    ch = (mcl_tune_choice){.direct = 0, .indirect = 0, .threshold = 0};
    assert_int_equal(mcl_tune_choice_set(&ch, dopt, iopt, &helpers, &set, &err), MANTA_OK);
    assert_int_equal(set.count, 1);
    assert_int_equal(mcl_tune_set_threshold(&set, 77, &err), MANTA_OK);
    assert_int_equal(set.count, 1);
    assert_int_equal(param(&set.k[0], "XGEMM_MIN_INDIRECT_SIZE"), 77);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tuned_gemm_results_equal_untuned),
        cmocka_unit_test(test_parse_real_tuner_samples),
        cmocka_unit_test(test_family_names),
        cmocka_unit_test(test_parse_rejects_bad_tuner_output),
        cmocka_unit_test(test_kernel_check_rejects_bad_values),
        cmocka_unit_test(test_save_load_round_trip),
        cmocka_unit_test(test_key_distinguishes_devices),
        cmocka_unit_test(test_bad_tuning_file_ignored_with_warning),
        cmocka_unit_test(test_choice_keeps_defaults_unless_faster),
        cmocka_unit_test(test_choice_moves_the_threshold),
        cmocka_unit_test(test_choice_groups_equal_sizes),
        cmocka_unit_test(test_choice_rejects_bad_counts),
        cmocka_unit_test(test_fastest_and_relative_time),
        cmocka_unit_test(test_choice_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
