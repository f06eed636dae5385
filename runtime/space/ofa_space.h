/**
 * @file space.h
 * @brief The OFA MobileNetV3-style search space: its specification, the
 *        architecture encoding ({"ks":[20],"e":[20],"d":[5],"r":[R]} as OFA
 *        writes it), sampling, validation, and a per-layer description with
 *        shapes, MACs and parameter counts.
 *
 * Network, for input R x R x C:
 *   stem: KxK conv stride S (1 when R <= stem_stride1_max_res, else 2), BN, act
 *   first block: depthwise 3x3 (expand 1), BN, act, 1x1 project, BN, identity
 *                skip when in == out
 *   units u = 0..U-1, each of max_depth block slots; a unit of depth d runs its
 *   first d slots. Slot j of unit u (global index u*max_depth + j) is an MBConv:
 *     1x1 expand to mid = make_divisible(in * e, 8), BN, act
 *     kxk depthwise (stride: the unit's for j == 0, else 1), BN, act
 *     SE when the unit has it: pool, 1x1 to make_divisible(mid/4, 8) + bias,
 *        ReLU, 1x1 to mid + bias, h-sigmoid, scale
 *     1x1 project to the unit width, BN; identity skip when stride 1 and in == out
 *   head: 1x1 conv to head_expand, BN, h-swish; global average pool;
 *     optional 1x1 "feature mix" to head_mix (no BN) + h-swish; linear to classes.
 * Slots skipped by depth still carry ks/e values in the encoding (OFA does too).
 */
#ifndef MANTA_SPACE_OFA_SPACE_H
#define MANTA_SPACE_OFA_SPACE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/rng.h"
#include "core/status.h"
#include "space/act.h"

#define OFA_MAX_UNITS 6
#define OFA_MAX_DEPTH 4
#define OFA_MAX_SLOTS (OFA_MAX_UNITS * OFA_MAX_DEPTH)
/** Most levels of a decoder (space/stereo_space.h): the stem and every unit of stride 2. */
#define OFA_MAX_DEC_LEVELS (1 + OFA_MAX_UNITS)
#define OFA_MAX_CHOICES 4
#define OFA_MAX_RES 32

typedef struct ofa_unit_spec {
    int width;  /**< output channels of every block of the unit */
    int stride; /**< stride of the unit's first block (1 or 2) */
    nn_act act; /**< NN_ACT_RELU or NN_ACT_HSWISH */
    bool se;    /**< squeeze-and-excite in every block */
} ofa_unit_spec;

typedef struct ofa_space {
    char name[64];
    int in_channels; /**< 1 or 3 */
    int classes;
    int n_res, res[OFA_MAX_RES]; /**< input resolutions, ascending */
    int stem_width, stem_kernel;
    int stem_stride1_max_res; /**< stem stride 1 up to this resolution, else 2 */
    nn_act stem_act;
    int first_width;
    nn_act first_act;
    int n_units, max_depth;
    ofa_unit_spec unit[OFA_MAX_UNITS];
    int n_ks, ks[OFA_MAX_CHOICES]; /**< kernel sizes, ascending */
    int n_e, e[OFA_MAX_CHOICES];   /**< expand ratios, ascending */
    int n_d, d[OFA_MAX_CHOICES];   /**< depths, ascending, max == max_depth */
    int head_expand;               /**< 1x1 conv after the last unit */
    int head_mix;                  /**< 1x1 feature mix after pooling; 0 = none */
    float dropout;                 /**< before the classifier, training only */
} ofa_space;

/** One sub-network. Values of slots beyond a unit's depth are kept but unused. */
typedef struct ofa_arch {
    int ks[OFA_MAX_SLOTS];
    int e[OFA_MAX_SLOTS];
    int d[OFA_MAX_UNITS];
    int r; /**< input resolution */
    /** Channels of each decoder level, coarse to fine, for a task with a decoder
     *  (space/stereo_space.h: one of the level's elastic widths); all 0 in classification,
     *  which has none, so its encodings and comparisons are unchanged. */
    int dw[OFA_MAX_DEC_LEVELS];
} ofa_arch;

/** OFA's make_divisible(v, 8): max(8, int(v + 4) // 8 * 8), plus 8 if below 0.9 v. */
int ofa_make_divisible(double v, int divisor);

/** The built-in CPU-sized default space (widths 16,24,40,64,96, head 384,
 *  resolutions 24,28,32, one input channel, 10 classes). */
void ofa_space_cpu_default(ofa_space *s);
/** OFA's MobileNetV3 w1.0 space (widths 24,40,80,112,160, head 960/1280). */
void ofa_space_mbv3_w10(ofa_space *s);

