/**
 * @file latency_table.h
 * @brief OFA-style latency look-up tables: the layer keys of a sub-network,
 *        every key a search space can produce (what a profiler measures),
 *        a table of measured statistics per key with JSON load/save, and
 *        latency prediction as the sum of the keys' lower deciles plus a
 *        fixed overhead.
 *
 * @par Layer keys
 * A sub-network at resolution R is the sequence of layers below; each has a
 * key in the format of OFA's LatencyTable (mit-han-lab/once-for-all), fields
 * joined by '-', shapes as HxWxC:
 * @verbatim
 * stem         Conv-input:RxRxCin-output:HxWxC
 * first block  expanded_conv-input:HxWxC-output:HxWxC'-expand:C-kernel:3-stride:1-
 *                idskip:0|1-se:0-hs:0|1
 * each MBConv  expanded_conv-input:HxWxCin-output:H'xW'xCout-expand:MID-kernel:K-stride:S-
 *                idskip:0|1-se:0|1-hs:0|1
 * head conv    Conv_1-input:HxWxC-output:HxWxE
 * pool         AvgPool2D-input:HxWxE-output:1x1xE
 * feature mix  Conv_2-input:1x1xE-output:1x1xM   (only when the space has head_mix > 0)
 * classifier   Logits-input:1x1xM-output:CLASSES
 * @endverbatim
 * MID is the expanded channel count make_divisible(Cin * e, 8); the first
 * block has no expand convolution and writes expand:C (its input channels).
 * idskip is 1 when the block adds its input (stride 1 and Cin == Cout), se 1
 * when the unit has squeeze-and-excite, hs 1 when the block's activation is
 * h-swish. The two MBConv lines above are one key each (no line break, no
 * space). Every number is a plain decimal. Example (mbv3-w1.0, R = 224):
 * "expanded_conv-input:112x112x16-output:56x56x24-expand:96-kernel:7-stride:2-idskip:0-se:0-hs:0".
 * Keys depend only on the resolution, the unit, whether the block is the
 * unit's first, its kernel and its expand ratio; skipped slots have no key.
 *
 * @par Stereo layer keys
 * A stereo sub-network (space/stereo_space.h) at the space's crop H x W is the layers of
 * sgraph_arch_layers() (export/stereo_graph.h), one key each, in graph order:
 * @verbatim
 * stem        Conv-input:HxWx3-output:H/2xW/2xC                (twice: left, right view)
 * each MBConv expanded_conv-... as above                       (units 1..corr_after_unit
 *                                                                twice: left, right view)
 * correlation Correlation-input:HxWxC-output:HxWxD-stride:S    (one fused kernel)
 * redirect    Redirect-input:HxWxC-output:HxWxR
 * concat      Concat-input:HxWxA+B[+C]-output:HxWxA+B+C        (the correlation's, and each
 *                                                                level's [skip, upsampled,
 *                                                                deconv])
 * prediction  Pred-input:HxWxC-output:HxWx1-kernel:3
 * deconv      TransposeConv-input:HxWxC-output:2Hx2WxC'-kernel:4-stride:2
 * upsample    ResizeBilinear-input:HxWx1-output:2Hx2Wx1
 * level conv  DecConv-input:HxWxC-output:HxWxC'-kernel:3
 * @endverbatim
 * A key shared by both views is listed twice, so a prediction counts it twice. Keys of
 * the encoder depend on the unit, the slot's position, kernel and expand ratio; of the
 * decoder on the widths of a level and of the one before it.
 *
 * @par Table file (JSON, format "manta-latency-table", version 2)
 * @verbatim
 * { "format": "manta-latency-table", "version": 2,
 *   "space": {"name": "cpu-default", "hash": "fnv1a64:..."},
 *   "device": "...", "cpu": "...", "compiler_flags": "...", "date": "2025-01-31T12:00:00Z",
 *   "dtype": "float32", "overhead_ms": 0.012,
 *   "layers": {
 *     "<key>": {"p10_ms": 0.09, "median_ms": 0.1, "mean_ms": 0.11, "variance_ms2": 1e-4,
 *               "count": 50},
 *     ... } }
 * @endverbatim
 * Every field is required; times are milliseconds, variance in ms^2.
 * Version 2 added "p10_ms", the lower decile of the layer's timings, which
 * predictions add up (the median is pulled up by other work on a shared
 * machine; the fastest tenth of the runs is not). A version 1 table (no
 * "p10_ms") still loads, its medians standing in for the deciles.
 *
 * "dtype" says which models were timed: "float32" (the float export) or
 * "int8" (`manta-profile --int8`: every model quantized as `manta export
 * --int8` quantizes, run by the engine's int8 kernels). A table without the
 * field (written before it existed) is a float32 one. The two are never
 * mixed up: lat_table_load() and lat_table_parse() accept float32 tables
 * only; what wants an int8 table asks for it with lat_table_load_dtype().
 */
