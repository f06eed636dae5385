/* The accuracy predictor: OFA's one-hot encoding, the data set file, training
 * on a synthetic smooth function of the architecture, determinism, model
 * files and their rejection. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "search/acc_predictor.h"

static tu_tmpdir dir; /* the group's temporary folder */

static void expect_err(manta_status got, manta_status want, const manta_err *e, const char *needle)
{
    if (got != want)
        fail_msg("status %s, expected %s (%s)", manta_status_str(got), manta_status_str(want),
                 e->msg);
    if (!strstr(e->msg, needle))
        fail_msg("message '%s' lacks '%s'", e->msg, needle);
}

/* OFA's MobileNetArchEncoder.arch2feature, written out independently: val2id tables. */
static void reference_features(const ofa_space *s, const ofa_arch *a, float *f)
{
    int n_dim = 0, r_id[OFA_MAX_RES], k_id[OFA_MAX_SLOTS][OFA_MAX_CHOICES],
        e_id[OFA_MAX_SLOTS][OFA_MAX_CHOICES];
    for (int i = 0; i < s->n_res; i++)
        r_id[i] = n_dim++;
    int blocks = s->n_units * s->max_depth;
    for (int i = 0; i < blocks; i++)
        for (int c = 0; c < s->n_ks; c++)
            k_id[i][c] = n_dim++;
    for (int i = 0; i < blocks; i++)
        for (int c = 0; c < s->n_e; c++)
            e_id[i][c] = n_dim++;
    memset(f, 0, (size_t)n_dim * sizeof *f);
    for (int i = 0; i < blocks; i++) {
        int nowd = i % s->max_depth, stg = i / s->max_depth;
        if (nowd < a->d[stg]) {
            for (int c = 0; c < s->n_ks; c++)
                if (s->ks[c] == a->ks[i])
                    f[k_id[i][c]] = 1;
            for (int c = 0; c < s->n_e; c++)
                if (s->e[c] == a->e[i])
                    f[e_id[i][c]] = 1;
        }
    }
    for (int i = 0; i < s->n_res; i++)
        if (s->res[i] == a->r)
            f[r_id[i]] = 1;
}

static void test_encoding_layout(void **state)
{
    (void)state;
    ofa_space s, m;
    ofa_space_cpu_default(&s);
    ofa_space_mbv3_w10(&m);
    assert_int_equal(accp_feature_dim(&s), 3 + 60 + 60);
    assert_int_equal(accp_feature_dim(&m), 25 + 60 + 60);

    manta_err e;
    ofa_arch a;
    ofa_arch_min(&s, 28, &a); /* depth 2 everywhere, k3, e3 */
    a.ks[1] = 7;
    a.e[1] = 6;
    a.ks[2] = 5; /* skipped slot: must not show */
    float x[ACCP_MAX_FEATURES];
    TU_OK_ERR(accp_encode(&s, &a, x, &e));
    int ones = 0;
    for (int i = 0; i < 123; i++) {
        assert_true(x[i] == 0 || x[i] == 1);
        ones += x[i] == 1;
    }
    assert_int_equal(ones, 1 + 2 * 10);
    assert_true(x[1] == 1);             /* resolution 28 is the second */
    assert_true(x[3 + 0 * 3 + 0] == 1); /* slot 0: kernel 3 */
    assert_true(x[3 + 1 * 3 + 2] == 1); /* slot 1: kernel 7 */
    for (int c = 0; c < 3; c++) {
        assert_true(x[3 + 2 * 3 + c] == 0); /* slot 2 skipped (depth 2) */
        assert_true(x[63 + 2 * 3 + c] == 0);
    }
    assert_true(x[63 + 0 * 3 + 0] == 1); /* slot 0: expand 3 */
    assert_true(x[63 + 1 * 3 + 2] == 1); /* slot 1: expand 6 */

    /* against the reference on random sub-networks of both spaces */
    manta_rng rng;
    manta_rng_seed(&rng, 11, 2);
    const ofa_space *sp[2] = {&s, &m};
    for (int t = 0; t < 200; t++) {
        const ofa_space *q = sp[t % 2];
        ofa_arch b;
        ofa_arch_sample(q, &rng, &b);
        float want[ACCP_MAX_FEATURES];
        reference_features(q, &b, want);
        TU_OK_ERR(accp_encode(q, &b, x, &e));
        assert_memory_equal(x, want, (size_t)accp_feature_dim(q) * sizeof *x);
    }
    a.e[0] = 5;
    expect_err(accp_encode(&s, &a, x, &e), MANTA_ERR_INVALID_ARG, &e, "e[0] = 5");
}

