/**
 * @file engine.h
 * @brief manta inference engine: runs float32 TensorFlow Lite (schema v3,
 *        "TFL3") models read in place, with every activation in one arena
 *        given by the caller.
 *
 * C99, freestanding-friendly: no allocation, no global mutable state, no I/O.
 * The only library calls are memcpy, memmove, memset, memcmp and expf.
 *
 * Use:
 * @code
 *   mengine_model m;
 *   char msg[256];
 *   if (mengine_model_load(&m, data, size, NULL, msg, sizeof msg) != MENGINE_OK) ... // verify
 *   // or, linking only the operators the application names (TFLM's op resolver):
 *   //   static const mengine_op *const ops[] = {&mengine_op_conv_2d, &mengine_op_softmax};
 *   //   static const mengine_op_resolver resolver = {ops, 2};
 *   //   mengine_model_load_ops(&m, data, size, &resolver, NULL, msg, sizeof msg);
 *   size_t need;                                          // optional: exact arena size
 *   mengine_arena_size(&m, work, mengine_plan_work_size(&m), &need, msg, sizeof msg);
 *   mengine e;
 *   mengine_init(&e, &m, arena, arena_bytes);             // arena: 16-byte aligned
 *   mengine_prepare(&e, msg, sizeof msg);                 // op checks + memory plan
 *   mengine_view in, out;
 *   mengine_input(&e, 0, &in);  ... fill in.data ...
 *   mengine_invoke(&e);                                   // never allocates
 *   mengine_output(&e, 0, &out); ... read out.cdata ...
 * @endcode
 *
 * Model data: read in place for the whole life of the engine (constant
 * tensors point into it), so it must stay valid and unchanged. It must start
 * at a 4-byte aligned address (16 recommended: tflite keeps constant data
 * 16-aligned relative to the start of the file) and every constant buffer must
 * be 4-aligned in memory; the verifier reports MENGINE_ERR_ALIGNMENT otherwise
 * instead of faulting later.
 *
 * Arena layout after mengine_prepare():
 *   [ tensor records | operator records | activations + kernel scratch ]
 * The activation area is planned offline-style at prepare time: greedy by size
 * (largest buffer first, each at the lowest offset that does not overlap a
 * buffer alive at the same time, as TFLM does), with RESHAPE outputs sharing
 * their input's buffer and element-wise operators writing over an input that
 * is not used afterwards. When the model carries valid
 * "OfflineMemoryAllocation" metadata, tensors with an offset there are placed
 * at that offset (relative to the start of the activation area) and the others
 * are planned around them. During prepare the planner's work area lies in the
 * activation area, so the arena must hold
 * records + max(activations, planner work); mengine_arena_size() returns
 * exactly that.
 *
 * Limits (compile-time, may be overridden with -D): at most MENGINE_MAX_TENSORS
 * tensors, MENGINE_MAX_OPS operators, MENGINE_MAX_OP_INPUTS inputs per
 * operator, MENGINE_MAX_DIMS dimensions per tensor, one subgraph, tensor sizes
 * below 2 GiB. The graph checks are quadratic in the operator count, which
 * these limits bound.
 */
#ifndef MANTA_ENGINE_ENGINE_H
#define MANTA_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/builtins.h"
#include "engine/errors.h"

#define MENGINE_MAX_DIMS 4 /**< highest tensor rank */
#ifndef MENGINE_MAX_TENSORS
#define MENGINE_MAX_TENSORS 4096 /**< tensors in the subgraph */
#endif
#ifndef MENGINE_MAX_OPS
#define MENGINE_MAX_OPS 1024 /**< operators in the subgraph */
#endif
#ifndef MENGINE_MAX_OP_INPUTS
#define MENGINE_MAX_OP_INPUTS 64 /**< inputs of one operator (CONCATENATION) */
#endif
#define MENGINE_ARENA_ALIGN 16       /**< alignment of the arena and of every planned buffer */
#define MENGINE_DEFAULT_MAX_DEPTH 64 /**< table nesting limit, as the official verifier */
#define MENGINE_DEFAULT_MAX_TABLES 1000000 /**< tables visited while verifying */