#ifndef MANTA_PROFILE_LATENCY_TABLE_H
#define MANTA_PROFILE_LATENCY_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "profile/common.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

/** Longest layer key, terminator included. */
#define LAT_KEY_MAX 160
/** Longest metadata string (device, cpu, compiler flags, date), terminator included. */
#define LAT_META_MAX 256
/** Most keyed layers one sub-network has: classification's stem, first block, slots and 4
 *  head layers; stereo's two stems, every slot on two views, the correlation, redirect and
 *  concatenation, the coarsest prediction and 5 layers per decoder level (the larger). */
#define LAT_MAX_ARCH_LAYERS (2 + 2 * OFA_MAX_SLOTS + 4 + 5 * OFA_MAX_DEC_LEVELS)
/** Format version written and read. */
#define LAT_FORMAT_VERSION 2
/** The quantile of a layer's timings that predictions add up (::lat_stats.p10_ms). */
#define LAT_PREDICT_QUANTILE 0.1
/** Largest table file lat_table_load() reads. */
#define LAT_FILE_MAX ((size_t)64 << 20)

/** Kinds of keyed layers (the key's first field in brackets). */
typedef enum lat_layer_type {
    LAT_STEM,   /**< [Conv] KxK dense convolution + BN + activation */
    LAT_MBCONV, /**< [expanded_conv] the first block or an MBConv block */
    LAT_HEAD,   /**< [Conv_1] 1x1 convolution + BN + h-swish */
    LAT_POOL,   /**< [AvgPool2D] global average pool */
    LAT_MIX,    /**< [Conv_2] 1x1 convolution (no BN) + h-swish on 1x1 */
    LAT_LOGITS, /**< [Logits] fully connected classifier */
    /* stereo (see "Stereo layer keys") */
    LAT_CORR,     /**< [Correlation] the fused correlation of the two views */
    LAT_REDIR,    /**< [Redirect] 1x1 convolution + leaky ReLU of the left features */
    LAT_CONCAT,   /**< [Concat] channel concatenation */
    LAT_DECONV,   /**< [TransposeConv] k4 s2 + leaky ReLU */
    LAT_RESIZE,   /**< [ResizeBilinear] x2 of a prediction */
    LAT_DEC_CONV, /**< [DecConv] 3x3 convolution + leaky ReLU of a decoder level */
    LAT_PRED      /**< [Pred] 3x3 convolution to 1 channel */
} lat_layer_type;

/** One keyed layer with the parameters a profiler needs to build a one-layer model. */
typedef struct lat_layer {
    char key[LAT_KEY_MAX]; /**< first member: see the file comment */
    lat_layer_type type;
    char where[48]; /**< "stem", "first", "u2.b1", "head", "pool", "mix", "classifier" */
    int r; /**< network input resolution (in lat_enumerate(): the first that produces it) */
    int in_h, in_w, in_c;
    int out_h, out_w, out_c;
    int mid;    /**< MBConv: expanded channels (== in_c without expand conv); else 0 */
    int kernel; /**< stem / depthwise kernel; 1 for 1x1 layers, 0 for pool and logits */
    int stride;
    bool has_expand; /**< MBConv: a 1x1 expand convolution comes first */
    bool idskip;     /**< MBConv: identity skip */
    bool se;         /**< MBConv: squeeze-and-excite */
    int se_mid;      /**< SE reduced channels make_divisible(mid / 4, 8); 0 without SE */
    nn_act act;      /**< activation (MBConv: of expand and depthwise) */
    /* stereo layers */
    int n_in;        /**< inputs: 1; the correlation 2 (the views); a concatenation 2 or 3 */
    int in_cs[3];    /**< channels of each input (in_c is their sum for a concatenation) */
    int corr_stride; /**< LAT_CORR: displacement step (its output channels are D) */
} lat_layer;

