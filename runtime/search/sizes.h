/**
 * @file sizes.h
 * @brief The exact engine arena and .tflite file size of sub-networks, as the
 *        search's arena and flash budgets and its results need them. Each
 *        sub-network's model is built once by the graph builder (zeros as
 *        weights, profile/synth.h), written and planned as the exporter does
 *        (tflite_write()); the figures are kept by architecture, so the many
 *        candidates an evolution meets again cost nothing. A stereo space's
 *        sub-networks are built by prof_synth_stereo_graph() (the exporter's stereo
 *        graph: two inputs, the fused correlation's pattern, the decoder; shared
 *        encoder weights stored once), so their figures are those of `manta export
 *        --ckpt STEREO.ckpt` at the crop.
 */
#ifndef MANTA_SEARCH_SIZES_H
#define MANTA_SEARCH_SIZES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "export/xgraph.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

/** One cached sub-network (private to sizes.c). */
typedef struct search_size_entry search_size_entry;

/**
 * Sizes of the sub-networks of one space, cached. Initialise with
 * search_sizes_init(), release with search_sizes_free().
 */
typedef struct search_sizes {
    const ofa_space *space;     /**< the space (borrowed) */
    const xg_preprocess *pre;   /**< the export's preprocessing (borrowed; NULL: none) */
    const stereo_space *stereo; /**< a stereo space (borrowed), or NULL */
    long built;                 /**< models written and planned so far: the look-ups that missed */
    bool int8; /**< int8 files (set after search_sizes_init(), before the first look-up):
                    synthetic weights from seed 1, ranges by lat_int8_calibrate() from seed 1,
                    as `manta-profile --int8 --arch` builds them (profile/measure.h);
                    classification only */
    /* private: open addressing by a hash of the architecture, capacity a power of two */
    search_size_entry *slot_;
    size_t n_, cap_;
} search_sizes;

/**
 * An empty cache for sub-networks of @p s exported with preprocessing
 * @p pre (labels and normalisation are part of the file, so of its size).
 * Both must outlive the cache.
 */
void search_sizes_init(search_sizes *c, const ofa_space *s, const xg_preprocess *pre);

/** An empty cache for sub-networks of stereo space @p s (borrowed; it must outlive the
 *  cache), at the space's crop. */
void search_sizes_init_stereo(search_sizes *c, const stereo_space *s);

/**
 * The arena and file size in bytes of sub-network @p a, as `manta export`
 * writes it: from the cache, else built, written, planned and cached.
 * With @c c->int8 the int8 file's (`manta export --int8`'s; the figures do not depend on
 * the weights' or the ranges' values).
 * @return prof_synth_arch_graph()'s, lat_int8_calibrate()'s and tflite_write()'s errors
 *         (MANTA_ERR_INVALID_ARG when @p a is not of the space, or for int8 with a stereo
 *         space); MANTA_ERR_NO_MEMORY.
 */
manta_status search_sizes_get(search_sizes *c, const ofa_arch *a, size_t *arena, size_t *file,
                              manta_err *err);

/** Release the cache (the space and preprocessing are the caller's). NULL is allowed. */
void search_sizes_free(search_sizes *c);

#endif
