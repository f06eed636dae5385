/* The training monitor's HTTP server (server.h): libmicrohttpd, one thread per
 * connection; start and stop, the answers, the event streams. The poll thread that tails
 * the runs' metrics.jsonl is server_poll.c's. */
#include "monitor_http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>
#include <sodium.h>

#include "core/clock.h"
#include "monitor/answers.h"
#include "monitor/prometheus.h"
#include "monitor_http/assets.h"
#include "monitor_http/server_impl.h"

#define URL_MAX 256      /* longest path */
#define ARG_MAX_LEN 64   /* longest query value we read (token: 256) */
#define RECORDS_MAX 5000 /* most records one /api/metrics answer holds */
#define SSE_RECORDS 1000 /* most records one event holds */
#define SSE_KEEPALIVE_S 15.0

/* "[ADDR:]PORT" into an IPv4 address and a port. */
static manta_status parse_listen(const char *s, struct sockaddr_in *sa, char *addr, size_t cap,
                                 manta_err *err)
{
    const char *colon = s ? strrchr(s, ':') : NULL;
    const char *ps = colon ? colon + 1 : s;
    char host[64] = "127.0.0.1";
    if (!s || !*ps)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "monitor: listen address '%s' is not [ADDR:]PORT", s ? s : "(null)");
    if (colon) {
        size_t hl = (size_t)(colon - s);
        if (hl == 0 || hl >= sizeof host)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "monitor: listen address '%s' is not [ADDR:]PORT", s);
        memcpy(host, s, hl);
        host[hl] = 0;
        if (!strcmp(host, "localhost"))
            snprintf(host, sizeof host, "127.0.0.1");
    }
    long port = 0;
    for (const char *p = ps; *p; p++) {
        if (*p < '0' || *p > '9' || p - ps > 5)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "monitor: port '%s' of '%s' is not a number in 0-65535", ps, s);
        port = port * 10 + (*p - '0');
    }
    if (port > 65535)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "monitor: port '%s' of '%s' is not a number in 0-65535", ps, s);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "monitor: '%s' of '%s' is not an IPv4 address or 'localhost'", host,
                             s);
    snprintf(addr, cap, "%s", host);
    return MANTA_OK;
}

/* ---- answers ---- */

static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned code, const char *type,
                                char *body, size_t n, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
    if (code == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"manta monitor\"");
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, const char *text)
{
    return send_buf(c, code, "text/plain; charset=utf-8", (char *)text, strlen(text),
                    MHD_RESPMEM_PERSISTENT);
}

/* The text of @p b as the answer (ownership passes to MHD); 500 when an append failed. */
static enum MHD_Result send_strbuf(struct MHD_Connection *c, const char *type, manta_strbuf *b)
{
    if (b->oom || !b->p) {
        manta_strbuf_free(b);
        return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    char *p = b->p;
    size_t n = b->n;
    *b = (manta_strbuf){0};
    return send_buf(c, MHD_HTTP_OK, type, p, n, MHD_RESPMEM_MUST_FREE);
}

/* Query value @p key: absent (NULL, true), or its text when at most @p max bytes of
 * [0-9] (digits) or any printable byte; false when malformed. */
static bool query_arg(struct MHD_Connection *c, const char *key, size_t max, bool digits,
                      const char **out)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
    *out = v;
    if (!v)
        return true;
    size_t n = strlen(v);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (digits ? (v[i] < '0' || v[i] > '9') : ((unsigned char)v[i] < 0x21 || v[i] == 0x7f))
            return false;
    return true;
}

/* A strictly decimal query value in [0, hi] (absent: @p def); false when malformed. */
static bool query_u64(struct MHD_Connection *c, const char *key, uint64_t hi, uint64_t def,
                      uint64_t *out)
{
    const char *v;
    if (!query_arg(c, key, 19, true, &v))
        return false;
    if (!v) {
        *out = def;
        return true;
    }
    uint64_t x = 0;
    for (; *v; v++)
        x = x * 10 + (uint64_t)(*v - '0');
    if (x > hi)
        return false;
    *out = x;
    return true;
}

static bool authorised(mon_server *s, struct MHD_Connection *c)
{
    if (!s->need_token)
        return true;
    const char *tok = NULL;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h && !strncmp(h, "Bearer ", 7))
        tok = h + 7;
    else if (!query_arg(c, "token", 256, false, &tok))
        return false;
    if (!tok)
        return false;
    size_t n = strlen(tok);
    if (n > 256)
        return false;
    unsigned char hsh[crypto_generichash_BYTES];
    crypto_generichash(hsh, sizeof hsh, (const unsigned char *)tok, n, NULL, 0);
    return sodium_memcmp(hsh, s->token_hash, sizeof hsh) == 0;
}

