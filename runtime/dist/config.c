/* Job configuration from torchrun / SLURM / MANTA_* variables (see config.h). */
#include "dist/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/env.h"

void dist_config_init(dist_config *c)
{
    memset(c, 0, sizeof *c);
    c->rank = 0;
    c->world_size = 1;
    snprintf(c->master_addr, sizeof c->master_addr, "127.0.0.1");
    c->master_port = 29500;
    snprintf(c->job_id, sizeof c->job_id, "manta");
    c->timeout_s = 60.0;
    c->frame_mac = DIST_MAC_HEADER;
}

const char *dist_wire_name(dist_wire w)
{
    static const char *const names[DIST_WIRE_COUNT] = {"none", "fp16", "bf16", "int8", "fixed"};
    return (unsigned)w < DIST_WIRE_COUNT ? names[w] : "?";
}

/* The process environment: MANTA_* variables through their table (core/env.h), the others
 * (torchrun's, SLURM's) by name. */
static const char *sys_getenv(void *ctx, const char *name)
{
    (void)ctx;
    int v = manta_env_find(name);
    return v >= 0 ? manta_env_get((manta_env_var)v) : getenv(name);
}

static manta_status parse_int(const char *name, const char *v, long lo, long hi, int *out,
                              manta_err *err)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s='%s': expected an integer in [%ld, %ld]", name, v, lo, hi);
    *out = (int)x;
    return MANTA_OK;
}

static int printable(const char *s)
{
    for (; *s; s++)
        if (!isgraph((unsigned char)*s))
            return 0;
    return 1;
}

static manta_status set_job(dist_config *c, const char *name, const char *v, manta_err *err)
{
    if (!v[0] || strlen(v) >= sizeof c->job_id || !printable(v))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: job id must be 1..%d printable characters without spaces", name,
                             DIST_JOB_MAX - 1);
    snprintf(c->job_id, sizeof c->job_id, "%s", v);
    return MANTA_OK;
}

/* A MANTA_* variable through @p env, by its name in the table. */
static const char *menv(dist_getenv_fn env, void *ctx, manta_env_var v)
{
    return env(ctx, manta_env_name(v));
}

manta_status dist_parse_nnodes(const char *what, const char *v, int *min, int *max, manta_err *err)
{
    char *end;
    long a = strtol(v, &end, 10), b = a;
    if (end != v && *end == ':') {
        const char *q = end + 1;
        b = strtol(q, &end, 10);
        if (end == q)
            end = (char *)v;
    }
    if (end == v || *end || a < 1 || b < a || b > DIST_MAX_WORLD)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s='%s': expected N or MIN:MAX with 1 <= MIN <= MAX <= %d", what, v,
                             DIST_MAX_WORLD);
    *min = (int)a;
    *max = (int)b;
    return MANTA_OK;
}

