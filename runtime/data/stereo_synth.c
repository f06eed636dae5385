#include "data/stereo_synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "data/resample.h"

/* Vertices of the finest polygon (blobs). */
#define SS_MAX_VERTS 32
/* Sub-pixel right-view spans kept per row for the exact occlusion test. */
#define SS_MAX_SLIVERS 16
/* Disparity margin by which another layer must be nearer to occlude. */
#define SS_OCCLUDE_EPS 1e-4f

void stereo_synth_opts_default(stereo_synth_opts *o, int width, int height, float max_disp,
                               uint64_t seed)
{
    memset(o, 0, sizeof *o);
    o->width = width;
    o->height = height;
    o->max_disp = max_disp;
    o->seed = seed;
    o->min_shapes = 4;
    o->max_shapes = 12;
    o->photometric = true;
    o->photos = NULL;
    o->share_textured = 1.0f / 3.0f;
    o->share_single = 1.0f / 3.0f;
    o->photo_layers = 0.8f;
    o->share_shifted = 0.5f;
}

/* ---- scene ---------------------------------------------------------------- */

enum { SHAPE_FULL, SHAPE_ELLIPSE, SHAPE_POLY, SHAPE_REGION };
enum { TEX_NOISE, TEX_STRIPES, TEX_CHECKER, TEX_GRADIENT, TEX_FLAT };

/* One surface of the scene, in the left view's frame. */
typedef struct layer {
    int shape;
    /* ellipse: inside iff qa X^2 + qb X Y + qc Y^2 <= 1 with X = x - cx, Y = y - cy */
    float cx, cy, qa, qb, qc;
    int nv;
    float vx[SS_MAX_VERTS], vy[SS_MAX_VERTS]; /* polygon, in order */
    float bx0, bx1, by0, by1;                 /* bounding box */
    float a, b, c, inv1b;                     /* d = a + b x + c y; 1 / (1 - b) */
    /* texture raster: texel (tx, ty) is the point (tx0 + tx, ty0 + ty); t in [0, 1] */
    int tx0, ty0, tw, th;
    float *tex;         /* (th, tw), inside the call's texture block */
    float c0[3], dc[3]; /* colour = c0 + t * dc */
    float *rgb;         /* photographic texture, (3, th, tw) planes, or NULL: tex and colours */
    /* region of a photograph's segmentation: row y's spans are rs[y * SS_MAX_VERTS ..], rn[y]
     * values of them (left-frame rows 0 .. H - 1) */
    const float *rs;
    const int *rn;
} layer;

