/* CLBlast's tuner programs: finding them, running one (shell scripts stand in
 * for the tuners: arguments, working folder, log, failures, time limit,
 * progress), reading its log (a real log of clblast_tuner_copy_fast) and its
 * result files (the real samples in tests/data/tuner/), and one kernel tuned
 * from the count to the candidates. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl/tuner.h"
#include "common/testutil.h"
#include "core/fileio.h"

#define DATA "tests/data/tuner/"
#define DEVICE "pthread-skylake-avx512-AMD EPYC" /* the samples' device */

/* A real log (clblast_tuner_copy_fast -m 256 -n 256 -fraction 30 -runs 1 on
 * PoCL), columns shortened, colours kept. */
static const char copy_log[] =
    "* Options given/available:\n"
    "    -platform 0 [=default]\n"
    "    -m 256 \n"
    "\n"
    "* Found \x1b[1m144 configuration(s)\x1b[0m\n"
    "* Exploring a random subset of \x1b[1m4 configuration(s)\x1b[0m\n"
    "* Parameters explored: COPY_DIMX COPY_DIMY COPY_WPT COPY_VW \n"
    "\n"
    "|   ID | total |               param |       compiles |         time |   GB/s |            "
    "status |\n"
    "x------x-------x---------------------x----------------x--------------x--------x---------------"
    "----x\n"
    "|  ref |     - |                   - |             \x1b[32mOK\x1b[0m |      0.06 ms |      - "
    "|      \x1b[32mreference OK\x1b[0m |\n"
    "|    1 |     4 |   16   32    1    2 |   \x1b[32mOK\x1b[0m    559 ms |      0.06 ms |    8.3 "
    "|     \x1b[32mresults match\x1b[0m |\n"
    "|    2 |     4 |   16    8    8    8 |   \x1b[32mOK\x1b[0m     26 ms |      0.07 ms |    7.9 "
    "|     \x1b[32mresults match\x1b[0m |\n"
    "|    3 |     4 |    8   32    2    4 |   \x1b[32mOK\x1b[0m     27 ms |      0.06 ms |   98.5 "
    "|     \x1b[31mresults differ\x1b[0m |\n"
    "|    4 |     4 |   16   16    1    4 |   \x1b[32mOK\x1b[0m     28 ms |      0.05 ms |   11.3 "
    "|     \x1b[32mresults match\x1b[0m |\n"
    "x------x-------x---------------------x----------------x--------------x--------x---------------"
    "----x\n"
    "\n"
    "* Found best result 0.05 ms: 11.3 GB/s\n"
    "* Writing a total of 4 results to 'clblast_copy_32.json'\n"
    "* Completed tuning process\n"
    "\n";

/* ---- helpers ------------------------------------------------------------------------ */

typedef struct tmpdir {
    char path[64];
} tmpdir;

