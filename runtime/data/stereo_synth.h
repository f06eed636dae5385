/**
 * @file stereo_synth.h
 * @brief Procedural stereo pairs with exact, sub-pixel ground truth
 *        (FlyingThings-style), deterministic by (seed, index): training data
 *        that needs no download.
 *
 * The scene
 * ---------
 * A scene is a set of layers, each a surface of the left view's coordinate
 * frame (x right, y down, pixel centres at integers) with a disparity plane
 * d(x, y) = a + b x + c y and a procedural texture:
 *  - layer 0, the background, covers everything; its disparities lie in
 *    [0, bg] with bg drawn in [0.05, 0.35] * max_disp (a slanted wall or floor);
 *  - then min_shapes..max_shapes shapes (rotated ellipses, rotated rectangles,
 *    random polygons of 3 to 8 vertices, stars, smooth blobs), their radii 6%
 *    to 35% of the shorter side, their centres anywhere up to 10% of the size
 *    beyond each border (so some are cut by the image, some show in one view
 *    only), each with a constant (half of them) or slanted disparity
 *    (|b|, |c| <= 0.3) within [0.1 * max_disp, max_disp] over its bounding box.
 * Visibility is resolved per pixel and per view by depth: where layers
 * overlap, the larger disparity (the nearer surface) wins, so slanted layers
 * may cut through each other.
 * Then, on a share of the pairs (opts.share_shifted, drawn from a stream of
 * its own), the whole scene is brought nearer: every layer's plane d becomes
 * delta + k d with delta drawn in [0, 0.75] max_disp and k <= 1 keeping the
 * nearest surface within max_disp (the same surfaces win, so the left view does
 * not change). Without it the background never comes nearer than 0.35 max_disp
 * and a network learns that large regions are far (docs/stereo.md, "Real
 * photographs").
 *
 * Textures (a scalar pattern t in [0, 1] mapped between two random colours,
 * the second replaced by the first's complement when their luminances differ
 * by less than 0.2): value noise of 2 to 4 octaves (cells of 3 to 16 px
 * halving down to 1.5 px, contrast-stretched), stripes and checkerboards
 * (periods of 4 to 16 px, rotated, soft-edged, over a little noise: repetitive
 * patterns), linear gradients, and flat patches (t within 0.5 +- 0.03 and two
 * colours at most 0.05 apart: low texture). Patterns are smooth at the pixel
 * scale, so sampling them between texels is accurate.
 *
 * Rendering: each layer's texture is a raster in the left view's coordinates
 * (one texel per left pixel). The left view reads texels at integer positions;
 * the right view at pixel (j, y) inverts the plane, u = (j + a + c y) / (1 - b),
 * which is the left-frame point it shows (d = u - j), tests u against the
 * shape and interpolates the texture linearly at u (rows are rectified, so
 * the vertical coordinate is an integer). The right view is thus rendered from
 * the scene, not warped from the left image. Shapes have hard edges.
 *
 * Ground truth (stereo_pair.h): disp is the winning layer's d(x, y) at every
 * left pixel (all STEREO_VALID); STEREO_NOC is set where x - d lies in
 * [0, W - 1] and the layer that wins in the right view at that exact (sub-pixel)
 * position is the same layer (has_noc is true). This is exact except where
 * two slanted surfaces cross each other within a pixel of a shape's edge.
 *
 * Photometric differences (when opts.photometric): each view gets its own
 * gain in [0.8, 1.2] (times 1 +- 0.03 per channel), bias in [-0.05, 0.05],
 * gamma in [exp(-0.2), exp(0.2)] (stereo_tone()), then additive noise of a
 * standard deviation drawn in [0, 0.02] (a triangular distribution), clamped to
 * [0, 1]. Without it, both views show the same radiance: right(x - d) equals
 * left(x) on non-occluded pixels up to the texture's interpolation.
 *
 * Photographs (when opts.photos is set; data/photo_bank.h)
 * ------------------------------------------------------------
 * Networks trained on the patterns above alone transfer poorly to photographs; two
 * remedies of the literature are built in. Each pair draws its kind (stereo_synth_mode)
 * and everything photographic from a stream of its own, seeded from (seed, index) apart
 * from the scene's: a photo-textured pair has the scene (layers, planes, photometric
 * draws) of the procedural pair of its index, and a set without photographs is bit for
 * bit what it was before photographs existed.
 *  - STEREO_SYNTH_PROCEDURAL (share 1 - share_textured - share_single): as above.
 *  - STEREO_SYNTH_TEXTURED (share_textured), as FlyingThings3D textures its objects:
 *    each layer, with probability photo_layers, gets an RGB raster instead of the
 *    two-colour pattern: a crop of a random photograph of the bank at a random place,
 *    magnified by a scale drawn in [0.5, 1.5] (raised where the photograph is too small
 *    to cover the raster), mirrored half of the time, resampled with data/resample.h's
 *    filter. Each channel is rendered as the scalar pattern is: read at integer texels in
 *    the left view, interpolated linearly at u in the right view.
 *  - STEREO_SYNTH_SINGLE (share_single), after "Learning Stereo from Single Images"
 *    (Watson et al., ECCV 2020) without a depth network: the left view is a crop of
 *    photograph A (scale and place drawn as above, over the left frame from x = 0 to
 *    W - 1 + max_disp + 2); the layers are the regions of A: a SLIC segmentation
 *    (Achanta et al. 2012: 6 to 16 compact regions by colour and place, on a
 *    half-resolution copy, pieces smaller than half a grid cell joined to a neighbour,
 *    boundaries refined at full resolution) gives each region a plane of its own
 *    (constant or slanted, |b|, |c| <= 0.3, within [0.02, 1] * max_disp), so depth edges
 *    fall on the photograph's colour edges (where Watson's depth network puts them) and a
 *    region of flat colour is a depth-edge-free surface; each layer's raster is A where
 *    that layer is the left view's front surface (or right of the left view's border,
 *    where A continues) and photograph B (another one of the bank, when it has two or
 *    more) elsewhere, so what a layer shows only in the right view (disocclusions) comes
 *    from B, Watson's hole filling. The right view is rendered from the layers as for
 *    every pair. Where two surfaces meet within a pixel, the right view's interpolation
 *    may blend a texel of A with one of B. Regions need not be convex or connected per
 *    row: a region keeps at most 16 runs per row, joining its runs across the smallest
 *    gaps beyond that.
 * Ground truth and the non-occlusion mask are computed as for procedural pairs.
 * Photographic textures are
 * not smooth at the pixel scale as the patterns are: right(x - d) matches left(x) between
 * texels as closely as linear interpolation of the photograph allows, and exactly at
 * integer disparities (tests/unit/test_stereo_data.c checks both kinds).
 *
 * Determinism: pair @p index of a set is a pure function of (options, seed,
 * index, and the bank's photographs when there is one): its random streams are
 * seeded from both, so any pair can be made alone, in any order, on any thread,
 * with identical bytes on one build.
 *
 * Cost (one core, tests/unit/test_stereo_data.c prints it): about 0.3 to 0.5 ms
 * for a 128 x 64 pair and 10 to 20 ms for 768 x 384; memory beyond the pair:
 * one texel per left pixel of each layer's visible bounding box (the
 * background's is (H, W + max_disp)); photographic pairs add three floats per
 * texel, and single-photograph pairs two (H, W + max_disp + 3) RGB crops, a label
 * per pixel of that size and 16 runs per row of each region. Measured on the
 * mate-backgrounds photographs (one core of a loaded 2-core machine): 128 x 64
 * about 0.35 ms procedural, 0.45 ms photo-textured, 0.95 ms single photograph;
 * 768 x 384 about 12, 14 and 40 ms.
 */
