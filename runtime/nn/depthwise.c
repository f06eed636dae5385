#include "nn/depthwise.h"

#include <stdio.h>

#include "nn/launch.h"

/* Largest work-group of the dw reduction (a power of two). */
#define DW_REDUCE_GROUP 128

/* Tiled kernels (cl_kernels/depthwise.cl): outputs per work-item, the
 * narrowest output row that takes them, and the work-items per group aimed at. */
#define TILE_V 8
#define TILE_MIN_WIDTH 4
#define TILE_GROUP 128
/* Output rows per work-item of the tiled correlation (DW_R there). */
#define TILE_R 4
/* Longest private row of dw_rows_backward_w_* (DW_ROW_MAX there). */
#define ROW_MAX 136

/* GPU weight gradient: about DW_TARGET_ITEMS work-items in its first stage. */
#define DW_TARGET_ITEMS 131072

static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

int nn_dw_out_h(const nn_dw_shape *s) { return nn_window_out(s->h, s->k, s->stride, s->pad); }

int nn_dw_out_w(const nn_dw_shape *s) { return nn_window_out(s->w, s->k, s->stride, s->pad); }

double nn_dw_macs(const nn_dw_shape *s)
{
    return (double)s->n * s->c * nn_dw_out_h(s) * nn_dw_out_w(s) * s->k * s->k;
}

/* Check @p s and the sizes the kernels index with int. */
static manta_status check_shape(mcl_dev *d, const char *op, const nn_dw_shape *s)
{
    MANTA_TRY(nn_need_shape(d, op, s));
    NN_CHECK_FIELDS(d, op, NN_FIELD(s, n, 1), NN_FIELD(s, c, 1), NN_FIELD(s, h, 1),
                    NN_FIELD(s, w, 1), NN_FIELD(s, k, 1), NN_FIELD(s, stride, 1),
                    NN_FIELD(s, pad, 0));
    if (nn_dw_out_h(s) < 1 || nn_dw_out_w(s) < 1)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: kernel size k = %d exceeds the padded input "
                             "(h + 2*pad = %lld, w + 2*pad = %lld)",
                             op, s->k, (long long)s->h + 2LL * s->pad,
                             (long long)s->w + 2LL * s->pad);
    /* Factors below 2^31 keep every product of two within 64 bits. */
    size_t planes = (size_t)s->n * (size_t)s->c;
    size_t hw = (size_t)s->h * (size_t)s->w;
    size_t hw_o = (size_t)nn_dw_out_h(s) * (size_t)nn_dw_out_w(s);
    NN_CHECK_INT(d, (size_t)s->k * (size_t)s->k, "depthwise kernel taps");
    NN_CHECK_INT(d, planes, "depthwise planes");
    NN_CHECK_INT(d, hw, "depthwise input plane");
    NN_CHECK_INT(d, hw_o, "depthwise output plane");
    NN_CHECK_INT(d, planes * hw, "depthwise input size");
    NN_CHECK_INT(d, planes * hw_o, "depthwise output size");
    NN_CHECK_INT(d, (size_t)s->c * (size_t)s->k * (size_t)s->k, "depthwise weight size");
    return MANTA_OK;
}

/* Ranges of the N*Ho output rows in the GPU weight gradient (1 for a bad shape). */
static size_t wgrad_splits(const nn_dw_shape *s)
{
    size_t per = (size_t)s->c * (size_t)s->k * (size_t)s->k;
    size_t rows = (size_t)s->n * (size_t)nn_dw_out_h(s);
    size_t r = per ? (DW_TARGET_ITEMS + per - 1) / per : 1;
    if (r > rows)
        r = rows;
    return r < 1 ? 1 : r;
}

/* The bound min(rows, T / count + 1) * count of what the ranges need: it grows with every
 * dimension, so the size for a network's largest shape covers every smaller one. */
size_t nn_dw_scratch_floats(const mcl_dev *d, const nn_dw_shape *s)
{
    if (!s || s->n < 1 || s->c < 1 || s->k < 1 || nn_dw_out_h(s) < 1 || nn_dw_out_w(s) < 1 ||
        !gpu_variant(d))
        return 0;
    size_t count = (size_t)s->c * (size_t)s->k * (size_t)s->k;
    size_t rows = (size_t)s->n * (size_t)nn_dw_out_h(s);
    size_t bound = DW_TARGET_ITEMS + count;
    return rows * count < bound ? rows * count : bound;
}

/* Whether cl_kernels/depthwise.cl has kernels specialised for the shape's K and stride (K 3,
 * 5, 7 and strides 1, 2): the tiled and row kernels, and copies of the direct ones. */
static bool specialised(const nn_dw_shape *s)
{
    return (s->k == 3 || s->k == 5 || s->k == 7) && (s->stride == 1 || s->stride == 2);
}