manta_status dist_config_from_env(dist_config *c, dist_getenv_fn env, void *ctx, manta_err *err)
{
    if (!env)
        env = sys_getenv;
    const char *v;
    manta_status st;
#define INT_VAR(var, lo, hi, field)                                   \
    if ((v = env(ctx, var)) != NULL &&                                \
        (st = parse_int(var, v, lo, hi, &c->field, err)) != MANTA_OK) \
        return st;
    /* SLURM first, so that torchrun-style variables win. */
    INT_VAR("SLURM_PROCID", 0, DIST_MAX_WORLD - 1, rank)
    INT_VAR("SLURM_NTASKS", 1, DIST_MAX_WORLD, world_size)
    INT_VAR("SLURM_LOCALID", 0, DIST_MAX_WORLD - 1, local_rank)
    if ((v = env(ctx, "SLURM_JOB_NODELIST")) != NULL || (v = env(ctx, "SLURM_NODELIST")) != NULL) {
        manta_err e2;
        st = dist_nodelist_host(v, 0, c->master_addr, sizeof c->master_addr, NULL, &e2);
        if (st != MANTA_OK)
            return manta_err_set(err, st, "SLURM_JOB_NODELIST: %s", e2.msg);
    }
    if ((v = env(ctx, "SLURM_JOB_ID")) != NULL &&
        (st = set_job(c, "SLURM_JOB_ID", v, err)) != MANTA_OK)
        return st;
    INT_VAR("RANK", 0, DIST_MAX_WORLD - 1, rank)
    INT_VAR("WORLD_SIZE", 1, DIST_MAX_WORLD, world_size)
    INT_VAR("LOCAL_RANK", 0, DIST_MAX_WORLD - 1, local_rank)
    INT_VAR("MASTER_PORT", 1, 65535, master_port)
#undef INT_VAR
    if ((v = env(ctx, "MASTER_ADDR")) != NULL) {
        if (!v[0] || strlen(v) >= sizeof c->master_addr || !printable(v))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "MASTER_ADDR='%s': not a host name",
                                 v);
        snprintf(c->master_addr, sizeof c->master_addr, "%s", v);
    }
    if ((v = env(ctx, "PET_NNODES")) != NULL &&
        (st = dist_parse_nnodes("PET_NNODES", v, &c->min_nodes, &c->max_nodes, err)) != MANTA_OK)
        return st;
    if ((v = env(ctx, "TORCHELASTIC_RUN_ID")) != NULL &&
        (st = set_job(c, "TORCHELASTIC_RUN_ID", v, err)) != MANTA_OK)
        return st;
    if ((v = menv(env, ctx, MANTA_ENV_JOB_ID)) != NULL &&
        (st = set_job(c, "MANTA_JOB_ID", v, err)) != MANTA_OK)
        return st;
    if ((v = menv(env, ctx, MANTA_ENV_IFACE)) != NULL) {
        if (!v[0] || strlen(v) >= sizeof c->iface)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "MANTA_IFACE='%s': not an interface name", v);
        snprintf(c->iface, sizeof c->iface, "%s", v);
    }
    if ((v = menv(env, ctx, MANTA_ENV_TIMEOUT)) != NULL) {
        char *end;
        double t = strtod(v, &end);
        if (end == v || *end || !(t > 0 && t <= 86400))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "MANTA_TIMEOUT='%s': expected seconds in (0, 86400]", v);
        c->timeout_s = t;
    }
    if ((v = menv(env, ctx, MANTA_ENV_SOCKBUF)) != NULL) {
        char *end;
        long b = strtol(v, &end, 10);
        if (end == v || *end || b < 0 || b > (1L << 30))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "MANTA_SOCKBUF='%s': expected bytes in [0, 2^30]", v);
        c->sock_buf = (int)b;
    }
    if ((v = menv(env, ctx, MANTA_ENV_RING_ORDER)) != NULL) {
        if (strlen(v) >= sizeof c->ring_order)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "MANTA_RING_ORDER: longer than %zu characters",
                                 sizeof c->ring_order - 1);
        snprintf(c->ring_order, sizeof c->ring_order, "%s", v);
    }
    if ((v = menv(env, ctx, MANTA_ENV_FRAME_MAC)) != NULL) {
        if (!strcmp(v, "header"))
            c->frame_mac = DIST_MAC_HEADER;
        else if (!strcmp(v, "full"))
            c->frame_mac = DIST_MAC_FULL;
        else
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "MANTA_FRAME_MAC='%s': expected 'header' or 'full'", v);
    }
    if ((v = menv(env, ctx, MANTA_ENV_SECRET_FILE)) != NULL &&
        (st = dist_config_secret_file(c, v, err)) != MANTA_OK)
        return st;
    if ((v = menv(env, ctx, MANTA_ENV_SECRET)) != NULL) {
        manta_err e2;
        if ((st = dist_config_set_secret(c, v, strlen(v), &e2)) != MANTA_OK)
            return manta_err_set(err, st, "MANTA_SECRET: %s", e2.msg);
    }
    return MANTA_OK;
}

manta_status dist_config_set_secret(dist_config *c, const void *secret, size_t len, manta_err *err)
{
    if (len < 8)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "the shared secret is %zu bytes; at least 8 required "
                             "(32 random bytes recommended)",
                             len);
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "libsodium failed to initialise");
    static const unsigned char domain[] = "manta-dist-secret-v1";
    crypto_generichash(c->key, sizeof c->key, secret, len, domain, sizeof domain - 1);
    c->has_key = 1;
    return MANTA_OK;
}

