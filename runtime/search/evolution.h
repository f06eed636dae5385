/**
 * @file evolution.h
 * @brief OFA's evolutionary search for the sub-network of highest predicted
 *        accuracy under a budget (latency, MACs, arena, flash), with the
 *        Pareto front of everything evaluated, and CSV / SVG writers for it.
 *
 * @par Algorithm (OFA's EvolutionFinder)
 * 1. Fill a population of P (100) random sub-networks that meet the budget
 *    (constraints by rejection: a candidate over budget is drawn again).
 *    Seed sub-networks the caller gives (evo_config.seeds, e.g. the uniform
 *    ones) enter first, those within budget, in order, up to P; random ones
 *    fill the rest. Without seeds this is OFA's EvolutionFinder.
 * 2. Each of G (500) generations: sort by fitness; keep the top
 *    round(0.25 P) as parents; make round(0.5 P) children by mutation of a
 *    random parent (resolution re-drawn with probability 0.5, each slot's
 *    kernel and expand ratio each with 0.1, each unit's depth with 0.1) and
 *    P - round(0.5 P) by crossover of two random parents (each gene from
 *    either with probability 1/2); each child is re-drawn until it meets the
 *    budget (at most max_tries times, else that child is dropped). The next
 *    population is the parents and the children.
 * The best sub-network is the fittest of every candidate evaluated (ties:
 * lower cost on the front's axis, then the earlier one). Every random choice
 * comes from one generator seeded by evo_config.seed, so a run is
 * reproducible when the callbacks are deterministic.
 *
 * @par Callbacks
 * The caller measures or predicts each candidate's figures (measure) and its
 * accuracy (fitness); the search rejects candidates whose figures exceed
 * the budget and reports the figures with the results. Fitness is asked
 * only for candidates within budget.
 *
 * @par Stereo spaces
 * With evo_config.stereo set, the space is a stereo one (space/stereo_space.h; @p s of
 * evo_search() its stereo_space_ofa_view()): candidates are drawn with
 * stereo_arch_sample() (the smallest: stereo_arch_min()), validated with
 * stereo_arch_validate(), and each decoder level's width is one more gene: mutated with
 * mutate_prob (re-drawn from the level's widths), crossed over like the others, counted
 * by evo_arch_distance(). The resolution is the crop's and never changes. The fitness is
 * still maximised: a stereo search's fitness is minus the predicted EPE
 * (search/candidates.h), and the writers show the EPE (-fitness).
 *
 * @par Infeasible budgets
 * The smallest sub-network (ofa_arch_min() at the lowest resolution) is
 * measured first, then random ones; when none of init_tries candidates fits,
 * evo_search() fails with MANTA_ERR_INVALID_ARG and a message giving the
 * smallest figure seen of each constrained metric, which it also leaves in
 * evo_result.min_seen.
 */
#ifndef MANTA_SEARCH_EVOLUTION_H
#define MANTA_SEARCH_EVOLUTION_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

/** Figures a candidate is constrained and reported by. */
typedef enum evo_metric {
    EVO_LATENCY, /**< milliseconds */
    EVO_MACS,    /**< multiply-accumulates per inference */
    EVO_ARENA,   /**< activation arena, bytes */
    EVO_FLASH,   /**< model size, bytes */
    EVO_N_METRICS
} evo_metric;

/** Name of a metric ("latency", "MACs", "arena", "flash"); never NULL. */
const char *evo_metric_name(evo_metric m);
/** Unit of a metric ("ms", "", "bytes", "bytes"); never NULL. */
const char *evo_metric_unit(evo_metric m);

/** One candidate's figures, indexed by ::evo_metric. Unmeasured ones may be left 0. */
typedef struct evo_figures {
    double v[EVO_N_METRICS];
} evo_figures;

/** One evaluated candidate. */
typedef struct evo_point {
    ofa_arch arch;
    double acc;    /**< fitness */
    evo_figures f; /**< as measured */
} evo_point;

/**
 * Measure or predict the figures of @p a into @p f (zeroed before the call).
 * Figures the budget constrains and the front's axis must not be NaN.
 * A status other than MANTA_OK stops the search and is returned.
 */
typedef manta_status (*evo_measure_fn)(void *ctx, const ofa_arch *a, evo_figures *f,
                                       manta_err *err);
/** Predicted accuracy of @p a into @p acc (higher is better; finite). Errors as measure. */
typedef manta_status (*evo_fitness_fn)(void *ctx, const ofa_arch *a, double *acc, manta_err *err);

/** Told after each generation (1-based @p generation of @p generations) with the best so far. */
typedef void (*evo_progress_fn)(void *ctx, int generation, int generations, const evo_point *best);

/** The caller's side of the search. */
typedef struct evo_callbacks {
    evo_measure_fn measure; /**< required */
    void *measure_ctx;
    evo_fitness_fn fitness; /**< required */
    void *fitness_ctx;
    evo_progress_fn progress; /**< optional (NULL): for a progress line */
    void *progress_ctx;
} evo_callbacks;

