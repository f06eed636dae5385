/* Channel concatenation: forward (copy into a channel slice) against the double reference,
 * the other channels untouched; backward (the slice's gradient, overwritten or accumulated)
 * against central finite differences of the reference (loss = sum(dst * r)); a join of
 * three parts; odd sizes (a slice of C*HW values that is no multiple of the 8-value chunks);
 * bad shapes refused. All views sit at a non-zero offset. Each case runs on both kernel
 * variants, whatever MANTA_KERNELS says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/variants.h"
#include "nn/concat.h"
#include "ref/ref_concat.h"

#define VIEW_OFF 5

typedef struct fd_ctx {
    const nn_concat_shape *s;
    double *src, *dst, *r;
    size_t ndst;
} fd_ctx;

static double concat_loss(void *p)
{
    fd_ctx *c = p;
    ref_concat_forward(c->s, c->src, c->dst);
    return tu_dot(c->dst, c->r, c->ndst);
}

static void check_concat(mcl_dev *d, const nn_concat_shape *s, uint64_t seed)
{
    manta_rng rng;
    manta_rng_seed(&rng, 5, seed);
    size_t nsrc = (size_t)s->n * s->c * s->hw, ndst = (size_t)s->n * s->c_total * s->hw;
    double *src = tu_doubles(nsrc), *dst = tu_doubles(ndst), *r = tu_doubles(ndst),
           *got = tu_doubles(ndst);
    double *fd = tu_doubles(nsrc), *prior = tu_doubles(nsrc);
    tu_fill_uniform(&rng, src, nsrc, -1, 1);
    tu_fill_uniform(&rng, dst, ndst, -1, 1); /* the other channels: must stay */
    tu_fill_uniform(&rng, r, ndst, -1, 1);
    tu_fill_uniform(&rng, prior, nsrc, -1, 1);
    mview vsrc = tu_view_at(d, VIEW_OFF, src, nsrc), vdst = tu_view_at(d, VIEW_OFF, dst, ndst);
    mview vr = tu_view_at(d, VIEW_OFF, r, ndst), vds = tu_view_at(d, VIEW_OFF, prior, nsrc);

    TU_OK(d, nn_concat_forward(d, s, vsrc, vdst));
    tu_download(d, vdst, got, ndst);
    ref_concat_forward(s, src, dst);
    tu_variant_assert_close(d, got, dst, ndst, 1e-6, "concat forward");

    fd_ctx c = {s, src, dst, r, ndst};
    tu_fd_grad(concat_loss, &c, src, nsrc, 1e-3, fd);
    TU_OK(d, nn_concat_backward(d, s, vr, vds, true));
    tu_download(d, vds, got, nsrc);
    for (size_t i = 0; i < nsrc; i++)
        prior[i] += fd[i];
    tu_variant_assert_close(d, got, prior, nsrc, 1e-5, "concat backward, accumulated");
    TU_OK(d, nn_concat_backward(d, s, vr, vds, false));
    tu_download(d, vds, got, nsrc);
    tu_variant_assert_close(d, got, fd, nsrc, 1e-5, "concat backward, overwritten");

    tu_free(d, vsrc), tu_free(d, vdst), tu_free(d, vr), tu_free(d, vds);
    free(src), free(dst), free(r), free(got), free(fd), free(prior);
}

static void test_concat_slices_odd_sizes(void **st)
{
    const nn_concat_shape s[] = {
        /* n, c, hw, c_total, c_offset */
        {3, 5, 7, 12, 4},  /* middle channels, 35 values per image */
        {2, 3, 1, 3, 0},   /* the whole tensor, 1x1 */
        {4, 2, 64, 9, 7},  /* the last channels, whole chunks */
        {1, 1, 13, 32, 0}, /* the first channel, N = 1 */
    };
    tu_variant_devs *v = *st;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
            check_concat(v->dev[k], &s[i], 10 * (uint64_t)k + i);
}

/* DispNetC's join at one level: [skip (3 ch), up-convolution (2 ch), prediction (1 ch)]
 * assembled by three forward calls, taken apart by three backward calls. */
