/**
 * @file testutil.h
 * @brief Helpers shared by the unit tests: the host ones (testutil_host.h:
 *        tolerant comparison, central finite differences in double precision,
 *        temporary folders) and the test device with host/device transfers of
 *        double reference data (testutil_cl.c).
 */
#ifndef MANTA_TESTS_TESTUTIL_H
#define MANTA_TESTS_TESTUTIL_H

#include <stddef.h>

#include "cl/cl.h"
#include "common/testutil_host.h"

/** Open the device chosen by MANTA_DEVICE (default 0); fails the test on error. */
mcl_dev *tu_open_device(void);

/** cmocka group setup / teardown that open the test device into *state
 *  and close it. */
int tu_setup_device(void **state);
int tu_teardown_device(void **state);

/** A fresh device buffer of @p n floats (tests only; freed with tu_free). */
mview tu_alloc(mcl_dev *d, size_t n);
void tu_free(mcl_dev *d, mview v);
/** Op scratch of @p floats (an op's *_scratch_floats(), may be 0), a view a few
 *  floats into its buffer followed by a guard region; tu_scratch_free() fails
 *  the test when the op wrote into the guard (a size query smaller than what
 *  the op uses), then frees it. */
mview tu_scratch(mcl_dev *d, size_t floats);
void tu_scratch_free(mcl_dev *d, mview v, size_t floats);
/** Copy doubles to the device as floats, and back. */
void tu_upload(mcl_dev *d, mview dst, const double *src, size_t n);
void tu_download(mcl_dev *d, mview src, double *dst, size_t n);
/** Move the @p n parameters of a network from its initialisation (identity batch norms,
 *  zero biases) to a generic point for gradient checks: the first @p n_decay (weights)
 *  doubled, the others p * (1 + 0.4 u) + 0.4 u with u uniform in [-1, 1] from a fixed
 *  seed. Returns the old values (n doubles; the caller frees). */
double *tu_move_to_generic_point(mcl_dev *d, mview params, size_t n, size_t n_decay);
/** A device buffer holding @p src (as floats). */
mview tu_alloc_from(mcl_dev *d, const double *src, size_t n);
/** A view of @p n floats @p off floats into a fresh device buffer (so that an op's views
 *  do not all start at offset 0), holding @p src when not NULL; freed with tu_free. */
mview tu_view_at(mcl_dev *d, size_t off, const double *src, size_t n);

/** Fail the test with the device's error message when @p st is not OK. */
#define TU_OK(d, st)                                                             \
    do {                                                                         \
        manta_status st_ = (st);                                                 \
        if (st_ != MANTA_OK)                                                     \
            fail_msg("%s:%d: %s: %s", __FILE__, __LINE__, manta_status_str(st_), \
                     manta_err_msg(mcl_err(d), st_));                            \
    } while (0)

#endif
