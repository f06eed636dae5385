#include "export/flatbuf.h"

#include <stdlib.h>
#include <string.h>

#include "core/le.h"

/* FlatBuffers buffers are limited to 2 GiB - 1 so that offsets fit a signed 32-bit value. */
#define MFB_MAX_SIZE ((size_t)0x7fffffff)

static manta_status fail(mfb_builder *b, manta_status st, const char *why)
{
    if (b->status == MANTA_OK) {
        b->status = st;
        b->why = why;
    }
    return b->status;
}

manta_status mfb_init(mfb_builder *b, size_t initial)
{
    const uint16_t probe = 1;
    memset(b, 0, sizeof *b);
    b->minalign = 1;
    b->why = "";
    if (*(const uint8_t *)&probe != 1)
        return fail(b, MANTA_ERR_UNSUPPORTED, "big-endian host");
    b->cap = initial ? initial : 1024;
    b->buf = malloc(b->cap);
    if (!b->buf)
        return fail(b, MANTA_ERR_NO_MEMORY, "out of memory");
    return MANTA_OK;
}

void mfb_free(mfb_builder *b)
{
    if (!b)
        return;
    free(b->buf);
    free(b->vtables);
    b->buf = NULL;
    b->vtables = NULL;
    b->cap = b->size = b->n_vtables = b->cap_vtables = 0;
}

const char *mfb_error(const mfb_builder *b) { return b->why ? b->why : ""; }

/* Make room for @p n more bytes, moving the data to the end of a larger block. */
static manta_status reserve(mfb_builder *b, size_t n)
{
    if (b->status != MANTA_OK)
        return b->status;
    if (n > MFB_MAX_SIZE - b->size)
        return fail(b, MANTA_ERR_INVALID_ARG, "buffer would exceed 2 GiB");
    if (b->size + n <= b->cap)
        return MANTA_OK;
    size_t cap = b->cap;
    while (cap < b->size + n)
        cap = cap > MFB_MAX_SIZE / 2 ? MFB_MAX_SIZE : cap * 2;
    uint8_t *nb = malloc(cap);
    if (!nb)
        return fail(b, MANTA_ERR_NO_MEMORY, "out of memory");
    if (b->size)
        memcpy(nb + cap - b->size, b->buf + b->cap - b->size, b->size);
    free(b->buf);
    b->buf = nb;
    b->cap = cap;
    return MANTA_OK;
}

/* Address of the byte at distance @p pos from the end. */
static uint8_t *at(mfb_builder *b, size_t pos) { return b->buf + b->cap - pos; }

/* Prepend @p n bytes (copied from @p src, or zeros when NULL). */
static manta_status push(mfb_builder *b, const void *src, size_t n)
{
    manta_status st = reserve(b, n);
    if (st != MANTA_OK)
        return st;
    b->size += n;
    if (src)
        memcpy(at(b, b->size), src, n);
    else
        memset(at(b, b->size), 0, n);
    return MANTA_OK;
}

/* Pad so that after @p len more bytes the size is a multiple of @p align. */
static manta_status prealign(mfb_builder *b, size_t len, size_t align)
{
    if (align > b->minalign)
        b->minalign = align;
    size_t pad = (align - ((b->size + len) & (align - 1))) & (align - 1);
    return pad ? push(b, NULL, pad) : b->status;
}

/* Prepend a little-endian scalar of @p n bytes, aligned to its size. */
static manta_status push_scalar(mfb_builder *b, uint64_t v, size_t n)
{
    uint8_t tmp[8];
    manta_le_put(tmp, v, n);
    manta_status st = prealign(b, n, n);
    return st == MANTA_OK ? push(b, tmp, n) : st;
}

/* Prepend a uoffset to the object @p ref (value measured from the offset's own address). */
static manta_status push_ref(mfb_builder *b, mfb_ref ref)
{
    manta_status st = prealign(b, 4, 4);
    if (st != MANTA_OK)
        return st;
    if (ref == 0 || ref > b->size)
        return fail(b, MANTA_ERR_INVALID_ARG, "reference to an object not in this buffer");
    return push_scalar(b, (uint64_t)(b->size + 4 - ref), 4);
}

static manta_status check_building(mfb_builder *b, int want_table)
{
    if (b->status != MANTA_OK)
        return b->status;
    if (b->finished)
        return fail(b, MANTA_ERR_INVALID_ARG, "buffer already finished");
    if (b->in_table != want_table)
        return fail(b, MANTA_ERR_INVALID_ARG,
                    want_table ? "field added outside a table"
                               : "object built inside an open table");
    return MANTA_OK;
}