/**
 * An operator implementation (opaque): its checks ("prepare") and its kernel
 * ("eval"). The engine defines one per builtin it implements, named after it.
 */
typedef struct mengine_op mengine_op;
extern const mengine_op mengine_op_add;
extern const mengine_op mengine_op_average_pool_2d;
extern const mengine_op mengine_op_concatenation;
extern const mengine_op mengine_op_conv_2d;
extern const mengine_op mengine_op_depthwise_conv_2d;
extern const mengine_op mengine_op_fully_connected;
extern const mengine_op mengine_op_logistic;
extern const mengine_op mengine_op_mul;
extern const mengine_op mengine_op_relu;
extern const mengine_op mengine_op_relu6;
extern const mengine_op mengine_op_reshape;
extern const mengine_op mengine_op_softmax;
extern const mengine_op mengine_op_pad;
extern const mengine_op mengine_op_mean;
extern const mengine_op mengine_op_transpose_conv;
extern const mengine_op mengine_op_leaky_relu;
extern const mengine_op mengine_op_hard_swish;
extern const mengine_op mengine_op_slice;
extern const mengine_op mengine_op_strided_slice;
extern const mengine_op mengine_op_resize_bilinear;
/**
 * Not a TFLite builtin: the stereo export's correlation pattern run as one
 * kernel (see mengine_prepare()). Listed in ::mengine_all_ops; a table without
 * it runs the pattern with its generic operators.
 */
extern const mengine_op mengine_op_correlation;
/**
 * int8 operators (TFLite's quantization spec: per-tensor asymmetric activations,
 * per-channel symmetric weights, int32 biases; fixed-point requantization as
 * TFLite's reference kernels). An operator whose output tensor is INT8 runs the
 * int8 registration of its builtin; a table without it rejects the model.
 */
extern const mengine_op mengine_op_add_int8;
extern const mengine_op mengine_op_conv_2d_int8;
extern const mengine_op mengine_op_depthwise_conv_2d_int8;
extern const mengine_op mengine_op_fully_connected_int8;
extern const mengine_op mengine_op_mul_int8;
extern const mengine_op mengine_op_reshape_int8;
extern const mengine_op mengine_op_softmax_int8;
extern const mengine_op mengine_op_pad_int8;
extern const mengine_op mengine_op_mean_int8;
extern const mengine_op mengine_op_hard_swish_int8;
/**
 * int8 operators of the stereo graphs (TFLite's reference arithmetic): TRANSPOSE_CONV
 * (per-channel weights along Cout), LEAKY_RELU, MEAN over the channels (through
 * ::mengine_op_mean_int8), and CONCATENATION, RESIZE_BILINEAR, SLICE and STRIDED_SLICE,
 * whose inputs and output must share one scale and zero point; QUANTIZE of an int8 tensor
 * into another int8 quantization (what an exporter inserts before a CONCATENATION input of
 * other parameters).
 */
extern const mengine_op mengine_op_transpose_conv_int8;
extern const mengine_op mengine_op_concatenation_int8;
extern const mengine_op mengine_op_leaky_relu_int8;
extern const mengine_op mengine_op_resize_bilinear_int8;
extern const mengine_op mengine_op_slice_int8;
extern const mengine_op mengine_op_strided_slice_int8;
extern const mengine_op mengine_op_quantize_int8;
/**
 * Not a TFLite builtin: the correlation pattern of an int8 stereo file run as one kernel
 * (the bytes its operators write), as ::mengine_op_correlation for float32 files.
 */
extern const mengine_op mengine_op_correlation_int8;

/**
 * The operators a model may use (TFLM's op resolver): a table owned by the
 * application, which must outlive every model loaded with it. A model using
 * any other operator is rejected at load (MENGINE_ERR_UNSUPPORTED_OP). A
 * program built with -ffunction-sections -fdata-sections and linked with
 * --gc-sections carries the code of the operators its tables name and no
 * other, as long as it does not call mengine_model_load() (which uses
 * ::mengine_all_ops).
 */
typedef struct mengine_op_resolver {
    const mengine_op *const *ops; /**< the operators; NULL entries are skipped */
    size_t n_ops;                 /**< entries in @c ops */
} mengine_op_resolver;