static float urand(manta_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * manta_rng_uniform(r);
}

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* 64-bit mix (splitmix64's finaliser). */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Lattice value in [0, 1) of cell (ix, iy) of a noise seeded with s. */
static float lattice(int ix, int iy, uint32_t s)
{
    uint32_t h = (uint32_t)ix * 0x9e3779b1u ^ (uint32_t)iy * 0x85ebca77u ^ s;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

static void bbox_of_poly(layer *L)
{
    L->bx0 = L->bx1 = L->vx[0];
    L->by0 = L->by1 = L->vy[0];
    for (int k = 1; k < L->nv; k++) {
        L->bx0 = fminf(L->bx0, L->vx[k]);
        L->bx1 = fmaxf(L->bx1, L->vx[k]);
        L->by0 = fminf(L->by0, L->vy[k]);
        L->by1 = fmaxf(L->by1, L->vy[k]);
    }
}

/* A random shape of size about R centred at (cx, cy). */
static void make_shape(layer *L, manta_rng *r, float cx, float cy, float R)
{
    const float pi = 3.14159265358979f;
    float th = urand(r, 0.0f, pi), ct = cosf(th), st = sinf(th);
    uint32_t pick = manta_rng_below(r, 100);
    L->cx = cx;
    L->cy = cy;
    if (pick < 30) { /* rotated ellipse */
        float rx = R * urand(r, 0.5f, 1.0f), ry = R * urand(r, 0.3f, 1.0f);
        float ia = 1.0f / (rx * rx), ib = 1.0f / (ry * ry);
        L->shape = SHAPE_ELLIPSE;
        /* u = X ct + Y st, v = -X st + Y ct; u^2/rx^2 + v^2/ry^2 <= 1 */
        L->qa = ct * ct * ia + st * st * ib;
        L->qb = 2.0f * ct * st * (ia - ib);
        L->qc = st * st * ia + ct * ct * ib;
        float hw = sqrtf(rx * rx * ct * ct + ry * ry * st * st);
        float hh = sqrtf(rx * rx * st * st + ry * ry * ct * ct);
        L->bx0 = cx - hw, L->bx1 = cx + hw, L->by0 = cy - hh, L->by1 = cy + hh;
        return;
    }
    L->shape = SHAPE_POLY;
    if (pick < 55) { /* rotated rectangle */
        float hx = R * urand(r, 0.5f, 1.0f), hy = R * urand(r, 0.3f, 1.0f);
        const float sx[4] = {-1, 1, 1, -1}, sy[4] = {-1, -1, 1, 1};
        L->nv = 4;
        for (int k = 0; k < 4; k++) {
            L->vx[k] = cx + sx[k] * hx * ct - sy[k] * hy * st;
            L->vy[k] = cy + sx[k] * hx * st + sy[k] * hy * ct;
        }
    } else if (pick < 75) { /* polygon of 3 to 8 vertices at sorted random angles */
        int n = 3 + (int)manta_rng_below(r, 6);
        float ang[8];
        for (int k = 0; k < n; k++)
            ang[k] = urand(r, 0.0f, 2.0f * pi);
        for (int k = 1; k < n; k++) /* insertion sort */
            for (int m = k; m > 0 && ang[m - 1] > ang[m]; m--) {
                float t = ang[m];
                ang[m] = ang[m - 1];
                ang[m - 1] = t;
            }
        L->nv = n;
        for (int k = 0; k < n; k++) {
            float rad = R * urand(r, 0.6f, 1.0f);
            L->vx[k] = cx + rad * cosf(ang[k]);
            L->vy[k] = cy + rad * sinf(ang[k]);
        }
    } else if (pick < 87) { /* star */
        int pts = 5 + (int)manta_rng_below(r, 6);
        float inner = urand(r, 0.35f, 0.7f);
        L->nv = 2 * pts;
        for (int k = 0; k < L->nv; k++) {
            float ang = th + pi * (float)k / pts, rad = R * ((k & 1) ? inner : 1.0f);
            L->vx[k] = cx + rad * cosf(ang);
            L->vy[k] = cy + rad * sinf(ang);
        }
    } else { /* blob: a smooth radius over SS_MAX_VERTS angles */
        float amp[3], ph[3];
        for (int h = 0; h < 3; h++) {
            amp[h] = urand(r, 0.0f, 0.18f);
            ph[h] = urand(r, 0.0f, 2.0f * pi);
        }
        L->nv = SS_MAX_VERTS;
        for (int k = 0; k < L->nv; k++) {
            float ang = 2.0f * pi * (float)k / L->nv, rad = 1.0f;
            for (int h = 0; h < 3; h++)
                rad += amp[h] * sinf((float)(h + 2) * ang + ph[h]);
            L->vx[k] = cx + R * 0.8f * rad * cosf(ang);
            L->vy[k] = cy + R * 0.8f * rad * sinf(ang);
        }
    }
    bbox_of_poly(L);
}

/*
 * Spans of the row y inside a layer, in the left frame: pairs [s[2k], s[2k+1])
 * (a point x is inside iff s[2k] <= x < s[2k+1] for some k). Returns the
 * number of values written (even; at most SS_MAX_VERTS).
 */
static int row_spans(const layer *L, float y, float *s)
{
    if (L->shape == SHAPE_FULL) {
        s[0] = -1e30f;
        s[1] = 1e30f;
        return 2;
    }
    if (y < L->by0 || y > L->by1)
        return 0;
    if (L->shape == SHAPE_REGION) {
        const int row = (int)y, n = L->rn[row];
        memcpy(s, L->rs + (size_t)row * SS_MAX_VERTS, sizeof(float) * (size_t)n);
        return n;
    }
    if (L->shape == SHAPE_ELLIPSE) {
        float Y = y - L->cy, B = L->qb * Y, C = L->qc * Y * Y - 1.0f;
        float disc = B * B - 4.0f * L->qa * C;
        if (disc <= 0.0f)
            return 0;
        float q = sqrtf(disc), inv = 0.5f / L->qa;
        s[0] = L->cx + (-B - q) * inv;
        s[1] = L->cx + (-B + q) * inv;
        return 2;
    }
    int n = 0;
    for (int k = 0, m = L->nv - 1; k < L->nv; m = k++) {
        float y0 = L->vy[m], y1 = L->vy[k];
        if ((y0 <= y && y < y1) || (y1 <= y && y < y0)) {
            float x = L->vx[m] + (y - y0) * (L->vx[k] - L->vx[m]) / (y1 - y0);
            int p = n++; /* insertion into sorted order */
            while (p > 0 && s[p - 1] > x) {
                s[p] = s[p - 1];
                p--;
            }
            s[p] = x;
        }
    }
    return n & ~1;
}

static int in_spans(const float *s, int n, float x)
{
    for (int k = 0; k < n; k += 2)
        if (s[k] <= x && x < s[k + 1])
            return 1;
    return 0;
}

/*
 * A disparity plane over the box [x0, x1] x [y0, y1] whose values there lie
 * in [lo, hi]: slopes drawn in [-g, g] and scaled down so that the variation
 * over the box is at most @p span, then an offset drawn so the minimum lies in
 * [lo, hi - variation].
 */
static void make_plane(layer *L, manta_rng *r, float x0, float x1, float y0, float y1, float lo,
                       float hi, float g, float span)
{
    float b = urand(r, -g, g), c = urand(r, -g, g);
    float var = fabsf(b) * (x1 - x0) + fabsf(c) * (y1 - y0);
    if (span > hi - lo)
        span = hi - lo;
    if (var > span && var > 0.0f) {
        b *= span / var;
        c *= span / var;
        var = span;
    }
    float m = urand(r, lo, hi - var);
    float corner_min = fminf(b * x0, b * x1) + fminf(c * y0, c * y1);
    L->a = m - corner_min;
    L->b = b;
    L->c = c;
    L->inv1b = 1.0f / (1.0f - b);
}

/* ---- textures ------------------------------------------------------------- */

/* Scratch of one texture fill: per-column lattice indices and weights, one lattice row. */
typedef struct tex_scratch {
    int *ix;    /* (tw) */
    float *fx;  /* (tw) */
    float *col; /* (tw + 3) vertically interpolated lattice values */
} tex_scratch;

static float smooth01(float f) { return f * f * (3.0f - 2.0f * f); }

/* Triangle wave of period 1 in [0, 1]: 0 at integers, 1 at half-integers. */
static float tri(float p) { return 1.0f - fabsf(2.0f * (p - floorf(p)) - 1.0f); }

/* Add amp * value noise of cell size @p cell (offset ox, oy) to the raster. */
static void add_noise(layer *L, tex_scratch *ts, float cell, float ox, float oy, uint32_t seed,
                      float amp)
{
    const float inv = 1.0f / cell;
    int base = (int)floorf(L->tx0 * inv + ox);
    for (int tx = 0; tx < L->tw; tx++) {
        float g = (L->tx0 + tx) * inv + ox;
        int i = (int)floorf(g);
        ts->ix[tx] = i - base;
        ts->fx[tx] = smooth01(g - (float)i);
    }
    int ncol = ts->ix[L->tw - 1] + 2;
    for (int ty = 0; ty < L->th; ty++) {
        float g = (L->ty0 + ty) * inv + oy;
        int iy = (int)floorf(g);
        float fy = smooth01(g - (float)iy);
        for (int k = 0; k < ncol; k++) {
            float v0 = lattice(base + k, iy, seed), v1 = lattice(base + k, iy + 1, seed);
            ts->col[k] = v0 + fy * (v1 - v0);
        }
        float *row = L->tex + (size_t)ty * L->tw;
        for (int tx = 0; tx < L->tw; tx++) {
            const float *cv = ts->col + ts->ix[tx];
            row[tx] += amp * (cv[0] + ts->fx[tx] * (cv[1] - cv[0]));
        }
    }
}

/* Fractal value noise (octaves halving the cell down to 1.5 px, amplitudes
 * falling by 0.6), contrast-stretched around 0.5 and clamped to [0, 1]. */
static void fill_fbm(layer *L, tex_scratch *ts, manta_rng *r, float cell, int octaves)
{
    memset(L->tex, 0, sizeof(float) * (size_t)L->tw * L->th);
    float amp = 1.0f, total = 0.0f;
    for (int o = 0; o < octaves && cell >= 1.5f; o++) {
        add_noise(L, ts, cell, urand(r, 0.0f, 64.0f), urand(r, 0.0f, 64.0f), manta_rng_u32(r), amp);
        total += amp;
        amp *= 0.6f;
        cell *= 0.5f;
    }
    const size_t n = (size_t)L->tw * L->th;
    const float s = total > 0.0f ? 2.0f / total : 0.0f;
    for (size_t i = 0; i < n; i++)
        L->tex[i] = clampf(0.5f + s * (L->tex[i] - 0.5f * total), 0.0f, 1.0f);
}

static void make_texture(layer *L, tex_scratch *ts, manta_rng *r, int kind)
{
    const float pi = 3.14159265358979f;
    float lum = 0.0f;
    for (int ch = 0; ch < 3; ch++) {
        L->c0[ch] = manta_rng_uniform(r);
        L->dc[ch] = manta_rng_uniform(r) - L->c0[ch];
        lum += L->dc[ch] * (ch == 1 ? 0.6f : 0.2f);
    }
    if (fabsf(lum) < 0.2f) /* too little contrast: the second colour becomes the complement */
        for (int ch = 0; ch < 3; ch++)
            L->dc[ch] = 1.0f - 2.0f * L->c0[ch];
    if (kind == TEX_NOISE) {
        fill_fbm(L, ts, r, urand(r, 3.0f, 16.0f), 2 + (int)manta_rng_below(r, 3));
        return;
    }
    if (kind == TEX_FLAT) { /* low texture: near-constant colour, faint noise */
        for (int ch = 0; ch < 3; ch++)
            L->dc[ch] = urand(r, -0.05f, 0.05f);
        fill_fbm(L, ts, r, 8.0f, 1);
        const size_t n = (size_t)L->tw * L->th;
        for (size_t i = 0; i < n; i++)
            L->tex[i] = 0.5f + 0.06f * (L->tex[i] - 0.5f);
        return;
    }
    /* a pattern over a little noise */
    float wn = urand(r, 0.0f, 0.25f);
    fill_fbm(L, ts, r, urand(r, 3.0f, 12.0f), 3);
    float th = urand(r, 0.0f, pi), ct = cosf(th), st = sinf(th);
    float period = urand(r, 4.0f, 16.0f), f = 1.0f / period;
    float ph0 = manta_rng_uniform(r), ph1 = manta_rng_uniform(r);
    /* gradient: t goes over [g0, g0 + swing] across the raster's diagonal */
    float swing = urand(r, 0.5f, 1.0f), g0 = urand(r, 0.0f, 1.0f - swing);
    float diag = fabsf(ct) * L->tw + fabsf(st) * L->th;
    float gs = swing / (diag > 1.0f ? diag : 1.0f);
    float gmin = fminf(0.0f, ct * (L->tw - 1)) + fminf(0.0f, st * (L->th - 1));
    for (int ty = 0; ty < L->th; ty++) {
        float v = (float)(L->ty0 + ty);
        float *row = L->tex + (size_t)ty * L->tw;
        for (int tx = 0; tx < L->tw; tx++) {
            float u = (float)(L->tx0 + tx), t;
            if (kind == TEX_STRIPES) {
                t = smooth01(tri((u * ct + v * st) * f + ph0));
            } else if (kind == TEX_CHECKER) {
                float p = 2.0f * tri((u * ct + v * st) * 0.5f * f + ph0) - 1.0f;
                float q = 2.0f * tri((v * ct - u * st) * 0.5f * f + ph1) - 1.0f;
                t = 0.5f + 0.5f * clampf(2.5f * p * q, -1.0f, 1.0f);
            } else {
                t = g0 + gs * ((float)tx * ct + (float)ty * st - gmin);
            }
            row[tx] = (1.0f - wn) * clampf(t, 0.0f, 1.0f) + wn * row[tx];
        }
    }
}

/* ---- rendering ------------------------------------------------------------ */

static manta_status check_opts(const stereo_synth_opts *o, const stereo_pair *out, manta_err *err)
{
    if (o->width < STEREO_SYNTH_MIN_SIDE || o->width > STEREO_MAX_SIDE ||
        o->height < STEREO_SYNTH_MIN_SIDE || o->height > STEREO_MAX_SIDE)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo synth: size %dx%d is outside [%d, %d] per side", o->width,
                             o->height, STEREO_SYNTH_MIN_SIDE, STEREO_MAX_SIDE);
    if (!(o->max_disp > 0.0f && o->max_disp <= 0.5f * (float)o->width))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo synth: max_disp is %g (must be in (0, width / 2 = %g])",
                             (double)o->max_disp, 0.5 * o->width);
    if (o->min_shapes < 0 || o->max_shapes < o->min_shapes ||
        o->max_shapes > STEREO_SYNTH_MAX_SHAPES)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo synth: shapes %d..%d (must satisfy 0 <= min <= max <= %d)",
                             o->min_shapes, o->max_shapes, STEREO_SYNTH_MAX_SHAPES);
    if (!out || out->height != o->height || out->width != o->width || !out->left || !out->right ||
        !out->disp || !out->mask)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo synth: the output pair is %dx%d, options ask for %dx%d",
                             out ? out->width : 0, out ? out->height : 0, o->width, o->height);
    return MANTA_OK;
}

