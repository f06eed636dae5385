/* The engine's checked FlatBuffers reader on its own (runtime/engine/fbread_impl.h),
 * without any schema: a small buffer laid out by hand is read field by field,
 * then broken one way at a time (offsets out of range, misaligned objects,
 * vtables past the end, vectors past the end, strings without terminator,
 * nesting and table limits), each break with its own code and a message.
 * Last, every prefix and many one-byte corruptions of the buffer go through
 * the schema-free walk (tests/common/fbwalk.c), which checks that whatever
 * the reader returns lies inside the data. Buffers are copied to exactly their
 * size, so the address sanitizer (SANITIZE=1) sees any read past the end. */
#include <stdlib.h>
#include <string.h>

#include "common/fbwalk.h"
#include "common/testutil_host.h"
#include "engine/fbread_impl.h"

/* ---- the buffer ----
 * Positions are absolute byte offsets. Root table fields (offset in table):
 *  0 u8 0xab (+4)   1 i8 -3 (+5)        2 i32 -123456 (+8)   3 u32 0xdeadbeef (+12)
 *  4 f32 1.5 (+16)  5 table SUB (+20)   6 int32 vector VEC (+24)
 *  7 u64 0x0123456789abcdef (+28)      8 string "hello" (+36)
 *  9 vector of tables VTAB (+40)       10 absent (0 in the vtable)   11+ past the vtable */
enum {
    ROOT_VT = 8, /* 11 fields: 26 bytes */
    ROOT = 36,   /* 44 bytes */
    SUB_VT = 80, /* 1 field: 6 bytes, shared by SUB, T0 and T1 */
    SUB = 88,
    VEC = 96,   /* 3 x int32 */
    STR = 112,  /* "hello" */
    VTAB = 124, /* 2 tables */
    T0 = 136,
    T1 = 144,
    SIZE = 152
};

static void w16(uint8_t *b, uint32_t at, uint16_t v)
{
    b[at] = (uint8_t)v;
    b[at + 1] = (uint8_t)(v >> 8);
}
static void w32(uint8_t *b, uint32_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[at + i] = (uint8_t)(v >> (8 * i));
}
/* The uoffset at @p at pointing to @p target. */
static void uoff(uint8_t *b, uint32_t at, uint32_t target) { w32(b, at, target - at); }
/* The soffset of the table at @p at whose vtable is at @p vt. */
static void table(uint8_t *b, uint32_t at, uint32_t vt) { w32(b, at, (uint32_t)(at - vt)); }

static void build(uint8_t *b)
{
    static const uint16_t root_fields[11] = {4, 5, 8, 12, 16, 20, 24, 28, 36, 40, 0};
    memset(b, 0, SIZE);
    uoff(b, 0, ROOT);
    memcpy(b + 4, "TEST", 4);
    w16(b, ROOT_VT, 26);
    w16(b, ROOT_VT + 2, 44);
    for (int i = 0; i < 11; i++)
        w16(b, ROOT_VT + 4 + 2 * i, root_fields[i]);
    table(b, ROOT, ROOT_VT);
    b[ROOT + 4] = 0xab;
    b[ROOT + 5] = 0xfd;
    w32(b, ROOT + 8, (uint32_t)-123456);
    w32(b, ROOT + 12, 0xdeadbeefu);
    const float f = 1.5f;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    w32(b, ROOT + 16, bits);
    uoff(b, ROOT + 20, SUB);
    uoff(b, ROOT + 24, VEC);
    w32(b, ROOT + 28, 0x89abcdefu);
    w32(b, ROOT + 32, 0x01234567u);
    uoff(b, ROOT + 36, STR);
    uoff(b, ROOT + 40, VTAB);
    w16(b, SUB_VT, 6);
    w16(b, SUB_VT + 2, 8);
    w16(b, SUB_VT + 4, 4);
    table(b, SUB, SUB_VT);
    w32(b, SUB + 4, 42);
    w32(b, VEC, 3);
    w32(b, VEC + 4, 10);
    w32(b, VEC + 8, (uint32_t)-20);
    w32(b, VEC + 12, 30);
    w32(b, STR, 5);
    memcpy(b + STR + 4, "hello", 6);
    w32(b, VTAB, 2);
    uoff(b, VTAB + 4, T0);
    uoff(b, VTAB + 8, T1);
    table(b, T0, SUB_VT);
    w32(b, T0 + 4, 7);
    table(b, T1, SUB_VT);
    w32(b, T1 + 4, 8);
}

