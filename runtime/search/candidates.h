/**
 * @file candidates.h
 * @brief The figures and fitness of the search's candidates, as evo_search()'s
 *        callbacks: latency predicted by a board's latency table, MACs from
 *        the space's description, arena and file size exactly (search/sizes.h,
 *        when constrained), accuracy predicted by the accuracy predictor.
 */
#ifndef MANTA_SEARCH_CANDIDATES_H
#define MANTA_SEARCH_CANDIDATES_H

#include "core/status.h"
#include "profile/latency_table.h"
#include "search/acc_predictor.h"
#include "search/evolution.h"
#include "search/sizes.h"
#include "space/ofa_space.h"

/** What the callbacks read; the space, table and predictor are borrowed, the sizes owned. */
typedef struct search_candidates {
    const ofa_space *space; /**< the space searched (a stereo space's stereo_space_ofa_view()) */
    const stereo_space *stereo; /**< a stereo space searched (MACs from stereo_describe()),
                                     or NULL */
    const lat_table *lut;       /**< the board's latency table, complete for the space */
    const accp_model *acc;      /**< the accuracy predictor for the space */
    int need_sizes;     /**< arena or flash constrained: sizes computed for every candidate */
    search_sizes sizes; /**< the exact sizes' cache (search_sizes_init()) */
} search_candidates;

/**
 * An evo_measure_fn over a search_candidates @p ctx: EVO_LATENCY from
 * lat_predict(), EVO_MACS from ofa_describe() (stereo_describe()), and with need_sizes EVO_ARENA
 * and EVO_FLASH from search_sizes_get() (otherwise left as they are).
 * @return those functions' errors.
 */
manta_status search_candidate_measure(void *ctx, const ofa_arch *a, evo_figures *f, manta_err *err);

/**
 * An evo_fitness_fn over a search_candidates @p ctx: accp_predict()'s top-1, or for a
 * stereo predictor minus its predicted EPE (the search maximises fitness; lower EPE is
 * better).
 * @return accp_predict()'s errors.
 */
manta_status search_candidate_fitness(void *ctx, const ofa_arch *a, double *acc, manta_err *err);

#endif