manta_status mfb_start_table(mfb_builder *b)
{
    manta_status st = check_building(b, 0);
    if (st == MANTA_OK) /* padding before the table, not inside it: equal tables share vtables */
        st = prealign(b, 0, 4);
    if (st != MANTA_OK)
        return st;
    b->in_table = 1;
    b->table_end = b->size;
    b->n_fields = 0;
    memset(b->field, 0, sizeof b->field);
    return MANTA_OK;
}

/* MANTA_OK when field @p id of the open table may be added. */
static manta_status field_check(mfb_builder *b, unsigned id)
{
    manta_status st = check_building(b, 1);
    if (st != MANTA_OK)
        return st;
    if (id >= MFB_MAX_FIELDS)
        return fail(b, MANTA_ERR_INVALID_ARG, "field id out of range");
    if (b->field[id])
        return fail(b, MANTA_ERR_INVALID_ARG, "field added twice");
    return MANTA_OK;
}

/* Record that field @p id (checked by field_check()) starts at the current position. */
static manta_status mark_field(mfb_builder *b, unsigned id)
{
    b->field[id] = (uint32_t)b->size;
    if (id + 1 > b->n_fields)
        b->n_fields = id + 1;
    return MANTA_OK;
}

static manta_status add_scalar(mfb_builder *b, unsigned id, uint64_t bits, size_t n, int is_default)
{
    manta_status st = field_check(b, id);
    if (st != MANTA_OK || is_default)
        return st;
    st = push_scalar(b, bits, n);
    return st != MANTA_OK ? st : mark_field(b, id);
}

manta_status mfb_add_bool(mfb_builder *b, unsigned id, int v, int def)
{
    return add_scalar(b, id, v != 0, 1, (v != 0) == (def != 0));
}
manta_status mfb_add_i8(mfb_builder *b, unsigned id, int8_t v, int8_t def)
{
    return add_scalar(b, id, (uint8_t)v, 1, v == def);
}
manta_status mfb_add_u8(mfb_builder *b, unsigned id, uint8_t v, uint8_t def)
{
    return add_scalar(b, id, v, 1, v == def);
}
manta_status mfb_add_u16(mfb_builder *b, unsigned id, uint16_t v, uint16_t def)
{
    return add_scalar(b, id, v, 2, v == def);
}
manta_status mfb_add_i32(mfb_builder *b, unsigned id, int32_t v, int32_t def)
{
    return add_scalar(b, id, (uint32_t)v, 4, v == def);
}
manta_status mfb_add_u32(mfb_builder *b, unsigned id, uint32_t v, uint32_t def)
{
    return add_scalar(b, id, v, 4, v == def);
}
manta_status mfb_add_i64(mfb_builder *b, unsigned id, int64_t v, int64_t def)
{
    return add_scalar(b, id, (uint64_t)v, 8, v == def);
}
manta_status mfb_add_f32(mfb_builder *b, unsigned id, float v, float def)
{
    uint32_t bits, dbits;
    memcpy(&bits, &v, 4);
    memcpy(&dbits, &def, 4);
    return add_scalar(b, id, bits, 4, bits == dbits);
}

manta_status mfb_add_ref(mfb_builder *b, unsigned id, mfb_ref ref)
{
    manta_status st = field_check(b, id);
    if (st != MANTA_OK || ref == 0)
        return st;
    st = push_ref(b, ref);
    return st != MANTA_OK ? st : mark_field(b, id);
}

/* Position of an earlier vtable equal to @p vt (@p n bytes), or 0. */
static uint32_t find_vtable(mfb_builder *b, const uint8_t *vt, size_t n)
{
    for (size_t i = 0; i < b->n_vtables; i++) {
        const uint8_t *old = at(b, b->vtables[i]);
        if (manta_le_get16(old) == n && memcmp(old, vt, n) == 0)
            return b->vtables[i];
    }
    return 0;
}

