/* The schema-free reader walk (see fbwalk.h). */
#include "fbwalk.h"

#include "engine/fbread_impl.h"

typedef struct walk {
    fbr r;
    mdiag d;
    char msg[256];
    const char *broken;
    unsigned tables;
} walk;

/* Checks the outcome of one reader call; returns 1 when it succeeded. */
static int ok(walk *w, mengine_status st)
{
    if (st == MENGINE_OK)
        return 1;
    if (st < MENGINE_ERR_ARG || st > MENGINE_ERR_UNSUPPORTED)
        w->broken = "a failure returned a status outside mengine_status";
    else if (!w->msg[0])
        w->broken = "a failure wrote no message";
    w->msg[0] = '\0';
    return 0;
}

static void check_table(walk *w, const fb_table *t, uint32_t depth)
{
    const uint64_t size = w->r.size;
    if (t->pos % 4 || (uint64_t)t->pos + t->t_size > size || t->t_size < 4)
        w->broken = "a table outside the data, misaligned or under 4 bytes";
    else if (t->vt % 2 || (uint64_t)t->vt + t->vt_size > size || t->vt_size < 4 || t->vt_size % 2)
        w->broken = "a vtable outside the data, misaligned or of a bad size";
    else if (t->depth != depth || depth > FBW_MAX_DEPTH)
        w->broken = "a table nested deeper than the limit";
    w->tables++;
}

static void check_vector(walk *w, const fb_vec *v, uint32_t elem_size)
{
    if (v->pos < 4 || (v->pos - 4) % 4 || (uint64_t)v->pos + (uint64_t)v->n * elem_size > w->r.size)
        w->broken = "a vector outside the data or misaligned";
}

static void walk_table(walk *w, const fb_table *t);

static void walk_field(walk *w, const fb_table *t, unsigned id)
{
    uint8_t u8;
    int8_t i8;
    int32_t i32;
    uint32_t u32;
    uint64_t u64;
    float f32;
    fb_table sub;
    fb_vec v;
    int present;
    ok(w, mengine_fb_u8(&w->r, t, id, 0, &u8));
    ok(w, mengine_fb_i8(&w->r, t, id, 0, &i8));
    ok(w, mengine_fb_i32(&w->r, t, id, 0, &i32));
    ok(w, mengine_fb_u32(&w->r, t, id, 0, &u32));
    ok(w, mengine_fb_u64(&w->r, t, id, 0, &u64));
    ok(w, mengine_fb_f32(&w->r, t, id, 0.0f, &f32));
    if (ok(w, mengine_fb_string(&w->r, t, id, &v, &present)) && present) {
        check_vector(w, &v, 1);
        if (!w->broken && ((uint64_t)v.pos + v.n >= w->r.size || w->r.base[v.pos + v.n] != 0))
            w->broken = "a string without its terminator inside the data";
    }
    for (uint32_t elem = 1; elem <= 8; elem *= 2)
        if (ok(w, mengine_fb_vector(&w->r, t, id, elem, &v, &present)) && present)
            check_vector(w, &v, elem);
    if (ok(w, mengine_fb_vector(&w->r, t, id, 4, &v, &present)) && present)
        for (uint32_t i = 0; i < v.n && i < FBW_VEC_TABLES && !w->broken; i++)
            if (ok(w, mengine_fb_vec_table(&w->r, &v, i, t->depth + 1, &sub))) {
                check_table(w, &sub, t->depth + 1);
                walk_table(w, &sub);
            }
    if (ok(w, mengine_fb_sub_table(&w->r, t, id, &sub, &present)) && present) {
        check_table(w, &sub, t->depth + 1);
        walk_table(w, &sub);
    }
}

static void walk_table(walk *w, const fb_table *t)
{
    for (unsigned id = 0; id < FBW_FIELDS && !w->broken; id++)
        walk_field(w, t, id);
}

const char *fbw_walk(const uint8_t *data, size_t size, unsigned *tables)
{
    walk w;
    fb_table root;
    w.d.msg = w.msg;
    w.d.cap = sizeof w.msg;
    w.msg[0] = '\0';
    w.broken = NULL;
    w.tables = 0;
    mengine_fb_init(&w.r, data, size > FB_MAX_OFFSET ? FB_MAX_OFFSET : (uint32_t)size,
                    FBW_MAX_DEPTH, FBW_MAX_TABLES, &w.d);
    if (ok(&w, mengine_fb_root(&w.r, &root))) {
        check_table(&w, &root, 1);
        walk_table(&w, &root);
    }
    if (tables)
        *tables = w.tables;
    return w.broken;
}
