/**
 * @file variants.h
 * @brief The test device opened once per kernel variant (mcl_get_variant()), so that one
 *        test binary checks the CPU and the GPU kernels of an op on the same device
 *        (PoCL runs both), whatever MANTA_KERNELS says.
 */
#ifndef MANTA_TESTS_VARIANTS_H
#define MANTA_TESTS_VARIANTS_H

#include "common/testutil.h"

/** Number of variants opened: CPU, then GPU. */
#define TU_VARIANTS 2

/** cmocka group state: dev[0] runs the CPU kernels, dev[1] the GPU kernels. */
typedef struct tu_variant_devs {
    mcl_dev *dev[TU_VARIANTS];
} tu_variant_devs;

/** cmocka group setup / teardown: open the device chosen by MANTA_DEVICE (default 0) twice,
 *  with MCL_VARIANT_CPU and MCL_VARIANT_GPU (the program cache of MANTA_CACHE_DIR), into a
 *  tu_variant_devs in *state, and close them. */
int tu_setup_variants(void **state);
int tu_teardown_variants(void **state);

/** "cpu" or "gpu": the variant of @p d, for messages. */
const char *tu_variant_name(const mcl_dev *d);

/** tu_assert_close() with the message "<what> (<variant> kernels)". */
void tu_variant_assert_close(const mcl_dev *d, const double *got, const double *want, size_t n,
                             double rtol, const char *what);

#endif
