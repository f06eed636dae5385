/* Job configuration: torchrun and SLURM variables, their precedence, malformed
 * values, SLURM host lists, the shared secret and its file, interfaces, and the
 * loopback warning. */
#define _DEFAULT_SOURCE

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/testutil.h"
#include "core/fileio.h"
#include "dist/config.h"
#include "dist/net.h"
#include "dist/rendezvous.h"

/* A fake environment: NULL-terminated name/value pairs. */
static const char *env_of(void *ctx, const char *name)
{
    const char *const *kv = ctx;
    for (; kv[0]; kv += 2)
        if (strcmp(kv[0], name) == 0)
            return kv[1];
    return NULL;
}

static manta_status from(const char *const *kv, dist_config *c, manta_err *e)
{
    dist_config_init(c);
    return dist_config_from_env(c, env_of, (void *)kv, e);
}

static void test_defaults(void **s)
{
    (void)s;
    const char *kv[] = {NULL};
    dist_config c;
    manta_err e;
    assert_int_equal(from(kv, &c, &e), MANTA_OK);
    assert_int_equal(c.rank, 0);
    assert_int_equal(c.world_size, 1);
    assert_string_equal(c.master_addr, "127.0.0.1");
    assert_int_equal(c.master_port, 29500);
    assert_true(c.timeout_s == 60.0);
    assert_int_equal(c.frame_mac, DIST_MAC_HEADER);
    assert_false(c.has_key);
    assert_int_equal(dist_config_check(&c, &e), MANTA_OK); /* world 1 needs no secret */
}

static void test_torchrun(void **s)
{
    (void)s;
    const char *kv[] = {"RANK",
                        "3",
                        "WORLD_SIZE",
                        "8",
                        "LOCAL_RANK",
                        "1",
                        "MASTER_ADDR",
                        "10.1.2.3",
                        "MASTER_PORT",
                        "1234",
                        "MANTA_SECRET",
                        "sesame-open-please",
                        "MANTA_TIMEOUT",
                        "2.5",
                        "MANTA_IFACE",
                        "eth7",
                        "MANTA_JOB_ID",
                        "run-42",
                        "MANTA_FRAME_MAC",
                        "full",
                        "MANTA_SOCKBUF",
                        "4194304",
                        NULL};
    dist_config c;
    manta_err e;
    assert_int_equal(from(kv, &c, &e), MANTA_OK);
    assert_int_equal(c.rank, 3);
    assert_int_equal(c.world_size, 8);
    assert_int_equal(c.local_rank, 1);
    assert_string_equal(c.master_addr, "10.1.2.3");
    assert_int_equal(c.master_port, 1234);
    assert_true(c.timeout_s == 2.5);
    assert_string_equal(c.iface, "eth7");
    assert_string_equal(c.job_id, "run-42");
    assert_int_equal(c.frame_mac, DIST_MAC_FULL);
    assert_int_equal(c.sock_buf, 4194304);
    assert_true(c.has_key);
    assert_int_equal(dist_config_check(&c, &e), MANTA_OK);
}

static void test_slurm_and_precedence(void **s)
{
    (void)s;
    const char *slurm[] = {"SLURM_PROCID",
                           "5",
                           "SLURM_NTASKS",
                           "16",
                           "SLURM_LOCALID",
                           "1",
                           "SLURM_JOB_ID",
                           "777",
                           "SLURM_JOB_NODELIST",
                           "gpu[07-10,12],login1",
                           NULL};
    dist_config c;
    manta_err e;
    assert_int_equal(from(slurm, &c, &e), MANTA_OK);
    assert_int_equal(c.rank, 5);
    assert_int_equal(c.world_size, 16);
    assert_int_equal(c.local_rank, 1);
    assert_string_equal(c.master_addr, "gpu07");
    assert_string_equal(c.job_id, "777");
    /* torchrun variables win over SLURM's; flags (written after) win over both. */
    const char *both[] = {"SLURM_PROCID",
                          "5",
                          "SLURM_NTASKS",
                          "16",
                          "SLURM_JOB_NODELIST",
                          "node[1-4]",
                          "RANK",
                          "2",
                          "WORLD_SIZE",
                          "4",
                          "MASTER_ADDR",
                          "head",
                          NULL};
    assert_int_equal(from(both, &c, &e), MANTA_OK);
    assert_int_equal(c.rank, 2);
    assert_int_equal(c.world_size, 4);
    assert_string_equal(c.master_addr, "head");
    c.rank = 1; /* a --rank flag */
    assert_int_equal(c.rank, 1);
}

