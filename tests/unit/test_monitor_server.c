/* The training monitor's HTTP server (runtime/monitor_http/, its own library with
 * libmicrohttpd) over a loopback socket: two runs served, the page, the JSON API, the
 * event stream, /metrics, status codes of good, malformed and unauthorised requests, the
 * token, the refusal to listen beyond loopback without one. The model it serves is
 * test_monitor.c's. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/testutil.h"
#include "core/clock.h"
#include "core/rng.h"
#include "monitor_http/server.h"

static tu_tmpdir dir;

static int setup(void **state)
{
    (void)state;
    unsetenv("MANTA_MONITOR_TOKEN"); /* the tests set their tokens themselves */
    return tu_tmpdir_make(&dir, "monitor_server");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&dir);
}

static const char JOB[] =
    "{\"event\":\"job\",\"time\":1000,\"task\":\"classification\",\"space\":\"cpu-default\","
    "\"schedule\":\"smoke\",\"steps\":40,\"world_size\":2,\"phases\":[{\"name\":\"full\","
    "\"steps\":20,\"subnets\":1},{\"name\":\"kernel\",\"steps\":20,\"subnets\":2}]}\n";

static void append_file(const char *path, const char *mode, const char *text)
{
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* One HTTP/1.0 request to 127.0.0.1:@p port; the status code, the body into @p body. */
static int http(int port, const char *req, char *body, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_true(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    static char buf[1 << 20];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    close(fd);
    int code = 0;
    sscanf(buf, "HTTP/1.%*d %d", &code);
    const char *b = strstr(buf, "\r\n\r\n");
    if (body)
        snprintf(body, cap, "%s", b ? b + 4 : "");
    return code;
}

static int get(int port, const char *path, char *body, size_t cap)
{
    char req[2048];
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
    return http(port, req, body, cap);
}

/* Read the event stream of @p path until @p needle or @p seconds; whether it came. */
static bool stream_has(int port, const char *path, const char *needle, double seconds)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {0, 200000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    char req[512];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    assert_true(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    static char buf[1 << 16];
    size_t n = 0;
    bool found = false;
    double t0 = manta_now();
    while (!found && manta_now() - t0 < seconds && n < sizeof buf - 1) {
        ssize_t k = read(fd, buf + n, sizeof buf - 1 - n);
        if (k == 0)
            break;
        if (k > 0) {
            n += (size_t)k;
            buf[n] = 0;
            found = strstr(buf, needle) != NULL;
        }
    }
    close(fd);
    return found;
}

static void test_server(void **state)
{
    (void)state;
    char run_dir[512], path[600];
    tu_tmpdir_path(&dir, "srv", run_dir, sizeof run_dir);
    snprintf(path, sizeof path, "mkdir -p '%s'", run_dir);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    append_file(path, "w", JOB);
    mon_options o;
    mon_options_default(&o);
    o.listen = "127.0.0.1:0";
    o.token = NULL;
    o.poll_s = 0.05;
    const char *dirs[2] = {run_dir, run_dir};
    mon_server *s = NULL;
    manta_err err;
    assert_int_equal(mon_server_start(&o, dirs, 2, &s, &err), MANTA_OK);
    int port = mon_server_port(s);
    assert_true(port > 0);
    static char body[1 << 20];
    assert_int_equal(get(port, "/healthz", body, sizeof body), 200);
    assert_string_equal(body, "ok\n");
    assert_int_equal(get(port, "/", body, sizeof body), 200);
    assert_non_null(strstr(body, "<html"));
    assert_int_equal(get(port, "/app.js", body, sizeof body), 200);
    assert_int_equal(get(port, "/api/runs", body, sizeof body), 200);
    cJSON *r = cJSON_Parse(body);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "runs")), 2);
    const cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "runs"), 1);
    assert_string_equal(cJSON_GetObjectItem(r1, "name")->valuestring, "srv#2");
    cJSON_Delete(r);
    append_file(path, "a",
                "{\"step\":3,\"steps\":40,\"phase\":\"full\",\"phase_index\":0,\"loss\":2}\n");
    int since1 = 0;
    for (int i = 0; i < 100 && since1 != 2; i++) { /* the poll thread reads it */
        manta_sleep(0.05);
        assert_int_equal(get(port, "/api/metrics?since=1&run=1", body, sizeof body), 200);
        r = cJSON_Parse(body);
        assert_non_null(r);
        since1 = cJSON_GetObjectItem(r, "next")->valueint;
        cJSON_Delete(r);
    }
    assert_int_equal(since1, 2);
    /* the event stream: what is there at once, then what is appended */
    assert_true(stream_has(port, "/api/events?since=0", "\"records\":[{\"event\":\"job\"", 3));
    assert_true(stream_has(port, "/api/events?run=1&since=2", "retry: 2000", 3));
    append_file(path, "a",
                "{\"step\":4,\"steps\":40,\"phase\":\"full\",\"phase_index\":0,\"loss\":1.5}\n");
    assert_true(stream_has(port, "/api/events?since=2", "\"step\":4,", 3));
    assert_int_equal(get(port, "/api/events?since=x", body, sizeof body), 400);
    assert_int_equal(get(port, "/api/run?run=1", body, sizeof body), 200);
    assert_int_equal(get(port, "/api/ranks", body, sizeof body), 200);
    assert_int_equal(get(port, "/metrics", body, sizeof body), 200);
    assert_non_null(strstr(body, "manta_train_step{run=\"srv\"} 4"));
    /* malformed and unknown requests */
    assert_int_equal(get(port, "/api/metrics?since=1x", body, sizeof body), 400);
    assert_int_equal(get(port, "/api/metrics?since=-1", body, sizeof body), 400);
    assert_int_equal(get(port, "/api/metrics?since=99999999999999999999", body, sizeof body), 400);
    assert_int_equal(get(port, "/api/metrics?since=", body, sizeof body), 400);
    assert_int_equal(get(port, "/api/run?run=2", body, sizeof body), 400);
    assert_int_equal(get(port, "/api/metrics?limit=0", body, sizeof body), 400);
    assert_int_equal(get(port, "/api/nothing", body, sizeof body), 404);
    assert_int_equal(get(port, "/../etc/passwd", body, sizeof body), 404);
    char longp[600];
    memset(longp, 'a', sizeof longp);
    longp[0] = '/';
    longp[sizeof longp - 1] = 0;
    int code = get(port, longp, body, sizeof body);
    assert_true(code == 400 || code == 414);
    assert_int_equal(
        http(port, "POST /api/run HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc", body, sizeof body),
        405);
    assert_int_equal(http(port, "DELETE / HTTP/1.0\r\n\r\n", body, sizeof body), 405);
    code = http(port, "garbage\r\n\r\n", body, sizeof body);
    assert_true(code == 400 || code == 0);
    /* random request lines: paths and queries of random bytes, random methods; every answer
     * a known code (or a closed connection), and the server answers afterwards */
    manta_rng rng;
    manta_rng_seed(&rng, 19, 5);
    static const char *const paths[] = {"/api/metrics?since=",
                                        "/api/run?run=",
                                        "/api/ranks?run=",
                                        "/metrics?",
                                        "/",
                                        "/api/events?since=",
                                        "/api/",
                                        "%"};
    for (int i = 0; i < 200; i++) {
        char req[700], junk[300];
        int n = 1 + (int)(manta_rng_u32(&rng) % (sizeof junk - 1));
        for (int k = 0; k < n; k++) {
            unsigned c = manta_rng_u32(&rng) % 96 + 32; /* printable, and DEL */
            junk[k] = (char)c;
            if (junk[k] == ' ' || junk[k] == 127)
                junk[k] = manta_rng_u32(&rng) % 2 ? '&' : '=';
        }
        junk[n] = 0;
        const char *method = manta_rng_u32(&rng) % 5 ? "GET" : "PUT";
        snprintf(req, sizeof req, "%s %s%s HTTP/1.0\r\n\r\n", method,
                 paths[manta_rng_u32(&rng) % (sizeof paths / sizeof paths[0])], junk);
        if (strstr(req, "/api/events") && !strncmp(req, "GET", 3))
            continue; /* a stream that would answer 200 and go on */
        code = http(port, req, body, sizeof body);
        if (!(code == 0 || code == 200 || code == 400 || code == 404 || code == 405 ||
              code == 413 || code == 414 || code == 431))
            fail_msg("request '%s': status %d", req, code);
    }
    assert_int_equal(get(port, "/healthz", body, sizeof body), 200);
    mon_server_stop(s);

    /* with a token: 401 without it or with a wrong one, 200 with it (header or query) */
    o.token = "s3cret-token";
    assert_int_equal(mon_server_start(&o, dirs, 1, &s, &err), MANTA_OK);
    port = mon_server_port(s);
    assert_int_equal(get(port, "/api/run", body, sizeof body), 401);
    assert_int_equal(get(port, "/metrics", body, sizeof body), 401);
    assert_int_equal(get(port, "/api/run?token=s3cret-tokem", body, sizeof body), 401);
    assert_int_equal(get(port, "/api/run?token=s3cret-token", body, sizeof body), 200);
    assert_int_equal(get(port, "/healthz", body, sizeof body), 200);
    assert_int_equal(http(port,
                          "GET /metrics HTTP/1.0\r\nAuthorization: Bearer s3cret-token\r\n\r\n",
                          body, sizeof body),
                     200);
    assert_int_equal(http(port, "GET /metrics HTTP/1.0\r\nAuthorization: Bearer s3cret\r\n\r\n",
                          body, sizeof body),
                     401);
    mon_server_stop(s);

    /* beyond loopback without a token, bad addresses, bad counts: refused */
    o.token = NULL;
    o.listen = "0.0.0.0:0";
    assert_int_equal(mon_server_start(&o, dirs, 1, &s, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "MANTA_MONITOR_TOKEN"));
    assert_null(s);
    o.token = "short";
    assert_int_equal(mon_server_start(&o, dirs, 1, &s, &err), MANTA_ERR_INVALID_ARG);
    o.token = NULL;
    const char *bad[] = {"",       "host:", ":80", "1.2.3:80", "127.0.0.1:70000", "127.0.0.1:8a",
                         "999999", "::1:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.listen = bad[i];
        assert_int_equal(mon_server_start(&o, dirs, 1, &s, &err), MANTA_ERR_INVALID_ARG);
    }
    o.listen = "127.0.0.1:0";
    assert_int_equal(mon_server_start(&o, dirs, 0, &s, &err), MANTA_ERR_INVALID_ARG);
    /* a port in use */
    assert_int_equal(mon_server_start(&o, dirs, 1, &s, &err), MANTA_OK);
    char taken[64];
    snprintf(taken, sizeof taken, "127.0.0.1:%d", mon_server_port(s));
    mon_server *s2 = NULL;
    o.listen = taken;
    assert_int_equal(mon_server_start(&o, dirs, 1, &s2, &err), MANTA_ERR_IO);
    assert_null(s2);
    mon_server_stop(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
