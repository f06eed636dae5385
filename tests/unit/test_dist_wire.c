/* Payload encodings of the ring (dist/wire.h) against plain-C references: fp16 and bf16 round
 * to nearest even (every half checked, ties and overflow), int8 with error feedback converging,
 * fixed point exact with its headroom; then the compressed allreduces on loopback (threads):
 * each encoding against a serial reference of the documented schedule, int8's residuals
 * holding exactly what the sum lost, fixed point bit-identical for every order of the ranks
 * (2 and 3 ranks) where float32 is not, and ranks that disagree on the encoding refused. */
#define _DEFAULT_SOURCE

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "dist/net.h"
#include "dist/ring.h"
#include "dist/wire.h"

static uint32_t fbits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return x;
}

static float bitsf(uint32_t x)
{
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* Reference value of a half: sign, exponent, mantissa by the textbook formula, in double. */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Reference rounding of x to a half: the nearest of the finite halves (ties: even mantissa),
 * infinity from 65520 on. */
static uint16_t half_ref(float x)
{
    double a = fabs((double)x);
    uint16_t s = signbit(x) ? 0x8000 : 0;
    if (a >= 65520.0)
        return s | 0x7c00;
    /* halves of one sign are ordered as integers: bisect on 0 .. 0x7bff */
    int lo = 0, hi = 0x7bff;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (half_value((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - half_value((uint16_t)lo), dh = half_value((uint16_t)hi) - a;
    int pick = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
    if (half_value((uint16_t)hi) <= a)
        pick = hi;
    return (uint16_t)(s | pick);
}

static void test_fp16_every_half_round_trips(void **s)
{
    (void)s;
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) /* NaN: stays NaN */
            assert_true(isnan(dist_fp16_to_f32((uint16_t)h)));
        else {
            float f = dist_fp16_to_f32((uint16_t)h);
            if ((h & 0x7c00) != 0x7c00)
                assert_true((double)f == half_value((uint16_t)h));
            assert_int_equal(dist_fp16_from_f32(f), h);
        }
    }
}

static void test_fp16_round_to_nearest_even(void **s)
{
    (void)s;
    /* every midpoint between neighbouring finite halves (exact in float32), and one float
     * ulp either side of it */
    for (uint32_t h = 0; h < 0x7bff; h++) {
        double mid = (half_value((uint16_t)h) + half_value((uint16_t)(h + 1))) / 2;
        float m = (float)mid;
        assert_true((double)m == mid);
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        assert_int_equal(dist_fp16_from_f32(m), even);
        assert_int_equal(dist_fp16_from_f32(-m), 0x8000 | even);
        assert_int_equal(dist_fp16_from_f32(nextafterf(m, 0.0f)), h);
        assert_int_equal(dist_fp16_from_f32(nextafterf(m, INFINITY)), h + 1);
    }
    /* overflow, the largest half, tiny values, infinities and NaN */
    assert_int_equal(dist_fp16_from_f32(65504.0f), 0x7bff);
    assert_int_equal(dist_fp16_from_f32(65519.996f), 0x7bff);
    assert_int_equal(dist_fp16_from_f32(65520.0f), 0x7c00);
    assert_int_equal(dist_fp16_from_f32(1e10f), 0x7c00);
    assert_int_equal(dist_fp16_from_f32(-INFINITY), 0xfc00);
    assert_int_equal(dist_fp16_from_f32(0x1p-25f), 0);
    assert_int_equal(dist_fp16_from_f32(nextafterf(0x1p-25f, 1.0f)), 1);
    assert_int_equal(dist_fp16_from_f32(1e-30f), 0);
    assert_true(isnan(dist_fp16_to_f32(dist_fp16_from_f32(NAN))));
    /* random floats of every magnitude against the bisecting reference */
    uint64_t r = 88172645463325252ull;
    for (int i = 0; i < 200000; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        float x = bitsf((uint32_t)(r >> 32));
        if (isnan(x) || isinf(x))
            continue;
        uint16_t got = dist_fp16_from_f32(x), want = half_ref(x);
        if (got != want)
            fail_msg("fp16 of %a: %04x, reference %04x", (double)x, got, want);
    }
}

static void test_bf16_round_to_nearest_even(void **s)
{
    (void)s;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 400000; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        uint32_t x = (uint32_t)(r >> 32);
        if (i < 1000) /* midpoints and their neighbours */
            x = (x & 0xffff0000u) | (uint32_t)(0x7fff + (i % 3));
        float f = bitsf(x);
        if (isnan(f))
            continue;
        /* the two bfloat16 around f (same sign), compared in double */
        uint32_t lo = x & 0xffff0000u, hi = lo + 0x10000u;
        /* above the largest finite value, the next one is 2^128 (rounding there gives inf) */
        double top = isinf(bitsf(hi)) ? ldexp(1.0, 128) : fabs((double)bitsf(hi));
        double d = fabs((double)f), dl = d - fabs((double)bitsf(lo)), dh = top - d;
        uint32_t want = dl < dh ? lo : dh < dl ? hi : (((lo >> 16) & 1) ? hi : lo);
        assert_int_equal(dist_bf16_from_f32(f), want >> 16);
        assert_true(fbits(dist_bf16_to_f32((uint16_t)(want >> 16))) == want);
    }
    assert_int_equal(dist_bf16_from_f32(3.4028235e38f), 0x7f80); /* rounds up to infinity */
    assert_true(isnan(dist_bf16_to_f32(dist_bf16_from_f32(NAN))));
}

static void test_int8_error_feedback_converges(void **s)
{
    (void)s;
    enum { N = 257, T = 2000 };
    float g[N], v[N], res[N], mean_ef[N], mean_plain[N], dec[N];
    unsigned char wire[4 + N];
    for (int i = 0; i < N; i++) {
        g[i] = sinf(0.37f * (float)i) * (i % 7 == 0 ? 3.0f : 0.01f);
        res[i] = mean_ef[i] = mean_plain[i] = 0;
    }
    const float scale = dist_maxabs(g, N) / 127.0f;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < N; i++)
            v[i] = g[i] + res[i], res[i] = 0;
        dist_wire_encode(DIST_WIRE_INT8, v, N, wire, res);
        dist_wire_decode(DIST_WIRE_INT8, wire, N, dec, 0, 1.0f);
        for (int i = 0; i < N; i++) {
            mean_ef[i] += dec[i] / T;
            /* the residual is exactly what this step did not send */
            assert_true(fabsf(v[i] - dec[i] - res[i]) <= 1e-6f * fabsf(v[i]) + 1e-9f);
        }
        dist_wire_encode(DIST_WIRE_INT8, g, N, wire, NULL);
        dist_wire_decode(DIST_WIRE_INT8, wire, N, dec, 0, 1.0f);
        for (int i = 0; i < N; i++)
            mean_plain[i] += dec[i] / T;
    }
    double worst_ef = 0, worst_plain = 0;
    for (int i = 0; i < N; i++) {
        worst_ef = fmax(worst_ef, fabs((double)mean_ef[i] - g[i]));
        worst_plain = fmax(worst_plain, fabs((double)mean_plain[i] - g[i]));
    }
    /* without feedback the rounding error stays (up to half a step); with it, the mean of the
     * sent values approaches g as 1/T (the residual stays below a step) */
    print_message("int8 mean over %d steps: worst error %.3g with feedback, %.3g without "
                  "(step %.3g)\n",
                  T, worst_ef, worst_plain, (double)scale);
    assert_true(worst_plain > 0.2 * scale);
    assert_true(worst_ef < 4.0 * scale / T + 1e-6);
}

