/* manta train --elastic: generations of ranks formed by a manta rendezvous service
 * (dist/elastic.h). Each rank keeps its state after the last two completed steps as
 * snapshot files; when the ring fails (a rank died or stalled) the survivors go back to the
 * rendezvous, which forms the next generation without the failed rank, and every rank
 * continues from the state after the step all of them completed; a new rank receives that
 * state from rank 0 over the new ring, checked by its hash. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "common/provenance.h"
#include "core/clock.h"
#include "core/fileio.h"
#include "dist/elastic.h"
#include "train_run.h"

/* One snapshot: the state after `step` steps in DIR/step-N.ckpt. */
typedef struct snap {
    long step; /* -1: none */
    uint64_t bytes;
    unsigned char hash[DIST_HASH_BYTES];
} snap;

struct train_elastic {
    uint64_t id, gen;
    int rank;              /* in generation gen */
    char dir[1100];        /* this process's snapshots */
    snap s[2];             /* latest, previous */
    long fresh_step;       /* >= 0: the state is still the one the process started with */
    uint64_t received;     /* bytes of state received */
    double reform_started; /* when the last ring failure was seen (0: none) */
    long first_step;       /* the step this process started at */
    long stop_after;       /* --stop-after of the command line (0: none) */
    int lacks_state;       /* told to receive the state, not received yet: it holds none */
    int world;             /* ranks of generation gen (0: none yet) */
    bool joined;           /* the last ring was left for a new rank (not for a failure) */
    int watch_fd;          /* rank 0: the service's notices of waiting new ranks */
    unsigned char watch_key[DIST_KEY_BYTES];
};

static void snap_path(const struct train_elastic *el, long step, char *out, size_t cap)
{
    snprintf(out, cap, "%s/step-%ld.ckpt", el->dir, step);
}

/* BLAKE2b-256 and size of file @p path. */
static manta_status hash_file(const char *path, uint64_t *bytes, unsigned char *h, manta_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return manta_err_set(err, MANTA_ERR_IO, "%s: %s", path, strerror(errno));
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, DIST_HASH_BYTES);
    unsigned char buf[1 << 16];
    size_t n;
    *bytes = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        crypto_generichash_update(&st, buf, n);
        *bytes += n;
    }
    int bad = ferror(f);
    fclose(f);
    crypto_generichash_final(&st, h, DIST_HASH_BYTES);
    return bad ? manta_err_set(err, MANTA_ERR_IO, "%s: read error", path) : MANTA_OK;
}

/* Make @p n the latest snapshot, dropping the one before the previous. */
static void snap_push(struct train_elastic *el, const snap *n)
{
    if (el->s[1].step >= 0 && el->s[1].step != n->step && el->s[1].step != el->s[0].step) {
        char p[1200];
        snap_path(el, el->s[1].step, p, sizeof p);
        remove(p);
    }
    if (el->s[0].step != n->step)
        el->s[1] = el->s[0];
    el->s[0] = *n;
}

manta_status train_elastic_snapshot(train_run *r, long done, manta_err *err)
{
    struct train_elastic *el = r->el;
    char path[1200];
    snap_path(el, done, path, sizeof path);
    train_meta m = r->meta;
    m.step = done;
    m.has_teacher = ofa_trainer_has_teacher(r->t);
    m.loader = r->ls;
    m.ef = NULL; /* the int8 error feedback is this rank's own: not in the shared state */
    m.n_ef = 0;
    manta_err e;
    manta_err_clear(&e);
    manta_status st = trainstate_save(path, r->t, r->d, &m, &e);
    snap n = {.step = done};
    if (st == MANTA_OK)
        st = hash_file(path, &n.bytes, n.hash, &e);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "elastic snapshot after step %ld: %s", done,
                             manta_err_msg(&e, st));
    snap_push(el, &n);
    el->fresh_step = -1;
    el->lacks_state = 0;
    return MANTA_OK;
}

/* The hash of the settings every rank of the job must share. */
static void spec_hash(const train_run *r, unsigned char *h)
{
    const train_opts *o = &r->o;
    char s[2048];
    int n = snprintf(s, sizeof s,
                     "space=%s schedule=%s batch=%d seed=%llu data=%s val=%d lr_scale=%.17g "
                     "mode=%d devices=%d bucket_kib=%ld overlap=%d classes=%d channels=%d",
                     r->sp.name, o->schedule, o->batch, o->seed, o->data, o->val, o->lr_scale,
                     (int)o->mode, r->n_dev, o->bucket_kib, !o->no_overlap, r->sp.classes,
                     r->sp.in_channels);
    crypto_generichash(h, DIST_HASH_BYTES, (const unsigned char *)s, (size_t)n, NULL, 0);
}