/* A reader over a copy of @p n bytes of @p src in an exact-size buffer. */
typedef struct rig {
    uint8_t *data;
    fbr r;
    mdiag d;
    char msg[256];
} rig;

static rig *rig_open(const uint8_t *src, uint32_t n, uint32_t max_depth, uint32_t max_tables)
{
    rig *g = malloc(sizeof *g);
    assert_non_null(g);
    g->data = malloc(n ? n : 1);
    assert_non_null(g->data);
    memcpy(g->data, src, n);
    g->msg[0] = '\0';
    g->d.msg = g->msg;
    g->d.cap = sizeof g->msg;
    mengine_fb_init(&g->r, g->data, n, max_depth, max_tables, &g->d);
    return g;
}

static void rig_close(rig *g)
{
    free(g->data);
    free(g);
}

/* @p st must be @p want, with a message mentioning @p in_msg. */
static void expect(const rig *g, mengine_status st, mengine_status want, const char *in_msg)
{
    if (st != want)
        fail_msg("expected %s, got %s: %s", mengine_status_str(want), mengine_status_str(st),
                 g->msg);
    if (!g->msg[0])
        fail_msg("no message for %s", mengine_status_str(st));
    if (in_msg && !strstr(g->msg, in_msg))
        fail_msg("message '%s' does not mention '%s'", g->msg, in_msg);
}

/* ---- a well-formed buffer ---- */

static void test_reads_every_kind_of_field(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    build(b);
    rig *g = rig_open(b, SIZE, 4, 100);
    fb_table t, sub;
    fb_vec v;
    int present;
    uint8_t u8;
    int8_t i8;
    int32_t i32;
    uint32_t u32;
    uint64_t u64;
    float f32;
    assert_int_equal(mengine_fb_root(&g->r, &t), MENGINE_OK);
    assert_int_equal(t.pos, ROOT);
    assert_int_equal(t.vt, ROOT_VT);
    assert_int_equal(t.vt_size, 26);
    assert_int_equal(t.t_size, 44);
    assert_int_equal(t.depth, 1);
    assert_int_equal(mengine_fb_u8(&g->r, &t, 0, 0, &u8), MENGINE_OK);
    assert_int_equal(u8, 0xab);
    assert_int_equal(mengine_fb_i8(&g->r, &t, 1, 0, &i8), MENGINE_OK);
    assert_int_equal(i8, -3);
    assert_int_equal(mengine_fb_i32(&g->r, &t, 2, 0, &i32), MENGINE_OK);
    assert_int_equal(i32, -123456);
    assert_int_equal(mengine_fb_u32(&g->r, &t, 3, 0, &u32), MENGINE_OK);
    assert_int_equal(u32, 0xdeadbeefu);
    assert_int_equal(mengine_fb_f32(&g->r, &t, 4, 0.0f, &f32), MENGINE_OK);
    assert_true(f32 == 1.5f);
    assert_int_equal(mengine_fb_u64(&g->r, &t, 7, 0, &u64), MENGINE_OK);
    assert_true(u64 == 0x0123456789abcdefull);
    /* absent: 0 in the vtable, and past the vtable's end */
    assert_int_equal(mengine_fb_i32(&g->r, &t, 10, -7, &i32), MENGINE_OK);
    assert_int_equal(i32, -7);
    assert_int_equal(mengine_fb_u64(&g->r, &t, 40, 9, &u64), MENGINE_OK);
    assert_true(u64 == 9);
    assert_int_equal(mengine_fb_sub_table(&g->r, &t, 10, &sub, &present), MENGINE_OK);
    assert_int_equal(present, 0);
    assert_int_equal(mengine_fb_vector(&g->r, &t, 11, 4, &v, &present), MENGINE_OK);
    assert_int_equal(present, 0);
    /* objects */
    assert_int_equal(mengine_fb_sub_table(&g->r, &t, 5, &sub, &present), MENGINE_OK);
    assert_int_equal(present, 1);
    assert_int_equal(sub.pos, SUB);
    assert_int_equal(sub.depth, 2);
    assert_int_equal(mengine_fb_i32(&g->r, &sub, 0, 0, &i32), MENGINE_OK);
    assert_int_equal(i32, 42);
    assert_int_equal(mengine_fb_vector(&g->r, &t, 6, 4, &v, &present), MENGINE_OK);
    assert_int_equal(present, 1);
    assert_int_equal(v.pos, VEC + 4);
    assert_int_equal(v.n, 3);
    assert_int_equal(fb_vec_i32(&g->r, &v, 0), 10);
    assert_int_equal(fb_vec_i32(&g->r, &v, 1), -20);
    assert_int_equal(fb_vec_i32(&g->r, &v, 2), 30);
    assert_int_equal(mengine_fb_string(&g->r, &t, 8, &v, &present), MENGINE_OK);
    assert_int_equal(present, 1);
    assert_int_equal(v.n, 5);
    assert_string_equal((const char *)g->r.base + v.pos, "hello");
    assert_int_equal(mengine_fb_vector(&g->r, &t, 9, 4, &v, &present), MENGINE_OK);
    assert_int_equal(v.n, 2);
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(mengine_fb_vec_table(&g->r, &v, i, 2, &sub), MENGINE_OK);
        assert_int_equal(sub.pos, i ? T1 : T0);
        assert_int_equal(mengine_fb_i32(&g->r, &sub, 0, 0, &i32), MENGINE_OK);
        assert_int_equal(i32, (int32_t)(7 + i));
    }
    assert_string_equal(g->msg, "");
    rig_close(g);
}