static void test_fixed_exact_with_headroom(void **s)
{
    (void)s;
    for (int world = 1; world <= 64; world++) {
        /* the worst case: every rank at the largest magnitude, the same sign */
        const float m = 0.7f + 0.01f * (float)world;
        const int k = dist_fixed_shift(m, world);
        int32_t q;
        float x = -m;
        dist_fixed_encode(&x, 1, k, &q);
        int64_t sum = (int64_t)q * world;
        assert_true(sum >= -(INT64_C(1) << 30) && sum <= (INT64_C(1) << 30));
        /* and at least 2^(29 - L) of resolution: 28 bits for 4 ranks */
        int L = 0;
        while ((1 << L) < world)
            L++;
        assert_true(-q >= (INT32_C(1) << (29 - L)));
    }
    /* an exact sum, whatever the order */
    enum { N = 1000 };
    float a[N], b[N], c[N], out1[N], out2[N];
    int32_t qa[N], qb[N], qc[N], s1[N], s2[N];
    for (int i = 0; i < N; i++) {
        a[i] = sinf((float)i) * 1e-3f;
        b[i] = cosf((float)i * 1.3f);
        c[i] = (float)(i % 13) * 1e-6f;
    }
    float m = fmaxf(dist_maxabs(a, N), fmaxf(dist_maxabs(b, N), dist_maxabs(c, N)));
    int k = dist_fixed_shift(m, 3);
    dist_fixed_encode(a, N, k, qa);
    dist_fixed_encode(b, N, k, qb);
    dist_fixed_encode(c, N, k, qc);
    memcpy(s1, qa, sizeof s1), dist_fixed_add(s1, qb, N), dist_fixed_add(s1, qc, N);
    memcpy(s2, qc, sizeof s2), dist_fixed_add(s2, qa, N), dist_fixed_add(s2, qb, N);
    dist_fixed_decode(s1, N, k, 1.0, out1);
    dist_fixed_decode(s2, N, k, 1.0, out2);
    assert_memory_equal(out1, out2, sizeof out1);
    for (int i = 0; i < N; i++) {
        double exact = (double)a[i] + b[i] + c[i];
        assert_true(fabs(out1[i] - exact) <= 1.5 * ldexp(1, -k) + fabs(exact) * 0x1p-24);
    }
}