/* Synthetic accuracy: base + resolution + per active slot a depth term and smooth
 * kernel / expand contributions that differ by slot, plus small noise. */
static double synthetic_top1(const ofa_space *s, const ofa_arch *a, manta_rng *noise)
{
    int ri = 0;
    while (s->res[ri] != a->r)
        ri++;
    double acc = 0.78 + 0.006 * ri;
    for (int i = 0; i < ofa_slots(s); i++) {
        if (i % s->max_depth >= a->d[i / s->max_depth])
            continue;
        double w = 0.5 + (i % 7) / 7.0;
        acc += 0.001 + w * 0.0008 * (a->ks[i] - 3) + w * 0.0011 * (a->e[i] - 3);
    }
    return acc + (noise ? 0.0005 * manta_rng_normal(noise) : 0);
}

static void make_dataset(const ofa_space *s, size_t n, uint64_t seed, accp_dataset *d)
{
    manta_err e;
    manta_rng rng, noise;
    manta_rng_seed(&rng, seed, 1);
    manta_rng_seed(&noise, seed, 2);
    accp_dataset_init(d, s);
    for (size_t i = 0; i < n; i++) {
        ofa_arch a;
        ofa_arch_sample(s, &rng, &a);
        TU_OK_ERR(accp_dataset_add(d, &a, synthetic_top1(s, &a, &noise), &e));
    }
}

static double stddev_top1(const accp_dataset *d)
{
    double m = 0, v = 0;
    for (size_t i = 0; i < d->n; i++)
        m += d->s[i].value;
    m /= (double)d->n;
    for (size_t i = 0; i < d->n; i++)
        v += (d->s[i].value - m) * (d->s[i].value - m);
    return sqrt(v / (double)d->n);
}

static void test_dataset_file_round_trip(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    accp_dataset d, back;
    make_dataset(&s, 50, 5, &d);
    char path[128];
    tu_tmpdir_path(&dir, "acc.jsonl", path, sizeof path);
    manta_err e;
    TU_OK_ERR(accp_dataset_save(&d, path, &e));
    TU_OK_ERR(accp_dataset_load(path, &s, &back, &e));
    assert_int_equal(back.n, d.n);
    for (size_t i = 0; i < d.n; i++) {
        assert_memory_equal(&back.s[i].arch, &d.s[i].arch, sizeof d.s[i].arch);
        assert_true(back.s[i].value == d.s[i].value);
    }
    accp_dataset_free(&back);
    /* files of other tools: no header, r only at the top level, extra fields, blank lines */
    const char *text = "\n{\"arch\":{\"ks\":[3,3,3,3,5,5,5,5,7,7,7,7,3,3,3,3,3,3,3,3],"
                       "\"e\":[3,3,3,3,4,4,4,4,6,6,6,6,3,3,3,3,3,3,3,3],\"d\":[2,3,4,2,2]},"
                       "\"top1\":0.5,\"top5\":0.9,\"r\":32}\r\n\n";
    TU_OK_ERR(accp_dataset_parse(text, "x.jsonl", &s, &back, &e));
    assert_int_equal(back.n, 1);
    assert_int_equal(back.s[0].arch.r, 32);
    assert_int_equal(back.s[0].arch.d[2], 4);
    accp_dataset_free(&back);
    accp_dataset_free(&d);
}

