/* Several devices from one list (cl/devset.h): "all", indices, types and
 * names in the order given, empty entries skipped, and each refusal (a device
 * twice, an unknown entry, too many, none) one line starting with --devices.
 * The device list is made by hand: no OpenCL device is needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cl/devset.h"

static void fake_list(mcl_device_list *l)
{
    memset(l, 0, sizeof *l);
    static const struct {
        const char *name, *platform;
        cl_device_type type;
    } d[] = {{"pthread-haswell", "Portable Computing Language", CL_DEVICE_TYPE_CPU},
             {"GeForce RTX", "NVIDIA CUDA", CL_DEVICE_TYPE_GPU},
             {"Radeon Pro", "AMD Accelerated Parallel Processing", CL_DEVICE_TYPE_GPU}};
    for (size_t i = 0; i < 3; i++) {
        l->dev[i].index = i;
        l->dev[i].type = d[i].type;
        strcpy(l->dev[i].name, d[i].name);
        strcpy(l->dev[i].platform_name, d[i].platform);
    }
    l->count = 3;
}

static void expect(const mcl_device_list *l, const char *specs, size_t max, const size_t *want,
                   size_t n_want)
{
    size_t idx[8], n = 99;
    manta_err err;
    manta_err_clear(&err);
    if (mcl_select_many(l, specs, idx, max, &n, &err) != MANTA_OK)
        fail_msg("'%s': %s", specs, err.msg);
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(idx[i], want[i]);
}

static void refuse(const mcl_device_list *l, const char *specs, size_t max, const char *why)
{
    size_t idx[8], n;
    manta_err err;
    manta_err_clear(&err);
    assert_int_equal(mcl_select_many(l, specs, idx, max, &n, &err), MANTA_ERR_NO_DEVICE);
    if (strncmp(err.msg, "--devices", 9) != 0 || !strstr(err.msg, why))
        fail_msg("'%s': '%s' does not say '%s'", specs, err.msg, why);
}

static void test_choices(void **state)
{
    (void)state;
    mcl_device_list *l = malloc(sizeof *l);
    assert_non_null(l);
    fake_list(l);
    expect(l, "all", 8, (const size_t[]){0, 1, 2}, 3);
    expect(l, "all", 2, (const size_t[]){0, 1}, 2);
    expect(l, "2,0", 8, (const size_t[]){2, 0}, 2);
    expect(l, "gpu,cpu", 8, (const size_t[]){1, 0}, 2);
    expect(l, ",radeon,,", 8, (const size_t[]){2}, 1);
    expect(l, "nvidia,2", 2, (const size_t[]){1, 2}, 2);
    free(l);
}

static void test_refusals(void **state)
{
    (void)state;
    mcl_device_list *l = malloc(sizeof *l);
    assert_non_null(l);
    fake_list(l);
    refuse(l, "0,0", 8, "device 0 is listed twice");
    refuse(l, "gpu,1", 8, "device 1 is listed twice");
    refuse(l, "0,9", 8, "'9'");
    refuse(l, "0,9", 8, "out of range");
    refuse(l, "tpu", 8, "no device matches");
    refuse(l, "0,1,2", 2, "'2': too many devices");
    refuse(l, ",", 8, "lists no device");
    refuse(l, "", 8, "lists no device");
    l->count = 0;
    refuse(l, "all", 8, "no OpenCL device");
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choices),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests_name("device lists", tests, NULL, NULL);
}