static void hex8(const unsigned char *h, char out[17])
{
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* The state after a.step from rank a.source to the ranks that need it (collective). 1 on
 * success, 0 after printing why this rank cannot go on, -1 when the ring failed. */
static int transfer(train_run *r, const dist_elastic_assign *a)
{
    struct train_elastic *el = r->el;
    manta_err err;
    manta_err_clear(&err);
    const uint64_t bytes = a->ref.bytes;
    if (bytes == 0 || bytes > ((uint64_t)1 << 36)) {
        fprintf(stderr, "manta train: rank %d: the announced state has %" PRIu64 " bytes\n",
                r->rank, bytes);
        return 0;
    }
    unsigned char *buf = malloc((size_t)bytes);
    if (!buf) {
        fprintf(stderr, "manta train: rank %d: no memory for the state (%" PRIu64 " bytes)\n",
                r->rank, bytes);
        return 0;
    }
    char path[1200];
    snap_path(el, a->step, path, sizeof path);
    int ok = 1;
    if (a->rank == a->source) {
        FILE *f = fopen(path, "rb");
        ok = f && fread(buf, 1, (size_t)bytes, f) == bytes;
        if (f)
            fclose(f);
        if (!ok) { /* the others wait in the transfer: leave, the ring fails, they re-form */
            fprintf(stderr, "manta train: rank %d: cannot read its snapshot %s\n", r->rank, path);
            free(buf);
            return 0;
        }
    }
    const double t0 = cmd_now();
    manta_status st = dist_elastic_bcast(r->ring, a->source, buf, (size_t)bytes, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta train: rank %d: state transfer: %s\n", r->rank,
                manta_err_msg(&err, st));
        free(buf);
        return -1;
    }
    if (a->need_state) {
        unsigned char h[DIST_HASH_BYTES];
        crypto_generichash(h, DIST_HASH_BYTES, buf, (size_t)bytes, NULL, 0);
        if (memcmp(h, a->ref.hash, DIST_HASH_BYTES) != 0) {
            char x[17], y[17];
            hex8(h, x);
            hex8(a->ref.hash, y);
            fprintf(stderr,
                    "manta train: rank %d: the state received from rank %d (%" PRIu64
                    " bytes) has hash %s.., the rendezvous announced %s..; leaving the job\n",
                    r->rank, a->source, bytes, x, y);
            free(buf);
            return 0;
        }
        FILE *f = fopen(path, "wb");
        ok = f && fwrite(buf, 1, (size_t)bytes, f) == bytes;
        ok &= f && fclose(f) == 0;
        if (!ok) {
            fprintf(stderr, "manta train: rank %d: writing %s failed\n", r->rank, path);
            free(buf);
            return 0;
        }
        snap n = {.step = a->step, .bytes = bytes};
        memcpy(n.hash, h, DIST_HASH_BYTES);
        el->s[0] = el->s[1] = (snap){.step = -1};
        snap_push(el, &n);
        el->fresh_step = -1;
        el->received += bytes;
        fprintf(stderr,
                "manta train: rank %d: received the state after step %" PRId64
                " from rank %d: %" PRIu64 " bytes in %.2f s, hash checked\n",
                r->rank, a->step, a->source, bytes, cmd_now() - t0);
    } else if (r->rank == 0 && !r->o.json) {
        fprintf(stderr, "manta train: sent the state after step %" PRId64 ": %" PRIu64 " bytes\n",
                a->step, bytes);
    }
    free(buf);
    return 1;
}