/* ---- on the ring --------------------------------------------------------------------------------- */

#define LEN 300007 /* two segments per chunk for 2 and 3 ranks, odd sizes */

typedef struct wrun {
    dist_config cfg;
    const float *in; /* this rank's input (LEN) */
    dist_wire wire;
    ring_redop op;
    float *out; /* LEN */
    float *res; /* LEN: int8's residual after one allreduce */
    manta_status st;
    manta_err err;
} wrun;

/* Frame tags of the next run_ring(): over headers, or headers and the encoded payloads. */
static dist_frame_mac next_mac = DIST_MAC_HEADER;

static void *wrank(void *arg)
{
    wrun *w = arg;
    ring_comm *c = NULL;
    manta_err_clear(&w->err);
    w->st = ring_create(&w->cfg, &c, &w->err);
    if (w->st == MANTA_OK) {
        memcpy(w->out, w->in, LEN * sizeof(float));
        ring_handle h;
        w->st = ring_allreduce_wire_async(c, w->out, LEN, w->op, w->wire, w->res, &h, &w->err);
        if (w->st == MANTA_OK)
            w->st = ring_wait(c, h, &w->err);
    }
    ring_destroy(c);
    return NULL;
}

/* Run one allreduce over @p world threads, rank r with input in[perm[r]]; the results into
 * out[r]; rank r's configured encoding cfg_wire[r] (NULL: @p wire). */
static void run_ring(int world, float *const *in, const int *perm, dist_wire wire, ring_redop op,
                     float **out, float **res, const dist_wire *cfg_wire, wrun *runs)
{
    int port = dist_free_port();
    assert_true(port > 0);
    pthread_t th[4];
    for (int r = 0; r < world; r++) {
        wrun *w = &runs[r];
        memset(w, 0, sizeof *w);
        dist_config_init(&w->cfg);
        w->cfg.rank = r;
        w->cfg.world_size = world;
        w->cfg.master_port = port;
        w->cfg.timeout_s = cfg_wire ? 2.0 : 10.0; /* a refused rank: rank 0 waits this long */
        w->cfg.wire = cfg_wire ? cfg_wire[r] : wire;
        w->cfg.frame_mac = next_mac;
        snprintf(w->cfg.job_id, sizeof w->cfg.job_id, "test-wire-%d", port);
        assert_int_equal(dist_config_set_secret(&w->cfg, "wire test secret", 16, NULL), MANTA_OK);
        w->in = in[perm[r]];
        w->wire = w->cfg.wire;
        w->op = op;
        w->out = out[r];
        w->res = res ? res[r] : NULL;
        if (w->res)
            memset(w->res, 0, LEN * sizeof(float));
        assert_int_equal(pthread_create(&th[r], NULL, wrank, w), 0);
    }
    for (int r = 0; r < world; r++)
        pthread_join(th[r], NULL);
}

static void check_ok(int world, const wrun *runs)
{
    for (int r = 0; r < world; r++)
        if (runs[r].st != MANTA_OK)
            fail_msg("rank %d: %s", r, manta_err_msg(&runs[r].err, runs[r].st));
}

