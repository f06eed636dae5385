/* A job's flags over its environment (dist/override.h): nothing changes
 * without flags, each flag replaces its field, HOST[:PORT] splits at the last
 * colon, and a bad port, an empty host, a value too long for its field or an
 * unreadable secret file is refused naming the flag or the file. */
#define _DEFAULT_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "dist/override.h"

static void test_nothing_changes(void **state)
{
    (void)state;
    dist_config c, before;
    dist_config_init(&c);
    c.world_size = 3, c.rank = 1, c.master_port = 4000;
    before = c;
    manta_err err;
    const dist_override none = DIST_OVERRIDE_NONE;
    assert_int_equal(dist_config_override(&c, &none, &err), MANTA_OK);
    assert_memory_equal(&c, &before, sizeof c);
    dist_override empty = DIST_OVERRIDE_NONE; /* empty strings are not given either */
    empty.master = empty.iface = empty.ring_addr = empty.job_id = "";
    assert_int_equal(dist_config_override(&c, &empty, &err), MANTA_OK);
    assert_memory_equal(&c, &before, sizeof c);
}

static void test_every_flag(void **state)
{
    (void)state;
    dist_config c;
    dist_config_init(&c);
    dist_override o = {4, 2, "node-7.example:29600", "eth1", "10.1.2.3", "run-42", NULL, 5.5, 1};
    manta_err err;
    assert_int_equal(dist_config_override(&c, &o, &err), MANTA_OK);
    assert_int_equal(c.world_size, 4);
    assert_int_equal(c.rank, 2);
    assert_string_equal(c.master_addr, "node-7.example");
    assert_int_equal(c.master_port, 29600);
    assert_string_equal(c.iface, "eth1");
    assert_string_equal(c.ring_addr, "10.1.2.3");
    assert_string_equal(c.job_id, "run-42");
    assert_true(c.timeout_s == 5.5);
    assert_int_equal(c.rdzv_bind_all, 1);
    assert_int_equal(dist_config_check(&c, &err), MANTA_ERR_INVALID_ARG); /* no secret yet */
    /* a host alone keeps the port */
    o = DIST_OVERRIDE_NONE;
    o.master = "10.0.0.9";
    assert_int_equal(dist_config_override(&c, &o, &err), MANTA_OK);
    assert_string_equal(c.master_addr, "10.0.0.9");
    assert_int_equal(c.master_port, 29600);
    /* IPv6: in brackets with or without a port, or bare (no port) */
    static const char *const v6[][3] = {{"[::1]:29700", "::1", "29700"},
                                        {"[2001:db8::5]", "2001:db8::5", "29700"},
                                        {"fd00::9", "fd00::9", "29700"},
                                        {"host6.example:29800", "host6.example", "29800"}};
    for (size_t i = 0; i < sizeof v6 / sizeof v6[0]; i++) {
        o.master = v6[i][0];
        assert_int_equal(dist_config_override(&c, &o, &err), MANTA_OK);
        assert_string_equal(c.master_addr, v6[i][1]);
        assert_int_equal(c.master_port, atoi(v6[i][2]));
    }
}

static void test_refusals(void **state)
{
    (void)state;
    static const char *const masters[][2] = {
        {"host:0", "--master port needs an integer in [1, 65535], got '0'"},
        {"host:65536", "got '65536'"},
        {"host:80x", "got '80x'"},
        {"host:", "got ''"},
        {":80", "--master ':80': no host"},
        {"[::1", "expected [IPv6] or [IPv6]:PORT"},
        {"[::1]80", "expected [IPv6] or [IPv6]:PORT"},
        {"[]:80", "no host"},
    };
    for (size_t i = 0; i < sizeof masters / sizeof masters[0]; i++) {
        dist_config c;
        dist_config_init(&c);
        dist_override o = DIST_OVERRIDE_NONE;
        o.master = masters[i][0];
        manta_err err;
        assert_int_equal(dist_config_override(&c, &o, &err), MANTA_ERR_INVALID_ARG);
        if (!strstr(err.msg, masters[i][1]))
            fail_msg("'%s': '%s' does not say '%s'", masters[i][0], err.msg, masters[i][1]);
    }
    char long_name[300];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    dist_config c;
    dist_config_init(&c);
    dist_override o = DIST_OVERRIDE_NONE;
    manta_err err;
    o.iface = long_name;
    assert_int_equal(dist_config_override(&c, &o, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "--iface: longer than 63 characters"));
    o = DIST_OVERRIDE_NONE;
    o.master = long_name;
    assert_int_equal(dist_config_override(&c, &o, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "--master: host longer"));
    o = DIST_OVERRIDE_NONE;
    o.job_id = long_name;
    assert_int_equal(dist_config_override(&c, &o, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "--job"));
}

static void test_secret_file(void **state)
{
    (void)state;
    char path[] = "/tmp/manta_override_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a shared secret\n", 16), 16);
    close(fd);
    chmod(path, 0600);
    dist_config c;
    dist_config_init(&c);
    dist_override o = DIST_OVERRIDE_NONE;
    o.world_size = 2;
    o.rank = 1;
    o.secret_file = path;
    manta_err err;
    assert_int_equal(dist_config_override(&c, &o, &err), MANTA_OK);
    assert_true(c.has_key);
    assert_int_equal(dist_config_check(&c, &err), MANTA_OK);
    unlink(path);
    dist_config_init(&c);
    assert_int_equal(dist_config_override(&c, &o, &err), MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_changes),
        cmocka_unit_test(test_every_flag),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_secret_file),
    };
    return cmocka_run_group_tests_name("job flags over the environment", tests, NULL, NULL);
}