/* Every replica from the snapshot after a->step (or the starting state); false after printing. */
static bool load_state(train_run *r, const dist_elastic_assign *a)
{
    struct train_elastic *el = r->el;
    manta_err err;
    manta_err_clear(&err);
    char path[1200];
    const bool fresh = el->fresh_step >= 0 && a->step == el->fresh_step && !a->need_state;
    if (fresh && !r->o.resume) { /* the replicas were just made from the seed */
        r->start = a->step;
        return true;
    }
    free(r->meta.ef); /* rank 0's gathered error feedback of the last ring (the load clears it) */
    r->meta.ef = NULL;
    r->meta.n_ef = 0;
    if (fresh)
        snprintf(path, sizeof path, "%s", r->latest);
    else
        snap_path(el, a->step, path, sizeof path);
    for (int i = 0; i < r->n_dev; i++) {
        manta_status st = trainstate_load(path, dp_replica(r->dp, i), r->devs[i], &r->meta, &err);
        if (st != MANTA_OK) {
            cmd_error("train", st, &err);
            return false;
        }
    }
    r->start = r->meta.step;
    r->ls = r->meta.loader;
    /* int8 error feedback: from latest.ckpt when the first ring resumes it (zero when its world
     * size differs); after a membership change every rank's starts from zero (a new dp) */
    if (fresh && a->generation == 1 && !job_ef_resume("manta train", r->dp, r->latest))
        return false;
    if (!fresh && r->rank == 0 && dp_ef_count(r->dp) > 0)
        fprintf(stderr, "manta train: the ring changed: the int8 error feedback of every rank "
                        "starts from zero\n");
    if (!fresh) { /* later snapshots of this rank are of a step no one continues from */
        for (int k = 0; k < 2; k++)
            if (el->s[k].step >= 0 && el->s[k].step != a->step) {
                char p[1200];
                snap_path(el, el->s[k].step, p, sizeof p);
                remove(p);
                el->s[k].step = -1;
            }
        if (el->s[0].step < 0) {
            el->s[0] = el->s[1];
            el->s[1].step = -1;
        }
    }
    return true;
}

/* The job stops for lack of ranks: the chosen rank writes its snapshot as latest.ckpt. */
static int stopped(train_run *r, const dist_elastic_assign *a)
{
    struct train_elastic *el = r->el;
    if (a->write_ckpt && el->s[0].step >= 0) {
        char p[1200];
        snap_path(el, el->s[0].step, p, sizeof p);
        if (rename(p, r->latest) == 0) {
            fprintf(stderr, "manta train: %s; the state after step %ld is in %s\n", a->msg,
                    el->s[0].step, r->latest);
            return 1;
        }
        fprintf(stderr, "manta train: %s; writing %s failed: %s\n", a->msg, r->latest,
                strerror(errno));
        return 1;
    }
    fprintf(stderr, "manta train: %s\n", a->msg);
    return 1;
}

static void close_watch(struct train_elastic *el)
{
    if (el->watch_fd >= 0)
        close(el->watch_fd);
    el->watch_fd = -1;
    sodium_memzero(el->watch_key, sizeof el->watch_key);
}

bool train_elastic_poll(train_run *r)
{
    struct train_elastic *el = r->el;
    return el && dist_elastic_watch(&el->watch_fd, el->watch_key, el->gen) == 1;
}

/* The ring and the replicas of generation @p a; 1 ready, 0 fatal (printed), -1 back to the
 * rendezvous. */
