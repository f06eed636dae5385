/* Fuzz regressions: every file under tests/data/fuzz/ goes through the fuzz
 * body (tests/common/fuzz_body.c) and must end in a clean rejection with a
 * message or a clean run (the address and undefined-behaviour sanitizers
 * watch in SANITIZE=1 builds). Inputs the fuzzer finds crashing or slow are
 * kept there after the fix (any name); "corpus-<outcome>-*" files are samples
 * of the fuzzer's corpus, one per verifier error and outcome, which must keep
 * their outcome. Also: exported models (classification and stereo) run, and
 * every prefix of one is rejected cleanly. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fuzz_body.h"
#include "common/testutil_host.h"
#include "common/xgrand.h"
#include "export/quant.h"
#include "export/tflite.h"

#define FUZZ_DIR "tests/data/fuzz"

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    rewind(f);
    uint8_t *d = malloc(size > 0 ? (size_t)size : 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *n = (size_t)size;
    return d;
}

static void test_regression_files(void **state)
{
    (void)state;
    DIR *d = opendir(FUZZ_DIR);
    assert_non_null(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)) != NULL) {
        char path[512], msg[256];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", FUZZ_DIR, e->d_name);
        size_t n;
        uint8_t *data = slurp(path, &n);
        const fuzz_outcome out = fuzz_engine_one(data, n, msg, sizeof msg);
        print_message("# %s: %s%s%s\n", e->d_name,
                      out == FUZZ_REJECTED ? "rejected"
                      : out == FUZZ_RAN    ? "ran"
                                           : "prepared",
                      out == FUZZ_REJECTED ? ": " : "", out == FUZZ_REJECTED ? msg : "");
        if (out == FUZZ_REJECTED)
            assert_true(msg[0] != '\0');
        /* samples of the fuzzer's corpus keep the outcome they had when kept */
        if (!strncmp(e->d_name, "corpus-rejected", 15))
            assert_int_equal(out, FUZZ_REJECTED);
        else if (!strncmp(e->d_name, "corpus-ran", 10))
            assert_int_equal(out, FUZZ_RAN);
        else if (!strncmp(e->d_name, "corpus-prepared", 15))
            assert_int_equal(out, FUZZ_PREPARED);
        free(data);
        files++;
    }
    closedir(d);
    print_message("# %d regression files\n", files);
}

static void test_exported_models_and_prefixes(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 301, 1);
    for (int i = 0; i < 3; i++) {
        xgraph g;
        manta_err err;
        uint8_t *model;
        size_t size;
        char msg[256];
        const xgr_opts o = {5 + i, 0, 3, 3};
        assert_int_equal(xgr_random(&g, &rng, &o, &err), MANTA_OK);
        assert_int_equal(tflite_write(&g, &model, &size, NULL, &err), MANTA_OK);
        assert_int_equal(fuzz_engine_one(model, size, msg, sizeof msg), FUZZ_RAN);
        for (size_t n = 0; n < size; n += 1 + n / 16) {
            const fuzz_outcome out = fuzz_engine_one(model, n, msg, sizeof msg);
            assert_int_equal(out, FUZZ_REJECTED);
            assert_true(msg[0] != '\0');
        }
        free(model);
        xgraph_free(&g);
    }
    /* int8: the quantization checks and the int8 kernels (every prefix refused) */
    for (int i = 0; i < 2; i++) {
        xgraph g;
        manta_err err;
        uint8_t *model;
        size_t size;
        char msg[256];
        float imgs[3 * 6 * 6 * 3];
        const xgr_opts o = {5 + i, 0, 3, 3};
        assert_int_equal(xgr_random(&g, &rng, &o, &err), MANTA_OK);
        for (size_t k = 0; k < sizeof imgs / sizeof imgs[0]; k++)
            imgs[k] = 2.0f * manta_rng_uniform(&rng) - 1.0f;
        assert_int_equal(xgraph_calibrate(&g, imgs, 3, XG_CALIB_MINMAX, 0, &err), MANTA_OK);
        assert_int_equal(tflite_write(&g, &model, &size, NULL, &err), MANTA_OK);
        assert_int_equal(fuzz_engine_one(model, size, msg, sizeof msg), FUZZ_RAN);
        for (size_t n = 0; n < size; n += 1 + n / 16) {
            const fuzz_outcome out = fuzz_engine_one(model, n, msg, sizeof msg);
            assert_int_equal(out, FUZZ_REJECTED);
            assert_true(msg[0] != '\0');
        }
        free(model);
        xgraph_free(&g);
    }
    /* stereo: two inputs, two outputs, the fused correlation */
    for (int i = 0; i < 2; i++) {
        xgraph g;
        manta_err err;
        uint8_t *model;
        size_t size;
        char msg[256];
        const xgr_stereo_opts o = {4 + 2 * i, 6, 3, 2 + i, 1};
        assert_int_equal(xgr_stereo(&g, &rng, &o, &err), MANTA_OK);
        assert_int_equal(tflite_write(&g, &model, &size, NULL, &err), MANTA_OK);
        assert_int_equal(fuzz_engine_one(model, size, msg, sizeof msg), FUZZ_RAN);
        for (size_t n = 0; n < size; n += 1 + n / 16) {
            const fuzz_outcome out = fuzz_engine_one(model, n, msg, sizeof msg);
            assert_int_equal(out, FUZZ_REJECTED);
            assert_true(msg[0] != '\0');
        }
        free(model);
        xgraph_free(&g);
    }
    /* int8 stereo: the int8 stereo operators, QUANTIZE and the fused int8 correlation */
    for (int i = 0; i < 2; i++) {
        xgraph g;
        manta_err err;
        uint8_t *model;
        size_t size;
        char msg[256];
        float pairs[2 * 2 * 8 * 6 * 3];
        const xgr_stereo_opts o = {4 + 2 * i, 6, 3, 2 + i, 1};
        assert_int_equal(xgr_stereo(&g, &rng, &o, &err), MANTA_OK);
        assert_int_equal(xgraph_quant_prepare(&g, &err), MANTA_OK);
        for (int k = 0; k < 2 * 2 * o.height * o.width * 3; k++)
            pairs[k] = manta_rng_uniform(&rng);
        assert_int_equal(xgraph_calibrate(&g, pairs, 2, XG_CALIB_MINMAX, 0, &err), MANTA_OK);
        assert_int_equal(xgraph_quant_shared(&g, &err), MANTA_OK);
        assert_int_equal(tflite_write(&g, &model, &size, NULL, &err), MANTA_OK);
        assert_int_equal(fuzz_engine_one(model, size, msg, sizeof msg), FUZZ_RAN);
        for (size_t n = 0; n < size; n += 1 + n / 16) {
            const fuzz_outcome out = fuzz_engine_one(model, n, msg, sizeof msg);
            assert_int_equal(out, FUZZ_REJECTED);
            assert_true(msg[0] != '\0');
        }
        free(model);
        xgraph_free(&g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regression_files),
        cmocka_unit_test(test_exported_models_and_prefixes),
    };
    return cmocka_run_group_tests_name("engine fuzz regressions", tests, NULL, NULL);
}
