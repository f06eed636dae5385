/* Seed corpus for the engine fuzzer: small exported-style models (random
 * networks using every export op, the colour classifier, small stereo
 * networks with the correlation pattern, two inputs and two outputs, and
 * int8 files of random networks, int8 stereo ones), written with the .tflite writer.
 * Usage: gen_seeds DIR [COUNT] */
#include <stdio.h>
#include <stdlib.h>

#include "common/xgrand.h"
#include "export/quant.h"
#include "export/tflite.h"

static int write_path(const xgraph *g, const char *path, manta_err *err)
{
    manta_status st = tflite_write_file(g, path, NULL, NULL, err);
    if (st != MANTA_OK) {
        fprintf(stderr, "gen_seeds: %s: %s\n", path, manta_err_msg(err, st));
        return 1;
    }
    return 0;
}

static int write_one(const xgraph *g, const char *dir, int i)
{
    char path[4096];
    manta_err err;
    snprintf(path, sizeof path, "%s/seed-%02d.tflite", dir, i);
    return write_path(g, path, &err);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_seeds DIR [COUNT]\n");
        return 2;
    }
    const int count = argc > 2 ? atoi(argv[2]) : 8;
    manta_rng rng;
    manta_err err;
    xgraph g;
    int bad = 0;
    manta_rng_seed(&rng, 2024, 1);
    for (int i = 0; i < count && !bad; i++) {
        /* small sizes keep the seeds a few KiB and the runs fast */
        const xgr_opts o = {5 + (int)manta_rng_below(&rng, 6), 0, 2 + (int)manta_rng_below(&rng, 3),
                            3 + (int)manta_rng_below(&rng, 2)};
        if (xgr_random(&g, &rng, &o, &err) != MANTA_OK) {
            fprintf(stderr, "gen_seeds: %s\n", err.msg);
            return 1;
        }
        bad = write_one(&g, argv[1], i);
        xgraph_free(&g);
    }
    if (!bad && xgr_color_classifier(&g, 4, &err) == MANTA_OK) {
        bad = write_one(&g, argv[1], count);
        xgraph_free(&g);
    }
    /* stereo: small views, a few displacements (seeds the correlation pattern and the
     * fused kernel; the classification seeds above keep their bytes) */
    for (int i = 0; i < 3 && !bad; i++) {
        char path[4096];
        const xgr_stereo_opts o = {4 + 2 * i, 6 + 2 * i, 2 + i, 2 + i, 1 + i % 2};
        if (xgr_stereo(&g, &rng, &o, &err) != MANTA_OK) {
            fprintf(stderr, "gen_seeds: %s\n", err.msg);
            return 1;
        }
        snprintf(path, sizeof path, "%s/seed-stereo-%d.tflite", argv[1], i);
        bad = write_path(&g, path, &err);
        xgraph_free(&g);
    }
    /* int8: calibrated on random images (seeds the quantization checks and the int8 kernels) */
    for (int i = 0; i < 3 && !bad; i++) {
        char path[4096];
        const xgr_opts o = {5 + i, 0, 3, 3};
        float imgs[4 * 7 * 7 * 3];
        if (xgr_random(&g, &rng, &o, &err) != MANTA_OK) {
            fprintf(stderr, "gen_seeds: %s\n", err.msg);
            return 1;
        }
        const int C = g.tensors[g.input].shape[3], n = o.resolution * o.resolution * C;
        for (int k = 0; k < 4 * n; k++)
            imgs[k] = 2.0f * manta_rng_uniform(&rng) - 1.0f;
        if (xgraph_calibrate(&g, imgs, 4, XG_CALIB_MINMAX, 0, &err) != MANTA_OK) {
            fprintf(stderr, "gen_seeds: %s\n", err.msg);
            return 1;
        }
        snprintf(path, sizeof path, "%s/seed-int8-%d.tflite", argv[1], i);
        bad = write_path(&g, path, &err);
        xgraph_free(&g);
    }
    /* int8 stereo: calibrated on random pairs (seeds the int8 stereo operators, the QUANTIZE
     * before concatenations and the fused int8 correlation) */
    for (int i = 0; i < 2 && !bad; i++) {
        char path[4096];
        const xgr_stereo_opts o = {4 + 2 * i, 6 + 2 * i, 2 + i, 2 + i, 1 + i % 2};
        float pairs[3 * 2 * 6 * 8 * 3];
        if (xgr_stereo(&g, &rng, &o, &err) != MANTA_OK ||
            xgraph_quant_prepare(&g, &err) != MANTA_OK) {
            fprintf(stderr, "gen_seeds: %s\n", err.msg);
            return 1;
        }
        const int n = 2 * o.height * o.width * 3;
        for (int k = 0; k < 3 * n; k++)
            pairs[k] = manta_rng_uniform(&rng);
        if (xgraph_calibrate(&g, pairs, 3, XG_CALIB_MINMAX, 0, &err) != MANTA_OK ||
            xgraph_quant_shared(&g, &err) != MANTA_OK) {
            fprintf(stderr, "gen_seeds: %s\n", err.msg);
            return 1;
        }
        snprintf(path, sizeof path, "%s/seed-stereo-int8-%d.tflite", argv[1], i);
        bad = write_path(&g, path, &err);
        xgraph_free(&g);
    }
    return bad;
}
