/**
 * @file photo_bank.h
 * @brief A folder of photographs held in memory: the textures of the procedural stereo
 *        scenes and the left views of single-photograph pairs (data/stereo_synth.h).
 *
 * Every regular file of the folder (not its subfolders; names starting with '.' ignored)
 * whose name ends in .jpg, .jpeg or .png (any case) is decoded to 8-bit RGB: JPEGs with
 * TurboJPEG (using its DCT scaling when a photograph is much larger than kept; CMYK files
 * do not decode), PNGs with data/png_io.h (gray replicated, alpha dropped). A photograph
 * whose shorter side exceeds opts.max_short_side is shrunk (data/resample.h's filter,
 * which averages every covered pixel when shrinking) so that its shorter side is that
 * bound, but never below opts.min_width x opts.min_height: a photograph is only ever
 * shrunk as far as the caller's smallest size allows, and never enlarged.
 *
 * Photographs are kept in file-name order (strcmp), so the bank's contents, and the pairs
 * made from it, are the same on every machine for the same files.
 *
 * Files that cannot be read or decoded are skipped and counted, the first one named in
 * the report (photo_bank_report); so are photographs smaller than opts.min_width x
 * opts.min_height. The load fails only when nothing usable remains: a folder without a
 * readable image ("DIR: no readable JPEG or PNG image (...)") or with photographs all too
 * small ("DIR: no photograph of at least 160x96 px (the largest is 100x80)").
 *
 * Never put the views of a stereo pair in a bank: pairs are evaluation data.
 *
 * Memory: 3 bytes per kept pixel (8-bit samples, a quarter of floats; values read as
 * v / 255); the default bound keeps a 16:10 photograph at 614 x 384 (0.7 MB). The library
 * prints nothing and keeps no state: a bank is read-only after the load and may be shared
 * by any number of threads.
 */
#ifndef MANTA_DATA_PHOTO_BANK_H
#define MANTA_DATA_PHOTO_BANK_H

#include <stdint.h>

#include "core/status.h"

/** Default bound on the shorter side of a kept photograph, in pixels. */
#define PHOTO_BANK_MAX_SHORT 384

/** The folder of `--textures default`: Debian's mate-backgrounds nature photographs
 *  (12 JPEGs, GPL-2+). */
#define PHOTO_BANK_DEFAULT_DIR "/usr/share/backgrounds/mate/nature"

/** Longest "file: reason" line of the report. */
#define PHOTO_BANK_LINE 512

/** One photograph. */
typedef struct photo {
    int width, height; /**< pixels */
    uint8_t *rgb;      /**< (height, width, 3) interleaved 8-bit RGB, row-major; owned */
} photo;

/** The photographs of a folder. */
typedef struct photo_bank {
    int count;     /**< photographs (>= 1 after a successful load) */
    photo *photos; /**< (count) in file-name order; owned */
    char **names;  /**< (count) file names (not paths); owned */
} photo_bank;

/** How to load a bank. */
typedef struct photo_bank_opts {
    int min_width, min_height; /**< smallest photograph the caller can use (0: any) */
    int max_short_side;        /**< shorter side kept (default PHOTO_BANK_MAX_SHORT, >= 8) */
} photo_bank_opts;

/** Defaults: any size, shorter side at most PHOTO_BANK_MAX_SHORT. */
void photo_bank_opts_default(photo_bank_opts *o);

/**
 * Options for the photographs of stereo pairs of @p width x @p height (stereo_synth.h):
 * photographs at least the pair's size, their shorter side kept at 3 x height, within
 * [96, PHOTO_BANK_MAX_SHORT] (but never below the pair's size): a pair then shows about a
 * third of a photograph's height at scale 1, rather than a magnified detail of it.
 */
void photo_bank_opts_for_pairs(photo_bank_opts *o, int width, int height);

/** What a load found. */
typedef struct photo_bank_report {
    int files;     /**< .jpg / .jpeg / .png files found */
    int loaded;    /**< photographs kept */
    int failed;    /**< files that could not be read or decoded (skipped) */
    int too_small; /**< decoded photographs smaller than min_width x min_height (skipped) */
    int largest_w, largest_h; /**< the largest decoded photograph (by area), before shrinking */
    char first_failure[PHOTO_BANK_LINE]; /**< "file: reason" of the first failed file, or "" */
} photo_bank_report;

/**
 * Load the photographs of @p dir into @p out.
 * @param opts   NULL for the defaults
 * @param report filled whether or not the load succeeds (may be NULL)
 * @return MANTA_ERR_IO (the folder cannot be opened or listed), MANTA_ERR_FORMAT (no
 *         readable image, or none of the smallest size; the message names the folder),
 *         MANTA_ERR_INVALID_ARG (options), MANTA_ERR_NO_MEMORY. On error @p out is zeroed.
 * Thread-safety: reentrant.
 */
manta_status photo_bank_load(const char *dir, const photo_bank_opts *opts, photo_bank *out,
                             photo_bank_report *report, manta_err *err);

/** Release every photograph; the bank is zeroed. NULL and a zeroed bank are allowed. */
void photo_bank_free(photo_bank *b);

/** The folder a `--textures` argument names: PHOTO_BANK_DEFAULT_DIR for "default", else
 *  @p arg itself (a static string or @p arg; never NULL for a non-NULL @p arg). */
const char *photo_bank_dir(const char *arg);

#endif