static void tmp_make(tmpdir *t)
{
    snprintf(t->path, sizeof t->path, "/tmp/manta-tuner-XXXXXX");
    assert_non_null(mkdtemp(t->path));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A stand-in tuner @p name in @p dir running the shell @p body. */
static void script(const char *dir, const char *name, const char *body, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_true(fprintf(f, "#!/bin/sh\n%s", body) > 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

static const mcl_device_info *fake_device(void)
{
    static mcl_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, DEVICE);
    info.platform_index = 1;
    info.device_index = 2;
    return &info;
}

/* ---- finding them ------------------------------------------------------------------- */

static void test_find(void **state)
{
    (void)state;
    tmpdir t;
    tmp_make(&t);
    char a[128], b[128], list[512];
    snprintf(a, sizeof a, "%s/a", t.path);
    snprintf(b, sizeof b, "%s/b", t.path);
    assert_int_equal(mkdir(a, 0755), 0);
    assert_int_equal(mkdir(b, 0755), 0);
    char p[256];
    snprintf(p, sizeof p, "%s/tuner_one", a);
    write_file(p, "", 0644); /* not executable: skipped */
    snprintf(p, sizeof p, "%s/tuner_one", b);
    write_file(p, "", 0755);
    const char *progs[] = {"tuner_one", "tuner_two"};
    char dir[256];
    manta_err err;
    snprintf(list, sizeof list, "/nonexistent::%s:%s", a, b);
    /* found where the first is; the second is missing there */
    assert_int_equal(mcl_tuner_find(list, progs, 2, dir, sizeof dir, &err), MANTA_ERR_IO);
    assert_string_equal(dir, b);
    assert_non_null(strstr(err.msg, "tuner_two is missing from"));
    snprintf(p, sizeof p, "%s/tuner_two", b);
    write_file(p, "", 0755);
    assert_int_equal(mcl_tuner_find(list, progs, 2, dir, sizeof dir, &err), MANTA_OK);
    assert_string_equal(dir, b);
    /* nowhere */
    assert_int_equal(mcl_tuner_find("/nonexistent", progs, 2, dir, sizeof dir, &err),
                     MANTA_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "clblast-utils"));
    assert_int_equal(mcl_tuner_find(NULL, progs, 2, dir, sizeof dir, &err), MANTA_ERR_UNSUPPORTED);
    assert_int_equal(mcl_tuner_find(list, progs, 0, dir, sizeof dir, &err), MANTA_ERR_INVALID_ARG);
    manta_file_remove_tree(t.path);
}

/* ---- the log ------------------------------------------------------------------------ */

static void test_log(void **state)
{
    (void)state;
    tmpdir t;
    tmp_make(&t);
    char path[128];
    snprintf(path, sizeof path, "%s/log.txt", t.path);
    write_file(path, copy_log, 0644);
    mcl_tuner_log g;
    mcl_tuner_log_read(path, &g);
    assert_int_equal(g.n_found, 1);
    assert_int_equal(g.found[0], 144);
    assert_int_equal(g.done, 4);                   /* "ref" is no configuration */
    assert_true(g.best > 11.29 && g.best < 11.31); /* 98.5 did not match */
    assert_string_equal(g.unit, "GB/s");
    assert_string_equal(g.last, "* Completed tuning process");

    /* the Xgemm tuner: one count per kernel variant, GFLOPS */
    write_file(path,
               "* (1/4) Tuning main GEMM kernel (GEMMK == 0) for fixed set of parameters\n"
               "* Found \x1b[1m578 configuration(s)\x1b[0m\n"
               "|   ID | total | param | time | GFLOPS | status |\n"
               "|    1 |    12 |     x | 1 ms |   41.7 | results match |\n"
               "* (3/4) Tuning secondary GEMM kernel (GEMMK == 1) for fixed set of parameters\n"
               "* Found \x1b[1m407 configuration(s)\x1b[0m\n"
               "|    1 |     9 |     x | 9 ms |    2.5 | compilation error: -11 |\n",
               0644);
    mcl_tuner_log_read(path, &g);
    assert_int_equal(g.n_found, 2);
    assert_int_equal(g.found[0], 578);
    assert_int_equal(g.found[1], 407);
    assert_int_equal(g.done, 2);
    assert_true(g.best > 41.69 && g.best < 41.71);
    assert_string_equal(g.unit, "GFLOPS");

    /* no file yet: an empty log */
    snprintf(path, sizeof path, "%s/none.txt", t.path);
    mcl_tuner_log_read(path, &g);
    assert_int_equal(g.n_found, 0);
    assert_int_equal(g.done, 0);
    assert_string_equal(g.last, "");
    manta_file_remove_tree(t.path);
}

/* ---- running one -------------------------------------------------------------------- */

typedef struct seen {
    int calls;
    size_t last_done;
} seen;

static void count_progress(void *ctx, const mcl_tuner_log *g, double elapsed_s)
{
    seen *s = ctx;
    s->calls++;
    s->last_done = g->done;
    assert_true(elapsed_s > 0);
}

static void test_exec(void **state)
{
    (void)state;
    tmpdir t;
    tmp_make(&t);
    char prog[256], work[128], path[256];
    snprintf(work, sizeof work, "%s/work", t.path);
    assert_int_equal(mkdir(work, 0755), 0);
    /* its arguments, its folder, its output in the log */
    script(t.path, "args", "echo \"$@\"; pwd -P >where; echo 'last words' >&2\n", prog,
           sizeof prog);
    mcl_tuner_run r = {.program = prog,
                       .dir = work,
                       .platform = 1,
                       .device = 2,
                       .m = 64,
                       .n = 32,
                       .k = 16,
                       .fraction = 2,
                       .runs = 3,
                       .limit_s = 60};
    manta_err err;
    manta_err_clear(&err);
    if (mcl_tuner_exec(&r, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/log.txt", work);
    assert_string_equal(read_file(path), "-platform 1 -device 2 -precision 32 -m 64 -n 32 -k 16 "
                                         "-fraction 2.0000 -runs 3\nlast words\n");
    snprintf(path, sizeof path, "%s/where", work);
    char want[256];
    snprintf(want, sizeof want, "%s\n", work); /* no link on the way: mkdtemp under /tmp */
    assert_string_equal(read_file(path), want);
    r.k = 0; /* no -k */
    assert_int_equal(mcl_tuner_exec(&r, &err), MANTA_OK);
    snprintf(path, sizeof path, "%s/log.txt", work);
    assert_null(strstr(read_file(path), "-k"));

    /* a failure: the status and the log's last line */
    script(t.path, "fails", "echo starting; echo 'no device 2' >&2; exit 3\n", prog, sizeof prog);
    assert_int_equal(mcl_tuner_exec(&r, &err), MANTA_ERR_BLAS);
    assert_non_null(strstr(err.msg, "fails failed with exit status 3: no device 2 (log: "));
    script(t.path, "killed", "kill -9 $$\n", prog, sizeof prog);
    assert_int_equal(mcl_tuner_exec(&r, &err), MANTA_ERR_BLAS);
    assert_non_null(strstr(err.msg, "killed was killed by signal 9: no output"));
    snprintf(prog, sizeof prog, "%s/missing", t.path);
    assert_int_equal(mcl_tuner_exec(&r, &err), MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, "cannot run"));

    /* progress while it runs, and the time limit */
    seen s = {0, 0};
    script(t.path, "slow", "echo '|    1 |     2 | x | 8.5 | results match |'; sleep 1\n", prog,
           sizeof prog);
    r.report_s = 0.3;
    r.progress = count_progress;
    r.ctx = &s;
    assert_int_equal(mcl_tuner_exec(&r, &err), MANTA_OK);
    assert_true(s.calls >= 1);
    assert_int_equal(s.last_done, 1);
    script(t.path, "hangs", "exec sleep 30\n", prog, sizeof prog);
    r.limit_s = 0.5;
    assert_int_equal(mcl_tuner_exec(&r, &err), MANTA_ERR_BLAS);
    assert_non_null(strstr(err.msg, "hangs did not finish within 0.5 s"));
    manta_file_remove_tree(t.path);
}

/* ---- its results -------------------------------------------------------------------- */

static void copy_sample(const char *name, const char *dir, const char *as)
{
    char from[256], to[256];
    snprintf(from, sizeof from, DATA "%s", name);
    snprintf(to, sizeof to, "%s/%s", dir, as);
    char *text = read_file(from);
    write_file(to, text, 0644);
}

static void test_results(void **state)
{
    (void)state;
    tmpdir t;
    tmp_make(&t);
    mcl_tune_kernel k[MCL_TUNE_MAX_CANDIDATES], all[8];
    size_t n = 0, n_all = 0;
    manta_err err;
    /* no result file: no candidate */
    assert_int_equal(mcl_tuner_results(t.path, "XgemmDirect", DEVICE, 2, k, &n, &err), MANTA_OK);
    assert_int_equal(n, 0);

    copy_sample("clblast_xgemm_direct_2_32.json", t.path, "clblast_xgemm_direct_2_32.json");
    char log[128];
    snprintf(log, sizeof log, "%s/log.txt", t.path);
    write_file(log, "not a result\n", 0644);
    assert_int_equal(mcl_tuner_results(t.path, "XgemmDirect", DEVICE, 2, k, &n, &err), MANTA_OK);
    assert_int_equal(n, 2);
    assert_int_equal(mcl_tune_parse_tuner_ranked(DATA "clblast_xgemm_direct_2_32.json", all, 8,
                                                 &n_all, NULL, 0, &err),
                     MANTA_OK);
    /* the two fastest of the file, fastest first */
    assert_true(k[0].time_ms == all[0].time_ms && k[1].time_ms == all[1].time_ms);
    assert_true(k[0].time_ms <= k[1].time_ms);

    /* the same results again as another variant: no candidate twice */
    copy_sample("clblast_xgemm_direct_2_32.json", t.path, "clblast_xgemm_direct_1_32.json");
    assert_int_equal(mcl_tuner_results(t.path, "XgemmDirect", DEVICE, 3, k, &n, &err), MANTA_OK);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        assert_true(k[i].time_ms == all[i].time_ms);

    /* made on another device, or for another kernel */
    assert_int_equal(mcl_tuner_results(t.path, "XgemmDirect", "other", 2, k, &n, &err),
                     MANTA_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "not 'other'"));
    assert_int_equal(mcl_tuner_results(t.path, "Xgemm", DEVICE, 2, k, &n, &err), MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "expected 'Xgemm'"));
    assert_int_equal(mcl_tuner_results(t.path, "XgemmDirect", DEVICE, 0, k, &n, &err),
                     MANTA_ERR_INVALID_ARG);
    assert_int_equal(
        mcl_tuner_results(t.path, "XgemmDirect", DEVICE, MCL_TUNE_MAX_CANDIDATES + 1, k, &n, &err),
        MANTA_ERR_INVALID_ARG);
    assert_int_equal(mcl_tuner_results("/nonexistent", "Xgemm", DEVICE, 1, k, &n, &err),
                     MANTA_ERR_IO);
    manta_file_remove_tree(t.path);
}