/** Text of a layer type as it opens a key ("Conv", "expanded_conv", ...); never NULL. */
const char *lat_layer_type_name(lat_layer_type t);

/**
 * The keyed layers of sub-network @p a, in network order: the layers of
 * mbv3_arch_layers() (export/mbv3_graph.h, derived from ofa_describe(), so
 * shapes agree with it), one for one, with their keys.
 * @param out array of ::LAT_MAX_ARCH_LAYERS layers, filled.
 * @param n   number written: 5 or 6 (head) + 1 (first block) + sum of depths.
 * @return MANTA_ERR_INVALID_ARG when @p a is not an architecture of @p s
 *         (ofa_arch_validate()'s message).
 */
manta_status lat_arch_layers(const ofa_space *s, const ofa_arch *a, lat_layer *out, int *n,
                             manta_err *err);

/**
 * Every distinct key space @p s produces over all its resolutions, each
 * once, with its layer parameters: ordered by resolution, then network order,
 * then kernel, then expand ratio (first occurrence kept).
 * @param out malloc'd array the caller frees with free(); NULL on error.
 * @param n   its length.
 * @return MANTA_ERR_NO_MEMORY, or an internal error if the space is inconsistent.
 */
manta_status lat_enumerate(const ofa_space *s, lat_layer **out, size_t *n, manta_err *err);

/**
 * Random sub-networks of @p s that together contain every key of
 * lat_enumerate() at least @p cover times: what a profiler runs to time each
 * layer inside whole networks. Keys are visited in enumeration order; while
 * one has fewer than @p cover occurrences, a sub-network is drawn
 * (ofa_arch_sample() from @p seed) at the key's resolution and, when it lacks
 * the key, the one slot that produces it is set (kernel, expand ratio and,
 * if needed, the unit's depth), so each network stays random elsewhere.
 * @param out malloc'd array the caller frees; NULL on error.
 * @return MANTA_ERR_INVALID_ARG for @p cover < 1; MANTA_ERR_NO_MEMORY;
 *         MANTA_ERR_INTERNAL when a key cannot be produced (inconsistent space).
 */
manta_status lat_cover_archs(const ofa_space *s, int cover, uint64_t seed, ofa_arch **out,
                             size_t *n, manta_err *err);

/**
 * The keyed layers of sub-network @p a of stereo space @p s at its crop, in graph order
 * (see "Stereo layer keys").
 * @param out array of ::LAT_MAX_ARCH_LAYERS layers, filled.
 * @return MANTA_ERR_INVALID_ARG when @p a is not of @p s (stereo_arch_validate()'s message).
 */
manta_status lat_stereo_arch_layers(const stereo_space *s, const ofa_arch *a, lat_layer *out,
                                    int *n, manta_err *err);

/**
 * Every distinct key stereo space @p s produces, each once (first occurrence kept), in
 * network order of the sub-networks that produce them: every (kernel, expand ratio) at
 * the largest depths, then every pair of decoder width choices of consecutive levels.
 * @param out malloc'd array the caller frees with free(); NULL on error.
 * @return MANTA_ERR_NO_MEMORY; an internal error if the space is inconsistent.
 */
manta_status lat_stereo_enumerate(const stereo_space *s, lat_layer **out, size_t *n,
                                  manta_err *err);

/**
 * lat_cover_archs() of a stereo space: random sub-networks (stereo_arch_sample()) that
 * together contain every key of lat_stereo_enumerate() at least @p cover times; a network
 * lacking the key visited gets the one slot (kernel, expand ratio, depth) or the decoder
 * widths of one level and the one before it that produce it.
 */
manta_status lat_stereo_cover_archs(const stereo_space *s, int cover, uint64_t seed, ofa_arch **out,
                                    size_t *n, manta_err *err);

