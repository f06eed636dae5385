/* manta-infer: JPEG to the model's input tensor. */
#ifndef MANTA_INFER_IMAGE_H
#define MANTA_INFER_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/** Largest decoded image accepted, in pixels. */
#define IMAGE_MAX_PIXELS (64u << 20)

/** How pixels become input values: (pixel / 255 - mean[c]) / std[c]. */
typedef struct image_norm {
    int channels; /**< 1 (decoded as gray) or 3 (decoded as RGB) */
    float mean[3], std[3];
} image_norm;

/**
 * Decode a JPEG held in memory with TurboJPEG (tjDecompressHeader3 /
 * tjDecompress2, straight to gray or RGB; CMYK files are refused; a decoder
 * warning, such as a truncated file, is an error), resize it with a bilinear
 * (triangle) filter so that its shorter side is @p r, cut the centred r x r
 * square, and normalise it into @p out (r, r, channels), NHWC.
 * @param why  receives a one-line reason on failure.
 * @return 0, or -1 on failure.
 */
int image_load_jpeg(const uint8_t *jpeg, size_t size, int r, const image_norm *n, float *out,
                    char *why, size_t why_cap);

/**
 * Decode a JPEG held in memory with TurboJPEG (as image_load_jpeg()) to @p channels (1: gray,
 * 3: RGB) 8-bit samples, (h, w, channels) into *pix (malloc'd, the caller frees; NULL on
 * failure).
 * @return 0, or -1 with a one-line reason in @p why.
 */
int image_decode_jpeg(const uint8_t *jpeg, size_t size, int channels, uint8_t **pix, int *h, int *w,
                      char *why, size_t why_cap);

/**
 * The resize alone (exposed for tests): 8-bit (h, w, c) to (oh, ow, c) with
 * the triangle filter (support widened when shrinking, half-pixel centres,
 * weights normalised inside the image), rounded to nearest.
 * @return 0, or -1 when out of memory.
 */
int image_resize_u8(const uint8_t *src, int h, int w, int c, uint8_t *dst, int oh, int ow);

#endif