static void expect_bad_line(const char *line, const char *needle)
{
    ofa_space s;
    ofa_space_cpu_default(&s);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"arch\":{\"ks\":[3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3],"
             "\"e\":[3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3],\"d\":[2,2,2,2,2],\"r\":[24]},"
             "\"top1\":0.5}\n%s\n",
             line);
    accp_dataset d;
    manta_err e;
    manta_err_clear(&e);
    expect_err(accp_dataset_parse(text, "bad.jsonl", &s, &d, &e), MANTA_ERR_FORMAT, &e, needle);
    assert_non_null(strstr(e.msg, "bad.jsonl:2"));
    assert_int_equal(d.n, 0);
}

#define ARCH_OK                                                   \
    "\"arch\":{\"ks\":[3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3]," \
    "\"e\":[3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3],\"d\":[2,2,2,2,2],\"r\":[24]}"

static void test_dataset_rejects_bad_lines(void **state)
{
    (void)state;
    expect_bad_line("{" ARCH_OK ",\"top1\":78.4}", "a percentage");
    expect_bad_line("{" ARCH_OK "}", "\"top1\" missing");
    expect_bad_line("{" ARCH_OK ",\"top1\":0.5,\"r\":28}", "\"r\" is 28");
    expect_bad_line("{\"top1\":0.5}", "missing \"arch\"");
    expect_bad_line("{" ARCH_OK ",\"top1\":0.5", "not a JSON object");
    expect_bad_line("{" ARCH_OK ",\"top1\":0.5} x", "not a JSON object");
    expect_bad_line("{\"arch\":{\"ks\":[3,3,3,4,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3],"
                    "\"e\":[3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3],\"d\":[2,2,2,2,2],"
                    "\"r\":[24]},\"top1\":0.5}",
                    "ks[3] = 4");
    expect_bad_line("{\"arch\":{\"ks\":[3,3],\"e\":[3],\"d\":[2],\"r\":[24]},\"top1\":0.5}",
                    "\"ks\" must be a list of 20");
    /* a header of another space is refused */
    ofa_space s;
    ofa_space_cpu_default(&s);
    accp_dataset d;
    manta_err e;
    expect_err(accp_dataset_parse("{\"format\":\"manta-acc-dataset\",\"version\":1,\"space\":"
                                  "{\"name\":\"mbv3-w1.0\",\"hash\":\"fnv1a64:0\"}}\n",
                                  "h.jsonl", &s, &d, &e),
               MANTA_ERR_FORMAT, &e, "samples of space 'mbv3-w1.0'");
    assert_non_null(strstr(e.msg, "h.jsonl:1"));
}

static void test_split_is_seeded_partition(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    accp_dataset d, tr, te, tr2, te2;
    make_dataset(&s, 101, 9, &d);
    manta_err e;
    TU_OK_ERR(accp_dataset_split(&d, 0.8, 3, &tr, &te, &e));
    TU_OK_ERR(accp_dataset_split(&d, 0.8, 3, &tr2, &te2, &e));
    assert_int_equal(tr.n, 81);
    assert_int_equal(te.n, 20);
    assert_memory_equal(tr.s, tr2.s, tr.n * sizeof *tr.s);
    /* every sample lands on exactly one side: the sums of top1 agree */
    double all = 0, parts = 0;
    for (size_t i = 0; i < d.n; i++)
        all += d.s[i].value;
    for (size_t i = 0; i < tr.n; i++)
        parts += tr.s[i].value;
    for (size_t i = 0; i < te.n; i++)
        parts += te.s[i].value;
    assert_true(fabs(all - parts) < 1e-9);
    accp_dataset_free(&tr2);
    accp_dataset_free(&te2);
    TU_OK_ERR(accp_dataset_split(&d, 0.8, 4, &tr2, &te2, &e));
    assert_true(memcmp(tr.s, tr2.s, tr.n * sizeof *tr.s) != 0);
    accp_dataset_free(&tr2);
    accp_dataset_free(&te2);
    expect_err(accp_dataset_split(&d, 1.5, 4, &tr2, &te2, &e), MANTA_ERR_INVALID_ARG, &e, "1.5");
    accp_dataset_free(&tr);
    accp_dataset_free(&te);
    accp_dataset_free(&tr2);
    accp_dataset_free(&te2);
    accp_dataset_free(&d);
}

