/**
 * @file extract.h
 * @brief The values of a device network's MBConv slots and batch-normalised convolutions
 *        for the graph builder (export/mbv3_graph.h): host copies of the parameter and
 *        state slabs read into the builder's requests, batch norm folded, the active
 *        depthwise kernel baked (OFA's transform chain), channels sliced. Shared by every
 *        task's extraction (classify/extract.h, stereo/extract.h).
 */
#ifndef MANTA_ELASTIC_EXTRACT_H
#define MANTA_ELASTIC_EXTRACT_H

#include <stddef.h>

#include "elastic/mbconv.h"
#include "export/mbv3_graph.h"

/** Host copies of a network's slabs: parameters and batch-norm state (borrowed). */
typedef struct ofa_host_values {
    const float *p;  /**< the parameter slab's floats */
    const float *st; /**< the state slab's floats (running statistics) */
} ofa_host_values;

/** Channel @p o of batch norm @p b as an affine map: scale = gamma / sqrt(var + eps),
 *  shift = beta - mean * scale (the eval-mode normalisation). */
void ofa_bn_fold(const ofa_host_values *v, const ofa_bn *b, int o, float *scale, float *shift);

/**
 * A dense convolution of the request (r->k, r->cin, r->cout) from the weights at parameter
 * offset @p w_off (NCHW [o][i][ky][kx], rows of @p ld floats: the first r->cin input
 * channels and r->cout rows of a wider tensor), times r->in_scale, with batch norm @p bn
 * folded in (NULL: none, and the bias left as it is), into r->weights (OHWI) and r->bias.
 */
void ofa_fill_conv_bn(const ofa_host_values *v, const mbv3_request *r, size_t w_off, size_t ld,
                      const ofa_bn *bn);

/** A depthwise convolution of r->cout channels from host weights @p w ((C, k, k)) with batch
 *  norm @p bn folded in, into r->weights ((1, k, k, C)) and r->bias. */
void ofa_fill_dwconv_bn(const ofa_host_values *v, const mbv3_request *r, const float *w,
                        const ofa_bn *bn);

/**
 * The operator of MBConv slot @p p that @p r asks for (MBV3_EXPAND, MBV3_DW, MBV3_SE_REDUCE,
 * MBV3_SE_EXPAND, MBV3_PROJECT), the slot's kernel size index @p ki (ofa_mbconv_cfg::ki) for
 * the depthwise kernel: batch norms folded, SE layers with their biases.
 * @return MANTA_ERR_NO_MEMORY; MANTA_ERR_INTERNAL for a part a slot does not have.
 */
manta_status ofa_mbconv_fill(const ofa_host_values *v, const ofa_mbconv *p, int ki,
                             const mbv3_request *r, manta_err *err);

#endif
