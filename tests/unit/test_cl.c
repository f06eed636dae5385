/* The OpenCL device layer: enumeration, selection, program cache, build
 * errors, memory limits, transfers, launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl/slab.h"
#include "common/testutil.h"

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
    const char *old = getenv("MANTA_DEVICE");
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
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
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
        cmocka_unit_test(test_slab_layout_and_counters),
        cmocka_unit_test(test_status_strings),
    };
    return cmocka_run_group_tests_name("opencl device layer", tests, tu_setup_device, tu_teardown_device);
}
