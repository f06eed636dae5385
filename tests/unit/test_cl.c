/* The OpenCL device layer: enumeration, selection, program cache, build
 * errors, memory limits, transfers, launches. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl/slab.h"
#include "common/testutil.h"
#include "core/env.h"
#include "core/fileio.h"

static mcl_device_list *list_devices(void)
{
    mcl_device_list *l = malloc(sizeof *l);
    assert_non_null(l);
    manta_err err;
    if (mcl_enumerate(l, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    return l;
}

static void test_enumerate_reports_device_facts(void **state)
{
    (void)state;
    mcl_device_list *l = list_devices();
    assert_true(l->count >= 1);
    for (size_t i = 0; i < l->count; i++) {
        assert_int_equal(l->dev[i].index, i);
        assert_true(l->dev[i].compute_units >= 1);
        assert_true(l->dev[i].global_mem > 0);
        assert_true(l->dev[i].max_alloc > 0);
        assert_non_null(strstr(l->dev[i].c_version, "OpenCL C"));
    }
    free(l);
}

static void test_select_by_index_type_and_name(void **state)
{
    (void)state;
    mcl_device_list *l = list_devices();
    manta_err err;
    size_t idx = 99;
    assert_int_equal(mcl_select(l, "0", &idx, &err), MANTA_OK);
    assert_int_equal(idx, 0);
    const char *type = mcl_type_name(l->dev[0].type);
    assert_int_equal(mcl_select(l, type, &idx, &err), MANTA_OK);
    assert_string_equal(mcl_type_name(l->dev[idx].type), type);
    char part[8] = {0};
    memcpy(part, l->dev[0].name, strlen(l->dev[0].name) < 7 ? strlen(l->dev[0].name) : 7);
    assert_int_equal(mcl_select(l, part, &idx, &err), MANTA_OK);
    assert_non_null(strstr(l->dev[idx].name, part));
    free(l);
}

static void test_select_unknown_device_is_clear_error(void **state)
{
    (void)state;
    mcl_device_list *l = list_devices();
    manta_err err;
    size_t idx;
    assert_int_equal(mcl_select(l, "no-such-device-xyz", &idx, &err), MANTA_ERR_NO_DEVICE);
    assert_non_null(strstr(err.msg, "no-such-device-xyz"));
    assert_int_equal(mcl_select(l, "4000", &idx, &err), MANTA_ERR_NO_DEVICE);
    assert_non_null(strstr(err.msg, "out of range"));
    free(l);
}

static void test_select_reads_manta_device(void **state)
{
    (void)state;
    mcl_device_list *l = list_devices();
    manta_err err;
    size_t idx;
    const char *old = manta_env_get(MANTA_ENV_DEVICE);
    char *keep = old ? strdup(old) : NULL;
    setenv("MANTA_DEVICE", "bogus-name-42", 1);
    assert_int_equal(mcl_select(l, NULL, &idx, &err), MANTA_ERR_NO_DEVICE);
    assert_non_null(strstr(err.msg, "MANTA_DEVICE"));
    assert_int_equal(mcl_select(l, "0", &idx, &err), MANTA_OK); /* a flag wins */
    if (keep)
        setenv("MANTA_DEVICE", keep, 1);
    else
        unsetenv("MANTA_DEVICE");
    free(keep);
    free(l);
}

/* A second device opened on the same cache folder loads the program binary
 * instead of compiling it. */
