/* Plain-C double-precision references for the data pipeline's image ops:
 * the triangle-filter (bilinear, averaging when shrinking) resize and the
 * padded square crop with optional mirror. Single channel, row-major. */
#ifndef MANTA_TESTS_REF_RESIZE_H
#define MANTA_TESTS_REF_RESIZE_H

#include <stdint.h>

/**
 * dst (oh, ow) = src (h, w) resized: output o of an axis of n -> m sits at
 * c = (o + 0.5) n / m, input i weighs max(0, 1 - |i + 0.5 - c| / max(1, n/m)),
 * weights normalised over the inputs; the 2-D weight is the product.
 */
void ref_resize(const double *src, int h, int w, double *dst, int oh, int ow);

/**
 * out (side, side) = channel ch of the (h, w, c) HWC image, rows y0.., columns
 * x0.., outside the image 0 (edge = 0) or the nearest pixel (edge = 1),
 * mirrored left-right when flip.
 */
void ref_crop(const uint8_t *img, int h, int w, int c, int ch, int y0, int x0, int side, int edge,
              int flip, double *out);

#endif
