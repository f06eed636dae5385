/**
 * @file wire.h
 * @brief Encodings of an allreduce's payload on the ring (--compress, --aggregate): the
 *        element conversions, plain C, used by ring.c and checked by the tests.
 *
 * | dist_wire        | element on the wire                | exactness                                   |
 * |------------------|------------------------------------|---------------------------------------------|
 * | DIST_WIRE_F32    | float32                            | float32 sums in ring order                  |
 * | DIST_WIRE_FP16   | IEEE binary16, round to nearest even | each hop rounds the partial sum to fp16    |
 * | DIST_WIRE_BF16   | bfloat16, round to nearest even    | each hop rounds the partial sum to bf16     |
 * | DIST_WIRE_INT8   | int8 and a float32 scale per segment | every rounding error goes to a residual   |
 * | DIST_WIRE_FIXED  | int32 fixed point, scale agreed per allreduce | integer sums: exact, any order   |
 *
 * fp16, bf16 and int8 accumulate in float32 at every hop (decode, add, encode). int8's
 * scale of a segment is max|x| / 127 (float32, sent before the 127-bounded values); the
 * value decoded is q * scale. Fixed point: with M the largest magnitude over all ranks (an
 * allreduce-max before the data), E the exponent with M < 2^E (frexp) and L = ceil(log2 N),
 * every rank sends q = rint(x * 2^k), k = 30 - L - E, so |q| <= 2^(30-L) and any partial
 * sum of N values stays within 2^30 (one bit of headroom below int32's 2^31 - 1). The sum
 * is an integer, exact and independent of the order; it is decoded as q * 2^-k rounded once
 * to float32 (an average: then divided by N, in double). Values below 2^(E-30+L) are lost:
 * about 28 bits of relative precision for 4 ranks, more than float32's 24 near the maximum.
 */
#ifndef MANTA_DIST_WIRE_H
#define MANTA_DIST_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "dist/config.h"

/** Bytes of one element on the wire. */
size_t dist_wire_elem_bytes(dist_wire w);
/** Bytes before the elements of a segment (int8: its float32 scale; else 0). */
size_t dist_wire_head_bytes(dist_wire w);
/** Payload bytes of a segment of @p len elements (0 when @p len is 0). */
size_t dist_wire_payload(dist_wire w, size_t len);

/** float32 to IEEE binary16, round to nearest even; overflow to infinity, NaN to a quiet NaN. */
uint16_t dist_fp16_from_f32(float f);
/** IEEE binary16 to float32 (exact). */
float dist_fp16_to_f32(uint16_t h);
/** float32 to bfloat16, round to nearest even; NaN kept (quiet). */
uint16_t dist_bf16_from_f32(float f);
/** bfloat16 to float32 (exact). */
float dist_bf16_to_f32(uint16_t h);

/** Largest magnitude of @p x (n floats): NaN when one is NaN, 0 for n = 0. */
float dist_maxabs(const float *x, size_t n);

/**
 * Encode @p n floats of @p x as a segment payload of @p w (fp16, bf16 or int8) into @p out
 * (dist_wire_payload() bytes, little-endian). When @p residual is not NULL, the rounding
 * error of every element (x - decoded) is added to it: the error feedback of int8 (and of
 * the 16-bit encodings when a caller wants it).
 */
void dist_wire_encode(dist_wire w, const float *x, size_t n, unsigned char *out, float *residual);

/**
 * Decode a segment payload of @p w (fp16, bf16 or int8) of @p n elements. @p add: 0 writes
 * y[i] = v / div, 1 adds y[i] = v + y[i] (the received partial sum first, then this rank's
 * value). @p div is ignored when adding.
 */
void dist_wire_decode(dist_wire w, const unsigned char *in, size_t n, float *y, int add, float div);

/** The fixed-point shift k for the agreed largest magnitude @p maxabs (finite) over @p world ranks. */
int dist_fixed_shift(float maxabs, int world);
/** q[i] = rint(x[i] * 2^k) (the caller chose k with dist_fixed_shift()). */
void dist_fixed_encode(const float *x, size_t n, int k, int32_t *q);
/** y[i] = (float)(q[i] * 2^-k / div), rounded once. */
void dist_fixed_decode(const int32_t *q, size_t n, int k, double div, float *y);
/** q[i] += p[i] (integer, wrapping; no overflow within the headroom). */
void dist_fixed_add(int32_t *q, const int32_t *p, size_t n);

#endif
