/**
 * @file stereo_folder.h
 * @brief Users' stereo pairs on disk, in the two layouts the benchmarks
 *        publish (KITTI 2012/2015 and Middlebury), listed once and loaded pair
 *        by pair into a ::stereo_pair (stereo_pair.h); and a writer of the
 *        KITTI layout (for synthetic sets).
 *
 * KITTI layout (2015 names first, 2012 names accepted):
 *
 *     root/image_2/000000_10.png     left views   (or colored_0/, or gray image_0/)
 *     root/image_3/000000_10.png     right views  (or colored_1/, or image_1/)
 *     root/disp_occ_0/000000_10.png  disparity of every pixel with ground truth (or disp_occ/)
 *     root/disp_noc_0/000000_10.png  the same, non-occluded pixels only (or disp_noc/)
 *
 * A pair is a .png file of the left folder (any name; sorted by strcmp) with
 * the same name in the right folder: a left view without its right view is
 * an error. When a disparity folder exists, only pairs with a disparity file
 * are listed (KITTI's frames other than _10 have none) and the others are
 * counted in stereo_set.skipped; without one (a test set), every pair is
 * listed with no ground truth. Disparity maps are 16-bit gray PNGs holding
 * disparity * 256; 0 means no ground truth. With disp_occ: STEREO_VALID where
 * it is nonzero; with disp_noc as well, STEREO_NOC where that one is nonzero
 * (has_noc); with disp_noc alone, both bits from it.
 *
 * Middlebury layout (2014/2021 releases):
 *
 *     root/<scene>/im0.png, im1.png   left and right views
 *     root/<scene>/disp0GT.pfm        left disparity (or disp0.pfm); inf = no ground truth
 *     root/<scene>/mask0nocc.png      optional: 255 non-occluded, 128 occluded, 0 unknown
 *
 * or root itself is one scene (it holds im0.png). Scenes are the subfolders
 * holding im0.png, sorted; other subfolders are ignored (stereo_set.skipped);
 * a scene with im0.png but no im1.png is an error. Finite disparities >= 0 are
 * STEREO_VALID (inf, NaN and negative values are not); with mask0nocc.png,
 * STEREO_NOC where it is 255 on a valid pixel. calib.txt is not read.
 *
 * Views are 8-bit PNGs (RGB, RGBA, gray, palette; alpha is dropped, gray is
 * replicated) loaded as (3, H, W) floats x / 255.
 *
 * Errors name the file and what is wrong: left and right views of different
 * sizes, a disparity map (or mask) of another size than the views, a
 * disparity PNG that is not 16-bit gray, a PFM that is malformed or has 3
 * channels, a folder without pairs. On error nothing stays allocated and the
 * output is zeroed. The library prints nothing. Thread-safety: reentrant; a
 * ::stereo_set is read-only after stereo_folder_open(), so threads may load
 * pairs of one set at the same time.
 */
#ifndef MANTA_DATA_STEREO_FOLDER_H
#define MANTA_DATA_STEREO_FOLDER_H

#include "core/status.h"
#include "data/stereo_pair.h"

/** Which layout a folder has. */
typedef enum stereo_layout {
    STEREO_LAYOUT_AUTO = 0, /**< detect: KITTI when the view folders exist, else Middlebury */
    STEREO_LAYOUT_KITTI = 1,
    STEREO_LAYOUT_MIDDLEBURY = 2,
} stereo_layout;

/**
 * The pairs of a folder: file paths only; every array has count entries, owned.
 * name: KITTI: the file name ("000000_10.png"); Middlebury: the scene folder's name.
 * noc: the non-occlusion source (a disp_noc PNG, mask0nocc.png), or NULL.
 * skipped: KITTI: pairs without a disparity file; Middlebury: subfolders without im0.png.
 */
typedef struct stereo_set {
    stereo_layout layout; /**< the layout found (never AUTO) */
    int count;            /**< pairs listed, >= 1 */
    char **name;          /**< short name of each pair (see above) */
    char **left;          /**< path of the left view */
    char **right;         /**< path of the right view */
    char **disp;          /**< path of the disparity map, or NULL (no ground truth) */
    char **noc;           /**< path of the non-occlusion source, or NULL */
    int skipped;          /**< entries passed over (see above) */
} stereo_set;

/** Short name of a layout ("kitti", "middlebury", "auto"). Never NULL. */
const char *stereo_layout_name(stereo_layout l);

/**
 * List the pairs under @p root (see the file comment for the layouts).
 * Checks which files exist, not their contents (stereo_folder_load() does).
 * @return MANTA_ERR_IO when @p root (or a folder in it) cannot be opened or is
 *         not a folder; MANTA_ERR_FORMAT when it holds no pair, a left view
 *         has no right view, a Middlebury scene has no im1.png, or the asked
 *         layout is not there; MANTA_ERR_INVALID_ARG for an unknown layout;
 *         MANTA_ERR_NO_MEMORY. On error @p out is zeroed.
 * Free with stereo_set_free().
 */
manta_status stereo_folder_open(const char *root, stereo_layout layout, stereo_set *out,
                                manta_err *err);

/** Release the lists; the struct is zeroed. NULL is allowed. */
void stereo_set_free(stereo_set *s);

/**
 * Decode pair @p i of @p s into @p out, which this call allocates at the
 * pair's size (stereo_pair_alloc(); free with stereo_pair_free()).
 * @return MANTA_ERR_INVALID_ARG (index out of range), MANTA_ERR_IO,
 *         MANTA_ERR_FORMAT (naming the file: undecodable, wrong kind, wrong
 *         size), MANTA_ERR_NO_MEMORY. On error @p out is zeroed.
 */
manta_status stereo_folder_load(const stereo_set *s, int i, stereo_pair *out, manta_err *err);

/**
 * Write @p p as pair @p index of a KITTI-layout folder @p root (created with
 * its subfolders when missing):
 * image_2/NNNNNN_10.png and image_3/NNNNNN_10.png (8-bit RGB,
 * round(255 * clamp(x, 0, 1))), and when the pair has ground truth
 * disp_occ_0/NNNNNN_10.png (STEREO_VALID pixels) and, with has_noc,
 * disp_noc_0/NNNNNN_10.png (VALID and NOC pixels): 16-bit round(256 d), at
 * least 1 on a valid pixel so that it stays valid; 0 elsewhere.
 * Every value is checked before any file is written; each file is replaced
 * atomically (a failure between files can leave the first ones of the pair:
 * the loader skips a pair whose disparity file is missing).
 * @param index in [0, 999999].
 * @return MANTA_ERR_INVALID_ARG (index, an empty pair, a valid disparity
 *         outside [0, 65535 / 256] or not finite, naming the pixel),
 *         MANTA_ERR_IO, MANTA_ERR_NO_MEMORY.
 */
manta_status stereo_folder_write_kitti(const char *root, int index, const stereo_pair *p,
                                       manta_err *err);

#endif