/* ---- hostile buffers ---- */

/* The root of @p b (n bytes) must fail with @p want. */
static void expect_root(const uint8_t *b, uint32_t n, mengine_status want, const char *in_msg)
{
    rig *g = rig_open(b, n, 4, 100);
    fb_table t;
    expect(g, mengine_fb_root(&g->r, &t), want, in_msg);
    rig_close(g);
}

static void test_header_and_root(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    build(b);
    expect_root(b, 0, MENGINE_ERR_TRUNCATED, "8-byte");
    expect_root(b, 7, MENGINE_ERR_TRUNCATED, "7 bytes");
    w32(b, 0, 0);
    expect_root(b, SIZE, MENGINE_ERR_OFFSET, "root offset 0");
    w32(b, 0, SIZE - 2);
    expect_root(b, SIZE, MENGINE_ERR_OFFSET, "outside the data");
    w32(b, 0, 0x80000000u);
    expect_root(b, SIZE, MENGINE_ERR_OFFSET, "outside the data");
    w32(b, 0, ROOT + 2);
    expect_root(b, SIZE, MENGINE_ERR_ALIGNMENT, "not 4-byte aligned");
    /* the whole root table must be there */
    build(b);
    expect_root(b, ROOT + 40, MENGINE_ERR_TRUNCATED, "runs past the end");
}

static void test_vtables(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    build(b);
    w32(b, ROOT, ROOT + 4); /* vtable before the start of the data */
    expect_root(b, SIZE, MENGINE_ERR_VTABLE, "outside the data");
    w32(b, ROOT, (uint32_t)-200); /* past the end */
    expect_root(b, SIZE, MENGINE_ERR_VTABLE, "outside the data");
    w32(b, ROOT, ROOT - ROOT_VT + 1); /* odd */
    expect_root(b, SIZE, MENGINE_ERR_VTABLE, "2-byte aligned");
    build(b);
    w16(b, ROOT_VT, 2);
    expect_root(b, SIZE, MENGINE_ERR_VTABLE, "size 2");
    w16(b, ROOT_VT, 25);
    expect_root(b, SIZE, MENGINE_ERR_VTABLE, "size 25");
    /* a vtable that starts inside the data and runs past its end */
    build(b);
    w16(b, SIZE - 4, 26);
    w16(b, SIZE - 2, 8);
    w32(b, ROOT, (uint32_t)(ROOT - (SIZE - 4)));
    expect_root(b, SIZE, MENGINE_ERR_VTABLE, "past the end");
    build(b);
    w16(b, ROOT_VT + 2, 2);
    expect_root(b, SIZE, MENGINE_ERR_VTABLE, "table size 2");
    w16(b, ROOT_VT + 2, 200);
    expect_root(b, SIZE, MENGINE_ERR_TRUNCATED, "runs past the end");
}