manta_status mfb_end_table(mfb_builder *b, mfb_ref *out)
{
    manta_status st = check_building(b, 1);
    if (st != MANTA_OK)
        return st;
    /* The table starts with the soffset to its vtable, patched below. */
    st = push_scalar(b, 0, 4);
    if (st != MANTA_OK)
        return st;
    size_t table = b->size;
    size_t tsize = table - b->table_end;
    size_t vsize = 4 + 2 * (size_t)b->n_fields;
    if (tsize > 0xffff)
        return fail(b, MANTA_ERR_INVALID_ARG, "table larger than 64 KiB");
    uint8_t vt[4 + 2 * MFB_MAX_FIELDS];
    manta_le_put(vt, vsize, 2);
    manta_le_put(vt + 2, tsize, 2);
    for (unsigned id = 0; id < b->n_fields; id++)
        manta_le_put(vt + 4 + 2 * id, b->field[id] ? table - b->field[id] : 0, 2);

    uint32_t vpos = find_vtable(b, vt, vsize);
    if (!vpos) {
        if (b->n_vtables == b->cap_vtables) {
            size_t cap = b->cap_vtables ? 2 * b->cap_vtables : 16;
            uint32_t *nv = realloc(b->vtables, cap * sizeof *nv);
            if (!nv)
                return fail(b, MANTA_ERR_NO_MEMORY, "out of memory");
            b->vtables = nv;
            b->cap_vtables = cap;
        }
        st = push(b, vt, vsize); /* size is a multiple of 4 here, so the vtable is 2-aligned */
        if (st != MANTA_OK)
            return st;
        vpos = (uint32_t)b->size;
        b->vtables[b->n_vtables++] = vpos;
    }
    /* vtable address = table address - soffset */
    int64_t soff = (int64_t)vpos - (int64_t)table;
    manta_le_put(at(b, table), (uint64_t)soff, 4);
    b->in_table = 0;
    *out = (mfb_ref)table;
    return MANTA_OK;
}

/* Finish a vector or string whose elements are pushed: its length, and its reference. */
static manta_status end_vector(mfb_builder *b, size_t count, mfb_ref *out)
{
    manta_status st = push_scalar(b, count, 4);
    if (st == MANTA_OK)
        *out = (mfb_ref)b->size;
    return st;
}

manta_status mfb_create_string(mfb_builder *b, const char *s, size_t len, mfb_ref *out)
{
    manta_status st = check_building(b, 0);
    if (st != MANTA_OK)
        return st;
    if (!s && len)
        return fail(b, MANTA_ERR_INVALID_ARG, "NULL string");
    if (len > MFB_MAX_SIZE)
        return fail(b, MANTA_ERR_INVALID_ARG, "buffer would exceed 2 GiB");
    st = prealign(b, len + 1, 4);
    if (st == MANTA_OK)
        st = push(b, NULL, 1);
    if (st == MANTA_OK && len)
        st = push(b, s, len);
    return st != MANTA_OK ? st : end_vector(b, len, out);
}

manta_status mfb_create_vector(mfb_builder *b, const void *data, size_t count, size_t elem_size,
                               size_t align, mfb_ref *out)
{
    manta_status st = check_building(b, 0);
    if (st != MANTA_OK)
        return st;
    if (elem_size == 0 || align == 0 || (align & (align - 1)) || (count && !data))
        return fail(b, MANTA_ERR_INVALID_ARG, "bad vector element size, alignment or data");
    if (count > MFB_MAX_SIZE / elem_size)
        return fail(b, MANTA_ERR_INVALID_ARG, "buffer would exceed 2 GiB");
    size_t bytes = count * elem_size;
    st = prealign(b, bytes, align < 4 ? 4 : align);
    if (st == MANTA_OK && bytes)
        st = push(b, data, bytes);
    return st != MANTA_OK ? st : end_vector(b, count, out);
}

manta_status mfb_create_ref_vector(mfb_builder *b, const mfb_ref *refs, size_t count, mfb_ref *out)
{
    manta_status st = check_building(b, 0);
    if (st != MANTA_OK)
        return st;
    if (count && !refs)
        return fail(b, MANTA_ERR_INVALID_ARG, "NULL reference list");
    if (count > MFB_MAX_SIZE / 4)
        return fail(b, MANTA_ERR_INVALID_ARG, "buffer would exceed 2 GiB");
    st = prealign(b, count * 4, 4);
    for (size_t i = count; st == MANTA_OK && i-- > 0;)
        st = push_ref(b, refs[i]);
    return st != MANTA_OK ? st : end_vector(b, count, out);
}

manta_status mfb_finish(mfb_builder *b, mfb_ref root, const char *ident)
{
    manta_status st = check_building(b, 0);
    if (st != MANTA_OK)
        return st;
    if (ident && strlen(ident) != 4)
        return fail(b, MANTA_ERR_INVALID_ARG, "file identifier must have 4 characters");
    if (b->minalign < 4)
        b->minalign = 4;
    st = prealign(b, ident ? 8 : 4, b->minalign);
    if (st == MANTA_OK && ident)
        st = push(b, ident, 4);
    if (st == MANTA_OK)
        st = push_ref(b, root);
    if (st == MANTA_OK)
        b->finished = 1;
    return st;
}

const uint8_t *mfb_data(const mfb_builder *b, size_t *size)
{
    if (!b->finished || b->status != MANTA_OK) {
        *size = 0;
        return NULL;
    }
    *size = b->size;
    return b->buf + b->cap - b->size;
}

size_t mfb_alignment(const mfb_builder *b) { return b->minalign; }
