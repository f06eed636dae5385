/* The checked FlatBuffers reader (see fbread_impl.h).
 *
 * Every access checks the object it touches (alignment, bounds, vtable,
 * terminator, length) before reading; positions and lengths are compared in
 * 64 bits, so no arithmetic wraps. */
#include <string.h>

#include "engine/fbread_impl.h"

void mengine_fb_init(fbr *r, const uint8_t *base, uint32_t size, uint32_t max_depth,
                     uint32_t max_tables, mdiag *d)
{
    r->base = base;
    r->size = size;
    r->max_depth = max_depth;
    r->tables_left = max_tables;
    r->d = d;
}

mengine_status mengine_fb_table_at(fbr *r, uint32_t pos, uint32_t depth, fb_table *t)
{
    if (depth > r->max_depth)
        return mengine_diag_fail(r->d, MENGINE_ERR_DEPTH,
                                 "table at byte %u is nested %u deep (limit %u)", pos, depth,
                                 r->max_depth);
    if (r->tables_left == 0)
        return mengine_diag_fail(r->d, MENGINE_ERR_LIMIT, "more tables than the verifier's limit");
    r->tables_left--;
    if (pos % 4)
        return mengine_diag_fail(r->d, MENGINE_ERR_ALIGNMENT,
                                 "table at byte %u is not 4-byte aligned", pos);
    if ((uint64_t)pos + 4 > r->size)
        return mengine_diag_fail(r->d, MENGINE_ERR_OFFSET, "table at byte %u lies outside the data",
                                 pos);
    const int64_t vt = (int64_t)pos - rd_i32(r->base + pos);
    if (vt < 0 || vt + 4 > (int64_t)r->size)
        return mengine_diag_fail(r->d, MENGINE_ERR_VTABLE,
                                 "vtable of the table at byte %u lies outside the data", pos);
    if (vt % 2)
        return mengine_diag_fail(r->d, MENGINE_ERR_VTABLE,
                                 "vtable of the table at byte %u is not 2-byte aligned", pos);
    const uint16_t vt_size = rd_u16(r->base + vt), t_size = rd_u16(r->base + vt + 2);
    if (vt_size < 4 || vt_size % 2 || vt + vt_size > (int64_t)r->size)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_VTABLE,
            "vtable of the table at byte %u: size %u is odd, below 4 or past the end", pos,
            (unsigned)vt_size);
    if (t_size < 4)
        return mengine_diag_fail(r->d, MENGINE_ERR_VTABLE,
                                 "table at byte %u: table size %u below 4", pos, (unsigned)t_size);
    if ((uint64_t)pos + t_size > r->size)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_TRUNCATED,
            "table at byte %u (%u bytes) runs past the end of the data (%u bytes)", pos,
            (unsigned)t_size, r->size);
    t->pos = pos;
    t->vt = (uint32_t)vt;
    t->vt_size = vt_size;
    t->t_size = t_size;
    t->depth = depth;
    return MENGINE_OK;
}

mengine_status mengine_fb_root(fbr *r, fb_table *t)
{
    if (r->size < 8)
        return mengine_diag_fail(r->d, MENGINE_ERR_TRUNCATED,
                                 "%u bytes: shorter than the 8-byte FlatBuffers header", r->size);
    const uint32_t root = rd_u32(r->base);
    if (root == 0 || root > FB_MAX_OFFSET || (uint64_t)root + 4 > r->size)
        return mengine_diag_fail(r->d, MENGINE_ERR_OFFSET,
                                 "root offset %u points outside the data (%u bytes)", root,
                                 r->size);
    return mengine_fb_table_at(r, root, 1, t);
}

/* Position of field @p id (0 when absent), checked to lie inside the table and be aligned. */
static mengine_status field(fbr *r, const fb_table *t, unsigned id, uint32_t size, uint32_t *pos)
{
    const uint32_t slot = 4 + 2 * id;
    *pos = 0;
    if (slot + 2 > t->vt_size)
        return MENGINE_OK;
    const uint16_t fo = rd_u16(r->base + t->vt + slot);
    if (fo == 0)
        return MENGINE_OK;
    if (fo < 4 || (uint32_t)fo + size > t->t_size)
        return mengine_diag_fail(r->d, MENGINE_ERR_VTABLE,
                                 "field %u of the table at byte %u lies outside the table", id,
                                 t->pos);
    if ((t->pos + fo) % size)
        return mengine_diag_fail(r->d, MENGINE_ERR_ALIGNMENT,
                                 "field %u of the table at byte %u is not %u-byte aligned", id,
                                 t->pos, size);
    *pos = t->pos + fo;
    return MENGINE_OK;
}