/** Settings; evo_config_default() gives OFA's. */
typedef struct evo_config {
    int population;         /**< P: 100 */
    int generations;        /**< G: 500 */
    double parent_ratio;    /**< share of P kept as parents: 0.25 */
    double mutation_ratio;  /**< share of P made by mutation: 0.5 (the rest by crossover) */
    double mutate_prob;     /**< per slot (kernel, expand separately) and per unit depth: 0.1 */
    double res_mutate_prob; /**< resolution: 0.5 */
    int max_tries;          /**< draws per child before it is dropped: 100 */
    int init_tries;         /**< random candidates tried to fill the first population: 100 P */
    double budget[EVO_N_METRICS]; /**< upper bounds by metric; <= 0: unconstrained */
    evo_metric axis;              /**< cost axis of the Pareto front: EVO_LATENCY */
    uint64_t seed;                /**< 0 by default */
    const ofa_arch *seeds;        /**< (n_seeds) first candidates of the first population; not
                                owned, read during evo_search() only: NULL */
    int n_seeds;                  /**< 0 */
    int keep_top;                 /**< how many networks evo_result.top holds: 0 */
    int top_min_genes; /**< least evo_arch_distance() between two of them: 1 (0 counts as 1) */
    int top_by_res;    /**< 1: the top list takes from each resolution in turn (below): 0 */
    int top_seeds;     /**< after the keep_top, up to this many of the fittest seeds within
                            budget that are not in the top list yet: 0 */
    const stereo_space *stereo; /**< a stereo space (its view is evo_search()'s @p s; see
                                     "Stereo spaces"); not owned: NULL (classification) */
} evo_config;

/** OFA's settings (values above), no budget. */
void evo_config_default(evo_config *c);

/** What a search returns; free with evo_result_free(). */
typedef struct evo_result {
    evo_point best;   /**< fittest candidate within budget */
    evo_point *front; /**< (n_front) Pareto front of all evaluated candidates (higher
                           accuracy, lower axis cost), ascending cost; owned */
    size_t n_front;
    evo_metric axis; /**< the front's cost axis */
    double *history; /**< (n_history) best fitness after the first population and after
                          each generation; owned */
    int n_history;
    long evaluated;       /**< fitness calls */
    long measured;        /**< measure calls */
    long rejected;        /**< candidates over budget */
    evo_figures min_seen; /**< smallest figure of each metric over all measured candidates */
    evo_point *top;       /**< (n_top <= keep_top + top_seeds) the fittest candidates of the
                         search, fittest first (ties as for best): top[0] is best, then each
                         next fittest candidate at least top_min_genes from every one before
                         it; with top_by_res, in rounds: each round takes the next such
                         candidate of every resolution evaluated, the resolutions in the
                         order of their fittest candidate (top[0] is still best). Then, with
                         top_seeds, the fittest seeds within budget not among them, fittest
                         first; owned */
    size_t n_top;
    size_t n_top_seeds;         /**< how many of top's last entries are those seeds */
    size_t n_seeds_in;          /**< how many of evo_config.seeds met the budgets and entered the
                             first population (at most the population size) */
    const stereo_space *stereo; /**< evo_config.stereo of the search (borrowed: the writers
                                     show EPE = -fitness and write "dw"); NULL */
} evo_result;

/**
 * Genes in which sub-networks @p a and @p b of space @p s differ: the
 * resolution, each unit's depth, and the kernel and expand ratio of each slot
 * both keep; a slot only one of them keeps counts 2, one neither keeps 0; and
 * each decoder width (stereo; all 0 in classification).
 * 0 means the same network at the same resolution (ofa_arch_same_blocks() and
 * equal resolutions; what slots a depth skips hold does not count).
 */
int evo_arch_distance(const ofa_space *s, const ofa_arch *a, const ofa_arch *b);

/**
 * Run the search over space @p s.
 * @param out filled on success; on failure its arrays are freed (NULL) and
 *            measured / rejected / min_seen describe what was seen.
 * @return MANTA_ERR_INVALID_ARG for a setting out of range (named), missing
 *         callbacks, a seed outside the space, a NaN figure or accuracy from a callback, or a budget
 *         no candidate meets ("no sub-network of space 'cpu-default' meets
 *         latency <= 1 ms in 10001 candidates; smallest seen: latency 2.5
 *         ms (the smallest sub-network: latency 2.5 ms)"); a callback's
 *         status; MANTA_ERR_NO_MEMORY.
 */
manta_status evo_search(const ofa_space *s, const evo_config *c, const evo_callbacks *cb,
                        evo_result *out, manta_err *err);

/** Free the arrays of @p r; NULL is allowed. */
void evo_result_free(evo_result *r);

/**
 * Write the front as CSV: a header line, then one row per point in
 * ascending cost: rank,top1,latency_ms,macs,arena_bytes,flash_bytes,best,arch
 * (arch: OFA's JSON encoding, quoted, quotes doubled); of a stereo search
 * (r->stereo) the second column is epe (predicted, px) and arch carries "dw".
 * Written atomically.
 * @return MANTA_ERR_IO naming @p path; MANTA_ERR_NO_MEMORY.
 */
manta_status evo_write_front_csv(const evo_result *r, const ofa_space *s, const char *path,
                                 manta_err *err);

/**
 * Plot the front as a standalone SVG: predicted accuracy against the axis
 * metric, points joined by a step line, axes with ticks and labels, the best
 * point ringed and labelled, @p title on top (XML-escaped; NULL: none).
 * Written atomically.
 * @return MANTA_ERR_INVALID_ARG for an empty front; MANTA_ERR_IO; MANTA_ERR_NO_MEMORY.
 */
manta_status evo_write_front_svg(const evo_result *r, const char *title, const char *path,
                                 manta_err *err);

#endif