static void test_program_cache_avoids_recompiling(void **state)
{
    (void)state;
    char dir[] = "/tmp/manta-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    mcl_device_list *l = list_devices();
    mcl_options opt = {.cache_dir = dir};
    mcl_stats s;
    cl_kernel k;
    for (int run = 0; run < 2; run++) {
        mcl_dev *d = NULL;
        manta_err err;
        assert_int_equal(mcl_open(&l->dev[0], &opt, &d, &err), MANTA_OK);
        TU_OK(d, mcl_kernel(d, "activation", "act_forward", &k));
        TU_OK(d, mcl_kernel(d, "activation", "act_backward", &k)); /* same program */
        mcl_get_stats(d, &s);
        assert_int_equal(s.programs_compiled, run == 0 ? 1 : 0);
        assert_int_equal(s.programs_cached, run == 0 ? 0 : 1);
        mcl_close(d);
    }
    /* a damaged entry (one byte of the binary changed, or the file cut short) is not handed
     * to the driver: the program is built again, and works */
    DIR *dd = opendir(dir);
    assert_non_null(dd);
    char bin[600] = "";
    for (struct dirent *e; (e = readdir(dd));)
        if (strstr(e->d_name, "activation-") == e->d_name)
            snprintf(bin, sizeof bin, "%s/%s", dir, e->d_name);
    closedir(dd);
    assert_true(bin[0]);
    for (int damage = 0; damage < 2; damage++) {
        FILE *f = fopen(bin, "r+b");
        assert_non_null(f);
        assert_int_equal(fseek(f, -1, SEEK_END), 0);
        long end = ftell(f);
        int c = fgetc(f);
        assert_int_equal(fseek(f, -1, SEEK_END), 0);
        fputc(c ^ 0x5a, f);
        fclose(f);
        if (damage == 1)
            assert_int_equal(truncate(bin, end / 2), 0);
        mcl_dev *d = NULL;
        manta_err err;
        assert_int_equal(mcl_open(&l->dev[0], &opt, &d, &err), MANTA_OK);
        TU_OK(d, mcl_kernel(d, "activation", "act_forward", &k));
        mcl_get_stats(d, &s);
        assert_int_equal(s.programs_compiled, 1);
        assert_int_equal(s.programs_cached, 0);
        mcl_close(d);
    }
    manta_file_remove_tree(dir);
    free(l);
}

static void test_build_failure_reports_log(void **state)
{
    mcl_dev *d = *state;
    cl_program p = NULL;
    char *log = NULL;
    const char *bad = "__kernel void broken(__global float *x) { x[0] = undeclared_name; }\n";
    assert_int_equal(mcl_build(d, "broken", bad, "", &p, &log), MANTA_ERR_BUILD);
    assert_null(p);
    assert_non_null(log);
    assert_non_null(strstr(log, "undeclared_name"));
    assert_non_null(strstr(mcl_err(d)->msg, "broken"));
    assert_null(strchr(mcl_err(d)->msg, '\n')); /* one line */
    free(log);
}

static void test_unknown_kernel_is_error(void **state)
{
    mcl_dev *d = *state;
    cl_kernel k;
    assert_int_equal(mcl_kernel(d, "activation", "no_such_kernel", &k), MANTA_ERR_OPENCL);
    assert_non_null(strstr(mcl_err(d)->msg, "no_such_kernel"));
    assert_int_equal(mcl_kernel(d, "no_such_program", "k", &k), MANTA_ERR_INTERNAL);
}

static void test_out_of_device_memory_is_clear_error(void **state)
{
    mcl_dev *d = *state;
    cl_mem m = NULL;
    size_t huge = (size_t)mcl_info(d)->global_mem + 4096;
    assert_int_equal(mcl_alloc(d, huge, "a huge tensor", &m), MANTA_ERR_DEVICE_MEMORY);
    assert_null(m);
    assert_non_null(strstr(mcl_err(d)->msg, "a huge tensor"));
}

static void test_transfers_fill_and_copy(void **state)
{
    mcl_dev *d = *state;
    enum { N = 1000 };
    float a[N], b[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)i * 0.5f;
    mview v = tu_alloc(d, 3 * N);
    TU_OK(d, mcl_write(d, mview_at(v, 7), a, N));
    TU_OK(d, mcl_copy(d, mview_at(v, 2 * N), mview_at(v, 7), N));
    TU_OK(d, mcl_read(d, mview_at(v, 2 * N), b, N));
    assert_memory_equal(a, b, sizeof a);
    TU_OK(d, mcl_fill(d, mview_at(v, 11), 3.25f, 5));
    TU_OK(d, mcl_read(d, mview_at(v, 7), b, 10));
    assert_true(b[3] == a[3] && b[4] == 3.25f && b[8] == 3.25f && b[9] == a[9]);
    tu_free(d, v);
}

/* A fill longer than MCL_FILL_CHUNK, from an odd offset: it is cut into several fills (one
 * fill of a large region never returns on some drivers), and every part is written. */