/* Which side of a split holds a sample of @p a's network (any resolution): 1 train, 2 test,
 * 3 both, 0 neither. */
static int side_of(const ofa_space *s, const accp_dataset *tr, const accp_dataset *te,
                   const ofa_arch *a)
{
    int side = 0;
    const accp_dataset *parts[2] = {tr, te};
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < parts[p]->n; i++) {
            ofa_arch b = parts[p]->s[i].arch;
            b.r = a->r;
            bool same = true;
            for (int u = 0; u < s->n_units; u++)
                for (int j = 0; j < s->max_depth; j++) {
                    int k = u * s->max_depth + j;
                    same = same && b.d[u] == a->d[u] &&
                           (j >= a->d[u] || (b.ks[k] == a->ks[k] && b.e[k] == a->e[k]));
                }
            if (same)
                side |= 1 << p;
        }
    return side;
}

static void test_split_keeps_a_network_on_one_side(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    accp_dataset d, tr, te;
    manta_err e;
    manta_rng rng;
    manta_rng_seed(&rng, 7, 1);
    accp_dataset_init(&d, &s);
    ofa_arch nets[40];
    for (int n = 0; n < 40; n++) {
        ofa_arch_sample(&s, &rng, &nets[n]);
        for (int r = 0; r < s.n_res; r++) {
            ofa_arch a = nets[n];
            a.r = s.res[r];
            /* a gene in a slot past the unit's depth does not make another network */
            if (r == 1 && a.d[0] < s.max_depth)
                a.ks[a.d[0]] = a.ks[a.d[0]] == 3 ? 5 : 3;
            TU_OK_ERR(accp_dataset_add(&d, &a, 0.8 + 0.001 * n + 0.01 * r, &e));
        }
    }
    TU_OK_ERR(accp_dataset_split(&d, 0.8, 5, &tr, &te, &e));
    assert_int_equal(tr.n + te.n, d.n);
    /* 120 samples, 96 to train: whole networks of 3 samples each, 32 networks */
    assert_int_equal(tr.n, 96);
    int n_test = 0;
    for (int n = 0; n < 40; n++) {
        int side = side_of(&s, &tr, &te, &nets[n]);
        assert_true(side == 1 || side == 2);
        n_test += side == 2;
    }
    assert_int_equal(n_test, 8);
    accp_dataset_free(&tr);
    accp_dataset_free(&te);
    accp_dataset_free(&d);
}

static void test_default_config_is_ofa(void **state)
{
    (void)state;
    accp_config c;
    accp_config_default(&c);
    assert_int_equal(c.hidden, 400);
    assert_int_equal(c.layers, 3);
    assert_true(c.lr == 1e-3 && c.weight_decay == 1e-4);
    ofa_space s;
    ofa_space_mbv3_w10(&s);
    accp_model m;
    manta_err e;
    TU_OK_ERR(accp_init(&m, &s, &c, &e));
    assert_int_equal(m.n_in, 145);
    assert_int_equal(m.n_params, (size_t)(145 * 400 + 400 + 2 * (400 * 400 + 400) + 400));
    /* nn.Linear initialisation bounds */
    float mx = 0;
    for (int i = 0; i < 145 * 400; i++)
        mx = fmaxf(mx, fabsf(m.params[i]));
    assert_true(mx <= 1 / sqrtf(145.0f) && mx > 0.9f / sqrtf(145.0f));
    accp_free(&m);
    c.hidden = 0;
    expect_err(accp_init(&m, &s, &c, &e), MANTA_ERR_INVALID_ARG, &e, "hidden width 0");
}

/* A small configuration that trains in well under a second. */
static void small_config(accp_config *c)
{
    accp_config_default(c);
    c->hidden = 64;
    c->batch = 32;
    c->epochs = 25;
    c->seed = 1;
}

typedef struct progress_log {
    int calls, last_epoch;
    double first, last;
} progress_log;

static void on_epoch(void *ctx, int epoch, int epochs, double mse)
{
    progress_log *p = ctx;
    assert_int_equal(epochs, 25);
    assert_int_equal(epoch, p->last_epoch + 1);
    if (p->calls++ == 0)
        p->first = mse;
    p->last = mse;
    p->last_epoch = epoch;
}