/** Every operator the engine implements (the table mengine_model_load() uses). */
extern const mengine_op_resolver mengine_all_ops;

/** TFLite tensor types the engine accepts (INT32 only for constant shape/axis tensors and the
 *  biases of int8 operators; INT8 with TFLite's quantization: runtime/engine/ops_q8.c). */
enum mengine_type { MENGINE_FLOAT32 = 0, MENGINE_INT32 = 2, MENGINE_INT8 = 9 };

/** Verifier limits; pass NULL to mengine_model_load() for the defaults. */
typedef struct mengine_verify_opts {
    uint32_t max_depth;  /**< deepest table nesting (root = 1); 0 = MENGINE_DEFAULT_MAX_DEPTH */
    uint32_t max_tables; /**< tables visited in total; 0 = MENGINE_DEFAULT_MAX_TABLES */
} mengine_verify_opts;

/**
 * A verified model: where things are inside the caller's data. Filled by
 * mengine_model_load(); the fields are private (positions are byte offsets
 * from @c data).
 */
typedef struct mengine_model {
    const uint8_t *data;
    uint32_t size;
    uint32_t max_depth;
    uint32_t opcodes, buffers, tensors, operators, inputs, outputs; /* first elements */
    uint32_t n_opcodes, n_buffers, n_tensors, n_ops, n_inputs, n_outputs;
    uint32_t offline;               /* first offset of the offline plan, 0 = none */
    const mengine_op_resolver *ops; /* the operators it may use */
} mengine_model;

/** A tensor as the caller sees it. */
typedef struct mengine_view {
    float *data;        /**< writable elements (activations); NULL for constant tensors */
    const float *cdata; /**< elements to read (constants included); NULL for INT32 tensors */
    int32_t dims[MENGINE_MAX_DIMS]; /**< shape, row-major (NHWC for images) */
    uint32_t rank;                  /**< number of dims used */
    uint32_t type;                  /**< ::mengine_type */
    size_t count;                   /**< number of elements */
    uint32_t index;                 /**< tensor index in the subgraph */
    /** INT8 tensors: real = scale * (q - zero_point) (per-tensor parameters; for
     *  per-channel weights those of channel 0); 0 and 0 for other types. An INT8
     *  tensor's data and cdata point at int8_t elements (cast them). */
    float scale;
    int32_t zero_point;
} mengine_view;

/** Arena use after mengine_prepare(). */
typedef struct mengine_stats {
    size_t arena_used;         /**< bytes used from the start of the arena */
    size_t records_bytes;      /**< tensor and operator records (start of the arena) */
    size_t activation_bytes;   /**< planned activations and kernel scratch */
    size_t work_bytes;         /**< planner work area used during prepare */
    size_t fused_correlations; /**< correlation patterns run as one kernel (mengine_prepare()) */
    size_t fused_ops;          /**< operators of the model those kernels stand for */
    size_t folded_pads; /**< PADs folded into the convolution that follows (mengine_prepare()) */
} mengine_stats;

struct mtensor;
struct mnode;

/** An interpreter. Owned by the caller; fields are private. */
typedef struct mengine {
    mengine_model model;
    uint8_t *arena;
    size_t arena_size;
    struct mtensor *tensors; /* in the arena */
    struct mnode *nodes;     /* in the arena */
    uint8_t *act;            /* activation area */
    mengine_stats stats;
    int state;
    uint32_t requant; /* ::mengine_requant */
} mengine;

/**
 * Verify a .tflite file and index it for the engine. Nothing is copied or
 * allocated; @p data must outlive every use of @p m.
 *
 * Checks the FlatBuffers structure (identifier, every offset aligned, nonzero
 * and in bounds, vtables in bounds and even-sized, fields inside their table,
 * string terminators, vector lengths, nesting depth, total tables) and the
 * meaning (version 3, one subgraph, opcode/tensor/buffer indices, supported
 * types, shapes and buffer sizes, supported operators and versions, each
 * operator's inputs, options and output shape, tensors written once and
 * before use, model inputs and outputs, the offline plan's format). Reads
 * nothing outside [data, data + size) whatever the content. Where TFLite is
 * stricter than the kernels need, the verifier follows TFLite, so that an
 * accepted file also runs there: CONV_2D and DEPTHWISE_CONV_2D must have a
 * bias (TFLite refuses, or crashes on, float convolutions without one).
 *
 * @param m       filled on success.
 * @param data    the file, 4-byte aligned (16 recommended).
 * @param size    its size in bytes (< 2 GiB).
 * @param opts    limits, or NULL for the defaults.
 * @param msg     receives a one-line message naming the object and the fault
 *                (may be NULL); always 0-terminated when @p msg_cap > 0.
 * @param msg_cap bytes available at @p msg.
 * @return MENGINE_OK or the specific error (see ::mengine_status).
 */