static void check_join_of_three(mcl_dev *d)
{
    const int n = 2, hw = 15, parts[3] = {3, 2, 1}, total = 6;
    manta_rng rng;
    manta_rng_seed(&rng, 5, 9);
    double *src[3], *want = tu_doubles((size_t)n * total * hw),
                    *got = tu_doubles((size_t)n * total * hw);
    mview v[3], joined = tu_view_at(d, VIEW_OFF, NULL, (size_t)n * total * hw);
    for (int k = 0, off = 0; k < 3; off += parts[k], k++) {
        size_t len = (size_t)n * parts[k] * hw;
        src[k] = tu_doubles(len);
        tu_fill_uniform(&rng, src[k], len, -1, 1);
        v[k] = tu_view_at(d, VIEW_OFF, src[k], len);
        nn_concat_shape s = {n, parts[k], hw, total, off};
        TU_OK(d, nn_concat_forward(d, &s, v[k], joined));
        for (int b = 0; b < n; b++) /* the join by hand */
            memcpy(want + ((size_t)b * total + off) * hw, src[k] + (size_t)b * parts[k] * hw,
                   (size_t)parts[k] * hw * sizeof *want);
    }
    tu_download(d, joined, got, (size_t)n * total * hw);
    tu_variant_assert_close(d, got, want, (size_t)n * total * hw, 1e-6, "join of three");
    for (int k = 0, off = 0; k < 3; off += parts[k], k++) {
        size_t len = (size_t)n * parts[k] * hw;
        nn_concat_shape s = {n, parts[k], hw, total, off};
        TU_OK(d, mcl_fill(d, v[k], 9.0f, len));
        TU_OK(d, nn_concat_backward(d, &s, joined, v[k], false));
        tu_download(d, v[k], got, len);
        tu_variant_assert_close(d, got, src[k], len, 1e-6, "part of the join's gradient");
        tu_free(d, v[k]);
        free(src[k]);
    }
    tu_free(d, joined);
    free(want), free(got);
}

static void expect_invalid(mcl_dev *d, const nn_concat_shape *s, const char *field)
{
    mview v = tu_alloc(d, 256);
    manta_status st = nn_concat_forward(d, s, v, v);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field) || !strstr(msg, "concat forward"))
        fail_msg("forward message '%s' does not name 'concat forward' and '%s'", msg, field);
    manta_err_clear(mcl_err(d));
    st = nn_concat_backward(d, s, v, v, true);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field) || !strstr(msg, "concat backward"))
        fail_msg("backward message '%s' does not name 'concat backward' and '%s'", msg, field);
    manta_err_clear(mcl_err(d));
    tu_free(d, v);
}

static void check_bad_shapes(mcl_dev *d)
{
    const nn_concat_shape ok = {2, 3, 4, 8, 2};
    nn_concat_shape s = ok;
    s.c_offset = 6; /* 6 + 3 > 8 */
    expect_invalid(d, &s, "c_total");
    s = ok, s.c_offset = -1;
    expect_invalid(d, &s, "c_offset");
    s = ok, s.hw = 0;
    expect_invalid(d, &s, "hw");
    s = ok, s.c = 0;
    expect_invalid(d, &s, "field c ");
    s = ok, s.n = 0;
    expect_invalid(d, &s, "field n ");
    expect_invalid(d, NULL, "shape");
    mview none = {NULL, 0}, v = tu_alloc(d, 64);
    manta_status rc = nn_concat_forward(d, &ok, v, none);
    assert_int_equal(rc, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), rc), "dst has no buffer"));
    manta_err_clear(mcl_err(d));
    tu_free(d, v);
}

static void test_concat_join_of_three(void **st)
{
    tu_variant_devs *v = *st;
    for (int k = 0; k < TU_VARIANTS; k++)
        check_join_of_three(v->dev[k]);
}

static void test_concat_bad_shapes_rejected(void **st)
{
    tu_variant_devs *v = *st;
    for (int k = 0; k < TU_VARIANTS; k++)
        check_bad_shapes(v->dev[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concat_slices_odd_sizes),
        cmocka_unit_test(test_concat_join_of_three),
        cmocka_unit_test(test_concat_bad_shapes_rejected),
    };
    return cmocka_run_group_tests_name("concat", tests, tu_setup_variants, tu_teardown_variants);
}
