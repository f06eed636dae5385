/**
 * @file elastic.h
 * @brief OFA's elastic kernel on the device: a smaller depthwise kernel is
 *        made from the centre of the larger one through a learned matrix.
 *
 * For a layer with depthwise weights W (C, K, K) and target size k < K:
 *   Wk[c] = reshape(flatten(centre_k(W[c])) x M^T),  M (k*k, k*k)
 * where centre_k takes rows/columns K/2 - k/2 .. K/2 - k/2 + k - 1. OFA chains
 * 7 -> 5 -> 3: the 3x3 kernel is made from the transformed 5x5 one. M is
 * shared by all channels of a layer and starts as the identity.
 * Backward: dM += dWk^T x centre (summed over channels), and the centre of
 * dW receives dWk x M (accumulated: dW += ...).
 */
#ifndef MANTA_ELASTIC_ELASTIC_H
#define MANTA_ELASTIC_ELASTIC_H

#include "cl/cl.h"

/**
 * wk (C, k, k) = centre_k(w (C, K, K)) x M^T with M (k*k, k*k).
 * @return MANTA_ERR_INVALID_ARG unless 1 <= k <= K and K - k is even.
 */
manta_status ofa_ktrans_forward(mcl_dev *d, int c, int big_k, int k, mview w, mview m, mview wk);

/**
 * Given dwk (C, k, k): dm += dwk^T x centre_k(w) over channels (k*k, k*k), and
 * centre_k(dw) += dwk x M. w is the forward input (C, K, K).
 */
manta_status ofa_ktrans_backward(mcl_dev *d, int c, int big_k, int k, mview w, mview m, mview dwk,
                                 mview dw, mview dm);

#endif