/* Root field @p id of the broken buffer @p b, read as @p kind, must fail with @p want. */
enum kind { K_I32, K_U64, K_TABLE, K_VEC4, K_VEC8, K_STRING, K_VEC_TABLE };
static void expect_field(const uint8_t *b, unsigned id, enum kind kind, mengine_status want,
                         const char *in_msg)
{
    rig *g = rig_open(b, SIZE, 4, 100);
    fb_table t, sub;
    fb_vec v;
    int present;
    int32_t i32 = 0x5a5a;
    uint64_t u64 = 0x5a5a;
    assert_int_equal(mengine_fb_root(&g->r, &t), MENGINE_OK);
    mengine_status st = MENGINE_OK;
    switch (kind) {
    case K_I32: st = mengine_fb_i32(&g->r, &t, id, 0, &i32); break;
    case K_U64: st = mengine_fb_u64(&g->r, &t, id, 0, &u64); break;
    case K_TABLE: st = mengine_fb_sub_table(&g->r, &t, id, &sub, &present); break;
    case K_VEC4: st = mengine_fb_vector(&g->r, &t, id, 4, &v, &present); break;
    case K_VEC8: st = mengine_fb_vector(&g->r, &t, id, 8, &v, &present); break;
    case K_STRING: st = mengine_fb_string(&g->r, &t, id, &v, &present); break;
    case K_VEC_TABLE:
        st = mengine_fb_vector(&g->r, &t, id, 4, &v, &present);
        for (uint32_t i = 0; st == MENGINE_OK && i < v.n; i++)
            st = mengine_fb_vec_table(&g->r, &v, i, 2, &sub);
        break;
    }
    expect(g, st, want, in_msg);
    /* failures leave scalars untouched */
    assert_int_equal(i32, 0x5a5a);
    assert_true(u64 == 0x5a5a);
    rig_close(g);
}

static void test_fields(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    build(b);
    w16(b, ROOT_VT + 4 + 2 * 2, 42); /* i32 at +42 of a 44-byte table */
    expect_field(b, 2, K_I32, MENGINE_ERR_VTABLE, "outside the table");
    w16(b, ROOT_VT + 4 + 2 * 2, 2); /* inside the soffset */
    expect_field(b, 2, K_I32, MENGINE_ERR_VTABLE, "outside the table");
    w16(b, ROOT_VT + 4 + 2 * 2, 6);
    expect_field(b, 2, K_I32, MENGINE_ERR_ALIGNMENT, "4-byte aligned");
    build(b);
    w16(b, ROOT_VT + 4 + 2 * 7, 24); /* u64 at byte 60 */
    expect_field(b, 7, K_U64, MENGINE_ERR_ALIGNMENT, "8-byte aligned");
}

static void test_offsets(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    build(b);
    w32(b, ROOT + 20, 0);
    expect_field(b, 5, K_TABLE, MENGINE_ERR_OFFSET, "is zero");
    w32(b, ROOT + 20, SIZE);
    expect_field(b, 5, K_TABLE, MENGINE_ERR_OFFSET, "outside the data");
    w32(b, ROOT + 20, 0xfffffffcu); /* would wrap to before the field */
    expect_field(b, 5, K_TABLE, MENGINE_ERR_OFFSET, "outside the data");
    uoff(b, ROOT + 20, SUB + 2);
    expect_field(b, 5, K_TABLE, MENGINE_ERR_ALIGNMENT, "not 4-byte aligned");
    build(b);
    w32(b, VTAB + 8, 0);
    expect_field(b, 9, K_VEC_TABLE, MENGINE_ERR_OFFSET, "is zero");
    uoff(b, VTAB + 8, T1 + 1);
    expect_field(b, 9, K_VEC_TABLE, MENGINE_ERR_ALIGNMENT, "not 4-byte aligned");
}