/**
 * Read a space from JSON text (the format of the models/ specs). Every field is
 * checked; @p err names the field and what is wrong. "task" is optional and
 * must be "classification"; a stereo spec ("task": "stereo") is refused with a
 * message pointing at stereo_space_load() (space/stereo_space.h).
 */
manta_status ofa_space_parse(const char *json, ofa_space *out, manta_err *err);
/**
 * Write @p s in the spec format that ofa_space_parse() reads, as a
 * malloc'd NUL-terminated string the caller frees (*out), so a checkpoint can
 * carry its space.
 */
manta_status ofa_space_to_json(const ofa_space *s, char **out, manta_err *err);

/** ofa_space_parse() on a file, or a built-in by name: "cpu-default" or "mbv3-w1.0". */
manta_status ofa_space_load(const char *path_or_name, ofa_space *out, manta_err *err);

/** Number of block slots (units x max depth) the encoding carries. */
static inline int ofa_slots(const ofa_space *s) { return s->n_units * s->max_depth; }

/** Largest / smallest sub-network at resolution @p r (0: the largest / smallest listed). */
void ofa_arch_max(const ofa_space *s, int r, ofa_arch *a);
void ofa_arch_min(const ofa_space *s, int r, ofa_arch *a);
/**
 * The uniform sub-network of kernel @p k, expand ratio @p e and depth @p d in
 * every unit and slot, at resolution @p r (values of the space: not checked
 * here; ofa_arch_validate() tells).
 */
void ofa_arch_uniform(const ofa_space *s, int k, int e, int d, int r, ofa_arch *a);
/** A uniformly random sub-network (each gene independently), resolution included. */
void ofa_arch_sample(const ofa_space *s, manta_rng *rng, ofa_arch *a);
/**
 * A random sub-network whose genes follow weights drawn for it: one weight
 * vector over the kernel sizes, one over the expand ratios and one over the
 * depths, each uniform on the simplex (flat Dirichlet), then every slot's
 * kernel and expand ratio and every unit's depth drawn from them; the
 * resolution uniformly. Over many draws every choice is as likely as in
 * ofa_arch_sample(), but single sub-networks range from nearly all-smallest
 * to nearly all-largest choices instead of clustering at the middle size,
 * so a set of them covers the small and large corners of the space.
 */
void ofa_arch_sample_mixed(const ofa_space *s, manta_rng *rng, ofa_arch *a);

/**
 * Whether @p a and @p b have the same blocks: the same depth in every unit and
 * the same kernel and expand ratio in every slot those depths use (slots a
 * depth skips are not compared). The resolution is not compared: true means
 * one sub-network, perhaps at two input sizes.
 */
bool ofa_arch_same_blocks(const ofa_space *s, const ofa_arch *a, const ofa_arch *b);

/** Check every value is one of the space's choices; @p err names the first that is not. */
manta_status ofa_arch_validate(const ofa_space *s, const ofa_arch *a, manta_err *err);

/**
 * Write @p a as OFA's JSON encoding into @p buf ({"ks":[...],"e":[...],"d":[...],"r":[R]}).
 * @return MANTA_ERR_INVALID_ARG when @p cap is too small.
 */
manta_status ofa_arch_to_json(const ofa_space *s, const ofa_arch *a, char *buf, size_t cap,
                              manta_err *err);
/** Parse OFA's encoding ("r" may be a number or a one-element list) and validate it. */
manta_status ofa_arch_parse(const ofa_space *s, const char *json, ofa_arch *a, manta_err *err);

/** Kinds of layers in a description. */
typedef enum ofa_layer_kind {
    OFA_L_CONV,   /**< dense KxK or 1x1 convolution */
    OFA_L_DWCONV, /**< depthwise convolution */
    OFA_L_SE,     /**< squeeze-and-excite (both 1x1 layers) */
    OFA_L_POOL,   /**< global average pool */
    OFA_L_LINEAR  /**< classifier */
} ofa_layer_kind;

typedef struct ofa_layer {
    char name[48]; /**< "stem", "u2.b1.expand", ... */
    ofa_layer_kind kind;
    int in_h, in_w, in_c, out_h, out_w, out_c;
    int kernel, stride;
    bool bn; /**< followed by batch norm */
    nn_act act;
    bool residual; /**< adds the block input after this layer */
    double macs;
    long params; /**< weights + biases + BN gamma/beta */
} ofa_layer;

/** Most layers a description can hold. */
#define OFA_MAX_LAYERS (8 + OFA_MAX_SLOTS * 4 + 8)

typedef struct ofa_desc {
    int n;
    ofa_layer layer[OFA_MAX_LAYERS];
    double macs;
    long params;
} ofa_desc;

/** Shapes, MACs and parameters of every layer of sub-network @p a (validated first). */
manta_status ofa_describe(const ofa_space *s, const ofa_arch *a, ofa_desc *out, manta_err *err);

#endif