/** What a table's models compute in (its "dtype" field). */
typedef enum lat_dtype {
    LAT_DTYPE_F32 = 0,  /**< "float32": the float export */
    LAT_DTYPE_INT8 = 1, /**< "int8": the int8 export (`manta export --int8`) */
    LAT_DTYPE_ANY = 2   /**< lat_table_load_dtype(): accept either */
} lat_dtype;

/** "float32", "int8" ("any" for ::LAT_DTYPE_ANY): the JSON value of @p d; never NULL. */
const char *lat_dtype_name(lat_dtype d);

/** Statistics of one layer's measurements, in milliseconds. */
typedef struct lat_stats {
    double median_ms;
    double mean_ms;
    double variance_ms2; /**< population variance, ms^2 */
    long count;          /**< measurements (>= 1) */
    double p10_ms;       /**< lower decile (::LAT_PREDICT_QUANTILE): what lat_predict() adds up */
} lat_stats;

/**
 * Median, lower decile, mean and population variance of @p n timings @p ms
 * (sorted in place, ascending). The median of an even count is the mean of
 * the middle two; the decile interpolates linearly between the sorted values
 * at rank 0.1 * (n - 1).
 * @return MANTA_ERR_INVALID_ARG when @p n is 0 or a value is negative or not finite.
 */
manta_status lat_stats_from_samples(double *ms, size_t n, lat_stats *out, manta_err *err);

/** One table entry. */
typedef struct lat_entry {
    char key[LAT_KEY_MAX]; /**< first member */
    lat_stats st;
} lat_entry;

/**
 * A latency table for one search space. Initialise with lat_table_init() or
 * lat_table_load(), release with lat_table_free(). Fields other than the
 * entries may be read freely; set metadata with lat_table_set_meta().
 */
typedef struct lat_table {
    ofa_space space;          /**< the space the table belongs to (a copy; of a stereo table, the
                          view stereo_space_ofa_view(), which carries its name) */
    bool stereo;              /**< a stereo table: @c stereo_spec is its space */
    stereo_space stereo_spec; /**< a stereo table's space (a copy) */
    char space_hash[PROF_HASH_LEN]; /**< prof_space_hash() of it */
    char device[LAT_META_MAX];      /**< board or device name */
    char cpu[LAT_META_MAX];         /**< CPU model */
    char cflags[LAT_META_MAX];      /**< compiler and flags of the profiled code */
    char date[LAT_META_MAX];        /**< when measured (ISO 8601) */
    lat_dtype dtype;                /**< F32 or INT8 (set it before lat_profile()) */
    double overhead_ms;             /**< fixed per-inference cost added to every prediction */
    size_t n;                       /**< entries */
    lat_entry *entry;               /**< (n) entries, insertion order */
    /* private: capacity and the key index (open addressing, entry index + 1) */
    size_t cap_, n_slot_;
    uint32_t *slot_;
} lat_table;

/**
 * An empty table for space @p s (copied) with empty metadata and overhead 0.
 * @return MANTA_ERR_NO_MEMORY.
 */
manta_status lat_table_init(lat_table *t, const ofa_space *s, manta_err *err);

/**
 * An empty table for stereo space @p s (copied; its hash prof_stereo_space_hash()).
 * @return MANTA_ERR_NO_MEMORY.
 */
manta_status lat_table_init_stereo(lat_table *t, const stereo_space *s, manta_err *err);

/** Free the entries of @p t (the struct itself is the caller's). NULL is allowed. */
void lat_table_free(lat_table *t);

/**
 * Set the metadata strings (NULL leaves one unchanged).
 * @return MANTA_ERR_INVALID_ARG naming the field that is longer than
 *         ::LAT_META_MAX - 1 bytes (nothing is changed then).
 */
manta_status lat_table_set_meta(lat_table *t, const char *device, const char *cpu,
                                const char *cflags, const char *date, manta_err *err);

/**
 * Add the statistics of @p key, or replace them when the key is present.
 * @return MANTA_ERR_INVALID_ARG for an empty key, one of ::LAT_KEY_MAX bytes
 *         or more, or statistics that are negative, not finite or of count < 1;
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status lat_table_set(lat_table *t, const char *key, const lat_stats *st, manta_err *err);

/** The entry of @p key, or NULL. The pointer is valid until the table changes. */
const lat_entry *lat_table_find(const lat_table *t, const char *key);