/* Kernel @p pass ("dw_forward", "dw_backward_dx"), specialised for s->k and
 * s->stride where a specialised copy exists. */
static void kernel_name(char *buf, size_t len, const char *pass, const nn_dw_shape *s)
{
    if (specialised(s))
        snprintf(buf, len, "%s_k%d_s%d", pass, s->k, s->stride);
    else
        snprintf(buf, len, "%s", pass);
}

/* The first arguments of the depthwise kernels but the tiled ones: three
 * views, then the shape. */
static void view_shape_args(mcl_launch *L, mview a, mview b, mview out, const nn_dw_shape *s)
{
    mcl_arg_views(L, (mview[]){a, b, out}, 3);
    const int shape[] = {s->n,      s->c,   s->h,           s->w,          s->k,
                         s->stride, s->pad, nn_dw_out_h(s), nn_dw_out_w(s)};
    nn_arg_ints(L, shape, sizeof shape / sizeof shape[0]);
}

/* Work-group geometry of a tiled launch: ns strips of TILE_V outputs per row
 * (dim 0), ly work-items of r output rows each per band (dim 1), lz planes
 * per group (dim 2), and the local floats per plane of the tile. */
typedef struct tile_geo {
    size_t ns, ly, r, lz, floats;
} tile_geo;

/* Local floats per plane for a band of `rows` output rows of ns strips. */
typedef size_t (*tile_floats_fn)(const nn_dw_shape *s, size_t ns, size_t rows);

static size_t corr_floats(const nn_dw_shape *s, size_t ns, size_t rows)
{
    size_t k = (size_t)s->k, st = (size_t)s->stride;
    size_t ts = st == 1 ? ns * TILE_V + k - 1 : 2 * (ns * TILE_V + (k - 1) / 2);
    return ((rows - 1) * st + k) * ts;
}

/* stride-1 dx runs the stride-1 correlation */
static size_t corr1_floats(const nn_dw_shape *s, size_t ns, size_t rows)
{
    size_t k = (size_t)s->k;
    return (rows - 1 + k) * (ns * TILE_V + k - 1);
}

/* stride-2 dx: strips of 16 columns (dw_dx2_stride/rows there) */
static size_t dx2_floats(const nn_dw_shape *s, size_t ns, size_t rows)
{
    size_t p = (size_t)s->k / 2;
    return ((rows + (size_t)s->k) / 2 + 1) * (8 * ns + (p + 1) / 2 + p + 1);
}

/* Geometry of the tiled kernel of @p L for output planes of out_h x out_w,
 * `planes` of them, r output rows and v columns per work-item, with several
 * planes per group when one plane is a single band (multi_plane). false when
 * the tiled kernel does not suit the shape or the device. */
static bool tile_plan(const mcl_launch *L, const nn_dw_shape *s, size_t out_h, size_t out_w,
                      size_t planes, bool multi_plane, tile_floats_fn floats, size_t r, size_t v,
                      tile_geo *g)
{
    const mcl_dev *d = L->d;
    size_t cap = nn_group_cap(L, TILE_GROUP);
    size_t mem = (size_t)(mcl_info(d)->local_mem / 2 / sizeof(float));
    if (L->st != MANTA_OK || !specialised(s) || out_w < TILE_MIN_WIDTH)
        return false;
    g->r = r;
    g->ns = (out_w + v - 1) / v;
    if (g->ns > cap || g->ns > nn_item_max(d, 0))
        return false;
    size_t items = (out_h + r - 1) / r; /* work-items down a plane */
    g->ly = cap / g->ns;
    if (g->ly > items)
        g->ly = items;
    if (g->ly > nn_item_max(d, 1))
        g->ly = nn_item_max(d, 1);
    while (g->ly > 1 && floats(s, g->ns, g->ly * r) > mem)
        g->ly /= 2;
    g->floats = floats(s, g->ns, g->ly * r);
    if (g->floats > mem)
        return false;
    g->lz = 1;
    if (multi_plane && g->ly == items) {
        size_t by_wi = cap / (g->ns * g->ly), by_mem = mem / g->floats;
        g->lz = by_wi < by_mem ? by_wi : by_mem;
        if (g->lz > planes)
            g->lz = planes;
        if (g->lz > nn_item_max(d, 2))
            g->lz = nn_item_max(d, 2);
        if (g->lz < 1)
            g->lz = 1;
    }
    return true;
}

/* Begin the tiled kernel <pass>_k<K>_s<S> of the CPU variant; false when there is none for
 * the shape (or the device takes the GPU variant). */