/* ---- server-sent events ---- */

typedef struct sse {
    mon_server *s;
    int run;
    uint64_t since;
    double t0, last_send;
    char *buf;
    size_t n, pos;
} sse;

static bool server_stopping(mon_server *s)
{
    pthread_mutex_lock(&s->mu);
    bool st = s->stop;
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* Wait up to one second for the next poll (or the stop). */
static void wait_tick(mon_server *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += 1;
    pthread_mutex_lock(&s->mu);
    unsigned long long t = s->tick;
    while (!s->stop && s->tick == t)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&s->mu);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    sse *e = cls;
    for (;;) {
        if (e->pos < e->n) {
            size_t k = e->n - e->pos < max ? e->n - e->pos : max;
            memcpy(out, e->buf + e->pos, k);
            e->pos += k;
            return (ssize_t)k;
        }
        free(e->buf);
        e->buf = NULL;
        e->n = e->pos = 0;
        double now = manta_now();
        if (server_stopping(e->s) || now - e->t0 > e->s->o.events_max_s)
            return MHD_CONTENT_READER_END_OF_STREAM;
        run_slot *r = &e->s->runs[e->run];
        manta_strbuf b = {0};
        pthread_mutex_lock(&r->mu);
        if (mon_model_last_seq(r->m) > e->since) {
            manta_strbuf rec = {0};
            mon_model_records_json(r->m, e->since, SSE_RECORDS, &rec);
            if (!rec.oom && rec.p) {
                const char *nx = NULL; /* the answer's own "next", its last member */
                for (const char *q = strstr(rec.p, "\"next\":"); q; q = strstr(q + 1, "\"next\":"))
                    nx = q;
                uint64_t next = nx ? strtoull(nx + 7, NULL, 10) : mon_model_last_seq(r->m);
                for (size_t i = 0; i < rec.n; i++)
                    if (rec.p[i] == '\n' || rec.p[i] == '\r')
                        rec.p[i] = ' ';
                manta_strbuf_printf(&b, "event: records\nid: %llu\ndata: %s\n\n",
                                    (unsigned long long)next, rec.p);
                e->since = next;
            }
            manta_strbuf_free(&rec);
        }
        pthread_mutex_unlock(&r->mu);
        if (!b.p && now - e->last_send > SSE_KEEPALIVE_S)
            manta_strbuf_printf(&b, ": keep-alive\n\n");
        if (b.oom) {
            manta_strbuf_free(&b);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (b.p) {
            e->buf = b.p;
            e->n = b.n;
            e->last_send = now;
            continue;
        }
        wait_tick(e->s);
    }
}

static void sse_free(void *cls)
{
    sse *e = cls;
    free(e->buf);
    free(e);
}

static enum MHD_Result send_events(mon_server *s, struct MHD_Connection *c, int run, uint64_t since)
{
    const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    if (last && *last && strlen(last) <= 19 && strspn(last, "0123456789") == strlen(last))
        since = strtoull(last, NULL, 10);
    sse *e = calloc(1, sizeof *e);
    if (!e)
        return send_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
    *e = (sse){.s = s, .run = run, .since = since, .t0 = manta_now()};
    e->last_send = e->t0;
    static const char hello[] = "retry: 2000\n: manta monitor\n\n";
    e->buf = malloc(sizeof hello);
    if (e->buf) {
        memcpy(e->buf, hello, sizeof hello - 1);
        e->n = sizeof hello - 1;
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, e, sse_free);
    if (!r) {
        sse_free(e);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* ---- routing ---- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)con_cls;
    mon_server *s = cls;
    if (upload_size && *upload_size) { /* a body we do not read: refuse at once */
        *upload_size = 0;
        return MHD_NO;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed (GET, HEAD)\n");
    if (!url || url[0] != '/' || strlen(url) > URL_MAX)
        return send_text(c, MHD_HTTP_BAD_REQUEST, "bad request: path\n");
    if (!strcmp(url, "/healthz"))
        return send_text(c, MHD_HTTP_OK, "ok\n");
    if (!authorised(s, c))
        return send_text(c, MHD_HTTP_UNAUTHORIZED,
                         "unauthorised: this monitor needs its token (Authorization: Bearer, or "
                         "?token=)\n");
    const char *path = !strcmp(url, "/") ? "/index.html" : url;
    const mon_asset *a = mon_asset_find(path);
    if (a)
        return send_buf(c, MHD_HTTP_OK, a->type, (char *)a->data, a->size, MHD_RESPMEM_PERSISTENT);
    bool api = !strncmp(url, "/api/", 5);
    if (!api && strcmp(url, "/metrics") != 0)
        return send_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
    uint64_t run = 0, since = 0, limit = RECORDS_MAX;
    if (!query_u64(c, "run", (uint64_t)s->n - 1, 0, &run))
        return send_text(c, MHD_HTTP_BAD_REQUEST,
                         "bad request: run must be the index of a run (0 to runs - 1)\n");
    if (!query_u64(c, "since", UINT64_MAX / 2, 0, &since))
        return send_text(c, MHD_HTTP_BAD_REQUEST,
                         "bad request: since must be a record number (decimal digits)\n");
    if (!query_u64(c, "limit", RECORDS_MAX, RECORDS_MAX, &limit) || limit == 0)
        return send_text(c, MHD_HTTP_BAD_REQUEST, "bad request: limit must be in 1-5000\n");
    double now = manta_wall_time();
    manta_strbuf b = {0};
    run_slot *r = &s->runs[run];
    if (!strcmp(url, "/metrics")) {
        const mon_model *ms[MON_MAX_RUNS];
        for (int i = 0; i < s->n; i++) {
            pthread_mutex_lock(&s->runs[i].mu);
            ms[i] = s->runs[i].m;
        }
        mon_prometheus(ms, s->n, now, &b);
        for (int i = s->n - 1; i >= 0; i--)
            pthread_mutex_unlock(&s->runs[i].mu);
        return send_strbuf(c, "text/plain; version=0.0.4; charset=utf-8", &b);
    }
    if (!strcmp(url, "/api/runs")) {
        manta_strbuf_printf(&b, "{\"runs\":[");
        for (int i = 0; i < s->n; i++) {
            pthread_mutex_lock(&s->runs[i].mu);
            if (i)
                manta_strbuf_printf(&b, ",");
            mon_model_run_json(s->runs[i].m, now, &b);
            pthread_mutex_unlock(&s->runs[i].mu);
        }
        manta_strbuf_printf(&b, "]}");
    } else if (!strcmp(url, "/api/run")) {
        pthread_mutex_lock(&r->mu);
        mon_model_run_json(r->m, now, &b);
        pthread_mutex_unlock(&r->mu);
    } else if (!strcmp(url, "/api/metrics")) {
        pthread_mutex_lock(&r->mu);
        mon_model_records_json(r->m, since, (size_t)limit, &b);
        pthread_mutex_unlock(&r->mu);
    } else if (!strcmp(url, "/api/ranks")) {
        pthread_mutex_lock(&r->mu);
        mon_model_ranks_json(r->m, now, &b);
        pthread_mutex_unlock(&r->mu);
    } else if (!strcmp(url, "/api/events")) {
        return send_events(s, c, (int)run, since);
    } else {
        return send_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
    }
    return send_strbuf(c, "application/json", &b);
}

/* ---- start and stop ---- */

static void run_name(const char *dir, char *out, size_t cap)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(out, cap, "%.*s", (int)(n - b), dir + b);
    if (!out[0])
        snprintf(out, cap, "run");
}

void mon_server_stop(mon_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->d)
        MHD_stop_daemon(s->d);
    if (s->poller_started)
        pthread_join(s->poller, NULL);
    for (int i = 0; s->runs && i < s->n; i++) {
        mon_model_free(s->runs[i].m);
        pthread_mutex_destroy(&s->runs[i].mu);
    }
    free(s->runs);
    free(s->on_alert);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    sodium_memzero(s->token_hash, sizeof s->token_hash);
    free(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    (void)fmt;
    (void)ap; /* connection-level problems (clients closing early) are not errors of the run */
}

manta_status mon_server_start(const mon_options *o, const char *const *dirs, int n,
                              mon_server **out, manta_err *err)
{
    if (out)
        *out = NULL;
    if (!o || !dirs || !out || n < 1 || n > MON_MAX_RUNS)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "monitor: 1 to %d run folders, got %d",
                             MON_MAX_RUNS, n);
    if (!(o->poll_s > 0 && o->poll_s <= 60) || o->max_connections < 1 ||
        o->per_ip_connections < 1 || o->timeout_s < 1 || !(o->events_max_s > 0))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "monitor: options out of range (poll %g s in (0, 60], connections "
                             "%d >= 1, per address %d >= 1, timeout %u s >= 1)",
                             o->poll_s, o->max_connections, o->per_ip_connections, o->timeout_s);
    struct sockaddr_in sa;
    char addr[64];
    MANTA_TRY(parse_listen(o->listen, &sa, addr, sizeof addr, err));
    bool loopback = (ntohl(sa.sin_addr.s_addr) >> 24) == 127;
    size_t tl = o->token ? strlen(o->token) : 0;
    if (tl > 0 && (tl < MON_TOKEN_MIN || tl > 256))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "monitor: the token (MANTA_MONITOR_TOKEN) must have %d to 256 "
                             "characters, it has %zu",
                             MON_TOKEN_MIN, tl);
    if (!loopback && tl == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "monitor: listening on %s (beyond loopback) needs a token: set "
                             "MANTA_MONITOR_TOKEN (at least %d characters)",
                             o->listen, MON_TOKEN_MIN);
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "monitor: libsodium failed to start");
    mon_server *s = calloc(1, sizeof *s);
    if (!s)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "monitor: out of memory");
    s->o = *o;
    s->o.listen = NULL;
    s->o.token = NULL;
    s->o.on_alert = NULL;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    snprintf(s->addr, sizeof s->addr, "%s", addr);
    s->need_token = tl > 0;
    if (s->need_token)
        crypto_generichash(s->token_hash, sizeof s->token_hash, (const unsigned char *)o->token, tl,
                           NULL, 0);
    s->runs = calloc((size_t)n, sizeof *s->runs);
    s->on_alert = o->on_alert && o->on_alert[0] ? strdup(o->on_alert) : NULL;
    manta_status st = MANTA_OK;
    if (!s->runs || (o->on_alert && o->on_alert[0] && !s->on_alert))
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "monitor: out of memory");
    for (int i = 0; st == MANTA_OK && i < n; i++) {
        run_slot *r = &s->runs[i];
        if (!dirs[i] || !dirs[i][0] || strlen(dirs[i]) >= sizeof r->dir) {
            st = manta_err_set(err, MANTA_ERR_INVALID_ARG, "monitor: run folder %d: bad path",
                               i + 1);
            break;
        }
        snprintf(r->dir, sizeof r->dir, "%s", dirs[i]);
        snprintf(r->path, sizeof r->path, "%s/metrics.jsonl", dirs[i]);
        run_name(dirs[i], r->name, sizeof r->name);
        for (int k = 0; k < i; k++) /* the same name twice: add the position */
            if (!strcmp(s->runs[k].name, r->name)) {
                size_t l = strlen(r->name);
                snprintf(r->name + (l < 100 ? l : 100), sizeof r->name - (l < 100 ? l : 100), "#%d",
                         i + 1);
                break;
            }
        pthread_mutex_init(&r->mu, NULL);
        s->n = i + 1;
        st = mon_model_create(r->name, &o->alerts, &r->m, err);
    }
    if (st != MANTA_OK) {
        mon_server_stop(s);
        return st;
    }
    mon_server_poll_now(s); /* the files once, before the first request */
    s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                MHD_USE_POLL | MHD_USE_ERROR_LOG,
                            0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o->per_ip_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, 64u, MHD_OPTION_EXTERNAL_LOGGER,
                            mhd_log, NULL, MHD_OPTION_END);
    if (!s->d) {
        mon_server_stop(s);
        return manta_err_set(err, MANTA_ERR_IO,
                             "monitor: cannot listen on %s:%u (address in use, or not this "
                             "machine's?)",
                             addr, (unsigned)ntohs(sa.sin_port));
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? (int)di->port : (int)ntohs(sa.sin_port);
    if (pthread_create(&s->poller, NULL, mon_poller, s) != 0) {
        mon_server_stop(s);
        return manta_err_set(err, MANTA_ERR_IO, "monitor: cannot start the poll thread");
    }
    s->poller_started = true;
    *out = s;
    return MANTA_OK;
}

int mon_server_port(const mon_server *s) { return s->port; }

void mon_server_url(const mon_server *s, char *buf, size_t cap)
{
    const char *a = !strcmp(s->addr, "0.0.0.0") ? "127.0.0.1" : s->addr;
    snprintf(buf, cap, "http://%s:%d/", a, s->port);
}