manta_status dist_config_secret_file(dist_config *c, const char *path, manta_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return manta_err_set(err, MANTA_ERR_IO, "secret file %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return manta_err_set(err, MANTA_ERR_IO, "secret file %s: not a regular file", path);
    }
    if (sb.st_mode & (S_IRWXG | S_IRWXO)) {
        close(fd);
        return manta_err_set(
            err, MANTA_ERR_INVALID_ARG,
            "secret file %s is accessible by group or others (mode %03o): chmod 600 it", path,
            (unsigned)(sb.st_mode & 0777));
    }
    unsigned char buf[4097];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return manta_err_set(err, MANTA_ERR_IO, "secret file %s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == sizeof buf)
            break;
    }
    close(fd);
    if (n > 4096) {
        sodium_memzero(buf, sizeof buf);
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "secret file %s: longer than 4096 bytes",
                             path);
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    manta_err e2;
    manta_status st = dist_config_set_secret(c, buf, n, &e2);
    sodium_memzero(buf, sizeof buf);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "secret file %s: %s", path, e2.msg);
    return MANTA_OK;
}

manta_status dist_config_check(const dist_config *c, manta_err *err)
{
    if (c->world_size < 1 || c->world_size > DIST_MAX_WORLD)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "world size %d out of range [1, %d]",
                             c->world_size, DIST_MAX_WORLD);
    if (c->rank < 0 || c->rank >= c->world_size)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "rank %d out of range for world size %d",
                             c->rank, c->world_size);
    if (c->master_port < 1 || c->master_port > 65535)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "master port %d out of range [1, 65535]",
                             c->master_port);
    if (c->ring_port < 0 || c->ring_port > 65535)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "ring port %d out of range [0, 65535]",
                             c->ring_port);
    if (!(c->timeout_s > 0))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "timeout %g s must be positive",
                             c->timeout_s);
    if (!c->job_id[0] || !printable(c->job_id))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "job id must be printable and non-empty");
    if ((unsigned)c->wire >= DIST_WIRE_COUNT)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "unknown gradient encoding %d",
                             (int)c->wire);
    if (c->world_size > 1 && !c->has_key)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "a shared secret is required for world size %d: set MANTA_SECRET or "
                             "MANTA_SECRET_FILE (or --secret-file)",
                             c->world_size);
    return MANTA_OK;
}

/* ---- SLURM host lists ---------------------------------------------------------------------------- */

#define NL_MAX_GROUPS 8
#define NL_MAX_RANGES 64
#define NL_MAX_HOSTS ((size_t)1 << 24)

typedef struct nl_range {
    unsigned long lo, hi;
    int width;
} nl_range;

typedef struct nl_group {
    const char *lit; /* literal text before the bracket */
    size_t lit_len;
    nl_range r[NL_MAX_RANGES];
    int nr;
    size_t size;
} nl_group;

typedef struct nl_item {
    nl_group g[NL_MAX_GROUPS];
    int ng;
    const char *tail; /* literal after the last bracket */
    size_t tail_len;
    size_t size;
} nl_item;

static manta_status nl_parse_number(const char **p, const char *end, unsigned long *v, int *width)
{
    const char *s = *p;
    if (s >= end || !isdigit((unsigned char)*s))
        return MANTA_ERR_FORMAT;
    unsigned long x = 0;
    int w = 0;
    while (s < end && isdigit((unsigned char)*s)) {
        if (x > 100000000UL)
            return MANTA_ERR_FORMAT;
        x = x * 10 + (unsigned long)(*s - '0');
        s++;
        w++;
    }
    *v = x;
    *width = w;
    *p = s;
    return MANTA_OK;
}