static bool begin_tiled(mcl_launch *L, mcl_dev *d, const char *pass, const nn_dw_shape *s)
{
    if (!specialised(s) || gpu_variant(d))
        return false;
    char name[40];
    snprintf(name, sizeof name, "%s_k%d_s%d", pass, s->k, s->stride);
    mcl_launch_begin(L, d, "depthwise", name);
    return true;
}

/* Enqueue a tiled pass over `planes` output planes of out_h rows. */
static manta_status tile_run(mcl_launch *L, const tile_geo *g, size_t out_h, size_t planes)
{
    mcl_arg_local(L, g->lz * g->floats * sizeof(float));
    size_t items = (out_h + g->r - 1) / g->r;
    return mcl_launch_run(L, 3, (size_t[]){g->ns, items, planes}, (size_t[]){g->ns, g->ly, g->lz});
}

/* Run the direct kernel of @p pass ("dw_forward", "dw_backward_dx": the views a, b, out,
 * then the shape) over (width, height, planes): a group holds whole planes, as many as make
 * about TILE_GROUP work-items; when a plane exceeds that (or the device's limits), a block of
 * whole rows (or of one row) of it. */
static manta_status direct_run(mcl_dev *d, const nn_dw_shape *s, const char *pass, mview a, mview b,
                               mview out, size_t width, size_t height)
{
    char name[40];
    size_t planes = (size_t)s->n * (size_t)s->c;
    mcl_launch L;
    kernel_name(name, sizeof name, pass, s);
    mcl_launch_begin(&L, d, "depthwise", name);
    view_shape_args(&L, a, b, out, s);
    size_t cap = nn_group_cap(&L, TILE_GROUP);
    size_t lx = width < cap ? width : cap;
    if (lx > nn_item_max(d, 0))
        lx = nn_item_max(d, 0);
    size_t ly = cap / lx < height ? cap / lx : height;
    if (ly > nn_item_max(d, 1))
        ly = nn_item_max(d, 1);
    size_t lz = 1;
    if (lx == width && ly == height) { /* whole planes */
        lz = cap / (lx * ly) < planes ? cap / (lx * ly) : planes;
        if (lz > nn_item_max(d, 2))
            lz = nn_item_max(d, 2);
    }
    mcl_launch_output(&L, width * height * planes);
    return mcl_launch_run(&L, 3, (size_t[]){width, height, planes}, (size_t[]){lx, ly, lz});
}

manta_status nn_dw_forward(mcl_dev *d, const nn_dw_shape *s, mview x, mview w, mview y)
{
    static const char op[] = "depthwise forward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_forward_buffers(d, op, x, w, y));
    size_t ho = (size_t)nn_dw_out_h(s), wo = (size_t)nn_dw_out_w(s);
    size_t planes = (size_t)s->n * (size_t)s->c;
    tile_geo g;
    mcl_launch L;
    if (begin_tiled(&L, d, "dw_tile_forward", s) &&
        tile_plan(&L, s, ho, wo, planes, true, corr_floats, TILE_R, TILE_V, &g)) {
        mcl_arg_views(&L, (mview[]){x, w, y}, 3);
        mcl_arg_int(&L, (int)planes);
        mcl_arg_int(&L, s->c);
        mcl_arg_int(&L, s->h);
        mcl_arg_int(&L, s->w);
        mcl_arg_int(&L, s->pad);
        mcl_arg_int(&L, (int)ho);
        mcl_arg_int(&L, (int)wo);
        return tile_run(&L, &g, ho, planes);
    }
    return direct_run(d, s, "dw_forward", x, w, y, wo, ho);
}

/* dx: (N, C, H, W), overwritten, from dy (N, C, Ho, Wo) and w (C, K, K). */
static manta_status backward_dx(mcl_dev *d, const nn_dw_shape *s, mview w, mview dy, mview dx)
{
    size_t planes = (size_t)s->n * (size_t)s->c;
    int ho = nn_dw_out_h(s), wo = nn_dw_out_w(s);
    tile_geo g;
    mcl_launch L;
    const bool tiled = begin_tiled(&L, d, "dw_tile_backward_dx", s);
    /* stride 1: the forward correlation of dy with the flipped filter, padded
     * by k - 1 - pad; stride 2 with pad k/2: a gather over the tap parities */
    bool flip = tiled && s->stride == 1 && s->pad <= s->k - 1 &&
                tile_plan(&L, s, (size_t)s->h, (size_t)s->w, planes, true, corr1_floats, TILE_R,
                          TILE_V, &g);
    bool par2 =
        !flip && tiled && s->stride == 2 && s->pad == s->k / 2 &&
        tile_plan(&L, s, (size_t)s->h, (size_t)s->w, planes, true, dx2_floats, TILE_R, 16, &g);
    if (flip || par2) {
        mcl_arg_views(&L, (mview[]){dy, w, dx}, 3);
        mcl_arg_int(&L, (int)planes);
        mcl_arg_int(&L, s->c);
        if (flip) { /* input dy (ho, wo), output dx (h, w) */
            mcl_arg_int(&L, ho);
            mcl_arg_int(&L, wo);
            mcl_arg_int(&L, s->k - 1 - s->pad);
            mcl_arg_int(&L, s->h);
            mcl_arg_int(&L, s->w);
        } else {
            mcl_arg_int(&L, s->h);
            mcl_arg_int(&L, s->w);
            mcl_arg_int(&L, ho);
            mcl_arg_int(&L, wo);
        }
        return tile_run(&L, &g, (size_t)s->h, planes);
    }
    return direct_run(d, s, "dw_backward_dx", dy, w, dx, (size_t)s->w, (size_t)s->h);
}