/* Place the texture raster of a layer; 0 when no pixel of either view can show it. */
static int place_raster(layer *L, int W, int H, float maxd)
{
    float xlo = fmaxf(L->bx0, 0.0f), xhi = fminf(L->bx1, (float)(W - 1) + maxd);
    float ylo = fmaxf(L->by0, 0.0f), yhi = fminf(L->by1, (float)(H - 1));
    if (xlo > xhi || ylo > yhi)
        return 0;
    L->tx0 = (int)floorf(xlo);
    L->ty0 = (int)ceilf(ylo);
    L->tw = (int)ceilf(xhi) - L->tx0 + 2;
    L->th = (int)floorf(yhi) - L->ty0 + 1;
    return L->th > 0;
}

/* Per-row working arrays. */
typedef struct rowbuf {
    float *zl, *zr, *ur; /* (W) left depth, right depth, right texture coordinate */
    int *idl, *idr;      /* (W) winning layer per pixel */
    float *spans;        /* (layers, SS_MAX_VERTS) */
    int *nspan;          /* (layers) */
} rowbuf;

/* Is layer L the front surface of the right view at (continuous) xr of row y? */
static int right_front(const layer *Ls, int nl, const rowbuf *rb, int L, float xr, float y, float d)
{
    for (int m = 0; m < nl; m++) {
        if (m == L || rb->nspan[m] == 0)
            continue;
        const layer *M = &Ls[m];
        float u = (xr + M->a + M->c * y) * M->inv1b;
        if (u - xr > d + SS_OCCLUDE_EPS &&
            in_spans(rb->spans + (size_t)m * SS_MAX_VERTS, rb->nspan[m], u))
            return 0;
    }
    return 1;
}

/*
 * Row y of both views: each layer's spans, the winning layer and its depth at every pixel
 * of the left view (idl, zl) and of the right view (idr, zr, with the texture coordinate
 * ur), and the right-view slivers (spans narrower than a pixel) for the occlusion test.
 */
static void scan_row(const layer *Ls, int nl, rowbuf *rb, int W, int y, float *sliver,
                     int *nsliver_out, int *sliver_overflow_out)
{
    const float fy = (float)y;
    for (int i = 0; i < W; i++) {
        rb->zl[i] = rb->zr[i] = -1e30f;
        rb->idl[i] = rb->idr[i] = 0;
        rb->ur[i] = 0.0f;
    }
    int nsliver = 0, sliver_overflow = 0;
    for (int l = 0; l < nl; l++) {
        const layer *L = &Ls[l];
        float *s = rb->spans + (size_t)l * SS_MAX_VERTS;
        int ns = L->tex && y >= L->ty0 && y < L->ty0 + L->th ? row_spans(L, fy, s) : 0;
        rb->nspan[l] = ns;
        const float off = L->a + L->c * fy;
        for (int k = 0; k < ns; k += 2) {
            /* left view: x in [s0, s1) */
            int i0 = (int)ceilf(fmaxf(s[k], -1.0f)), i1 = (int)ceilf(fminf(s[k + 1], (float)W));
            for (int i = i0 < 0 ? 0 : i0; i < i1 && i < W; i++) {
                float d = off + L->b * (float)i;
                if (d > rb->zl[i]) {
                    rb->zl[i] = d;
                    rb->idl[i] = l;
                }
            }
            /* right view: x_R = (1 - b) x - a - c y, increasing in x */
            float r0 = L->shape == SHAPE_FULL ? -1.0f : (1.0f - L->b) * s[k] - off;
            float r1 = L->shape == SHAPE_FULL ? (float)W : (1.0f - L->b) * s[k + 1] - off;
            int j0 = (int)ceilf(fmaxf(r0, -1.0f)), j1 = (int)ceilf(fminf(r1, (float)W));
            if (j0 >= j1 && r1 > 0.0f && r0 < (float)(W - 1)) {
                if (nsliver < SS_MAX_SLIVERS) {
                    sliver[2 * nsliver] = r0;
                    sliver[2 * nsliver + 1] = r1;
                    nsliver++;
                } else {
                    sliver_overflow = 1;
                }
            }
            for (int j = j0 < 0 ? 0 : j0; j < j1 && j < W; j++) {
                float u = ((float)j + off) * L->inv1b, d = u - (float)j;
                if (d > rb->zr[j]) {
                    rb->zr[j] = d;
                    rb->idr[j] = l;
                    rb->ur[j] = u;
                }
            }
        }
    }
    *nsliver_out = nsliver;
    *sliver_overflow_out = sliver_overflow;
}

