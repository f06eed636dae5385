/* The device half of the test helpers (testutil.h): opening the test device and
 * moving double reference data to and from it. Kept apart from testutil.c so that
 * tests without OpenCL (the engine tests cross-built for boards) link without it. */
#include "testutil.h"

#include <stdlib.h>

mcl_dev *tu_open_device(void)
{
    static const char *const none = NULL;
    mcl_device_list *list = malloc(sizeof *list);
    assert_non_null(list);
    manta_err err;
    manta_err_clear(&err);
    manta_status st = mcl_enumerate(list, &err);
    if (st != MANTA_OK)
        fail_msg("enumerate: %s", err.msg);
    size_t idx = 0;
    st = mcl_select(list, none, &idx, &err);
    if (st != MANTA_OK)
        fail_msg("select: %s", err.msg);
    mcl_dev *d = NULL;
    st = mcl_open(&list->dev[idx], NULL, &d, &err);
    free(list);
    if (st != MANTA_OK)
        fail_msg("open: %s", err.msg);
    return d;
}

int tu_setup_device(void **state)
{
    *state = tu_open_device();
    return *state ? 0 : -1;
}

int tu_teardown_device(void **state)
{
    mcl_close(*state);
    return 0;
}

mview tu_alloc(mcl_dev *d, size_t n)
{
    mview v = {NULL, 0};
    TU_OK(d, mcl_alloc(d, (n ? n : 1) * sizeof(float), "test tensor", &v.mem));
    return v;
}

void tu_free(mcl_dev *d, mview v) { mcl_free(d, v.mem); }

mview tu_view_at(mcl_dev *d, size_t off, const double *src, size_t n)
{
    mview v = mview_at(tu_alloc(d, n + off), off);
    if (src)
        tu_upload(d, v, src, n);
    return v;
}

void tu_upload(mcl_dev *d, mview dst, const double *src, size_t n)
{
    float *tmp = malloc((n ? n : 1) * sizeof *tmp);
    assert_non_null(tmp);
    for (size_t i = 0; i < n; i++)
        tmp[i] = (float)src[i];
    TU_OK(d, mcl_write(d, dst, tmp, n));
    free(tmp);
}

void tu_download(mcl_dev *d, mview src, double *dst, size_t n)
{
    float *tmp = malloc((n ? n : 1) * sizeof *tmp);
    assert_non_null(tmp);
    TU_OK(d, mcl_read(d, src, tmp, n));
    for (size_t i = 0; i < n; i++)
        dst[i] = tmp[i];
    free(tmp);
}

mview tu_alloc_from(mcl_dev *d, const double *src, size_t n)
{
    mview v = tu_alloc(d, n);
    tu_upload(d, v, src, n);
    return v;
}

/* Floats after an op scratch that must keep the value TU_GUARD. */
#define TU_GUARD_FLOATS 64
#define TU_GUARD (-12345.5f)

/* Floats before the scratch view in its buffer: ops must honour view offsets. */
#define TU_SCRATCH_OFF 3

mview tu_scratch(mcl_dev *d, size_t floats)
{
    mview v = mview_at(tu_alloc(d, TU_SCRATCH_OFF + floats + TU_GUARD_FLOATS), TU_SCRATCH_OFF);
    TU_OK(d, mcl_fill(d, mview_at(v, floats), TU_GUARD, TU_GUARD_FLOATS));
    return v;
}

void tu_scratch_free(mcl_dev *d, mview v, size_t floats)
{
    float guard[TU_GUARD_FLOATS];
    TU_OK(d, mcl_read(d, mview_at(v, floats), guard, TU_GUARD_FLOATS));
    for (int i = 0; i < TU_GUARD_FLOATS; i++)
        if (guard[i] != TU_GUARD)
            fail_msg("op scratch of %zu floats: the op wrote past its end (float %zu)", floats,
                     floats + (size_t)i);
    tu_free(d, v);
}

double *tu_move_to_generic_point(mcl_dev *d, mview params, size_t n, size_t n_decay)
{
    double *p0 = tu_doubles(n), *p = tu_doubles(n);
    tu_download(d, params, p0, n);
    manta_rng rng;
    manta_rng_seed(&rng, 2024, 3);
    for (size_t i = 0; i < n; i++) {
        double u = 2 * manta_rng_uniform(&rng) - 1;
        p[i] = i < n_decay ? 2.0 * p0[i] : p0[i] * (1 + 0.4 * u) + 0.4 * u;
    }
    tu_upload(d, params, p, n);
    free(p);
    return p0;
}