static void test_fill_beyond_one_chunk(void **state)
{
    mcl_dev *d = *state;
    const size_t n = MCL_FILL_CHUNK + 1000, off = 5;
    mview v = tu_alloc(d, off + n + 8);
    TU_OK(d, mcl_fill(d, v, -1.0f, off + n + 8));
    TU_OK(d, mcl_fill(d, mview_at(v, off), 2.5f, n));
    const size_t at[] = {0,           off - 1, off, MCL_FILL_CHUNK - 2, MCL_FILL_CHUNK + off,
                         off + n - 4, off + n};
    const float want[][4] = {{-1, -1, -1, -1},         {-1, 2.5f, 2.5f, 2.5f},
                             {2.5f, 2.5f, 2.5f, 2.5f}, {2.5f, 2.5f, 2.5f, 2.5f},
                             {2.5f, 2.5f, 2.5f, 2.5f}, {2.5f, 2.5f, 2.5f, 2.5f},
                             {-1, -1, -1, -1}};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        float got[4];
        TU_OK(d, mcl_read(d, mview_at(v, at[i]), got, 4));
        assert_memory_equal(got, want[i], sizeof got);
    }
    tu_free(d, v);
}

static void test_slab_layout_and_counters(void **state)
{
    mcl_dev *d = *state;
    mlayout l = {0};
    size_t o1 = mlayout_add(&l, 5), o2 = mlayout_add(&l, 17), o3 = mlayout_add(&l, 1);
    assert_int_equal(o1, 0);
    assert_int_equal(o2 % MLAYOUT_ALIGN, 0);
    assert_true(o2 >= 5 && o3 >= o2 + 17 && o3 % MLAYOUT_ALIGN == 0);
    mcl_stats before, after;
    mcl_get_stats(d, &before);
    mslab s;
    TU_OK(d, mslab_create(d, &s, l.total, "test slab"));
    mcl_get_stats(d, &after);
    assert_int_equal(after.buffers_created, before.buffers_created + 1);
    assert_true(after.bytes_allocated >= before.bytes_allocated + l.total * sizeof(float));
    float z[17];
    TU_OK(d, mcl_read(d, mslab_view(&s, o2), z, 17));
    for (int i = 0; i < 17; i++)
        assert_true(z[i] == 0.0f); /* created zeroed */
    mslab_destroy(d, &s);
    mcl_get_stats(d, &after);
    assert_int_equal(after.bytes_allocated, before.bytes_allocated);
}

static void test_limits_clamp_parses_and_only_shrinks(void **state)
{
    mcl_dev *d = *state;
    mcl_device_info i = *mcl_info(d), c = i;
    manta_err err;
    assert_int_equal(
        mcl_limits_clamp(&c, "local=32k,wg=16,alloc=1m,items=8x4x2,mem=3g,vec=1", &err), MANTA_OK);
    assert_true(c.local_mem == (i.local_mem < 32768 ? i.local_mem : 32768));
    assert_true(c.max_work_group == (i.max_work_group < 16 ? i.max_work_group : 16));
    assert_true(c.max_alloc == (i.max_alloc < 1048576 ? i.max_alloc : 1048576));
    assert_true(c.max_work_item[0] <= 8 && c.max_work_item[1] <= 4 && c.max_work_item[2] <= 2);
    assert_true(c.global_mem <= 3ULL << 30 && c.vector_width == 1);
    assert_string_equal(c.clamped, "local=32k,wg=16,alloc=1m,items=8x4x2,mem=3g,vec=1");
    c = i; /* a clamp above the device's own limit leaves it */
    assert_int_equal(mcl_limits_clamp(&c, "wg=1000000000", &err), MANTA_OK);
    assert_true(c.max_work_group == i.max_work_group);
    static const char *bad[] = {"wg",     "wg=",       "wg=0",    "wg=-4",    "local=32q",
                                "size=4", "items=4x4", "wg=16,,", "alloc=1t", ""};
    for (size_t k = 0; k + 1 < sizeof bad / sizeof bad[0]; k++) {
        c = i;
        assert_int_equal(mcl_limits_clamp(&c, bad[k], &err), MANTA_ERR_INVALID_ARG);
        assert_non_null(strstr(err.msg, "MANTA_DEVICE_LIMITS"));
        assert_true(c.max_work_group == i.max_work_group && c.clamped[0] == i.clamped[0]);
    }
}