static void test_learns_synthetic_function(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    accp_dataset d, tr, te;
    make_dataset(&s, 1000, 21, &d);
    manta_err e;
    TU_OK_ERR(accp_dataset_split(&d, 0.8, 1, &tr, &te, &e));
    accp_config c;
    small_config(&c);
    progress_log log = {0};
    c.progress = on_epoch;
    c.progress_ctx = &log;
    accp_model m;
    TU_OK_ERR(accp_init(&m, &s, &c, &e));
    accp_report rep;
    TU_OK_ERR(accp_train(&m, &tr, &te, &c, &rep, &e));
    double spread = stddev_top1(&te), base = 0;
    for (size_t i = 0; i < tr.n; i++)
        base += tr.s[i].value;
    assert_true(fabs(m.base_acc - base / (double)tr.n) < 1e-12);
    print_message("# targets sd %.5f, RMSE train %.5f, held-out %.5f (%ld steps)\n", spread,
                  rep.train_rmse, rep.valid_rmse, rep.steps);
    assert_int_equal(rep.steps, 25 * 25);
    assert_true(rep.valid_rmse < 0.25 * spread);
    assert_int_equal(log.calls, 25);
    assert_true(log.last < 0.1 * log.first);
    double rmse;
    TU_OK_ERR(accp_rmse(&m, &te, &rmse, &e));
    assert_true(rmse == rep.valid_rmse);
    accp_free(&m);
    accp_dataset_free(&tr);
    accp_dataset_free(&te);
    accp_dataset_free(&d);
}

static void test_training_is_deterministic(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    accp_dataset d;
    make_dataset(&s, 100, 4, &d);
    accp_config c;
    small_config(&c);
    c.epochs = 2;
    accp_model a, b;
    manta_err e;
    TU_OK_ERR(accp_init(&a, &s, &c, &e));
    TU_OK_ERR(accp_init(&b, &s, &c, &e));
    TU_OK_ERR(accp_train(&a, &d, NULL, &c, NULL, &e));
    TU_OK_ERR(accp_train(&b, &d, NULL, &c, NULL, &e));
    assert_memory_equal(a.params, b.params, a.n_params * sizeof *a.params);
    accp_free(&b);
    c.seed = 2;
    TU_OK_ERR(accp_init(&b, &s, &c, &e));
    TU_OK_ERR(accp_train(&b, &d, NULL, &c, NULL, &e));
    assert_true(memcmp(a.params, b.params, a.n_params * sizeof *a.params) != 0);
    /* errors */
    accp_dataset empty;
    accp_dataset_init(&empty, &s);
    expect_err(accp_train(&b, &empty, NULL, &c, NULL, &e), MANTA_ERR_INVALID_ARG, &e,
               "empty training set");
    c.hidden = 32;
    expect_err(accp_train(&b, &d, NULL, &c, NULL, &e), MANTA_ERR_INVALID_ARG, &e, "differs");
    ofa_space m;
    ofa_space_mbv3_w10(&m);
    accp_dataset other;
    accp_dataset_init(&other, &m);
    c.hidden = 64;
    expect_err(accp_train(&b, &other, NULL, &c, NULL, &e), MANTA_ERR_INVALID_ARG, &e,
               "space 'mbv3-w1.0'");
    accp_free(&a);
    accp_free(&b);
    accp_dataset_free(&d);
}