/* Serial reference of a 16-bit or int8 allreduce in the documented schedule. */
static void wire_reference(float *const *in, int world, dist_wire wire, ring_redop op, float *out)
{
    const size_t K = ring_segments(LEN, world);
    unsigned char *tmp = malloc(4 + LEN * 4);
    float *acc = malloc(LEN * sizeof *acc);
    for (int c = 0; c < world; c++) {
        size_t b = ring_chunk_begin(LEN, world, c), L = ring_chunk_begin(LEN, world, c + 1) - b;
        for (size_t j = 0; j < K; j++) {
            size_t sb = b + L * j / K, n = b + L * (j + 1) / K - sb;
            memcpy(acc, in[(c + 1) % world] + sb, n * sizeof *acc);
            for (int h = 2; h <= world; h++) {
                dist_wire_encode(wire, acc, n, tmp, NULL);
                memcpy(acc, in[(c + h) % world] + sb, n * sizeof *acc);
                dist_wire_decode(wire, tmp, n, acc, 1, 1.0f);
            }
            dist_wire_encode(wire, acc, n, tmp, NULL);
            dist_wire_decode(wire, tmp, n, out + sb, 0, op == RING_AVG ? (float)world : 1.0f);
        }
    }
    free(tmp);
    free(acc);
}

typedef struct inputs {
    float *in[3], *out[3], *res[3], *ref;
} inputs;

static void make_inputs(inputs *x)
{
    uint64_t r = 12345;
    for (int k = 0; k < 3; k++) {
        x->in[k] = malloc(LEN * sizeof(float));
        x->out[k] = malloc(LEN * sizeof(float));
        x->res[k] = malloc(LEN * sizeof(float));
        for (size_t i = 0; i < LEN; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            /* magnitudes over several decades, so float32 sums depend on the order */
            float u = (float)((r >> 11) * 0x1p-53) - 0.5f;
            x->in[k][i] = u * (float)(1 << (int)(r % 13)) * 1e-3f;
        }
    }
    x->ref = malloc(LEN * sizeof(float));
}

static void free_inputs(inputs *x)
{
    for (int k = 0; k < 3; k++)
        free(x->in[k]), free(x->out[k]), free(x->res[k]);
    free(x->ref);
}

static const int ID[3] = {0, 1, 2};

static void test_ring_16bit_and_int8_match_reference(void **s)
{
    (void)s;
    inputs x;
    make_inputs(&x);
    wrun runs[3];
    const dist_wire wires[] = {DIST_WIRE_FP16, DIST_WIRE_BF16, DIST_WIRE_INT8};
    for (int world = 2; world <= 3; world++)
        for (int wi = 0; wi < 3; wi++) {
            ring_redop op = wi == 1 ? RING_AVG : RING_SUM;
            next_mac = world == 3 ? DIST_MAC_FULL : DIST_MAC_HEADER; /* tags over the payloads */
            run_ring(world, x.in, ID, wires[wi], op, x.out, NULL, NULL, runs);
            next_mac = DIST_MAC_HEADER;
            check_ok(world, runs);
            wire_reference(x.in, world, wires[wi], op, x.ref);
            for (int r = 0; r < world; r++)
                if (memcmp(x.out[r], x.ref, LEN * sizeof(float)) != 0)
                    fail_msg("%s, %d ranks: rank %d differs from the reference",
                             dist_wire_name(wires[wi]), world, r);
            print_message("%s %s, %d ranks (tags over %s): every rank bit-identical to the serial "
                          "reference\n",
                          dist_wire_name(wires[wi]), op == RING_AVG ? "average" : "sum", world,
                          world == 3 ? "header and payload" : "header");
        }
    free_inputs(&x);
}

static void test_ring_int8_residual_holds_the_loss(void **s)
{
    (void)s;
    inputs x;
    make_inputs(&x);
    wrun runs[3];
    run_ring(3, x.in, ID, DIST_WIRE_INT8, RING_SUM, x.out, x.res, NULL, runs);
    check_ok(3, runs);
    /* sum of the inputs = result + every rank's residual, up to float32 rounding */
    double worst = 0, scale = 0;
    for (size_t i = 0; i < LEN; i++) {
        double exact = (double)x.in[0][i] + x.in[1][i] + x.in[2][i];
        double kept = (double)x.out[0][i] + x.res[0][i] + x.res[1][i] + x.res[2][i];
        worst = fmax(worst, fabs(exact - kept));
        scale = fmax(scale, fabs(exact));
    }
    print_message("int8, 3 ranks: |sum - (result + residuals)| <= %.3g (largest sum %.3g)\n", worst,
                  scale);
    assert_true(worst <= scale * 1e-6);
    free_inputs(&x);
}