/* ---- one kernel --------------------------------------------------------------------- */

typedef struct started {
    size_t expect, total;
} started;

static void on_start(void *ctx, size_t expect, size_t total)
{
    started *s = ctx;
    s->expect = expect;
    s->total = total;
}

static void test_tune_one_kernel(void **state)
{
    (void)state;
    tmpdir t;
    tmp_make(&t);
    char cwd[PATH_MAX], body[PATH_MAX + 512], prog[256], dir[128];
    assert_non_null(getcwd(cwd, sizeof cwd));
    /* counts 40 configurations (30 + 10); then writes the sample as its result */
    snprintf(body, sizeof body,
             "case \"$*\" in *'-fraction 1000000000.0000'*)\n"
             "  echo '* Found 30 configuration(s)'; echo '* Found 10 configuration(s)'; exit 0;;\n"
             "esac\n"
             "cp '%s/" DATA "clblast_xgemm_direct_2_32.json' .\n",
             cwd);
    script(t.path, "clblast_tuner_xgemm_direct", body, prog, sizeof prog);
    snprintf(dir, sizeof dir, "%s/runs/xgemm_direct", t.path);
    started s = {0, 0};
    mcl_tuner_job j = {.program = prog,
                       .kernel = "XgemmDirect",
                       .dir = dir,
                       .info = fake_device(),
                       .m = 2048,
                       .n = 128,
                       .k = 128,
                       .budget = 10,
                       .runs = 1,
                       .max = 2,
                       .limit_s = 60,
                       .start = on_start,
                       .ctx = &s};
    mcl_tune_kernel k[MCL_TUNE_MAX_CANDIDATES];
    size_t n = 0;
    mcl_tuner_done done;
    manta_err err;
    if (mcl_tuner_tune(&j, k, &n, &done, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(done.total, 40);
    assert_int_equal(done.expect, 9); /* one in 4 of each variant: 30/4 + 10/4, rounded down */
    assert_int_equal(s.total, 40);
    assert_int_equal(s.expect, 9);
    assert_int_equal(n, 2);
    assert_string_equal(k[0].kernel, "XgemmDirect");
    /* GFLOPS of the best at the tuner's size: 2 * 2048 * 128 * 128 / 2.91 ms */
    assert_true(done.best > 23.0 && done.best < 23.1);
    assert_string_equal(done.unit, "GFLOPS");
    char log[256];
    snprintf(log, sizeof log, "%s.count/log.txt", dir);
    assert_non_null(strstr(read_file(log), "* Found 30 configuration(s)")); /* the count */

    /* fewer configurations than the budget: every one (fraction 1) */
    j.budget = 100;
    assert_int_equal(mcl_tuner_tune(&j, k, &n, &done, &err), MANTA_OK);
    assert_int_equal(done.expect, 40);

    /* nothing counted, nothing written */
    script(t.path, "clblast_tuner_xgemm_direct", "echo '* Found 0 configuration(s)'\n", prog,
           sizeof prog);
    assert_int_equal(mcl_tuner_tune(&j, k, &n, &done, &err), MANTA_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "found no valid configuration for '" DEVICE "'"));
    script(t.path, "clblast_tuner_xgemm_direct", "echo '* Found 5 configuration(s)'\n", prog,
           sizeof prog);
    snprintf(body, sizeof body, "%s/clblast_xgemm_direct_2_32.json", dir);
    assert_int_equal(unlink(body), 0);
    assert_int_equal(mcl_tuner_tune(&j, k, &n, &done, &err), MANTA_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "wrote no result: no configuration ran correctly"));
    manta_file_remove_tree(t.path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_log),
        cmocka_unit_test(test_exec),
        cmocka_unit_test(test_results),
        cmocka_unit_test(test_tune_one_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