/* GPU weight gradient: partial sums over ranges of output rows into @p part, then one
 * work-group per weight adds them up into dw. */
static manta_status backward_w_gpu(mcl_dev *d, const nn_dw_shape *s, mview x, mview dy, mview dw,
                                   mview part)
{
    size_t splits = wgrad_splits(s), count = (size_t)s->c * (size_t)s->k * (size_t)s->k;
    MANTA_TRY(nn_need_buffer(d, "depthwise backward", "scratch", part));
    mcl_launch L;
    mcl_launch_begin(&L, d, "depthwise", "dw_wgrad_partial");
    view_shape_args(&L, x, dy, part, s);
    mcl_arg_int(&L, (int)splits);
    mcl_launch_output(&L, splits * count);
    size_t wg = nn_group_cap(&L, 128);
    MANTA_TRY(mcl_launch_run(&L, 1, (size_t[]){splits * count}, (size_t[]){wg}));
    return nn_wgrad_reduce(d, part, dw, count, count, count, splits);
}

/* dw (C, K, K) += reduction over (N, Ho, Wo); x (N, C, H, W), dy (N, C, Ho, Wo). */
static manta_status backward_w(mcl_dev *d, const nn_dw_shape *s, mview x, mview dy, mview dw,
                               mview scratch)
{
    if (gpu_variant(d))
        return backward_w_gpu(d, s, x, dy, dw, scratch);
    size_t ho = (size_t)nn_dw_out_h(s);
    mcl_launch L;
    size_t wo = (size_t)nn_dw_out_w(s);
    if (specialised(s) && (wo + 7) / 8 * 8 * (size_t)s->stride + (size_t)s->k <= ROW_MAX) {
        char name[40];
        /* stride 2: x rows split into even and odd columns once a row has
         * more than one chunk of 8 outputs */
        snprintf(name, sizeof name, "dw_rows_backward_w_k%d_s%d%s", s->k, s->stride,
                 s->stride == 2 && wo > 8 ? "x" : "");
        mcl_launch_begin(&L, d, "depthwise", name);
        view_shape_args(&L, x, dy, dw, s);
        return mcl_launch_run(&L, 1, (size_t[]){(size_t)s->c * s->k}, (size_t[]){(size_t)s->k});
    }
    if (s->stride == 1 || s->stride == 2) {
        char name[40];
        snprintf(name, sizeof name, "dw_direct_backward_w_s%d", s->stride);
        mcl_launch_begin(&L, d, "depthwise", name);
        view_shape_args(&L, x, dy, dw, s);
        size_t kk = (size_t)s->k * (size_t)s->k;
        size_t local = kk <= mcl_launch_wg_max(&L) ? kk : 1;
        return mcl_launch_run(&L, 1, (size_t[]){(size_t)s->c * kk}, (size_t[]){local});
    }
    /* A power of two covering the output rows, within the group limits. */
    size_t rows = (size_t)s->n * ho;
    mcl_launch_begin(&L, d, "depthwise", "dw_backward_w");
    size_t max_group = nn_group_cap(&L, DW_REDUCE_GROUP);
    size_t group = 1;
    while (group < rows && group * 2 <= max_group)
        group *= 2;
    view_shape_args(&L, x, dy, dw, s);
    mcl_arg_local(&L, group * sizeof(float));
    size_t global = (size_t)s->c * (size_t)s->k * (size_t)s->k * group;
    return mcl_launch_run(&L, 1, (size_t[]){global}, (size_t[]){group});
}

manta_status nn_dw_backward(mcl_dev *d, const nn_dw_shape *s, mview x, mview w, mview dy, mview dx,
                            mview dw, mview scratch)
{
    static const char op[] = "depthwise backward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_backward_buffers(d, op, x, w, dy, dx, dw));
    if (dw.mem)
        MANTA_TRY(backward_w(d, s, x, dy, dw, scratch));
    return dx.mem ? backward_dx(d, s, w, dy, dx) : MANTA_OK;
}