static void test_vectors_and_strings(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    build(b);
    uoff(b, ROOT + 24, VEC + 2);
    expect_field(b, 6, K_VEC4, MENGINE_ERR_ALIGNMENT, "not 4-byte aligned");
    build(b);
    w32(b, VEC, (SIZE - VEC - 4) / 4 + 1); /* one element past the end */
    expect_field(b, 6, K_VEC4, MENGINE_ERR_VECTOR, "run past the end");
    w32(b, VEC, 0x40000000u); /* 4 x n wraps to 0 in 32 bits */
    expect_field(b, 6, K_VEC4, MENGINE_ERR_VECTOR, "run past the end");
    w32(b, VEC, 0x20000000u);
    expect_field(b, 6, K_VEC8, MENGINE_ERR_VECTOR, "run past the end");
    build(b);
    b[STR + 4 + 5] = 'x';
    expect_field(b, 8, K_STRING, MENGINE_ERR_STRING, "no 0 terminator");
    build(b);
    w32(b, STR, SIZE - STR - 4); /* the terminator would be the byte after the data */
    expect_field(b, 8, K_STRING, MENGINE_ERR_STRING, "no 0 terminator");
}

static void test_depth_and_table_budget(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    build(b);
    fb_table t, sub;
    fb_vec v;
    int present;
    rig *g = rig_open(b, SIZE, 1, 100);
    assert_int_equal(mengine_fb_root(&g->r, &t), MENGINE_OK);
    expect(g, mengine_fb_sub_table(&g->r, &t, 5, &sub, &present), MENGINE_ERR_DEPTH, "2 deep");
    rig_close(g);
    g = rig_open(b, SIZE, 4, 2);
    assert_int_equal(mengine_fb_root(&g->r, &t), MENGINE_OK);
    assert_int_equal(mengine_fb_vector(&g->r, &t, 9, 4, &v, &present), MENGINE_OK);
    assert_int_equal(mengine_fb_vec_table(&g->r, &v, 0, 2, &sub), MENGINE_OK);
    expect(g, mengine_fb_vec_table(&g->r, &v, 1, 2, &sub), MENGINE_ERR_LIMIT, "more tables");
    rig_close(g);
}

/* ---- every prefix and one-byte corruptions ---- */

static void walk_copy(const uint8_t *b, size_t n, unsigned *tables)
{
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, b, n);
    const char *broken = fbw_walk(copy, n, tables);
    free(copy);
    if (broken)
        fail_msg("%zu bytes: %s", n, broken);
}

static void test_walk_prefixes_and_corruptions(void **state)
{
    (void)state;
    static const uint8_t values[] = {0x00, 0x01, 0x04, 0x7f, 0x80, 0xfc, 0xff};
    uint8_t b[SIZE];
    unsigned tables = 0, most = 0;
    build(b);
    walk_copy(b, SIZE, &tables);
    assert_true(tables >= 4); /* root, SUB, T0, T1 at least */
    for (size_t n = 0; n < SIZE; n++)
        walk_copy(b, n, NULL);
    for (size_t at = 0; at < SIZE; at++)
        for (size_t k = 0; k < sizeof values; k++) {
            build(b);
            b[at] = values[k];
            walk_copy(b, SIZE, &tables);
            most = tables > most ? tables : most;
        }
    assert_true(most <= FBW_MAX_TABLES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_every_kind_of_field),
        cmocka_unit_test(test_header_and_root),
        cmocka_unit_test(test_vtables),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_vectors_and_strings),
        cmocka_unit_test(test_depth_and_table_budget),
        cmocka_unit_test(test_walk_prefixes_and_corruptions),
    };
    return cmocka_run_group_tests_name("engine FlatBuffers reader", tests, NULL, NULL);
}