#ifndef MANTA_DATA_STEREO_SYNTH_H
#define MANTA_DATA_STEREO_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "data/photo_bank.h"
#include "data/stereo_pair.h"

/** Smallest side of a generated pair. */
#define STEREO_SYNTH_MIN_SIDE 8

/** Most shapes per scene. */
#define STEREO_SYNTH_MAX_SHAPES 64

/** What to generate. */
typedef struct stereo_synth_opts {
    int width, height; /**< pair size, each in [STEREO_SYNTH_MIN_SIDE, STEREO_MAX_SIDE] */
    float max_disp;    /**< largest disparity in pixels, in (0, width / 2] */
    uint64_t seed;     /**< seed of the set; pair i also depends on its index */
    int min_shapes;    /**< shapes per scene, drawn uniformly in [min_shapes, max_shapes] */
    int max_shapes;    /**< <= STEREO_SYNTH_MAX_SHAPES (defaults 4 and 12) */
    bool photometric;  /**< per-view gain, bias, gamma and noise (default true) */
    /** Photographs (borrowed, read only, at least one; must outlive the calls), or NULL:
     *  procedural textures only, every pair as without the members below. */
    const photo_bank *photos;
    float share_textured; /**< with photos: share of pairs with photographic textures (1/3) */
    float share_single;   /**< with photos: share of single-photograph pairs (1/3); the rest,
                           *  1 - share_textured - share_single, procedural textures */
    float photo_layers;   /**< share of a textured pair's layers given a photograph (0.8);
                           *  the others keep a procedural texture */
    float shape_side;     /**< length the shapes' radii are drawn against (6% to 35% of it),
                           *  in pixels; 0 (default): the pair's shorter side */
    float share_shifted;  /**< share of pairs whose scene is shifted nearer as a whole (0.5);
                           *  0: every pair as before the shift existed */
} stereo_synth_opts;

/** The kind of pair @p index of a set is (its draw; see the header). */
typedef enum stereo_synth_mode {
    STEREO_SYNTH_PROCEDURAL, /**< procedural textures */
    STEREO_SYNTH_TEXTURED,   /**< photographic textures on the layers */
    STEREO_SYNTH_SINGLE      /**< a photograph warped by a layered disparity field */
} stereo_synth_mode;

/**
 * Defaults: the given size, maximum disparity and seed, 4 to 12 shapes,
 * photometric differences on, no photographs (shares 1/3, 1/3 and 0.8 for
 * when a bank is set).
 */
void stereo_synth_opts_default(stereo_synth_opts *o, int width, int height, float max_disp,
                               uint64_t seed);

/**
 * Render pair @p index of the set described by @p o into @p out, which must
 * have been allocated (stereo_pair_alloc()) at o->height x o->width; every
 * array is overwritten.
 * @return MANTA_ERR_INVALID_ARG for options out of range or a pair of another
 *         size (message names the field), MANTA_ERR_NO_MEMORY (the texture
 *         rasters and row buffers are allocated per call and freed before it
 *         returns). On error the contents of @p out are unspecified.
 * Thread-safety: reentrant.
 */
manta_status stereo_synth_generate(const stereo_synth_opts *o, uint64_t index, stereo_pair *out,
                                   manta_err *err);

/**
 * The kind of pair @p index of the set described by @p o: STEREO_SYNTH_PROCEDURAL
 * without photographs, else its draw (what stereo_synth_generate() makes; cheap).
 * Thread-safety: reentrant.
 */
stereo_synth_mode stereo_synth_pair_mode(const stereo_synth_opts *o, uint64_t index);

#endif