/* Parse one comma-free (at top level) item [s, end). */
static manta_status nl_parse_item(const char *s, const char *end, nl_item *it, manta_err *err)
{
    memset(it, 0, sizeof *it);
    it->size = 1;
    const char *lit = s;
    const char *p = s;
    while (p < end) {
        if (*p == ']')
            return manta_err_set(err, MANTA_ERR_FORMAT, "unmatched ']'");
        if (*p != '[') {
            if (!isgraph((unsigned char)*p))
                return manta_err_set(err, MANTA_ERR_FORMAT, "unexpected character 0x%02x",
                                     (unsigned)(unsigned char)*p);
            p++;
            continue;
        }
        if (it->ng == NL_MAX_GROUPS)
            return manta_err_set(err, MANTA_ERR_FORMAT, "more than %d bracket groups in one name",
                                 NL_MAX_GROUPS);
        nl_group *g = &it->g[it->ng++];
        g->lit = lit;
        g->lit_len = (size_t)(p - lit);
        p++; /* '[' */
        for (;;) {
            if (g->nr == NL_MAX_RANGES)
                return manta_err_set(err, MANTA_ERR_FORMAT, "more than %d ranges in one bracket",
                                     NL_MAX_RANGES);
            nl_range *r = &g->r[g->nr++];
            if (nl_parse_number(&p, end, &r->lo, &r->width) != MANTA_OK)
                return manta_err_set(err, MANTA_ERR_FORMAT, "expected a number inside '[...]'");
            r->hi = r->lo;
            if (p < end && *p == '-') {
                p++;
                int w2;
                if (nl_parse_number(&p, end, &r->hi, &w2) != MANTA_OK || r->hi < r->lo)
                    return manta_err_set(err, MANTA_ERR_FORMAT,
                                         "bad range in '[...]' (need lo-hi with lo <= hi)");
            }
            g->size += r->hi - r->lo + 1;
            if (g->size > NL_MAX_HOSTS)
                return manta_err_set(err, MANTA_ERR_FORMAT, "range too large");
            if (p < end && *p == ',') {
                p++;
                continue;
            }
            if (p < end && *p == ']') {
                p++;
                break;
            }
            return manta_err_set(err, MANTA_ERR_FORMAT, "unterminated '['");
        }
        it->size *= g->size;
        if (it->size > NL_MAX_HOSTS)
            return manta_err_set(err, MANTA_ERR_FORMAT, "host list too large");
        lit = p;
    }
    it->tail = lit;
    it->tail_len = (size_t)(end - lit);
    if (it->ng == 0 && it->tail_len == 0)
        return manta_err_set(err, MANTA_ERR_FORMAT, "empty host name");
    return MANTA_OK;
}

static manta_status nl_emit(const nl_item *it, size_t idx, char *out, size_t cap, manta_err *err)
{
    size_t digit[NL_MAX_GROUPS];
    for (int i = it->ng - 1; i >= 0; i--) {
        digit[i] = idx % it->g[i].size;
        idx /= it->g[i].size;
    }
    size_t used = 0;
    for (int i = 0; i < it->ng; i++) {
        const nl_group *g = &it->g[i];
        size_t d = digit[i];
        int k = 0;
        while (d > g->r[k].hi - g->r[k].lo) {
            d -= g->r[k].hi - g->r[k].lo + 1;
            k++;
        }
        int w = snprintf(out + used, cap - used, "%.*s%0*lu", (int)g->lit_len, g->lit,
                         g->r[k].width, g->r[k].lo + d);
        if (w < 0 || (size_t)w >= cap - used)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "host name longer than %zu bytes",
                                 cap - 1);
        used += (size_t)w;
    }
    int w = snprintf(out + used, cap - used, "%.*s", (int)it->tail_len, it->tail);
    if (w < 0 || (size_t)w >= cap - used)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "host name longer than %zu bytes",
                             cap - 1);
    return MANTA_OK;
}

manta_status dist_nodelist_host(const char *list, size_t index, char *out, size_t cap,
                                size_t *count, manta_err *err)
{
    if (!list || !list[0])
        return manta_err_set(err, MANTA_ERR_FORMAT, "empty host list");
    if (cap == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "no room for the host name");
    nl_item *it = malloc(sizeof *it);
    if (!it)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "host list: out of memory");
    size_t total = 0;
    int found = 0;
    manta_status st = MANTA_OK;
    const char *s = list;
    while (st == MANTA_OK) {
        const char *e = s;
        int depth = 0;
        while (*e && (depth > 0 || *e != ',')) {
            if (*e == '[')
                depth++;
            else if (*e == ']')
                depth--;
            e++;
        }
        manta_err e2;
        st = nl_parse_item(s, e, it, &e2);
        if (st != MANTA_OK) {
            manta_err_set(err, st, "host list '%s': %s", list, e2.msg);
            break;
        }
        if (!found && index < total + it->size) {
            st = nl_emit(it, index - total, out, cap, err);
            found = 1;
        }
        total += it->size;
        if (total > NL_MAX_HOSTS) {
            st = manta_err_set(err, MANTA_ERR_FORMAT, "host list '%s': too many hosts", list);
            break;
        }
        if (!*e)
            break;
        s = e + 1;
        if (!*s)
            st = manta_err_set(err, MANTA_ERR_FORMAT, "host list '%s': trailing comma", list);
    }
    free(it);
    if (st != MANTA_OK)
        return st;
    if (count)
        *count = total;
    if (!found)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "host index %zu out of range (the list has %zu hosts)", index, total);
    return MANTA_OK;
}