/* The winning layer of every pixel of the left view: (H, W) into @p labels. */
static void left_labels(const layer *Ls, int nl, rowbuf *rb, int W, int H, int *labels)
{
    float sliver[2 * SS_MAX_SLIVERS];
    int nsliver, overflow;
    for (int y = 0; y < H; y++) {
        scan_row(Ls, nl, rb, W, y, sliver, &nsliver, &overflow);
        memcpy(labels + (size_t)y * W, rb->idl, sizeof(int) * (size_t)W);
    }
}

static void render(const layer *Ls, int nl, rowbuf *rb, stereo_pair *out)
{
    const int W = out->width, H = out->height;
    const size_t plane = (size_t)W * H;
    for (int y = 0; y < H; y++) {
        const float fy = (float)y;
        float sliver[2 * SS_MAX_SLIVERS];
        int nsliver, sliver_overflow;
        scan_row(Ls, nl, rb, W, y, sliver, &nsliver, &sliver_overflow);
        float *restrict dl = out->disp + (size_t)y * W;
        uint8_t *restrict mk = out->mask + (size_t)y * W;
        float *restrict lr = out->left + (size_t)y * W, *restrict lg = lr + plane,
                        *restrict lb = lg + plane;
        for (int i = 0; i < W; i++) {
            const int id = rb->idl[i];
            const layer *L = &Ls[id];
            int k = i - L->tx0;
            k = k < 0 ? 0 : k > L->tw - 1 ? L->tw - 1 : k;
            const size_t at = (size_t)(y - L->ty0) * L->tw + k;
            if (L->rgb) {
                const size_t ps = (size_t)L->tw * L->th;
                lr[i] = L->rgb[at];
                lg[i] = L->rgb[ps + at];
                lb[i] = L->rgb[2 * ps + at];
            } else {
                const float t = L->tex[at];
                lr[i] = L->c0[0] + t * L->dc[0];
                lg[i] = L->c0[1] + t * L->dc[1];
                lb[i] = L->c0[2] + t * L->dc[2];
            }
            const float d = rb->zl[i];
            dl[i] = d;
            /* occlusion: is the same layer in front at x - d in the right view? */
            const float xr = (float)i - d;
            uint8_t m = STEREO_VALID;
            if (xr >= 0.0f && xr <= (float)(W - 1)) {
                int j0 = (int)xr, j1 = j0 + 1 < W ? j0 + 1 : j0;
                int front;
                if (rb->idr[j0] == id && rb->idr[j1] == id && !sliver_overflow) {
                    front = 1;
                    for (int q = 0; q < nsliver && front; q++)
                        if (sliver[2 * q] <= xr && xr < sliver[2 * q + 1])
                            front = right_front(Ls, nl, rb, id, xr, fy, d);
                } else {
                    front = right_front(Ls, nl, rb, id, xr, fy, d);
                }
                if (front)
                    m |= STEREO_NOC;
            }
            mk[i] = m;
        }
        float *restrict rr = out->right + (size_t)y * W, *restrict rg = rr + plane,
                        *restrict rbl = rg + plane;
        for (int j = 0; j < W; j++) {
            const layer *L = &Ls[rb->idr[j]];
            const float fu = rb->ur[j] - (float)L->tx0;
            int k = (int)floorf(fu);
            k = k < 0 ? 0 : k > L->tw - 2 ? L->tw - 2 : k;
            const float f = clampf(fu - (float)k, 0.0f, 1.0f);
            if (L->rgb) { /* each channel interpolated as the scalar pattern is */
                const size_t ps = (size_t)L->tw * L->th;
                const float *row = L->rgb + (size_t)(y - L->ty0) * L->tw;
                rr[j] = row[k] + f * (row[k + 1] - row[k]);
                row += ps;
                rg[j] = row[k] + f * (row[k + 1] - row[k]);
                row += ps;
                rbl[j] = row[k] + f * (row[k + 1] - row[k]);
                continue;
            }
            const float *row = L->tex + (size_t)(y - L->ty0) * L->tw;
            const float t = row[k] + f * (row[k + 1] - row[k]);
            rr[j] = L->c0[0] + t * L->dc[0];
            rg[j] = L->c0[1] + t * L->dc[1];
            rbl[j] = L->c0[2] + t * L->dc[2];
        }
    }
}

/* Per-view gain, bias, gamma and noise (see the header). The noise of value i
 * is a hash of (i, a seed drawn here): no serial dependency, so it vectorises. */
static void photometric(float *img, int H, int W, manta_rng *r)
{
    const size_t plane = (size_t)W * H;
    float gain = urand(r, 0.8f, 1.2f), bias = urand(r, -0.05f, 0.05f);
    float gamma = expf(urand(r, -0.2f, 0.2f)), sigma = urand(r, 0.0f, 0.02f);
    float cg[3];
    for (int ch = 0; ch < 3; ch++)
        cg[ch] = gain * urand(r, 0.97f, 1.03f);
    const uint32_t seed = manta_rng_u32(r);
    stereo_gamma g;
    stereo_gamma_init(&g, gamma);
    /* u1 + u2 - 1 with u1, u2 uniform on [0, 1] has standard deviation 1 / sqrt(6) */
    const float scale = sigma * 2.44948974f / 65536.0f;
    for (int ch = 0; ch < 3; ch++) {
        float *restrict p = img + ch * plane;
        const float k = cg[ch];
        const uint32_t base = (uint32_t)(ch * plane);
        stereo_tone(p, plane, k, bias, &g);
        for (size_t i = 0; i < plane; i++) {
            uint32_t h = (base + (uint32_t)i) * 0x9e3779b1u ^ seed;
            h ^= h >> 16;
            h *= 0x7feb352du;
            h ^= h >> 15;
            h *= 0x846ca68bu;
            h ^= h >> 16;
            float n = (float)((int32_t)(h >> 16) + (int32_t)(h & 0xffffu) - 65535) * scale;
            p[i] = clampf(p[i] + n, 0.0f, 1.0f);
        }
    }
}

/* ---- photographs ---------------------------------------------------------- */

/* The stream of the photographic draws of pair @p index: apart from the scene's, so a set
 * without photographs draws exactly what it always did. */
static void photo_stream(const stereo_synth_opts *o, uint64_t index, manta_rng *pr)
{
    manta_rng_seed(pr, mix64(o->seed ^ mix64(index + 0x3c6ef372fe94f82bULL)),
                   index ^ 0x70686f746fULL);
}