static void expect_env_error(const char *name, const char *value, const char *want)
{
    const char *kv[] = {name, value, NULL};
    dist_config c;
    manta_err e;
    manta_err_clear(&e);
    manta_status st = from(kv, &c, &e);
    if (st == MANTA_OK)
        fail_msg("%s='%s' accepted", name, value);
    if (!strstr(e.msg, want))
        fail_msg("%s='%s': '%s' lacks '%s'", name, value, e.msg, want);
}

static void test_malformed_env(void **s)
{
    (void)s;
    expect_env_error("RANK", "two", "RANK='two'");
    expect_env_error("RANK", "-1", "RANK");
    expect_env_error("WORLD_SIZE", "0", "WORLD_SIZE");
    expect_env_error("WORLD_SIZE", "100000", "WORLD_SIZE");
    expect_env_error("MASTER_PORT", "70000", "MASTER_PORT");
    expect_env_error("MASTER_PORT", "12ab", "MASTER_PORT");
    expect_env_error("MANTA_TIMEOUT", "-3", "MANTA_TIMEOUT");
    expect_env_error("MANTA_TIMEOUT", "soon", "MANTA_TIMEOUT");
    expect_env_error("MANTA_FRAME_MAC", "none", "MANTA_FRAME_MAC");
    expect_env_error("MANTA_SOCKBUF", "-1", "MANTA_SOCKBUF");
    expect_env_error("MANTA_JOB_ID", "has space", "job id");
    expect_env_error("MANTA_SECRET", "short", "at least 8");
    expect_env_error("SLURM_JOB_NODELIST", "node[1-", "SLURM_JOB_NODELIST");
    expect_env_error("MANTA_SECRET_FILE", "/nonexistent/secret", "/nonexistent/secret");
}

static void test_check(void **s)
{
    (void)s;
    dist_config c;
    manta_err e;
    dist_config_init(&c);
    c.world_size = 4;
    c.rank = 1;
    assert_int_equal(dist_config_check(&c, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "secret"));
    assert_int_equal(dist_config_set_secret(&c, "12345678", 8, &e), MANTA_OK);
    assert_int_equal(dist_config_check(&c, &e), MANTA_OK);
    c.rank = 4;
    assert_int_equal(dist_config_check(&c, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "rank 4"));
    c.rank = 0;
    c.timeout_s = 0;
    assert_int_equal(dist_config_check(&c, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "timeout"));
    /* Different secrets, different keys; the same secret, the same key. */
    dist_config a, b;
    dist_config_init(&a);
    dist_config_init(&b);
    dist_config_set_secret(&a, "secret-one", 10, NULL);
    dist_config_set_secret(&b, "secret-two", 10, NULL);
    assert_true(memcmp(a.key, b.key, sizeof a.key) != 0);
    dist_config_set_secret(&b, "secret-one", 10, NULL);
    assert_memory_equal(a.key, b.key, sizeof a.key);
}