/* Decoders of the little-endian scalar at @p p (bounds checked by field()). */
static uint8_t rd_u8(const uint8_t *p) { return *p; }
static int8_t rd_i8(const uint8_t *p) { return (int8_t)(*p < 128 ? *p : *p - 256); }
static uint64_t rd_u64(const uint8_t *p) { return rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32; }
static float rd_f32(const uint8_t *p)
{
    const uint32_t bits = rd_u32(p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The typed scalar readers, one shape: field @p id of @p size bytes decoded by
 * @p decode, or the default when absent; *out untouched on failure. */
#define FB_SCALAR_READER(name, type, size, decode)                                   \
    mengine_status name(fbr *r, const fb_table *t, unsigned id, type def, type *out) \
    {                                                                                \
        uint32_t p;                                                                  \
        mengine_status st = field(r, t, id, size, &p);                               \
        if (st == MENGINE_OK)                                                        \
            *out = p ? decode(r->base + p) : def;                                    \
        return st;                                                                   \
    }
FB_SCALAR_READER(mengine_fb_u8, uint8_t, 1, rd_u8)
FB_SCALAR_READER(mengine_fb_i8, int8_t, 1, rd_i8)
FB_SCALAR_READER(mengine_fb_u32, uint32_t, 4, rd_u32)
FB_SCALAR_READER(mengine_fb_i32, int32_t, 4, rd_i32)
FB_SCALAR_READER(mengine_fb_u64, uint64_t, 8, rd_u64)
FB_SCALAR_READER(mengine_fb_f32, float, 4, rd_f32)
#undef FB_SCALAR_READER

/* Target of the offset stored at @p at (a field or a vector element). */
static mengine_status follow(fbr *r, uint32_t at, uint32_t *target)
{
    const uint32_t off = rd_u32(r->base + at);
    if (off == 0 || off > FB_MAX_OFFSET || (uint64_t)at + off + 4 > r->size)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_OFFSET,
            "offset %u at byte %u is zero or points outside the data (%u bytes)", off, at, r->size);
    *target = at + off;
    return MENGINE_OK;
}

static mengine_status ref(fbr *r, const fb_table *t, unsigned id, uint32_t *target, int *present)
{
    uint32_t p;
    mengine_status st = field(r, t, id, 4, &p);
    *present = 0;
    if (st != MENGINE_OK || !p)
        return st;
    st = follow(r, p, target);
    *present = st == MENGINE_OK;
    return st;
}

mengine_status mengine_fb_sub_table(fbr *r, const fb_table *t, unsigned id, fb_table *sub,
                                    int *present)
{
    uint32_t target = 0;
    mengine_status st = ref(r, t, id, &target, present);
    if (st != MENGINE_OK || !*present)
        return st;
    return mengine_fb_table_at(r, target, t->depth + 1, sub);
}

mengine_status mengine_fb_vector(fbr *r, const fb_table *t, unsigned id, uint32_t elem_size,
                                 fb_vec *v, int *present)
{
    uint32_t target = 0;
    mengine_status st = ref(r, t, id, &target, present);
    if (st != MENGINE_OK || !*present)
        return st;
    *present = 0;
    if (target % 4)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_ALIGNMENT,
            "vector at byte %u (field %u of the table at byte %u) is not 4-byte aligned", target,
            id, t->pos);
    const uint32_t n = rd_u32(r->base + target);
    if ((uint64_t)n * elem_size > (uint64_t)r->size - target - 4)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_VECTOR,
            "vector at byte %u: %u elements of %u bytes run past the end of the data", target, n,
            elem_size);
    v->pos = target + 4;
    v->n = n;
    *present = 1;
    return MENGINE_OK;
}

mengine_status mengine_fb_string(fbr *r, const fb_table *t, unsigned id, fb_vec *s, int *present)
{
    mengine_status st = mengine_fb_vector(r, t, id, 1, s, present);
    if (st != MENGINE_OK || !*present)
        return st;
    if ((uint64_t)s->pos + s->n >= r->size || r->base[s->pos + s->n] != 0) {
        *present = 0;
        return mengine_diag_fail(
            r->d, MENGINE_ERR_STRING,
            "string at byte %u (field %u of the table at byte %u) has no 0 terminator", s->pos - 4,
            id, t->pos);
    }
    return MENGINE_OK;
}

mengine_status mengine_fb_vec_table(fbr *r, const fb_vec *v, uint32_t i, uint32_t depth,
                                    fb_table *t)
{
    uint32_t target = 0;
    mengine_status st = follow(r, v->pos + 4 * i, &target);
    return st == MENGINE_OK ? mengine_fb_table_at(r, target, depth, t) : st;
}