/* The pair's kind: the first draw of its photographic stream (none without photographs). */
static stereo_synth_mode draw_mode(const stereo_synth_opts *o, manta_rng *pr)
{
    if (!o->photos || o->photos->count < 1)
        return STEREO_SYNTH_PROCEDURAL;
    float u = manta_rng_uniform(pr);
    return u < o->share_single                       ? STEREO_SYNTH_SINGLE
           : u < o->share_single + o->share_textured ? STEREO_SYNTH_TEXTURED
                                                     : STEREO_SYNTH_PROCEDURAL;
}

stereo_synth_mode stereo_synth_pair_mode(const stereo_synth_opts *o, uint64_t index)
{
    manta_rng pr;
    photo_stream(o, index, &pr);
    return draw_mode(o, &pr);
}

/*
 * An RGB raster (3, rh, rw) planes at @p dst: a crop of photograph @p pick (any of the
 * bank's when negative) magnified by a scale drawn in [0.5, 1.5] (raised where the
 * photograph is too small to cover the raster at that scale), at a random place, mirrored
 * half of the time. Always six draws from @p pr. The photograph is resampled with
 * data/resample.h's filter (averaging when shrinking). Returns the photograph used, or -1
 * when out of memory.
 */
static int photo_raster(const photo_bank *bank, int pick, manta_rng *pr, int rw, int rh, float *dst,
                        manta_err *err)
{
    int which = (int)manta_rng_below(pr, (uint32_t)bank->count);
    if (pick >= 0)
        which = pick;
    const photo *ph = &bank->photos[which];
    float s = urand(pr, 0.5f, 1.5f);
    float fx = manta_rng_uniform(pr), fy = manta_rng_uniform(pr);
    int mirror = (int)(manta_rng_u32(pr) >> 31);
    (void)manta_rng_u32(pr); /* spare: keeps the count of draws fixed for later uses */
    s = fmaxf(s, fmaxf((float)rw / (float)ph->width, (float)rh / (float)ph->height));
    int cw = (int)lroundf((float)rw / s), ch = (int)lroundf((float)rh / s);
    cw = cw < 1 ? 1 : cw > ph->width ? ph->width : cw;
    ch = ch < 1 ? 1 : ch > ph->height ? ph->height : ch;
    int ox = (int)(fx * (float)(ph->width - cw + 1)), oy = (int)(fy * (float)(ph->height - ch + 1));
    ox = ox > ph->width - cw ? ph->width - cw : ox;
    oy = oy > ph->height - ch ? ph->height - ch : oy;
    uint8_t *crop = malloc((size_t)cw * ch * 3), *sized = malloc((size_t)rw * rh * 3);
    manta_status st = crop && sized ? MANTA_OK
                                    : manta_err_set(err, MANTA_ERR_NO_MEMORY,
                                                    "stereo synth: out of memory for a %dx%d "
                                                    "photographic texture",
                                                    rw, rh);
    if (st == MANTA_OK) {
        for (int y = 0; y < ch; y++)
            memcpy(crop + (size_t)y * cw * 3, ph->rgb + ((size_t)(oy + y) * ph->width + ox) * 3,
                   (size_t)cw * 3);
        st = data_rs_resize_u8(crop, ch, cw, 3, sized, rh, rw, err);
    }
    if (st == MANTA_OK) {
        const size_t ps = (size_t)rw * rh;
        const float k = 1.0f / 255.0f;
        for (int y = 0; y < rh; y++)
            for (int x = 0; x < rw; x++) {
                const uint8_t *px = sized + ((size_t)y * rw + (mirror ? rw - 1 - x : x)) * 3;
                const size_t at = (size_t)y * rw + x;
                dst[at] = (float)px[0] * k;
                dst[ps + at] = (float)px[1] * k;
                dst[2 * ps + at] = (float)px[2] * k;
            }
    }
    free(crop);
    free(sized);
    return st == MANTA_OK ? which : -1;
}

/*
 * Single-photograph pair: every layer's raster is photograph A (the left view's crop,
 * covering the left frame from x = 0 to W - 1 + max_disp and beyond) where that layer is
 * the left view's front surface or beyond the left view's right border, and photograph B
 * elsewhere: what each layer shows only in the right view (disocclusions) comes from
 * another photograph. @p a and @p b are (3, H, AW) planes; labels (H, W).
 */
static void single_rasters(layer *Ls, int nl, const int *labels, int W, int H, int AW,
                           const float *a, const float *b)
{
    const size_t aps = (size_t)AW * H;
    for (int l = 0; l < nl; l++) {
        layer *L = &Ls[l];
        if (!L->rgb)
            continue;
        const size_t ps = (size_t)L->tw * L->th;
        for (int ty = 0; ty < L->th; ty++) {
            const int y = L->ty0 + ty;
            for (int tx = 0; tx < L->tw; tx++) {
                int x = L->tx0 + tx;
                x = x < AW - 1 ? x : AW - 1;
                const float *src = x >= W || labels[(size_t)y * W + x] == l ? a : b;
                const size_t at = (size_t)ty * L->tw + tx, from = (size_t)y * AW + x;
                L->rgb[at] = src[from];
                L->rgb[ps + at] = src[aps + from];
                L->rgb[2 * ps + at] = src[2 * aps + from];
            }
        }
    }
}

/*
 * Segmentation of a photograph's crop (3, H, AW) planes into compact regions that follow
 * its colour edges (SLIC, Achanta et al. 2012), on a half-resolution copy: about @p k
 * centres on a grid, five rounds of assigning each cell to the nearest centre by colour
 * and place among those within two grid steps (a colour distance of 0.2 weighs as much as
 * a grid step) and moving the centres to their cells' means; then every 4-connected piece of a label becomes a region
 * of its own, pieces smaller than half a grid cell joining the region before them (SLIC's
 * connectivity pass: no specks); at full resolution, a pixel whose 3 x 3 half-resolution
 * neighbourhood holds several regions takes the nearest of them by colour and place, so
 * boundaries fall on the photograph's edges to the pixel. Labels (H, AW) in [0, returned
 * count), at most STEREO_SYNTH_MAX_SHAPES. Scratch: small (4, h, w), lab, queue and comp
 * (h, w) with h = (H + 1) / 2, w = (AW + 1) / 2.
 */
