/* The checked FlatBuffers reader: schema-free access to the tables, fields,
 * vectors and strings of a buffer of untrusted bytes. Every access checks
 * bounds, alignment and vtable limits before it reads, so nothing outside
 * [base, base + size) is ever read, whatever the bytes; a failure returns its
 * own mengine_status code and writes a message naming the byte position.
 * Reading a field the verifier did not visit is therefore still safe.
 * Positions are byte offsets from the start of the data. Depends on diag_impl.h
 * only. Not part of the public API. */
#ifndef MANTA_ENGINE_FBREAD_H
#define MANTA_ENGINE_FBREAD_H

#include <stdint.h>

#include "engine/diag_impl.h"

/* Largest offset and buffer size: FlatBuffers stop at 2 GiB. */
#define FB_MAX_OFFSET 0x7fffffffu

/* A reader over one buffer. */
typedef struct fbr {
    const uint8_t *base;  /* 4-byte aligned in memory */
    uint32_t size;        /* bytes at base, at most FB_MAX_OFFSET */
    uint32_t max_depth;   /* deepest table nesting allowed (root = 1) */
    uint32_t tables_left; /* budget of tables to visit */
    mdiag *d;             /* where failures are described */
} fbr;

/* A table, checked to lie in the data with its vtable. */
typedef struct fb_table {
    uint32_t pos; /* table start (its soffset) */
    uint32_t vt;  /* vtable start */
    uint16_t vt_size;
    uint16_t t_size;
    uint32_t depth;
} fb_table;

/* A vector (or string), checked to lie in the data. */
typedef struct fb_vec {
    uint32_t pos; /* first element */
    uint32_t n;
} fb_vec;

/* Little-endian loads (the caller checks the bounds). */
static inline uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline int32_t rd_i32(const uint8_t *p)
{
    uint32_t u = rd_u32(p);
    return u <= 0x7fffffffu ? (int32_t)u : (int32_t)(u - 0x80000000u) - 0x7fffffff - 1;
}

/* A reader over the @p size bytes at @p base (4-byte aligned), visiting at
 * most @p max_tables tables nested at most @p max_depth deep; failures are
 * described in @p d (may be NULL). */
void mengine_fb_init(fbr *r, const uint8_t *base, uint32_t size, uint32_t max_depth,
                     uint32_t max_tables, mdiag *d);
/* The root table: the 8-byte header must be there (MENGINE_ERR_TRUNCATED) and
 * the root offset nonzero and inside the data (MENGINE_ERR_OFFSET); the table
 * is then checked as mengine_fb_table_at() does, at depth 1. The file identifier
 * (bytes 4 to 7) is the schema's business, not checked here. */
mengine_status mengine_fb_root(fbr *r, fb_table *t);
/* The table at @p pos, nested @p depth deep: within the depth limit
 * (MENGINE_ERR_DEPTH) and the table budget (MENGINE_ERR_LIMIT, counts one
 * table), 4-byte aligned (MENGINE_ERR_ALIGNMENT), inside the data
 * (MENGINE_ERR_OFFSET), its vtable inside the data, 2-byte aligned, of an even
 * size of at least 4 (MENGINE_ERR_VTABLE), the table of at least 4 bytes
 * (MENGINE_ERR_VTABLE) and not running past the end (MENGINE_ERR_TRUNCATED). */
mengine_status mengine_fb_table_at(fbr *r, uint32_t pos, uint32_t depth, fb_table *t);
/* Scalar field @p id of @p t, or @p def when absent. The field must lie inside
 * its table (MENGINE_ERR_VTABLE) and be aligned to its size
 * (MENGINE_ERR_ALIGNMENT); *out is left untouched on failure. */
mengine_status mengine_fb_u8(fbr *r, const fb_table *t, unsigned id, uint8_t def, uint8_t *out);
mengine_status mengine_fb_i8(fbr *r, const fb_table *t, unsigned id, int8_t def, int8_t *out);
mengine_status mengine_fb_i32(fbr *r, const fb_table *t, unsigned id, int32_t def, int32_t *out);
mengine_status mengine_fb_u32(fbr *r, const fb_table *t, unsigned id, uint32_t def, uint32_t *out);
mengine_status mengine_fb_u64(fbr *r, const fb_table *t, unsigned id, uint64_t def, uint64_t *out);
mengine_status mengine_fb_f32(fbr *r, const fb_table *t, unsigned id, float def, float *out);
/* Table field @p id of @p t, nested one deeper: *present is 0 (and @p sub
 * untouched) when the field is absent. The offset must be nonzero and point
 * inside the data (MENGINE_ERR_OFFSET); then as mengine_fb_table_at(). */
mengine_status mengine_fb_sub_table(fbr *r, const fb_table *t, unsigned id, fb_table *sub,
                                    int *present);
/* Vector field @p id of @p t with elements of @p elem_size bytes: *present as
 * mengine_fb_sub_table(). The vector must be 4-byte aligned
 * (MENGINE_ERR_ALIGNMENT) and its @p elem_size x length bytes inside the data
 * (MENGINE_ERR_VECTOR). */
mengine_status mengine_fb_vector(fbr *r, const fb_table *t, unsigned id, uint32_t elem_size,
                                 fb_vec *v, int *present);
/* String field @p id of @p t: a byte vector followed by its 0 terminator
 * inside the data (MENGINE_ERR_STRING). */
mengine_status mengine_fb_string(fbr *r, const fb_table *t, unsigned id, fb_vec *s, int *present);
/* Element @p i (< v->n) of a vector of tables, nested @p depth deep. */
mengine_status mengine_fb_vec_table(fbr *r, const fb_vec *v, uint32_t i, uint32_t depth,
                                    fb_table *t);
/* Element @p i (< v->n) of a vector of 4-byte elements, as int32. */
static inline int32_t fb_vec_i32(const fbr *r, const fb_vec *v, uint32_t i)
{
    return rd_i32(r->base + v->pos + 4 * i);
}

#endif
