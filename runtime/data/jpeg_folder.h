/**
 * @file jpeg_folder.h
 * @brief Image folders: one subfolder per class, each holding .jpg / .jpeg
 *        files (any case), loaded into a ::dataset (the ImageFolder layout).
 *
 *     root/
 *       cat/  a.jpg b.JPEG ...
 *       dog/  c.jpg ...
 *
 * Classes are the subfolder names sorted by byte value (strcmp), label k being
 * the k-th; entries starting with '.' are ignored, and so are files with other
 * extensions (counted in the report). Files are taken in sorted name order, so
 * the image order is the same on every machine.
 *
 * Each file is decoded once with libjpeg-turbo's TurboJPEG API, straight to
 * gray (TJPF_GRAY) or RGB (TJPF_RGB) as asked (colour JPEGs are converted to
 * gray and gray ones to RGB; CMYK files fail to decode), using the decoder's
 * DCT scaling (1/2, 1/4, 1/8) when the image is much larger than needed, then
 * resized (resample.h) so that its shorter side equals the stored size; the
 * longer side keeps the aspect ratio (rounded, at least 1).
 *
 * A file that does not decode (or cannot be read) is skipped and counted; the
 * report keeps the names and reasons of the first few. If more than
 * max_fail_fraction of the files fail, the load fails. Files that decode with
 * a libjpeg warning (say, a few bytes of garbage after the image) are kept and
 * counted as warned (or failed, with fail_on_warning; note that libjpeg treats
 * a truncated file as a warning and fills the missing part with gray).
 * The library prints nothing.
 */
#ifndef MANTA_DATA_JPEG_FOLDER_H
#define MANTA_DATA_JPEG_FOLDER_H

#include <stdbool.h>

#include "core/status.h"
#include "data/dataset.h"

/** Default shorter side of stored images, in pixels. */
#define JPEG_FOLDER_STORED_SIZE 36

/** Default largest fraction of files that may fail to decode. */
#define JPEG_FOLDER_MAX_FAIL 0.01

/** Failed files whose names the report keeps. */
#define JPEG_FOLDER_REPORTED 4

/** Longest "path: reason" line kept per failed file (longer ones are cut). */
#define JPEG_FOLDER_LINE 512

/** How to load a folder. */
typedef struct jpeg_folder_opts {
    int channels;             /**< 1 (gray) or 3 (RGB) */
    int stored_size;          /**< shorter side after loading; 0 keeps the decoded size */
    double max_fail_fraction; /**< load fails if failed > fraction * files (default 0.01) */
    int threads;              /**< decoding threads; <= 1 decodes on the calling thread */
    bool fail_on_warning;     /**< count files the decoder warns about as failed (default false) */
    /** If non-NULL, the class subfolders must be exactly these names (a
     *  validation folder that must match its training folder's labels). */
    const dataset *match_classes;
} jpeg_folder_opts;

/** Fill defaults: 3 channels, stored size 36, 1% failures, 1 thread, warnings kept. */
void jpeg_folder_opts_default(jpeg_folder_opts *o);

/** What a load found. */
typedef struct jpeg_folder_report {
    int files;    /**< .jpg/.jpeg files found */
    int loaded;   /**< files now in the dataset */
    int failed;   /**< files skipped: unreadable or not decodable */
    int warned;   /**< files kept although the decoder warned */
    int ignored;  /**< other files in class folders, not loaded */
    int reported; /**< lines filled in failures[], min(failed, JPEG_FOLDER_REPORTED) */
    /** "path: reason" of the first failed files, in load order. */
    char failures[JPEG_FOLDER_REPORTED][JPEG_FOLDER_LINE];
} jpeg_folder_report;

/**
 * Load every JPEG under @p root's class subfolders into @p out (HWC uint8,
 * opts->channels channels, shorter side opts->stored_size; see dataset.h).
 * @param opts   NULL for the defaults
 * @param report filled whether or not the load succeeds (may be NULL)
 * @return MANTA_ERR_IO when @p root (or a subfolder) cannot be opened or is no
 *         folder, MANTA_ERR_FORMAT when root has no class subfolders, a class
 *         folder holds no JPEG file, the classes differ from
 *         opts->match_classes, or too many files fail (message: counts and the
 *         first failed file), MANTA_ERR_INVALID_ARG for bad options,
 *         MANTA_ERR_NO_MEMORY. On error @p out is zeroed.
 * Thread-safety: reentrant; with threads > 1 it starts and joins its own
 * POSIX threads.
 */
manta_status jpeg_folder_load(const char *root, const jpeg_folder_opts *opts, dataset *out,
                              jpeg_folder_report *report, manta_err *err);

#endif