static int segment(const float *img, int H, int AW, int k, int *labels, float *small, int *lab,
                   int *queue, int *comp)
{
    const int h = (H + 1) / 2, w = (AW + 1) / 2;
    const size_t ps = (size_t)AW * H, cells = (size_t)w * h;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                const int y0 = 2 * y, x0 = 2 * x, y1 = y0 + 1 < H ? y0 + 1 : y0,
                          x1 = x0 + 1 < AW ? x0 + 1 : x0;
                const float *pl = img + c * ps;
                small[c * cells + (size_t)y * w + x] =
                    0.25f * (pl[(size_t)y0 * AW + x0] + pl[(size_t)y0 * AW + x1] +
                             pl[(size_t)y1 * AW + x0] + pl[(size_t)y1 * AW + x1]);
            }
    const float step = sqrtf((float)cells / (float)k);
    int nx = (int)lroundf((float)w / step), ny = (int)lroundf((float)h / step);
    nx = nx < 1 ? 1 : nx, ny = ny < 1 ? 1 : ny;
    while (nx * ny > STEREO_SYNTH_MAX_SHAPES)
        nx > ny ? nx-- : ny--;
    const int n = nx * ny;
    float cen[STEREO_SYNTH_MAX_SHAPES][5], acc[STEREO_SYNTH_MAX_SHAPES][6];
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            float *cc = cen[j * nx + i];
            cc[0] = ((float)i + 0.5f) * (float)w / (float)nx;
            cc[1] = ((float)j + 0.5f) * (float)h / (float)ny;
            const size_t at = (size_t)(int)cc[1] * w + (size_t)(int)cc[0];
            for (int c = 0; c < 3; c++)
                cc[2 + c] = small[c * cells + at];
        }
    const float sx = (float)w / (float)nx, sy = (float)h / (float)ny;
    const float wsp = (0.2f * 0.2f) / (sx * sy); /* colour^2 per pixel^2 */
    float *dist = small + 3 * cells; /* (h, w): the best distance of each cell in a round */
    for (int y = 0; y < h; y++)      /* start: the grid's cells */
        for (int x = 0; x < w; x++) {
            int i = (int)((float)x / sx), j = (int)((float)y / sy);
            lab[(size_t)y * w + x] = (j < ny ? j : ny - 1) * nx + (i < nx ? i : nx - 1);
        }
    for (int round = 0; round < 5; round++) {
        /* each centre looks at the cells within two grid steps of it (SLIC's window) */
        for (size_t i = 0; i < cells; i++)
            dist[i] = 1e30f;
        for (int q = 0; q < n; q++) {
            const int x0 = (int)fmaxf(0.0f, cen[q][0] - 2.0f * sx),
                      x1 = (int)fminf((float)(w - 1), cen[q][0] + 2.0f * sx),
                      y0 = (int)fmaxf(0.0f, cen[q][1] - 2.0f * sy),
                      y1 = (int)fminf((float)(h - 1), cen[q][1] + 2.0f * sy);
            for (int y = y0; y <= y1; y++)
                for (int x = x0; x <= x1; x++) {
                    const size_t at = (size_t)y * w + x;
                    const float dx = (float)x - cen[q][0], dy = (float)y - cen[q][1];
                    const float dr = small[at] - cen[q][2], dg = small[cells + at] - cen[q][3],
                                db = small[2 * cells + at] - cen[q][4];
                    const float d = dr * dr + dg * dg + db * db + wsp * (dx * dx + dy * dy);
                    if (d < dist[at])
                        dist[at] = d, lab[at] = q;
                }
        }
        memset(acc, 0, sizeof acc);
        for (size_t at = 0; at < cells; at++) {
            float *a = acc[lab[at]];
            a[0] += (float)(at % (size_t)w), a[1] += (float)(at / (size_t)w);
            a[2] += small[at], a[3] += small[cells + at], a[4] += small[2 * cells + at];
            a[5] += 1.0f;
        }
        for (int q = 0; q < n; q++)
            if (acc[q][5] > 0.0f)
                for (int c = 0; c < 5; c++)
                    cen[q][c] = acc[q][c] / acc[q][5];
    }
    /* connectivity: the pieces of each label, small ones joined to the region before them */
    const size_t min_size = (size_t)(0.5f * sx * sy) > 4 ? (size_t)(0.5f * sx * sy) : 4;
    for (size_t i = 0; i < cells; i++)
        comp[i] = -1;
    int used = 0;
    for (size_t p = 0; p < cells; p++) {
        if (comp[p] >= 0)
            continue;
        const int x = (int)(p % (size_t)w), y = (int)(p / (size_t)w);
        const int before = x > 0 ? comp[p - 1] : y > 0 ? comp[p - (size_t)w] : -1;
        const int want = lab[p];
        size_t head = 0, tail = 0;
        queue[tail++] = (int)p;
        comp[p] = used;
        while (head < tail) {
            const int c = queue[head++], cx = c % w, cy = c / w;
            const int nb[4] = {cx > 0 ? c - 1 : -1, cx + 1 < w ? c + 1 : -1, cy > 0 ? c - w : -1,
                               cy + 1 < h ? c + w : -1};
            for (int t = 0; t < 4; t++)
                if (nb[t] >= 0 && comp[nb[t]] < 0 && lab[nb[t]] == want) {
                    comp[nb[t]] = used;
                    queue[tail++] = nb[t];
                }
        }
        if (before >= 0 && (tail < min_size || used >= STEREO_SYNTH_MAX_SHAPES)) {
            for (size_t t = 0; t < tail; t++)
                comp[queue[t]] = before;
        } else {
            used++;
        }
    }
    /* the regions' centres, then full resolution */
    memset(acc, 0, sizeof acc);
    for (size_t p = 0; p < cells; p++) {
        float *a = acc[comp[p]];
        a[0] += (float)(p % (size_t)w), a[1] += (float)(p / (size_t)w);
        for (int c = 0; c < 3; c++)
            a[2 + c] += small[c * cells + p];
        a[5] += 1.0f;
    }
    for (int q = 0; q < used; q++)
        for (int c = 0; c < 5; c++)
            cen[q][c] = acc[q][c] / acc[q][5];
    int *mixed = queue; /* (h, w): does the cell's 3 x 3 neighbourhood hold several regions */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int own = comp[(size_t)y * w + x];
            int m = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    const int qx = x + dx, qy = y + dy;
                    m |= qx >= 0 && qy >= 0 && qx < w && qy < h && comp[(size_t)qy * w + qx] != own;
                }
            mixed[(size_t)y * w + x] = m;
        }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < AW; x++) {
            const int hx = x / 2, hy = y / 2, own = comp[(size_t)hy * w + hx];
            int best_q = own;
            if (mixed[(size_t)hy * w + hx]) {
                const size_t at = (size_t)y * AW + x;
                const float px = 0.5f * (float)x - 0.25f, py = 0.5f * (float)y - 0.25f;
                const float r = img[at], g = img[ps + at], b = img[2 * ps + at];
                float best = 1e30f;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        const int qx = hx + dx, qy = hy + dy;
                        if (qx < 0 || qy < 0 || qx >= w || qy >= h)
                            continue;
                        const int cand = comp[(size_t)qy * w + qx];
                        const float *cc = cen[cand];
                        const float ex = px - cc[0], ey = py - cc[1];
                        const float dr = r - cc[2], dg = g - cc[3], db = b - cc[4];
                        const float d = dr * dr + dg * dg + db * db + wsp * (ex * ex + ey * ey);
                        if (d < best)
                            best = d, best_q = cand;
                    }
            }
            labels[(size_t)y * AW + x] = best_q;
        }
    return used;
}

/*
 * The regions of a label map (H, AW) with @p n labels as layers Ls[0 .. n - 1]: region q's
 * spans in row y are the runs of its pixels as [x0 - 0.5, x1 + 0.5), at most
 * SS_MAX_VERTS / 2 per row (beyond that the runs across the smallest gaps are joined, so a
 * region may take a few pixels of its neighbours, where the nearer one wins as anywhere),
 * kept at rs[(q * H + y) * SS_MAX_VERTS ..], rn[q * H + y] values. Sets each layer's shape,
 * rows and bounding box (every label has a pixel: segment() numbers the ones used).
 */
