/* Plain-C double-precision references for the stereo ops: 1-D correlation, bilinear
 * upsampling by an integer factor and the masked disparity losses. Same layouts and shape
 * structs as runtime/nn/correlation.h, upsample.h and disp_loss.h; output sizes, source
 * coordinates and validity are recomputed here from their definitions, independently of
 * the library. */
#ifndef MANTA_TESTS_STEREO_REF_H
#define MANTA_TESTS_STEREO_REF_H

#include <stddef.h>

#include "nn/correlation.h"
#include "nn/disp_loss.h"
#include "nn/upsample.h"

/** Displacements of a correlation: max_disp / stride + 1. */
int ref_corr_disps(const nn_corr_shape *s);

/** out[b, i, y, x] = (1/C) sum_c fl[b, c, y, x] * fr[b, c, y, x - i*stride], 0 where
 *  x - i*stride < 0. fl, fr (N, C, H, W); out (N, D, H, W). */
void ref_corr_forward(const nn_corr_shape *s, const double *fl, const double *fr, double *out);

/** The closed-form gradients of sum(dout * out) (the correlation is linear in each input):
 *  dfl, dfr (N, C, H, W), overwritten; either may be NULL. */
void ref_corr_backward(const nn_corr_shape *s, const double *fl, const double *fr,
                       const double *dout, double *dfl, double *dfr);

/** y (N, C, fH, fW) = scale * bilinear upsampling of x (N, C, H, W) by s->factor, as
 *  PyTorch's F.interpolate(mode='bilinear', align_corners=False): output o of an axis reads
 *  source coordinate max(0, (o + 0.5) / f - 0.5). */
void ref_upsample_forward(const nn_upsample_shape *s, double scale, const double *x, double *y);

/** dx (N, C, H, W) = the gradient of sum(dy * y) w.r.t. x (the transpose), overwritten. */
void ref_upsample_backward(const nn_upsample_shape *s, double scale, const double *dy, double *dx);

/** Whether ground truth g is valid: finite, > 0 and, when max_disp > 0, <= max_disp. */
int ref_disp_valid(double g, double max_disp);

/**
 * The masked disparity loss of n values: *loss = weight * mean over valid pixels of
 * l(pred - gt) (L1: |e|; smooth L1: 0.5 e^2 for |e| < 1, else |e| - 0.5), *epe = mean
 * |pred - gt| over them, *count = their number; loss and EPE are 0 when none is valid.
 */
void ref_disp_loss(nn_disp_loss_kind kind, double weight, double max_disp, size_t n,
                   const double *pred, const double *gt, double *loss, double *epe, double *count);

#endif