/* The device of *state with its limits clamped to @p spec, its kernels built afresh. */
static mcl_dev *open_clamped(mcl_dev *d, const char *spec)
{
    mcl_device_info i = *mcl_info(d);
    manta_err err;
    if (mcl_limits_clamp(&i, spec, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    mcl_dev *c = NULL;
    mcl_options opt = {.no_cache = true};
    if (mcl_open(&i, &opt, &c, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
    return c;
}

static void test_launch_outside_limits_is_clear_error(void **state)
{
    mcl_dev *d = open_clamped(*state, "wg=32,local=1k,items=32x8x4,alloc=64k");
    mview v = tu_alloc(d, 256);
    mcl_launch L;
    /* the group of 64 exceeds wg=32 */
    mcl_launch_begin(&L, d, "pool", "add");
    mcl_arg_view(&L, v);
    mcl_arg_view(&L, v);
    mcl_arg_view(&L, v);
    mcl_arg_int(&L, 64);
    assert_true(mcl_launch_wg_max(&L) <= 32);
    assert_int_equal(mcl_launch_run(&L, 1, (size_t[]){64}, (size_t[]){64}), MANTA_ERR_UNSUPPORTED);
    const char *m = mcl_err(d)->msg;
    assert_non_null(strstr(m, "'add'"));
    assert_non_null(strstr(m, mcl_info(d)->name));
    assert_non_null(strstr(m, "64") && strstr(m, "32"));
    assert_non_null(strstr(m, "MANTA_DEVICE_LIMITS"));
    /* an extent of 16 along dimension 1 exceeds items=..x8x.. */
    mcl_launch_begin(&L, d, "pool", "add");
    mcl_arg_view(&L, v);
    mcl_arg_view(&L, v);
    mcl_arg_view(&L, v);
    mcl_arg_int(&L, 64);
    assert_int_equal(mcl_launch_run(&L, 2, (size_t[]){2, 16}, (size_t[]){2, 16}),
                     MANTA_ERR_UNSUPPORTED);
    assert_non_null(strstr(mcl_err(d)->msg, "dimension 1"));
    /* 2 KiB of __local scratch exceed local=1k */
    mcl_launch_begin(&L, d, "pool", "avgpool_forward");
    mcl_arg_view(&L, v);
    mcl_arg_view(&L, v);
    mcl_arg_int(&L, 8);
    mcl_arg_local(&L, 2048);
    assert_int_equal(mcl_launch_run(&L, 1, (size_t[]){16}, (size_t[]){16}), MANTA_ERR_UNSUPPORTED);
    assert_non_null(strstr(mcl_err(d)->msg, "local memory"));
    /* a buffer above alloc=64k names the tensor and the limit */
    cl_mem big = NULL;
    assert_int_equal(mcl_alloc(d, 65537, "the big tensor", &big), MANTA_ERR_DEVICE_MEMORY);
    assert_null(big);
    assert_non_null(strstr(mcl_err(d)->msg, "the big tensor"));
    assert_non_null(strstr(mcl_err(d)->msg, "65536"));
    tu_free(d, v);
    mcl_close(d);
}

static void test_launch_log_records_sizes(void **state)
{
    mcl_dev *d = *state;
    mview v = tu_alloc(d, 100);
    mcl_launch_record rec[2];
    mcl_launch_log log = {rec, 2, 0, 0};
    mcl_set_launch_log(d, &log);
    for (int k = 0; k < 3; k++) {
        mcl_launch L;
        mcl_launch_begin(&L, d, "pool", "add");
        mcl_arg_view(&L, v);
        mcl_arg_view(&L, v);
        mcl_arg_view(&L, v);
        mcl_arg_int(&L, 100);
        mcl_launch_output(&L, 100);
        TU_OK(d, mcl_launch_run(&L, 1, (size_t[]){100}, k ? (size_t[]){32} : NULL));
    }
    mcl_set_launch_log(d, NULL);
    assert_int_equal(log.count, 2);
    assert_int_equal(log.dropped, 1);
    assert_string_equal(rec[0].kernel, "add");
    assert_int_equal(rec[0].items, 100);
    /* not told, a CPU device's group is chosen by mcl, a GPU's by its driver: at most 1024
     * work-items and, where the grid has them, four groups per compute unit (the largest
     * divisor of 100 within 100 / (4 x compute units)) */
    const bool cpu = (mcl_info(d)->type & CL_DEVICE_TYPE_CPU) != 0;
    const size_t cu = mcl_info(d)->compute_units ? mcl_info(d)->compute_units : 1;
    size_t want0 = 100 / (4 * cu) ? 100 / (4 * cu) : 1;
    while (100 % want0)
        want0--;
    assert_int_equal(rec[0].local[0], cpu ? want0 : 0);
    assert_int_equal(rec[1].global[0], 128); /* rounded up to the group */
    assert_int_equal(rec[1].local[0], 32);
    assert_int_equal(rec[1].items, 128);
    assert_int_equal(rec[1].outputs, 100);

    /* on a CPU device, along each dimension the largest divisor of the grid within what is
     * left of 1024 work-items: 8, then 100 of 300 (128 left), then 1 of 7; the grid is kept
     * (16,800 work-items: four groups for each of up to 4 compute units) */
    mcl_set_launch_log(d, &log);
    log.count = log.dropped = 0;
    mcl_launch L;
    mcl_launch_begin(&L, d, "pool", "add");
    mcl_arg_views(&L, (mview[]){v, v, v}, 3);
    mcl_arg_int(&L, 100);
    TU_OK(d, mcl_launch_run(&L, 3, (size_t[]){8, 300, 7}, NULL));
    mcl_set_launch_log(d, NULL);
    assert_int_equal(log.count, 1);
    const size_t want[3] = {8, 100, 1};
    for (int i = 0; i < 3 && cu <= 4; i++)
        assert_int_equal(rec[0].local[i], cpu ? want[i] : 0);
    assert_int_equal(rec[0].items, 8 * 300 * 7);
    tu_free(d, v);
}

static void test_variant_follows_type_and_option(void **state)
{
    mcl_dev *d = *state;
    mcl_variant v = mcl_get_variant(d);
    const char *env = manta_env_get(MANTA_ENV_KERNELS);
    if (!env || !*env || !strcmp(env, "auto"))
        assert_int_equal(v, (mcl_info(d)->type & CL_DEVICE_TYPE_CPU) ? MCL_VARIANT_CPU
                                                                     : MCL_VARIANT_GPU);
    manta_err err;
    for (int want = MCL_VARIANT_CPU; want <= MCL_VARIANT_GPU; want++) {
        mcl_options opt = {.no_cache = true, .variant = want};
        mcl_dev *o = NULL;
        if (mcl_open(mcl_info(d), &opt, &o, &err) != MANTA_OK)
            fail_msg("%s", err.msg);
        assert_int_equal(mcl_get_variant(o), want);
        mcl_close(o);
    }
    mcl_device_info old = *mcl_info(d);
    snprintf(old.c_version, sizeof old.c_version, "OpenCL C 1.1 test");
    mcl_dev *o = NULL;
    assert_int_equal(mcl_open(&old, NULL, &o, &err), MANTA_ERR_UNSUPPORTED);
    assert_null(o);
    assert_non_null(strstr(err.msg, "OpenCL C 1.1"));
    assert_non_null(strstr(err.msg, old.name));
}

static void test_status_strings(void **state)
{
    (void)state;
    for (int s = MANTA_OK; s <= MANTA_ERR_INTERNAL; s++)
        assert_true(strlen(manta_status_str((manta_status)s)) > 0);
    assert_string_equal(mcl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
    manta_err e;
    assert_int_equal(manta_err_set(&e, MANTA_ERR_IO, "x %d", 5), MANTA_ERR_IO);
    assert_string_equal(manta_err_msg(&e, MANTA_ERR_IO), "x 5");
    manta_err_clear(&e);
    assert_string_equal(manta_err_msg(&e, MANTA_ERR_IO), "i/o error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enumerate_reports_device_facts),
        cmocka_unit_test(test_select_by_index_type_and_name),
        cmocka_unit_test(test_select_unknown_device_is_clear_error),
        cmocka_unit_test(test_select_reads_manta_device),
        cmocka_unit_test(test_program_cache_avoids_recompiling),
        cmocka_unit_test(test_build_failure_reports_log),
        cmocka_unit_test(test_unknown_kernel_is_error),
        cmocka_unit_test(test_out_of_device_memory_is_clear_error),
        cmocka_unit_test(test_transfers_fill_and_copy),
        cmocka_unit_test(test_fill_beyond_one_chunk),
        cmocka_unit_test(test_slab_layout_and_counters),
        cmocka_unit_test(test_limits_clamp_parses_and_only_shrinks),
        cmocka_unit_test(test_launch_outside_limits_is_clear_error),
        cmocka_unit_test(test_launch_log_records_sizes),
        cmocka_unit_test(test_variant_follows_type_and_option),
        cmocka_unit_test(test_status_strings),
    };
    return cmocka_run_group_tests_name("opencl device layer", tests, tu_setup_device,
                                       tu_teardown_device);
}