/**
 * Check that the table holds every key the space produces (lat_enumerate(), or
 * lat_stereo_enumerate() for a stereo table).
 * @return MANTA_ERR_FORMAT "latency table lacks 12 of 225 layer keys of space
 *         'cpu-default', first: '<key>'"; MANTA_ERR_NO_MEMORY.
 */
manta_status lat_table_check_complete(const lat_table *t, manta_err *err);

/**
 * Predicted latency of @p a in ms: the sum of the lower deciles (p10_ms) of
 * its keys (lat_arch_layers(), or lat_stereo_arch_layers() for a stereo table) plus the
 * table's overhead.
 * @return MANTA_ERR_INVALID_ARG when @p a is not of the table's space, or
 *         "latency table (device 'X') has no entry for layer u2.b1:
 *         '<key>'" when a key is missing.
 */
manta_status lat_predict(const lat_table *t, const ofa_arch *a, double *ms, manta_err *err);

/**
 * The table as JSON text (format above; entries in insertion order), a
 * malloc'd NUL-terminated string the caller frees.
 * @return MANTA_ERR_NO_MEMORY.
 */
manta_status lat_table_to_json(const lat_table *t, char **out, manta_err *err);

/**
 * Parse a table from JSON text and validate it strictly against space @p s:
 * format and version, every field present with the right type, the space's
 * name and hash equal to those of @p s, every layer's statistics (median,
 * mean, variance >= 0 and finite, count an integer >= 1), no key twice, and
 * every key one that @p s produces.
 * @param what name used in messages (a path); NULL: "latency table".
 * @param t    initialised on success; left empty (freed) on error.
 * @return MANTA_ERR_FORMAT naming what is wrong: "not valid JSON near ...",
 *         "missing \"device\"", "made for space 'mbv3-w1.0' (hash ...), not
 *         'cpu-default' (hash ...)", "layer '<key>': \"median_ms\" missing or
 *         not a number", ...; MANTA_ERR_NO_MEMORY.
 */
manta_status lat_table_parse(const char *json, const char *what, const ofa_space *s, lat_table *t,
                             manta_err *err);

/** lat_table_parse() of the file @p path; MANTA_ERR_IO when it cannot be read. */
manta_status lat_table_load(const char *path, const ofa_space *s, lat_table *t, manta_err *err);

/**
 * lat_table_parse() that accepts a table of @p want (::LAT_DTYPE_ANY: either)
 * instead of float32 only.
 * @return as lat_table_parse(), plus MANTA_ERR_FORMAT naming both when the
 *         table's "dtype" is another: "T.json: an int8 latency table (\"dtype\":
 *         \"int8\"), a float32 one is needed" (or the reverse), or when
 *         "dtype" is neither "float32" nor "int8".
 */
manta_status lat_table_parse_dtype(const char *json, const char *what, const ofa_space *s,
                                   lat_dtype want, lat_table *t, manta_err *err);

/** lat_table_parse_dtype() of the file @p path; MANTA_ERR_IO when it cannot be read. */
manta_status lat_table_load_dtype(const char *path, const ofa_space *s, lat_dtype want,
                                  lat_table *t, manta_err *err);

/**
 * lat_table_parse() for stereo space @p s: the table's space must be @p s (name and
 * hash; a classification table or one of another stereo space is refused), every key one
 * of lat_stereo_enumerate(); float32 only (stereo has no int8 export).
 */
manta_status lat_table_parse_stereo(const char *json, const char *what, const stereo_space *s,
                                    lat_table *t, manta_err *err);

/** lat_table_parse_stereo() of the file @p path; MANTA_ERR_IO when it cannot be read. */
manta_status lat_table_load_stereo(const char *path, const stereo_space *s, lat_table *t,
                                   manta_err *err);

/** Write lat_table_to_json() to @p path atomically; MANTA_ERR_IO naming the path. */
manta_status lat_table_save(const lat_table *t, const char *path, manta_err *err);

#endif