static int enter(train_run *r, dist_elastic_assign *a)
{
    struct train_elastic *el = r->el;
    manta_err err;
    manta_err_clear(&err);
    const int was = el->world; /* for the membership record */
    const bool joined = el->joined;
    el->gen = a->generation;
    el->rank = a->rank;
    el->world = a->world;
    el->joined = false; /* a failure from here on is the cause of the next ring */
    el->lacks_state = el->lacks_state || a->need_state;
    close_watch(el);
    el->watch_fd = a->watch_fd; /* rank 0 only */
    a->watch_fd = -1;
    memcpy(el->watch_key, a->watch_key, DIST_KEY_BYTES);
    r->rank = a->rank;
    r->quiet = a->rank != 0;
    r->cfg.rank = a->rank;
    r->cfg.world_size = a->world;
    const int step_no = (int)a->step;
    if (r->o.batch % (a->world * r->n_dev) != 0) {
        fprintf(stderr,
                "manta train: rank %d: generation %" PRIu64 " has %d rank(s) x %d device(s), "
                "which do not divide the batch of %d\n",
                r->rank, a->generation, a->world, r->n_dev, r->o.batch);
        return 0;
    }
    manta_status st = ring_create_from(&r->cfg, &a->rz, &r->ring, &err);
    if (st != MANTA_OK) {
        fprintf(stderr,
                "manta train: rank %d: generation %" PRIu64 ": %s; back to the rendezvous\n",
                r->rank, a->generation, manta_err_msg(&err, st));
        return -1;
    }
    if (!train_replicas(r))
        return ring_failed(r->ring) ? -1 : 0;
    if (a->any_need) {
        int t = transfer(r, a);
        if (t <= 0)
            return t;
    }
    if (!load_state(r, a))
        return 0;
    if (el->fresh_step >= 0 && train_elastic_snapshot(r, r->start, &err) != MANTA_OK) {
        fprintf(stderr, "manta train: rank %d: %s\n", r->rank, err.msg);
        return 0;
    }
    if (el->stop_after > 0) { /* --stop-after counts the steps since this process started */
        const long left = el->first_step + el->stop_after - r->start;
        r->o.stop_after = left > 0 ? left : 1;
    }
    r->outputs_taken = r->outputs_taken || a->generation > 1 || r->o.resume;
    if (!train_outputs_open(r) || !train_prefetch_start(r) || !train_monitor_start(r))
        return 0;
    if (r->rank == 0) { /* the membership record of docs/monitor.md */
        manta_rec rec = {.kind = MANTA_REC_MEMBERSHIP};
        rec.membership =
            (manta_rec_membership){.time = manta_wall_time(),
                                   .generation = (long)a->generation,
                                   .world = a->world,
                                   .was = was,
                                   .step = (long)a->step,
                                   .state_bytes = a->any_need ? (long long)a->ref.bytes : 0};
        snprintf(rec.membership.cause, sizeof rec.membership.cause, "%s",
                 !was     ? "start"
                 : joined ? "join"
                          : "failure");
        const job_log l = {"manta train", r->metrics, r->rank, r->host, r->monitor};
        job_write(&l, &rec);
    }
    if (r->rank == 0) {
        if (a->generation == 1)
            train_print_start(r);
        char line[256];
        int n = snprintf(line, sizeof line,
                         "generation %" PRIu64 ": %d rank(s), continuing after step %d",
                         a->generation, a->world, step_no);
        if (el->reform_started > 0)
            snprintf(line + n, sizeof line - (size_t)n, " (%.2f s after the ring failed)",
                     cmd_now() - el->reform_started);
        fprintf(stderr, "manta train: %s\n", line);
    }
    return 1;
}

/* Remove DIR/.elastic/ * / *.ckpt and the folders: the snapshots of ranks that died. */
static void remove_dead(const char *out_dir)
{
    char top[1100];
    snprintf(top, sizeof top, "%s/.elastic", out_dir);
    DIR *d = opendir(top);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strlen(e->d_name) != 16)
            continue;
        char sub[1200];
        snprintf(sub, sizeof sub, "%s/%s", top, e->d_name);
        DIR *s = opendir(sub);
        struct dirent *f;
        while (s && (f = readdir(s)) != NULL) {
            const size_t n = strlen(f->d_name);
            if (n > 5 && !strncmp(f->d_name, "step-", 5) && !strcmp(f->d_name + n - 5, ".ckpt")) {
                char p[1500];
                snprintf(p, sizeof p, "%s/%s", sub, f->d_name);
                remove(p);
            }
        }
        if (s)
            closedir(s);
        rmdir(sub);
    }
    closedir(d);
}

/* --stop-after's steps were all done when the ring failed: rank 0 writes latest.ckpt. */
static int finished(train_run *r)
{
    if (r->rank != 0)
        return 0;
    train_meta m = r->meta;
    m.step = r->start;
    m.has_teacher = ofa_trainer_has_teacher(r->t);
    m.loader = r->ls;
    m.ef = NULL; /* the ring failed: the ranks' error feedback cannot be gathered */
    m.n_ef = 0;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = trainstate_save(r->latest, r->t, r->d, &m, &err);
    if (st != MANTA_OK) {
        train_fail(r, r->start, "checkpoint %s: %s", r->latest, manta_err_msg(&err, st));
        return 1;
    }
    fprintf(stderr, "manta train: stopped after step %ld; '--resume --out %s' continues\n",
            r->start, r->out_dir);
    return 0;
}