mengine_status mengine_model_load(mengine_model *m, const void *data, size_t size,
                                  const mengine_verify_opts *opts, char *msg, size_t msg_cap);

/**
 * mengine_model_load() with the operators of @p ops only (see
 * ::mengine_op_resolver): an operator outside the table is rejected as
 * unsupported, and the interpreter later finds its operators there. With
 * ::mengine_all_ops it is mengine_model_load().
 * @param ops  the table, kept by @p m (not copied); NULL gives MENGINE_ERR_ARG.
 */
mengine_status mengine_model_load_ops(mengine_model *m, const void *data, size_t size,
                                      const mengine_op_resolver *ops,
                                      const mengine_verify_opts *opts, char *msg, size_t msg_cap);

/**
 * Bytes of work area mengine_arena_size() needs for @p m (depends only on the
 * tensor and operator counts).
 */
size_t mengine_plan_work_size(const mengine_model *m);

/**
 * Exact arena size mengine_prepare() will need for @p m, computed by running
 * the same operator checks and planner.
 * @param work       scratch of at least mengine_plan_work_size() bytes, 4-byte aligned.
 * @param arena_size receives the size in bytes.
 * @return MENGINE_OK, MENGINE_ERR_ARENA (work too small), MENGINE_ERR_PLAN, MENGINE_ERR_ARG.
 */
mengine_status mengine_arena_size(const mengine_model *m, void *work, size_t work_size,
                                  size_t *arena_size, char *msg, size_t msg_cap);

/**
 * Bind an interpreter to a verified model and an arena (TFLM "init").
 * @param arena      MENGINE_ARENA_ALIGN-aligned, owned by the caller, used
 *                   until the interpreter is dropped.
 * @return MENGINE_OK, or MENGINE_ERR_ARG (NULL, misaligned arena, model not loaded).
 */
mengine_status mengine_init(mengine *e, const mengine_model *m, void *arena, size_t arena_size);

/**
 * Run every operator's prepare (checks, parameters, scratch size), plan the
 * activation area and point every tensor at its memory.
 *
 * Fusion: when the operator table lists ::mengine_op_correlation, a run of
 * operators forming the stereo export's correlation pattern (PAD of the right
 * features along W; per displacement a SLICE (or STRIDED_SLICE with strides
 * 1) of it, MUL with the left features, MEAN over the channels with dims
 * kept; one CONCATENATION of the means along the channels; the intermediate
 * tensors read by nothing else: runtime/engine/fuse_impl.h has the exact rules)
 * runs as one kernel at the CONCATENATION, and the pattern's intermediate
 * tensors get no memory (their views have data NULL). Any other form runs
 * with the generic operators. mengine_get_stats() counts the fused patterns.
 *
 * A PAD of zeros along H and W whose output only the CONV_2D (kernel larger
 * than 1x1) or DEPTHWISE_CONV_2D right after it reads is folded into that
 * convolution's padding, as XNNPACK does (runtime/engine/fuse_impl.h,
 * mengine_fuse_pad(), has the exact rules): the convolution reads the PAD's
 * input, the PAD's output gets no memory (its view has data and cdata NULL)
 * and the outputs are the same bit for bit. Not where the model's offline
 * plan gives the PAD's output an offset (a plan made without the fold).
 * mengine_get_stats() counts the folded PADs.
 * @return MENGINE_OK, MENGINE_ERR_ARENA (message gives the size needed when
 *         known), MENGINE_ERR_PLAN, MENGINE_ERR_STATE (not initialised).
 */
mengine_status mengine_prepare(mengine *e, char *msg, size_t msg_cap);