static void test_model_file_round_trip(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    accp_dataset d;
    make_dataset(&s, 200, 8, &d);
    accp_config c;
    small_config(&c);
    c.epochs = 3;
    c.layers = 2;
    accp_model m, back;
    manta_err e;
    TU_OK_ERR(accp_init(&m, &s, &c, &e));
    TU_OK_ERR(accp_train(&m, &d, NULL, &c, NULL, &e));
    char path[128];
    tu_tmpdir_path(&dir, "pred.bin", path, sizeof path);
    TU_OK_ERR(accp_save(&m, path, &e));
    TU_OK_ERR(accp_load(path, &s, &back, &e));
    assert_int_equal(back.hidden, 64);
    assert_int_equal(back.layers, 2);
    assert_true(back.base_acc == m.base_acc);
    assert_memory_equal(back.params, m.params, m.n_params * sizeof *m.params);
    for (size_t i = 0; i < d.n; i++) {
        double p, q;
        TU_OK_ERR(accp_predict(&m, &d.s[i].arch, &p, &e));
        TU_OK_ERR(accp_predict(&back, &d.s[i].arch, &q, &e));
        assert_true(p == q);
    }
    accp_free(&back);

    /* another space, another spec under the same name, a corrupt file */
    ofa_space mb, s2 = s;
    ofa_space_mbv3_w10(&mb);
    expect_err(accp_load(path, &mb, &back, &e), MANTA_ERR_FORMAT, &e,
               "a predictor of space 'cpu-default'");
    assert_null(back.params);
    s2.unit[2].se = true;
    expect_err(accp_load(path, &s2, &back, &e), MANTA_ERR_FORMAT, &e, "not 'cpu-default' (hash");
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 200, SEEK_SET), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, 200, SEEK_SET), 0);
    fputc(ch ^ 0x55, f);
    fclose(f);
    expect_err(accp_load(path, &s, &back, &e), MANTA_ERR_FORMAT, &e, "corrupt");
    tu_tmpdir_path(&dir, "missing.bin", path, sizeof path);
    assert_int_equal(accp_load(path, &s, &back, &e), MANTA_ERR_IO);
    accp_free(&m);
    accp_dataset_free(&d);
}

/* A synthetic EPE: lower for larger kernels, expand ratios, depths and decoder widths. */
static double synthetic_epe(const stereo_space *s, const ofa_arch *a)
{
    double v = 12.0;
    for (int u = 0; u < s->n_units; u++) {
        v -= 0.1 * a->d[u];
        for (int j = 0; j < a->d[u]; j++)
            v -= 0.02 * a->ks[u * s->max_depth + j] + 0.03 * a->e[u * s->max_depth + j];
    }
    for (int l = 0; l < s->n_levels; l++)
        v -= 0.2 * a->dw[l] / s->dec_width[l];
    return v;
}