static void test_secret_file(void **s)
{
    (void)s;
    char dir[] = "/tmp/manta-secret-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/secret", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("a long random secret\n", f);
    fclose(f);
    dist_config c, d;
    manta_err e;
    dist_config_init(&c);
    dist_config_init(&d);
    chmod(path, 0644);
    assert_int_equal(dist_config_secret_file(&c, path, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "chmod 600"));
    chmod(path, 0600);
    assert_int_equal(dist_config_secret_file(&c, path, &e), MANTA_OK);
    /* The trailing newline is not part of the secret. */
    dist_config_set_secret(&d, "a long random secret", 20, NULL);
    assert_memory_equal(c.key, d.key, sizeof c.key);
    const char *kv[] = {"MANTA_SECRET_FILE", path, NULL};
    assert_int_equal(from(kv, &c, &e), MANTA_OK);
    assert_true(c.has_key);
    manta_file_remove_tree(dir);
}

static void expect_host(const char *list, size_t idx, const char *want, size_t want_count)
{
    char out[128];
    size_t count = 0;
    manta_err e;
    manta_err_clear(&e);
    manta_status st = dist_nodelist_host(list, idx, out, sizeof out, &count, &e);
    if (st != MANTA_OK)
        fail_msg("'%s'[%zu]: %s", list, idx, e.msg);
    if (strcmp(out, want) != 0 || count != want_count)
        fail_msg("'%s'[%zu] = '%s' (of %zu), expected '%s' (of %zu)", list, idx, out, count, want,
                 want_count);
}

static void test_nodelist(void **s)
{
    (void)s;
    expect_host("node01", 0, "node01", 1);
    expect_host("node[01-04],other", 0, "node01", 5);
    expect_host("node[01-04],other", 3, "node04", 5);
    expect_host("node[01-04],other", 4, "other", 5);
    expect_host("a,b,c", 2, "c", 3);
    expect_host("gpu[7-10]", 3, "gpu10", 4);     /* no padding: 7, 8, 9, 10 */
    expect_host("gpu[007-010]", 3, "gpu010", 4); /* padding kept */
    expect_host("n[1,3,5-6]", 2, "n5", 4);
    expect_host("rack[1-2]-node[01-03]", 0, "rack1-node01", 6);
    expect_host("rack[1-2]-node[01-03]", 4, "rack2-node02", 6);
    expect_host("x[2]y", 0, "x2y", 1);
    expect_host("login,cn[100-102]-ib", 3, "cn102-ib", 4);
    const char *bad[] = {"",        "node[", "node[1-", "node[a]", "node[3-1]",
                         "node]1[", "a,,b",  "a,",      "n[1,]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[64];
        manta_err e;
        if (dist_nodelist_host(bad[i], 0, out, sizeof out, NULL, &e) != MANTA_ERR_FORMAT)
            fail_msg("'%s' accepted", bad[i]);
    }
    char out[8];
    manta_err e;
    assert_int_equal(dist_nodelist_host("n[1-3]", 3, out, sizeof out, NULL, &e),
                     MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "3 hosts"));
    assert_int_equal(dist_nodelist_host("averyveryverylongname", 0, out, sizeof out, NULL, &e),
                     MANTA_ERR_INVALID_ARG);
}