static void region_layers(layer *Ls, const int *labels, int H, int AW, int n, float *rs, int *rn)
{
    for (int q = 0; q < n; q++) {
        layer *L = &Ls[q];
        memset(L, 0, sizeof *L);
        L->shape = SHAPE_REGION;
        L->rs = rs + (size_t)q * H * SS_MAX_VERTS;
        L->rn = rn + (size_t)q * H;
        L->bx0 = L->by0 = 1e30f;
        L->bx1 = L->by1 = -1e30f;
    }
    for (int y = 0; y < H; y++) {
        const int *row = labels + (size_t)y * AW;
        for (int q = 0; q < n; q++)
            rn[(size_t)q * H + y] = 0;
        for (int x = 0; x < AW;) {
            const int q = row[x];
            int e = x;
            while (e + 1 < AW && row[e + 1] == q)
                e++;
            float *sp = rs + ((size_t)q * H + y) * SS_MAX_VERTS;
            int *cnt = &rn[(size_t)q * H + y];
            if (*cnt == SS_MAX_VERTS) { /* join the two runs across the smallest gap */
                int best = 1;
                for (int k = 3; k < SS_MAX_VERTS - 1; k += 2)
                    if (sp[k + 1] - sp[k] < sp[best + 1] - sp[best])
                        best = k;
                const float gap = (float)x - 0.5f - sp[SS_MAX_VERTS - 1];
                if (gap <= sp[best + 1] - sp[best]) { /* the new run's gap is the smallest */
                    sp[SS_MAX_VERTS - 1] = (float)e + 0.5f;
                    x = e + 1;
                    continue;
                }
                memmove(sp + best, sp + best + 2,
                        sizeof(float) * (size_t)(SS_MAX_VERTS - best - 2));
                *cnt -= 2;
            }
            sp[(*cnt)++] = (float)x - 0.5f;
            sp[(*cnt)++] = (float)e + 0.5f;
            x = e + 1;
        }
        for (int q = 0; q < n; q++) {
            const int c = rn[(size_t)q * H + y];
            if (c == 0)
                continue;
            layer *L = &Ls[q];
            const float *sp = rs + ((size_t)q * H + y) * SS_MAX_VERTS;
            L->by0 = fminf(L->by0, (float)y), L->by1 = fmaxf(L->by1, (float)y);
            L->bx0 = fminf(L->bx0, sp[0]), L->bx1 = fmaxf(L->bx1, sp[c - 1]);
        }
    }
}

static manta_status check_photo_opts(const stereo_synth_opts *o, manta_err *err)
{
    if (!o->photos)
        return MANTA_OK;
    if (o->photos->count < 1 || !o->photos->photos)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "stereo synth: the photo bank is empty");
    for (int i = 0; i < o->photos->count; i++)
        if (o->photos->photos[i].width < 1 || o->photos->photos[i].height < 1 ||
            !o->photos->photos[i].rgb)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "stereo synth: photograph %d of the bank is empty", i);
    if (!(o->share_textured >= 0.0f && o->share_single >= 0.0f &&
          o->share_textured + o->share_single <= 1.0f + 1e-6f))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo synth: shares of photographic pairs %g (textured) and %g "
                             "(single photograph) must be >= 0 with a sum <= 1",
                             (double)o->share_textured, (double)o->share_single);
    if (!(o->photo_layers >= 0.0f && o->photo_layers <= 1.0f))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo synth: photo_layers is %g (must be in [0, 1])",
                             (double)o->photo_layers);
    return MANTA_OK;
}

/* Largest disparity of a layer's plane over its bounding box. */
static float plane_max(const layer *L)
{
    return L->a + fmaxf(L->b * L->bx0, L->b * L->bx1) + fmaxf(L->c * L->by0, L->c * L->by1);
}

/* Bring the scene nearer as a whole, on a share of the pairs, drawn from a stream of its
 * own: every layer's plane d becomes delta + k d, delta drawn in [0, 0.75] max_disp and k
 * (at most 1) keeping the nearest surface within max_disp; the order of the surfaces, hence
 * what each view shows, does not change. Without it a scene's background stays in
 * [0, 0.35] max_disp and only compact shapes come near, and a network learns that large
 * regions never do (a photograph shifted as a whole by 16 px was matched at 10). The
 * background of a single-photograph pair is never shown and is left behind. */
static void shift_scene(const stereo_synth_opts *o, uint64_t index, layer *Ls, int nl,
                        bool hidden_bg)
{
    manta_rng r;
    manta_rng_seed(&r, mix64(o->seed ^ mix64(index + 0x9e3779b97f4a7c15ULL)),
                   index ^ 0x7368696674ULL);
    if (!(manta_rng_uniform(&r) < o->share_shifted))
        return;
    const int first = hidden_bg ? 1 : 0;
    float top = 0.0f;
    for (int l = first; l < nl; l++)
        top = fmaxf(top, plane_max(&Ls[l]));
    float delta = urand(&r, 0.0f, 0.75f * o->max_disp);
    float k = top > 0.0f ? fminf(1.0f, (o->max_disp - delta) / top) : 1.0f;
    for (int l = first; l < nl; l++) {
        layer *L = &Ls[l];
        L->a = delta + k * L->a;
        L->b *= k;
        L->c *= k;
        L->inv1b = 1.0f / (1.0f - L->b);
    }
}

