/**
 * @file xgrand.h
 * @brief Tests and fuzz seeds: export graphs (xgraph.h) built in code, with
 *        random or chosen weights. No cmocka dependency, so that the fuzz
 *        seed generator and test helpers link it too.
 */
#ifndef MANTA_TESTS_XGRAND_H
#define MANTA_TESTS_XGRAND_H

#include "core/rng.h"
#include "core/status.h"
#include "export/xgraph.h"

/** Sizes of a random graph; 0 picks a random value. */
typedef struct xgr_opts {
    int resolution; /**< input side (random: 5 .. 19) */
    int channels;   /**< 1 or 3 (random) */
    int classes;    /**< classes (random: 2 .. 12) */
    int width;      /**< base channels (random: 3 .. 12) */
} xgr_opts;

/**
 * A random mobile-style network that uses every xg_kind: a stem convolution
 * (stride 2, SAME or VALID, kernel 1/3/5), an inverted residual block with
 * stride 2 through an explicit PAD and a VALID depthwise convolution, hard
 * swish and squeeze-excite (MEAN, two 1x1 convolutions, MUL), a stride-1
 * residual block (ADD), a stride-2 depthwise convolution (SAME or VALID), and
 * a head (1x1 convolution, MEAN, RESHAPE, FULLY_CONNECTED with or without
 * bias, SOFTMAX). Activations, biases and sizes (odd ones included) are
 * random; weights are scaled by 1/sqrt(fan-in). Labels "class0"...
 * @param o NULL for all random.
 */
manta_status xgr_random(xgraph *g, manta_rng *rng, const xgr_opts *o, manta_err *err);

/**
 * A network whose answer is known: input (1, R, R, 3) as pixel / 255 (mean 0,
 * std 1), 1x1 identity convolution with RELU, MEAN, RESHAPE, FULLY_CONNECTED
 * with weights 8 x identity, SOFTMAX. The top class is the colour channel
 * with the largest mean: labels "red", "green", "blue".
 */
manta_status xgr_color_classifier(xgraph *g, int resolution, manta_err *err);

/** Sizes of a random stereo graph; 0 picks a random value. */
typedef struct xgr_stereo_opts {
    int height, width; /**< input size, even (random: 4 .. 14) */
    int features;      /**< encoder channels (random: 2 .. 9) */
    int max_disp;      /**< correlation displacements at 1/2 resolution (random: 1 .. 7) */
    int corr_stride;   /**< displacement step (random: 1 .. 2) */
} xgr_stereo_opts;

/**
 * A small random stereo network of the DispNetC form, two inputs "left" and
 * "right" (1, H, W, 3) and two outputs, using every stereo kind: one encoder
 * convolution (3x3 stride 2, SAME) applied to both views with the same
 * weights, LEAKY_RELU 0.1, the correlation pattern (xgraph_add_correlation()),
 * a 1x1 redirect convolution of the left features, CONCAT [correlation,
 * redirect], a 3x3 convolution, the coarse prediction (output 0, (1, H/2, W/2,
 * 1)), a transposed convolution back to H x W (k4 s2 SAME with a bias, or k2
 * s2 VALID without), LEAKY_RELU, the coarse prediction upsampled (RESIZE) and
 * a SLICE of the left image's first channel, CONCAT of the three, and the fine
 * prediction (output 1, (1, H, W, 1)). Weights random (1/sqrt(fan-in)).
 * @param o NULL for all random.
 */
manta_status xgr_stereo(xgraph *g, manta_rng *rng, const xgr_stereo_opts *o, manta_err *err);

#endif