static void test_interfaces(void **s)
{
    (void)s;
    dist_addr a, v4 = dist_addr_v4(0), v6;
    manta_err e;
    assert_int_equal(dist_iface_addr("lo", &v4, &a, &e), MANTA_OK);
    assert_true(dist_addr_is_v4(&a) && dist_addr_is_loopback(&a));
    char str[DIST_ADDR_STR];
    dist_addr_str(&a, str);
    assert_string_equal(str, "127.0.0.1");
    dist_addr_port_str(&a, 29500, str);
    assert_string_equal(str, "127.0.0.1:29500");
    assert_int_equal(dist_iface_addr("no-such-if0", &v4, &a, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "no-such-if0"));
    assert_non_null(strstr(e.msg, "lo"));
    assert_int_equal(dist_resolve("localhost", &a, &e), MANTA_OK);
    assert_true(dist_addr_is_loopback(&a));
    assert_int_equal(dist_resolve("", &a, &e), MANTA_ERR_INVALID_ARG);
    /* IPv6 literals, with and without brackets, and their text */
    assert_int_equal(dist_resolve("[::1]", &v6, &e), MANTA_OK);
    assert_false(dist_addr_is_v4(&v6));
    assert_true(dist_addr_is_loopback(&v6));
    dist_addr_port_str(&v6, 29500, str);
    assert_string_equal(str, "[::1]:29500");
    assert_int_equal(dist_addr_parse("2001:db8::7", &a, &e), MANTA_OK);
    assert_false(dist_addr_is_loopback(&a) || dist_addr_is_any(&a) || dist_addr_is_v4(&a));
    dist_addr_str(&a, str);
    assert_string_equal(str, "2001:db8::7");
    assert_int_equal(dist_addr_parse("::", &a, &e), MANTA_OK);
    assert_true(dist_addr_is_any(&a));
    assert_int_equal(dist_addr_parse("10.0.0.300", &a, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(dist_addr_parse("fe80::1%lo", &a, &e), MANTA_ERR_INVALID_ARG);
    if (dist_have_ipv6_loopback())
        assert_int_equal(dist_iface_addr("lo", &v6, &a, &e), MANTA_OK);
    else
        print_message("no IPv6 loopback on this host: the IPv6 interface check is skipped\n");
    /* a host name with only an IPv6 address resolves to it (getaddrinfo, AF_UNSPEC), where the
     * host has such a name (Debian's /etc/hosts usually: ip6-localhost) */
    static const char *const names6[] = {"ip6-localhost", "ip6-loopback", "localhost6"};
    int tried = 0;
    for (size_t i = 0; i < sizeof names6 / sizeof names6[0] && !tried; i++) {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        if (getaddrinfo(names6[i], NULL, &hints, &res) != 0)
            continue;
        int only6 = 1;
        for (struct addrinfo *r = res; r; r = r->ai_next)
            only6 &= r->ai_family == AF_INET6;
        freeaddrinfo(res);
        if (!only6)
            continue;
        tried = 1;
        assert_int_equal(dist_resolve(names6[i], &a, &e), MANTA_OK);
        assert_false(dist_addr_is_v4(&a));
        print_message("%s resolves to IPv6\n", names6[i]);
    }
    if (!tried)
        print_message("skipped: no host name of this machine resolves to IPv6 only (/etc/hosts)\n");
}

static void test_loopback_warning(void **s)
{
    (void)s;
    dist_peer p[3];
    char w[512];
    dist_addr_parse("127.0.0.1", &p[0].addr, NULL);
    dist_addr_parse("127.0.0.1", &p[1].addr, NULL);
    dist_addr_parse("::1", &p[2].addr, NULL);
    p[0].port = p[1].port = p[2].port = 5000;
    assert_int_equal(dist_loopback_warning(p, 3, 1, w, sizeof w), 0); /* all on one host */
    assert_string_equal(w, "");
    dist_addr_parse("198.18.0.7", &p[2].addr, NULL);
    assert_int_equal(dist_loopback_warning(p, 3, 1, w, sizeof w), 1);
    print_message("%s\n", w);
    assert_non_null(strstr(w, "rank 1 advertises the loopback address 127.0.0.1"));
    assert_non_null(strstr(w, "rank 2"));
    assert_non_null(strstr(w, "--iface"));
    assert_int_equal(dist_loopback_warning(p, 3, 2, w, sizeof w), 0); /* rank 2 itself is fine */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_torchrun),
        cmocka_unit_test(test_slurm_and_precedence),
        cmocka_unit_test(test_malformed_env),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_secret_file),
        cmocka_unit_test(test_nodelist),
        cmocka_unit_test(test_interfaces),
        cmocka_unit_test(test_loopback_warning),
    };
    return cmocka_run_group_tests_name("dist config", tests, NULL, NULL);
}