int train_elastic(train_run *r)
{
    if (!r->cfg.has_key) {
        fprintf(stderr, "manta train: --elastic needs the job's secret (MANTA_SECRET or "
                        "MANTA_SECRET_FILE; manta launch sets one)\n");
        return 2;
    }
    struct train_elastic *el = calloc(1, sizeof *el);
    if (!el || sodium_init() < 0) {
        free(el);
        fprintf(stderr, "manta train: out of memory\n");
        return 1;
    }
    r->el = el;
    while (!el->id)
        randombytes_buf(&el->id, sizeof el->id);
    el->rank = -1;
    el->watch_fd = -1;
    el->s[0] = el->s[1] = (snap){.step = -1};
    el->fresh_step = r->o.resume ? r->meta.step : 0;
    el->s[0].step = el->fresh_step; /* hash 0: the state every new process starts with */
    el->first_step = el->fresh_step;
    el->stop_after = r->o.stop_after;
    snprintf(el->dir, sizeof el->dir, "%s/.elastic/%016" PRIx64, r->out_dir, el->id);
    manta_err err;
    manta_err_clear(&err);
    if (manta_file_mkdir_p(el->dir, &err) != MANTA_OK) {
        fprintf(stderr, "manta train: %s\n", err.msg);
        free(el);
        r->el = NULL;
        return 1;
    }
    const int env_rank = r->cfg.world_size > 1 ? r->cfg.rank : -1;
    dist_elastic_join_req q = {.id = el->id, .wire = r->cfg.wire};
    spec_hash(r, q.spec);
    snprintf(q.version, sizeof q.version, "%s %s", tool_version(), tool_git_revision());
    int rc = 1;
    for (;;) {
        q.generation = el->gen;
        /* a first rank offers its RANK: the first ring follows the launcher's order */
        q.former_rank = el->gen ? el->rank : env_rank;
        for (int k = 0; k < 2; k++)
            q.state[k] = (dist_state_ref){.step = el->s[k].step, .bytes = el->s[k].bytes};
        for (int k = 0; k < 2; k++)
            memcpy(q.state[k].hash, el->s[k].hash, DIST_HASH_BYTES);
        if (el->lacks_state) /* its own starting state is not the job's */
            q.state[0].step = q.state[1].step = -1;
        dist_elastic_assign a;
        manta_status st = dist_elastic_join(&r->cfg, &q, 2 * r->cfg.timeout_s + 30, &a, &err);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta train: rank %d: %s\n", el->rank, manta_err_msg(&err, st));
            break;
        }
        if (a.kind == DIST_ELASTIC_REJECT) {
            fprintf(stderr, "manta train: refused by the rendezvous: %s\n", a.msg);
            break;
        }
        if (a.kind == DIST_ELASTIC_STOP) {
            rc = stopped(r, &a);
            break;
        }
        if (a.msg[0])
            fprintf(stderr, "manta train: %s\n", a.msg);
        int e = enter(r, &a);
        dist_elastic_assign_free(&a);
        if (e == 0)
            break;
        if (e > 0 && el->stop_after > 0 && r->start >= el->first_step + el->stop_after) {
            rc = finished(r); /* the failure came after the last step of --stop-after */
            break;
        }
        if (e > 0) {
            rc = train_loop(r);
            if (rc != TRAIN_REFORM)
                break;
            el->reform_started = r->join_pending ? 0 : cmd_now();
            el->joined = r->join_pending;
            r->join_pending = false;
        }
        dp_destroy(r->dp);
        r->dp = NULL;
        ring_destroy(r->ring);
        r->ring = NULL;
        rc = 1;
    }
    /* the snapshots are of no use once this process ends */
    for (int k = 0; k < 2; k++)
        if (el->s[k].step >= 0) {
            char p[1200];
            snap_path(el, el->s[k].step, p, sizeof p);
            remove(p);
        }
    rmdir(el->dir);
    if (rc == 0 && r->ring) { /* the job ended: once every rank removed its own, rank 0 removes
                                 those of the ranks that died */
        float f = 0;
        manta_err e;
        if (ring_allreduce(r->ring, &f, 1, RING_SUM, &e) == MANTA_OK && r->rank == 0)
            remove_dead(r->out_dir);
    }
    char parent[1100];
    snprintf(parent, sizeof parent, "%s/.elastic", r->out_dir);
    rmdir(parent); /* fails while another rank's folder is there */
    close_watch(el);
    r->el = NULL;
    free(el);
    return rc;
}