manta_status stereo_synth_generate(const stereo_synth_opts *o, uint64_t index, stereo_pair *out,
                                   manta_err *err)
{
    manta_status st = check_opts(o, out, err);
    if (st == MANTA_OK)
        st = check_photo_opts(o, err);
    if (st != MANTA_OK)
        return st;
    const int W = o->width, H = o->height;
    const float maxd = o->max_disp;
    manta_rng r;
    manta_rng_seed(&r, mix64(o->seed ^ mix64(index + 0x5851f42d4c957f2dULL)), index);
    manta_rng pr; /* the photographic draws */
    photo_stream(o, index, &pr);
    const stereo_synth_mode mode = draw_mode(o, &pr);

    /* the scene: background, then the shapes */
    layer Ls[1 + STEREO_SYNTH_MAX_SHAPES];
    memset(Ls, 0, sizeof Ls);
    int n_shapes =
        o->min_shapes + (int)manta_rng_below(&r, (uint32_t)(o->max_shapes - o->min_shapes + 1));
    layer *bg = &Ls[0];
    bg->shape = SHAPE_FULL;
    bg->bx0 = 0.0f, bg->bx1 = (float)(W - 1) + maxd, bg->by0 = 0.0f, bg->by1 = (float)(H - 1);
    float bgmax = maxd * urand(&r, 0.05f, 0.35f);
    make_plane(bg, &r, bg->bx0, bg->bx1, bg->by0, bg->by1, 0.0f, bgmax, 0.3f, bgmax);
    const float side = o->shape_side > 0.0f ? o->shape_side : (float)(W < H ? W : H);
    int nl = 1;
    for (int s = 0; s < n_shapes; s++) {
        layer *L = &Ls[nl];
        float cx = urand(&r, -0.1f, 1.1f) * (float)W, cy = urand(&r, -0.1f, 1.1f) * (float)H;
        make_shape(L, &r, cx, cy, side * urand(&r, 0.06f, 0.35f));
        if (manta_rng_u32(&r) >> 31)
            make_plane(L, &r, L->bx0, L->bx1, L->by0, L->by1, 0.1f * maxd, maxd, 0.3f, 0.5f * maxd);
        else
            make_plane(L, &r, 0.0f, 0.0f, 0.0f, 0.0f, 0.1f * maxd, maxd, 0.0f, 0.0f);
        nl++;
    }

    /* a single photograph: photograph A's crop over the left frame first; the layers are the
     * regions of its segmentation, each with a plane of its own (the shapes drawn above only
     * keep the scene's stream as it is), the background behind them all, never shown */
    const int AW = (int)ceilf((float)(W - 1) + maxd) + 3;
    const size_t apx = (size_t)AW * H, cells = (size_t)((AW + 1) / 2) * ((H + 1) / 2);
    float *pa = NULL, *small = NULL, *rs = NULL;
    int *labels = NULL, *lab = NULL, *rn = NULL, ia_photo = -1;
    if (mode == STEREO_SYNTH_SINGLE) {
        pa = malloc(sizeof(float) * 6 * apx);      /* A, then B */
        labels = malloc(sizeof(int) * apx);        /* (H, AW) segments, later (H, W) left labels */
        small = malloc(sizeof(float) * 4 * cells); /* colours, distances */
        lab = malloc(sizeof(int) * 3 * cells);     /* lab, queue, comp */
        rs = malloc(sizeof(float) * STEREO_SYNTH_MAX_SHAPES * H * SS_MAX_VERTS);
        rn = malloc(sizeof(int) * STEREO_SYNTH_MAX_SHAPES * H);
        if (!pa || !labels || !small || !lab || !rs || !rn)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY,
                               "stereo synth: out of memory for a %dx%d single-photograph pair", W,
                               H);
        else if ((ia_photo = photo_raster(o->photos, -1, &pr, AW, H, pa, err)) < 0)
            st = MANTA_ERR_NO_MEMORY;
        if (st == MANTA_OK) {
            int k = 6 + (int)manta_rng_below(&pr, 11);
            int n = segment(pa, H, AW, k, labels, small, lab, lab + cells, lab + 2 * cells);
            bg->a = -1.0f, bg->b = bg->c = 0.0f, bg->inv1b = 1.0f;
            region_layers(Ls + 1, labels, H, AW, n, rs, rn);
            nl = 1;
            for (int q = 0; q < n; q++) {
                layer *L = &Ls[nl];
                if (manta_rng_u32(&pr) >> 31)
                    make_plane(L, &pr, L->bx0, L->bx1, L->by0, L->by1, 0.02f * maxd, maxd, 0.3f,
                               0.5f * maxd);
                else
                    make_plane(L, &pr, 0.0f, 0.0f, 0.0f, 0.0f, 0.02f * maxd, maxd, 0.0f, 0.0f);
                nl++;
            }
        }
        if (st != MANTA_OK) {
            free(pa), free(labels), free(small), free(lab), free(rs), free(rn);
            return st;
        }
    }

    shift_scene(o, index, Ls, nl, mode == STEREO_SYNTH_SINGLE);

    /* texture rasters: one block */
    size_t texels = 0;
    int max_tw = 2;
    for (int l = 0; l < nl; l++) {
        if (!place_raster(&Ls[l], W, H, maxd)) {
            Ls[l].tw = Ls[l].th = 0;
            continue;
        }
        texels += (size_t)Ls[l].tw * Ls[l].th;
        if (Ls[l].tw > max_tw)
            max_tw = Ls[l].tw;
    }
    float *block = malloc(sizeof(float) * texels);
    /* photographic textures: RGB rasters */
    float *rgbblock = mode != STEREO_SYNTH_PROCEDURAL ? malloc(sizeof(float) * 3 * texels) : NULL;
    const bool photo_oom = mode != STEREO_SYNTH_PROCEDURAL && !rgbblock;
    tex_scratch ts = {malloc(sizeof(int) * (size_t)max_tw), malloc(sizeof(float) * (size_t)max_tw),
                      malloc(sizeof(float) * ((size_t)max_tw + 3))};
    rowbuf rb = {malloc(sizeof(float) * W), malloc(sizeof(float) * W),
                 malloc(sizeof(float) * W), malloc(sizeof(int) * W),
                 malloc(sizeof(int) * W),   malloc(sizeof(float) * (size_t)nl * SS_MAX_VERTS),
                 malloc(sizeof(int) * nl)};
    if (!block || !ts.ix || !ts.fx || !ts.col || !rb.zl || !rb.zr || !rb.ur || !rb.idl || !rb.idr ||
        !rb.spans || !rb.nspan || photo_oom) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY,
                           "stereo synth: out of memory for %zu texels of a %dx%d pair", texels, W,
                           H);
    } else {
        size_t off = 0;
        for (int l = 0; l < nl; l++) {
            layer *L = &Ls[l];
            /* drawn for every layer, shown or not: the stream does not depend on placement */
            uint32_t pick = manta_rng_below(&r, 100);
            int kind;
            if (l == 0) /* the background: mostly noise */
                kind = pick < 60   ? TEX_NOISE
                       : pick < 75 ? TEX_GRADIENT
                       : pick < 90 ? TEX_STRIPES
                                   : TEX_CHECKER;
            else
                kind = pick < 35   ? TEX_NOISE
                       : pick < 55 ? TEX_STRIPES
                       : pick < 75 ? TEX_CHECKER
                       : pick < 85 ? TEX_GRADIENT
                                   : TEX_FLAT;
            uint64_t tseed = manta_rng_u32(&r);
            tseed |= (uint64_t)manta_rng_u32(&r) << 32;
            manta_rng tr;
            manta_rng_seed(&tr, tseed, (uint64_t)l);
            const bool photo_tex =
                mode == STEREO_SYNTH_SINGLE ||
                (mode == STEREO_SYNTH_TEXTURED && manta_rng_uniform(&pr) < o->photo_layers);
            if (L->tw == 0)
                continue;
            L->tex = block + off;
            if (photo_tex)
                L->rgb = rgbblock + 3 * off;
            off += (size_t)L->tw * L->th;
            if (mode == STEREO_SYNTH_SINGLE)
                continue; /* filled below, from the left view's labels */
            if (!photo_tex)
                make_texture(L, &ts, &tr, kind);
            else if (st == MANTA_OK &&
                     photo_raster(o->photos, -1, &pr, L->tw, L->th, L->rgb, err) < 0)
                st = MANTA_ERR_NO_MEMORY;
        }
        if (st == MANTA_OK && mode == STEREO_SYNTH_SINGLE) {
            const int n = o->photos->count;
            float *pb = pa + 3 * apx;
            left_labels(Ls, nl, &rb, W, H, labels);
            int ib = ia_photo; /* another photograph where there is one */
            if (n > 1)
                ib = (ia_photo + 1 + (int)manta_rng_below(&pr, (uint32_t)(n - 1))) % n;
            if (photo_raster(o->photos, ib, &pr, AW, H, pb, err) < 0)
                st = MANTA_ERR_NO_MEMORY;
            else
                single_rasters(Ls, nl, labels, W, H, AW, pa, pb);
        }
    }
    if (st == MANTA_OK) {
        render(Ls, nl, &rb, out);
        out->has_noc = true;
        if (o->photometric) {
            photometric(out->left, H, W, &r);
            photometric(out->right, H, W, &r);
        }
    }
    free(block);
    free(rgbblock);
    free(labels), free(pa), free(small), free(lab), free(rs), free(rn);
    free(ts.ix), free(ts.fx), free(ts.col);
    free(rb.zl), free(rb.zr), free(rb.ur), free(rb.idl), free(rb.idr), free(rb.spans),
        free(rb.nspan);
    return st;
}