static void test_stereo_predictor(void **state)
{
    (void)state;
    stereo_space s;
    stereo_space_cpu(&s);
    assert_int_equal(accp_stereo_feature_dim(&s), 24 * 3 + 24 * 3 + 6 * 3 + 5 * 3);
    /* the layout: kernel and expand one-hots of the slots in use, then depth and width */
    ofa_arch a;
    stereo_arch_max(&s, &a);
    a.d[0] = 2;
    a.ks[0] = 5;
    a.e[1] = 3;
    a.dw[4] = stereo_dec_width(&s, 4, 0);
    float x[ACCP_MAX_FEATURES];
    manta_err e;
    TU_OK_ERR(accp_stereo_encode(&s, &a, x, &e));
    const int S = 24, e0 = S * 3, d0 = e0 + S * 3, w0 = d0 + 6 * 3;
    float sum = 0;
    for (int i = 0; i < accp_stereo_feature_dim(&s); i++)
        sum += x[i];
    assert_true(sum == (float)(2 * (2 + 5 * 4) + 6 + 5));
    assert_true(x[0 * 3 + 1] == 1 && x[0 * 3 + 2] == 0); /* slot 0: kernel 5 */
    assert_true(x[e0 + 1 * 3 + 0] == 1);                 /* slot 1: expand 3 */
    assert_true(x[2 * 3 + 2] == 0 && x[3 * 3 + 2] == 0); /* slots 2, 3 skipped */
    assert_true(x[d0 + 0 * 3 + 0] == 1);                 /* unit 0: depth 2 */
    assert_true(x[w0 + 4 * 3 + 0] == 1 && x[w0 + 3 * 3 + 2] == 1);
    a.dw[4] = 7;
    expect_err(accp_stereo_encode(&s, &a, x, &e), MANTA_ERR_INVALID_ARG, &e, "dw[4] = 7");

    /* a data set: EPE and bad-3 through the file, a classification file refused */
    accp_dataset d, back, tr, te;
    accp_dataset_init_stereo(&d, &s);
    manta_rng rng;
    manta_rng_seed(&rng, 3, 0);
    for (int i = 0; i < 300; i++) {
        stereo_arch_sample_mixed(&s, &rng, &a);
        TU_OK_ERR(accp_dataset_add_stereo(&d, &a, synthetic_epe(&s, &a), i % 2 ? 12.5 : NAN, &e));
    }
    expect_err(accp_dataset_add_stereo(&d, &a, -1, NAN, &e), MANTA_ERR_INVALID_ARG, &e, "epe");
    char path[128];
    tu_tmpdir_path(&dir, "epe.jsonl", path, sizeof path);
    TU_OK_ERR(accp_dataset_save(&d, path, &e));
    TU_OK_ERR(accp_dataset_load_stereo(path, &s, &back, &e));
    assert_int_equal(back.n, d.n);
    for (size_t i = 0; i < d.n; i++) {
        assert_memory_equal(&back.s[i].arch, &d.s[i].arch, sizeof a);
        assert_true(back.s[i].value == d.s[i].value);
        assert_true(i % 2 ? back.s[i].bad3 == 12.5 : isnan(back.s[i].bad3));
    }
    accp_dataset_free(&back);
    ofa_space cs;
    ofa_space_cpu_default(&cs);
    expect_err(accp_dataset_load(path, &cs, &back, &e), MANTA_ERR_FORMAT, &e, "a stereo (EPE)");
    expect_err(accp_dataset_parse_stereo("{" ARCH_OK ",\"top1\":0.5}", "c.jsonl", &s, &back, &e),
               MANTA_ERR_FORMAT, &e, "c.jsonl:1");

    /* the predictor learns it, round-trips through its file, refuses another task */
    TU_OK_ERR(accp_dataset_split(&d, 0.8, 1, &tr, &te, &e));
    assert_true(tr.stereo && te.stereo);
    accp_config c;
    small_config(&c);
    c.epochs = 60;
    accp_model m, m2;
    TU_OK_ERR(accp_init_stereo(&m, &s, &c, &e));
    accp_report rep;
    TU_OK_ERR(accp_train(&m, &tr, &te, &c, &rep, &e));
    double spread = stddev_top1(&te);
    if (!(rep.valid_rmse < 0.5 * spread))
        fail_msg("held-out RMSE %.4f px, spread %.4f px", rep.valid_rmse, spread);
    tu_tmpdir_path(&dir, "epe.accp", path, sizeof path);
    TU_OK_ERR(accp_save(&m, path, &e));
    TU_OK_ERR(accp_load_stereo(path, &s, &m2, &e));
    double p, q;
    TU_OK_ERR(accp_predict(&m, &te.s[0].arch, &p, &e));
    TU_OK_ERR(accp_predict(&m2, &te.s[0].arch, &q, &e));
    assert_true(p == q);
    accp_free(&m2);
    expect_err(accp_load(path, &cs, &m2, &e), MANTA_ERR_FORMAT, &e, "the stereo (EPE)");
    stereo_space g;
    stereo_space_gpu(&g);
    expect_err(accp_load_stereo(path, &g, &m2, &e), MANTA_ERR_FORMAT, &e, "not 'stereo-gpu'");
    accp_free(&m);
    accp_dataset_free(&tr);
    accp_dataset_free(&te);
    accp_dataset_free(&d);
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(&dir, "accp");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encoding_layout),
        cmocka_unit_test(test_dataset_file_round_trip),
        cmocka_unit_test(test_dataset_rejects_bad_lines),
        cmocka_unit_test(test_split_is_seeded_partition),
        cmocka_unit_test(test_split_keeps_a_network_on_one_side),
        cmocka_unit_test(test_default_config_is_ofa),
        cmocka_unit_test(test_learns_synthetic_function),
        cmocka_unit_test(test_training_is_deterministic),
        cmocka_unit_test(test_model_file_round_trip),
        cmocka_unit_test(test_stereo_predictor),
    };
    return cmocka_run_group_tests_name("accuracy predictor", tests, setup, teardown);
}
