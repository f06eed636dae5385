/* The MANTA_* environment variables' table (core/env.h): every row filled, names unique and
 * prefixed, each enum value's row named after it, look-ups by name and by value agree, and
 * manta_env_get() reads the process environment as it is now; the distributed configuration
 * reads its MANTA_* variables through the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/env.h"
#include "dist/config.h"

static void test_table_rows(void **state)
{
    (void)state;
    for (int i = 0; i < MANTA_ENV_COUNT; i++) {
        const manta_env_desc *d = manta_env_describe((manta_env_var)i);
        assert_non_null(d);
        assert_non_null(d->name);
        assert_non_null(d->group);
        assert_non_null(d->meaning);
        assert_non_null(d->unset);
        assert_int_equal(strncmp(d->name, "MANTA_", 6), 0);
        assert_true(strlen(d->name) > 6);
        assert_true(strspn(d->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen(d->name));
        assert_true(d->group[0] && d->meaning[0] && d->unset[0]);
        assert_ptr_equal(manta_env_name((manta_env_var)i), d->name);
        assert_int_equal(manta_env_find(d->name), i);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(manta_env_name((manta_env_var)j), d->name);
    }
    assert_null(manta_env_describe(MANTA_ENV_COUNT));
    assert_null(manta_env_describe((manta_env_var)-1));
    assert_string_equal(manta_env_name(MANTA_ENV_COUNT), "");
    assert_null(manta_env_get(MANTA_ENV_COUNT));
    assert_int_equal(manta_env_find("MANTA_NO_SUCH_VARIABLE"), -1);
    assert_int_equal(manta_env_find("manta_device"), -1);
    assert_int_equal(manta_env_find(NULL), -1);
}

/* The rows sit at their enum values (a row out of order would read another variable). */
static void test_rows_match_enum(void **state)
{
    (void)state;
    static const struct {
        manta_env_var v;
        const char *name;
    } want[] = {
        {MANTA_ENV_DEVICE, "MANTA_DEVICE"},
        {MANTA_ENV_DEVICE_LIMITS, "MANTA_DEVICE_LIMITS"},
        {MANTA_ENV_KERNELS, "MANTA_KERNELS"},
        {MANTA_ENV_CACHE_DIR, "MANTA_CACHE_DIR"},
        {MANTA_ENV_NO_TUNING, "MANTA_NO_TUNING"},
        {MANTA_ENV_CLBLAST_TUNERS, "MANTA_CLBLAST_TUNERS"},
        {MANTA_ENV_JOB_ID, "MANTA_JOB_ID"},
        {MANTA_ENV_SECRET, "MANTA_SECRET"},
        {MANTA_ENV_SECRET_FILE, "MANTA_SECRET_FILE"},
        {MANTA_ENV_IFACE, "MANTA_IFACE"},
        {MANTA_ENV_TIMEOUT, "MANTA_TIMEOUT"},
        {MANTA_ENV_FRAME_MAC, "MANTA_FRAME_MAC"},
        {MANTA_ENV_SOCKBUF, "MANTA_SOCKBUF"},
        {MANTA_ENV_RING_ORDER, "MANTA_RING_ORDER"},
        {MANTA_ENV_MONITOR_TOKEN, "MANTA_MONITOR_TOKEN"},
    };
    assert_int_equal(sizeof want / sizeof want[0], MANTA_ENV_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_string_equal(manta_env_name(want[i].v), want[i].name);
}

static void test_get_reads_the_environment(void **state)
{
    (void)state;
    const char *name = manta_env_name(MANTA_ENV_KERNELS);
    const char *old = getenv(name);
    char *keep = old ? strdup(old) : NULL;
    unsetenv(name);
    assert_null(manta_env_get(MANTA_ENV_KERNELS));
    setenv(name, "", 1);
    assert_string_equal(manta_env_get(MANTA_ENV_KERNELS), ""); /* empty is not unset */
    setenv(name, "gpu", 1);
    assert_string_equal(manta_env_get(MANTA_ENV_KERNELS), "gpu");
    if (keep)
        setenv(name, keep, 1);
    else
        unsetenv(name);
    free(keep);
}

/* dist_config_from_env() with the process environment: a MANTA_* variable set here arrives. */
static void test_dist_config_reads_the_table(void **state)
{
    (void)state;
    const char *name = manta_env_name(MANTA_ENV_TIMEOUT);
    const char *old = getenv(name);
    char *keep = old ? strdup(old) : NULL;
    setenv(name, "2.5", 1);
    dist_config c;
    dist_config_init(&c);
    manta_err err;
    assert_int_equal(dist_config_from_env(&c, NULL, NULL, &err), MANTA_OK);
    assert_true(c.timeout_s == 2.5);
    setenv(name, "soon", 1);
    assert_int_equal(dist_config_from_env(&c, NULL, NULL, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "MANTA_TIMEOUT"));
    if (keep)
        setenv(name, keep, 1);
    else
        unsetenv(name);
    free(keep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_rows),
        cmocka_unit_test(test_rows_match_enum),
        cmocka_unit_test(test_get_reads_the_environment),
        cmocka_unit_test(test_dist_config_reads_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