static void test_ring_fixed_is_order_independent(void **s)
{
    (void)s;
    inputs x;
    make_inputs(&x);
    wrun runs[3];
    static const int perms[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1},
                                    {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
    float *first = malloc(LEN * sizeof(float)), *f32 = malloc(LEN * sizeof(float));
    for (int world = 2; world <= 3; world++) {
        int f32_differs = 0;
        for (int p = 0; p < 6; p++) {
            if (world == 2 && p >= 2)
                break; /* two inputs: orders (0,1) and (1,0) */
            int perm[3] = {perms[p][0], perms[p][1], perms[p][2]};
            if (world == 2 && p == 1)
                perm[0] = 1, perm[1] = 0;
            run_ring(world, x.in, perm, DIST_WIRE_FIXED, RING_SUM, x.out, NULL, NULL, runs);
            check_ok(world, runs);
            if (p == 0)
                memcpy(first, x.out[0], LEN * sizeof(float));
            for (int r = 0; r < world; r++)
                if (memcmp(x.out[r], first, LEN * sizeof(float)) != 0)
                    fail_msg("fixed, %d ranks, order %d: rank %d differs", world, p, r);
            run_ring(world, x.in, perm, DIST_WIRE_F32, RING_SUM, x.out, NULL, NULL, runs);
            check_ok(world, runs);
            if (p == 0)
                memcpy(f32, x.out[0], LEN * sizeof(float));
            else if (memcmp(x.out[0], f32, LEN * sizeof(float)) != 0)
                f32_differs = 1;
        }
        size_t diff = 0;
        for (size_t i = 0; i < LEN; i++) {
            double exact = 0;
            for (int k = 0; k < world; k++)
                exact += x.in[k][i];
            diff += first[i] != (float)exact;
        }
        print_message("fixed, %d ranks: every order bit-identical (%zu of %d elements differ "
                      "from the correctly rounded sum); float32 %s\n",
                      world, diff, LEN,
                      f32_differs ? "differs between orders" : "same for both orders");
        /* float32 addition of two values commutes; of three it depends on the order */
        assert_int_equal(f32_differs, world == 3);
    }
    free(first);
    free(f32);
    free_inputs(&x);
}

static void test_ring_encodings_must_agree(void **s)
{
    (void)s;
    inputs x;
    make_inputs(&x);
    wrun runs[3];
    const dist_wire cw[2] = {DIST_WIRE_FP16, DIST_WIRE_INT8};
    /* each rank asks for its own configured encoding: rank 1's is refused at the rendezvous */
    run_ring(2, x.in, ID, DIST_WIRE_FP16, RING_SUM, x.out, NULL, cw, runs);
    print_message("rank 1 with int8, rank 0 with fp16: %s\n", runs[1].err.msg);
    assert_int_not_equal(runs[1].st, MANTA_OK);
    assert_non_null(strstr(runs[1].err.msg, "'int8'"));
    assert_non_null(strstr(runs[1].err.msg, "'fp16'"));
    assert_non_null(strstr(runs[1].err.msg, "--compress"));
    assert_int_not_equal(runs[0].st, MANTA_OK);
    free_inputs(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_every_half_round_trips),
        cmocka_unit_test(test_fp16_round_to_nearest_even),
        cmocka_unit_test(test_bf16_round_to_nearest_even),
        cmocka_unit_test(test_int8_error_feedback_converges),
        cmocka_unit_test(test_fixed_exact_with_headroom),
        cmocka_unit_test(test_ring_16bit_and_int8_match_reference),
        cmocka_unit_test(test_ring_int8_residual_holds_the_loss),
        cmocka_unit_test(test_ring_fixed_is_order_independent),
        cmocka_unit_test(test_ring_encodings_must_agree),
    };
    return cmocka_run_group_tests_name("dist wire", tests, NULL, NULL);
}
