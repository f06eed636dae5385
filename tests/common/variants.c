#include "common/variants.h"

#include <stdio.h>
#include <stdlib.h>

int tu_setup_variants(void **state)
{
    tu_variant_devs *v = calloc(1, sizeof *v);
    mcl_device_list *list = malloc(sizeof *list);
    assert_non_null(v);
    assert_non_null(list);
    manta_err err;
    manta_err_clear(&err);
    size_t idx = 0;
    if (mcl_enumerate(list, &err) != MANTA_OK || mcl_select(list, NULL, &idx, &err) != MANTA_OK)
        fail_msg("test device: %s", err.msg);
    for (int i = 0; i < TU_VARIANTS; i++) {
        mcl_options opt = {.variant = i == 0 ? MCL_VARIANT_CPU : MCL_VARIANT_GPU};
        if (mcl_open(&list->dev[idx], &opt, &v->dev[i], &err) != MANTA_OK)
            fail_msg("open (%s kernels): %s", i == 0 ? "cpu" : "gpu", err.msg);
    }
    free(list);
    *state = v;
    return 0;
}

int tu_teardown_variants(void **state)
{
    tu_variant_devs *v = *state;
    for (int i = 0; v && i < TU_VARIANTS; i++)
        mcl_close(v->dev[i]);
    free(v);
    return 0;
}

const char *tu_variant_name(const mcl_dev *d) { return mcl_variant_name(mcl_get_variant(d)); }

void tu_variant_assert_close(const mcl_dev *d, const double *got, const double *want, size_t n,
                             double rtol, const char *what)
{
    char label[128];
    snprintf(label, sizeof label, "%s (%s kernels)", what, tu_variant_name(d));
    tu_assert_close(got, want, n, rtol, label);
}