/** Requantization of the int8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED operators. */
typedef enum mengine_requant {
    /** TFLite's fixed point (a Q31 multiplier and a shift per channel, gemmlowp's double
     *  rounding; FULLY_CONNECTED rounding once): the default, what TFLite's reference kernels,
     *  TFLM and CMSIS-NN compute. */
    MENGINE_REQUANT_REF = 0,
    /** XNNPACK's fp32 requantization (LiteRT's default delegate): the int32 sum times
     *  in_scale * w_scale / out_scale, in float, rounded to nearest even. The other int8
     *  operators (ADD, MUL, MEAN, HARD_SWISH, SOFTMAX) keep their arithmetic. */
    MENGINE_REQUANT_FP32 = 1
} mengine_requant;

/**
 * Choose the int8 requantization of @p e (a per-model choice, see ::mengine_requant). Call
 * after mengine_init() (which sets MENGINE_REQUANT_REF), before or after mengine_prepare();
 * it applies from the next mengine_invoke(). No effect on a float model.
 * @return MENGINE_OK, or MENGINE_ERR_ARG (@p e NULL or an unknown @p mode; nothing changed).
 */
mengine_status mengine_set_requant(mengine *e, mengine_requant mode);

/**
 * Run the model once: the inputs are read from their views' data, the
 * outputs are written. Each operator's eval runs once, in order, on what its
 * prepare set up in mengine_prepare(); no prepare runs here. Never allocates.
 * May be called any number of times.
 * @return MENGINE_OK or MENGINE_ERR_STATE (not prepared).
 */
mengine_status mengine_invoke(mengine *e);

/**
 * Called by mengine_invoke_observed() before operator @p op runs (0 <= op <
 * n_ops, in execution order) and once more with @p op == n_ops after the
 * last one, so that the caller can time operators or ranges of them. Must
 * not call back into the engine.
 */
typedef void (*mengine_op_observer)(void *ctx, uint32_t op);

/**
 * mengine_invoke() with @p fn called at every operator boundary (see
 * ::mengine_op_observer). mengine_invoke() itself has no such call and costs
 * nothing extra. Never allocates.
 * @return MENGINE_OK, MENGINE_ERR_ARG (@p fn NULL) or MENGINE_ERR_STATE (not prepared).
 */
mengine_status mengine_invoke_observed(mengine *e, mengine_op_observer fn, void *ctx);

/** Number of operators of the prepared model (0 before mengine_init()). */
size_t mengine_op_count(const mengine *e);

/** Number of model inputs (0 before mengine_init()). */
size_t mengine_input_count(const mengine *e);
/** Number of model outputs (0 before mengine_init()). */
size_t mengine_output_count(const mengine *e);

/**
 * View of model input @p i (after mengine_prepare()); write the input into
 * v->data before mengine_invoke(). The memory belongs to the arena.
 * @return MENGINE_OK, MENGINE_ERR_ARG (index out of range), MENGINE_ERR_STATE.
 */
mengine_status mengine_input(const mengine *e, size_t i, mengine_view *v);
/** View of model output @p i (after mengine_prepare()); same rules as mengine_input(). */
mengine_status mengine_output(const mengine *e, size_t i, mengine_view *v);
/** View of any tensor of the subgraph (debugging, tools); same rules as mengine_input(). */
mengine_status mengine_tensor(const mengine *e, size_t tensor_index, mengine_view *v);

/** Arena use (valid after mengine_prepare()). @return MENGINE_OK or MENGINE_ERR_STATE. */
mengine_status mengine_get_stats(const mengine *e, mengine_stats *s);

/**
 * Find a metadata entry of a verified model by name (e.g. "manta_preprocess")
 * and return its buffer's bytes, in place in the model data.
 * @param name  0-terminated entry name, compared byte for byte.
 * @param data  receives the first byte, or NULL when the model has no such
 *              entry (or the entry's buffer is empty).
 * @param size  receives the number of bytes (0 when absent).
 * @return MENGINE_OK (found or not), MENGINE_ERR_ARG (NULL argument, model not loaded).
 */
mengine_status mengine_model_metadata(const mengine_model *m, const char *name,
                                      const uint8_t **data, size_t *size);

#endif
