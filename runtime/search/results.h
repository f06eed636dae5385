/**
 * @file results.h
 * @brief What `manta search` writes once a search is done: the best
 *        sub-network (arch.json), the Pareto front (front.csv, front.svg) and
 *        the settings and results (search.json, format "manta-search",
 *        version 1; docs/search.md), from plain data: no device, no options.
 *        Also the two steps around the search that are not printing: the
 *        uniform sub-networks as seeds of its first population, and the exact
 *        arena and file size of its results.
 */
#ifndef MANTA_SEARCH_RESULTS_H
#define MANTA_SEARCH_RESULTS_H

#include <stddef.h>
#include <stdio.h>

#include "core/status.h"
#include "search/evolution.h"
#include "search/sizes.h"
#include "space/ofa_space.h"

/**
 * A finished search, as its writers need it. Everything is borrowed. A
 * stereo search (result->stereo) writes "task":"stereo", "predicted_epe" for
 * "predicted_top1", its re-rank's "heldout_epe" for "validation_top1" and
 * "pairs" / "recal_pairs" for "images" / "recal_images"; @ref val then holds
 * held-out EPEs. The
 * budgets, seed, population and the re-rank's spread come from @ref config;
 * a re-rank took place when config->keep_top > 0, and then @ref val,
 * @ref chosen, @ref rerank_images and @ref recal_images describe it.
 */
typedef struct search_report {
    const ofa_space *space;   /**< the space searched */
    const evo_config *config; /**< the search's settings (seeds counted in n_seeds) */
    const evo_result *result; /**< its result; best is the chosen sub-network, best and front
                                   sized (search_results_size()) */
    const char *provenance;   /**< the members of search.json's "provenance" object, without
                                   braces (the program's version, git revision, device) */
    const char *ckpt;         /**< the checkpoint's path, as given */
    const char *lut;          /**< the latency table's path, as given */
    const char *device;       /**< the device the latency table was measured on */
    const char *acc_model;    /**< the accuracy predictor's path, as given */
    const double *val;        /**< (result->n_top) with a re-rank: validation top-1 of each
                                   (stereo: held-out EPE) */
    size_t chosen;            /**< with a re-rank: index in result->top of the chosen one */
    long rerank_images;       /**< with a re-rank: validation images measured */
    long recal_images;        /**< with a re-rank: images for batch-norm re-calibration */
    long models_planned;      /**< models written and planned for their sizes */
    double seconds;           /**< the search's and re-rank's time */
    bool int8;                /**< an int8 search (an int8 table, int8 sizes): "dtype": "int8" after
                    "provenance" (absent for a float one) */
} search_report;

/**
 * Write search.json's text for @p r to @p f: one JSON object on one line,
 * "rerank" (null without a re-rank) before "best", so that a reader taking
 * the last "predicted_top1" gets the best's.
 * @return ofa_arch_to_json()'s errors.
 */
manta_status search_json_put(FILE *f, const search_report *r, manta_err *err);

/**
 * Write @p dir/arch.json (the best sub-network in OFA's encoding), front.csv
 * (evo_write_front_csv()), front.svg (evo_write_front_svg(), titled with the
 * space, the table's device and the latency budget) and search.json
 * (search_json_put()), each atomically; @p dir is made first when missing.
 * With @p copy, search.json's text also goes to @p copy once the file is
 * written.
 * @return MANTA_ERR_IO naming the path; MANTA_ERR_NO_MEMORY; the writers' errors.
 */
manta_status search_results_write(const search_report *r, const char *dir, FILE *copy,
                                  manta_err *err);

/**
 * Every uniform sub-network of @p s (one kernel, expand ratio and depth
 * everywhere, at each resolution: n_res * n_d * n_e * n_ks of them, in that
 * nesting, kernels innermost), malloc'd into *@p seeds, their number in *@p n;
 * as evo_config.seeds of a search. The caller frees *@p seeds.
 * @return MANTA_ERR_NO_MEMORY (*@p seeds NULL, *@p n 0).
 */
manta_status search_uniform_seeds(const ofa_space *s, ofa_arch **seeds, int *n, manta_err *err);

/**
 * search_uniform_seeds() of a stereo space: one kernel, expand ratio and depth everywhere
 * and one width ratio in every decoder level (n_dec_ratios * n_d * n_e * n_ks of them, in
 * that nesting, kernels innermost), at the crop.
 */
manta_status search_uniform_seeds_stereo(const stereo_space *s, ofa_arch **seeds, int *n,
                                         manta_err *err);

/**
 * The exact arena and file size (search_sizes_get()) of every point of
 * @p r's front and of its best, into their figures' EVO_ARENA and EVO_FLASH.
 * @return search_sizes_get()'s errors.
 */
manta_status search_results_size(search_sizes *sizes, evo_result *r, manta_err *err);

#endif
