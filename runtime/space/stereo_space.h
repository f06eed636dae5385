/**
 * @file space.h
 * @brief The search space of the stereo depth supernet: a DispNetC-like network
 *        whose encoder is made of OFA's elastic MBConv units. Its spec (the
 *        "manta-ofa-space" format with "task": "stereo"), validation, the
 *        sub-network encoding (OFA's, through an ofa_space view of the encoder
 *        units), and a per-layer description with shapes, MACs and parameters.
 *
 * Network, for a left and a right image, each (N, 3, H, W), H x W the crop:
 *   stem: KxK conv stride 2 (pad K/2), BN, act.
 *   units u = 1..U (3 <= U <= OFA_MAX_UNITS), each of max_depth MBConv block
 *     slots exactly as in space/ofa_space.h (1x1 expand, BN, act; kxk depthwise, BN,
 *     act; SE; 1x1 project, BN; identity skip when stride 1 and in == out), the
 *     kernel sizes, expand ratios and depths elastic over the space's lists.
 *   The stem and units 1..corr_after_unit run on both views with shared weights.
 *   correlation: 1-D (nn/correlation.h, kernel 1) of the left and right outputs
 *     of unit corr_after_unit, displacements 0, s, 2s, .. <= corr_max_disp
 *     (columns of that map; s = corr_stride): D = corr_max_disp / s + 1 channels,
 *     no activation. redirect: 1x1 conv of the left features to redir_width, BN,
 *     leaky ReLU 0.1. Their concatenation [correlation, redirect] feeds units
 *     corr_after_unit+1..U.
 *   decoder: L levels, L = the stride-2 stages (the stem and every unit of
 *     stride 2), so the last unit's output is at 1/2^L. The coarsest prediction
 *     is a 3x3 conv (bias) of the last unit's output to 1 channel. Level
 *     i = 0..L-1 (coarse to fine) takes 1/2^(L-i) to 1/2^(L-i-1), W_i wide (the
 *     sub-network's dw[i], one of stereo_dec_width(s, i, 0..n_dec_ratios-1), at
 *     most dec_width[i]):
 *       deconv k4 s2 p1 (bias) + leaky ReLU 0.1 of the previous level's 3x3 conv
 *         output (of the last unit's output for i = 0) to W_i channels;
 *       concatenation [skip, the coarser prediction upsampled x2 bilinearly
 *         (nn/upsample.h, scale 1), deconv output] (the elastic part last, so
 *         a narrower level reads a prefix of the 3x3 conv's input channels);
 *       3x3 conv (bias) to W_i + leaky ReLU 0.1;
 *       3x3 conv (bias) to 1 channel: the prediction at that scale.
 *     A narrower level uses the first W_i channels of the largest one's
 *     weights (as the expand ratio does in the units).
 *     skip: the last tensor of the left path at that scale. The left path is the
 *       stem, units 1..corr_after_unit (the left view's outputs), the
 *       [correlation, redirect] concatenation, the remaining units; at full
 *       resolution it is the left image (3 channels). So the concatenation is
 *       the skip of the correlation's scale unless a unit of stride 1 follows it.
 *   Every prediction is a disparity in full-resolution pixels (the x2 upsampling
 *   multiplies by 1): L + 1 predictions, the coarsest first, the last H x W.
 *   loss: one weight per prediction (coarsest first) in each of n_rounds rounds,
 *   which training goes through in order (how long each lasts is the trainer's
 *   schedule); FADNet's rounds move the weight to the finest prediction.
 * Convolutions of the stem and the units have no bias (BN follows); the
 * redirect has BN; the decoder's layers have biases and no BN.
 *
 * Spec (JSON; every field required and checked, the message names the field):
 * @code
 *   {"format": "manta-ofa-space", "version": 1, "task": "stereo", "name": "stereo-cpu",
 *    "crop": {"height": 64, "width": 128}, "max_disp": 32,
 *    "kernel_sizes": [3, 5, 7], "expand_ratios": [3, 4, 6], "depths": [2, 3, 4],
 *    "stem": {"width": 16, "kernel": 3, "act": "h-swish"},
 *    "units": [{"width": 16, "stride": 2, "act": "relu", "se": false}, ...],
 *    "correlation": {"after_unit": 2, "max_disp": 8, "stride": 1, "redir_width": 16},
 *    "decoder": {"widths": [64, 48, 32, 24, 16], "width_ratios": [0.5, 0.75, 1]},
 *    "loss": {"rounds": [[0.005, 0.01, ...], ...]}}
 * @endcode
 * Unit activations are "relu" or "h-swish" (as in classification specs); the
 * stem's may also be "leaky-relu" (slope 0.1).
 *
 * Sub-networks are ofa_arch values: ks and e per slot, d per unit (the genes of
 * stereo_space_ofa_view()), r = the crop height (the only resolution; the input
 * size is the crop), and dw, the channels of each decoder level. Their JSON is
 * OFA's encoding with the decoder widths added,
 * {"ks":[..],"e":[..],"d":[..],"r":[H],"dw":[..]}.
 * The functions taking a space expect a valid one (stereo_space_validate(): the
 * built-ins and whatever the parser returns); stereo_describe() checks it.
 */
#ifndef MANTA_SPACE_STEREO_SPACE_H
#define MANTA_SPACE_STEREO_SPACE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/rng.h"
#include "core/status.h"
#include "space/act.h"
#include "space/ofa_space.h"

/** Most decoder levels: the stem and every unit of stride 2. */
#define STEREO_MAX_LEVELS OFA_MAX_DEC_LEVELS
/** Most predictions: one per level and the coarsest. */
#define STEREO_MAX_PREDS (STEREO_MAX_LEVELS + 1)
/** Most training crop sizes of a space. */
#define STEREO_MAX_CROPS 8
/** Most rounds of loss weights. */
#define STEREO_MAX_ROUNDS 8

typedef struct stereo_space {
    char name[64];
    int crop_h, crop_w; /**< the network's size: evaluation crops, and the training crop
                          *  without "crops"; multiples of 2^n_levels */
    /** "crops": the training crops, {height, width} each (multiples of 2^n_levels, wider
     *  than max_disp and the correlation's range, as the crop), one drawn per step; 0:
     *  the crop alone */
    int n_crops;
    int crops[STEREO_MAX_CROPS][2];
    int max_disp;                /**< largest disparity, in full-resolution pixels, < crop_w */
    int stem_width, stem_kernel; /**< stem kernel odd */
    nn_act stem_act;             /**< NN_ACT_RELU, NN_ACT_HSWISH or NN_ACT_LEAKY_RELU */
    int n_units;                 /**< 3 .. OFA_MAX_UNITS */
    int max_depth;               /**< the largest depth choice */
    ofa_unit_spec unit[OFA_MAX_UNITS];
    int n_ks, ks[OFA_MAX_CHOICES]; /**< kernel sizes, odd, ascending */
    int n_e, e[OFA_MAX_CHOICES];   /**< expand ratios, ascending */
    int n_d, d[OFA_MAX_CHOICES];   /**< depths, ascending */
    int corr_after_unit;           /**< 2 or 3 (< n_units): units 1..this run on both views */
    int corr_max_disp;             /**< largest displacement, in columns of the correlation's map */
    int corr_stride;               /**< displacement step, 1 .. corr_max_disp */
    int redir_width;               /**< channels of the 1x1 redirect of the left features */
    int n_levels;                  /**< decoder levels = stride-2 stages */
    int dec_width[STEREO_MAX_LEVELS]; /**< per level, coarse to fine: the largest width */
    int n_dec_ratios;                 /**< 1 .. OFA_MAX_CHOICES */
    /** elastic decoder width: fractions of dec_width[], ascending in (0, 1], the last 1
     *  (stereo_dec_width() rounds them to channels) */
    double dec_ratio[OFA_MAX_CHOICES];
    int n_rounds; /**< 1 .. STEREO_MAX_ROUNDS */
    /** loss weight of prediction p (0 = the coarsest .. n_levels = full
     *  resolution) in round r: finite, >= 0, some > 0 in every round */
    double loss_w[STEREO_MAX_ROUNDS][STEREO_MAX_PREDS];
} stereo_space;

/** The built-in CPU-sized space "stereo-cpu" (models/stereo_cpu.json): crops
 *  64 x 128, max_disp 32, stem 16, units 16, 24 | 32, 48, 64, 96, correlation
 *  after unit 2 at 1/4 (8 displacements), 5 decoder levels 64 .. 16 wide, each
 *  elastic at 0.5, 0.75 and 1 of that. */
void stereo_space_cpu(stereo_space *s);
/** The built-in DispNetC-sized space "stereo-gpu" (models/stereo_gpu.json):
 *  crops 384 x 768, max_disp 192, stem 64 (7x7), units 128, 128 | 256, 384,
 *  512, 512, correlation after unit 2 at 1/4 with max_disp 40 (DispNetC's: 160
 *  of the 192 px), redirect 64, 6 decoder levels 512, 256, 128, 64, 32, 16, each
 *  elastic at 0.5, 0.75 and 1 of that. */
void stereo_space_gpu(stereo_space *s);

/** Stride-2 stages of @p s: the stem and every unit of stride 2 (what
 *  n_levels must be). */
int stereo_stride2_stages(const stereo_space *s);
/** Down-sampling factor of the correlation's map: 2^(1 + the units of
 *  stride 2 among 1..corr_after_unit). */
int stereo_corr_scale(const stereo_space *s);
/** Channels of the correlation: corr_max_disp / corr_stride + 1. */
int stereo_corr_channels(const stereo_space *s);
/** Channels of decoder level @p level (0 = the coarsest) at width ratio @p choice
 *  (0 .. n_dec_ratios - 1): dec_width[level] * dec_ratio[choice] rounded to the nearest
 *  integer, at least 1. */
int stereo_dec_width(const stereo_space *s, int level, int choice);
/** Number of predictions: n_levels + 1. */
static inline int stereo_preds(const stereo_space *s) { return s->n_levels + 1; }

/** Training crop sizes of @p s: n_crops, or 1 (the crop) without "crops". */
int stereo_space_n_crops(const stereo_space *s);
/** Training crop @p i (0 .. stereo_space_n_crops() - 1) of @p s into *h, *w. */
void stereo_space_crop(const stereo_space *s, int i, int *h, int *w);
/** The size a training network is planned for: the largest height and the largest width
 *  of the crop and the training crops (every one of them fits in it). */
void stereo_space_plan_size(const stereo_space *s, int *h, int *w);

/**
 * Convolutions of the encoder whose kernels have taps that multiply only padding at an
 * input of @p h x @p w: the stem, then each unit's first block (its stride) and its later
 * blocks (stride 1), at the space's largest kernel. A tap at distance a from the centre of
 * a k-tap, stride-st convolution (padding k/2) over n rows reaches a real row only if some
 * output row y has 0 <= st y +- a < n; one that never does gets no gradient in training at
 * that size and keeps its initial value, which then acts on real features at any larger
 * size (the largest sub-network's predictions blow up there: docs/stereo.md, "Sizes").
 * @return how many such convolutions (0: every tap of every kernel is trained at h x w);
 *         @p what (may be NULL, @p cap bytes) gets the first one in words.
 */
int stereo_space_dead_taps(const stereo_space *s, int h, int w, char *what, size_t cap);

/**
 * Check that the fields are in range and line up: the units' strides give as
 * many stride-2 stages as the decoder has levels; the crop is divisible by
 * 2^n_levels; max_disp < crop width; corr_after_unit is 2 or 3 and a unit
 * follows it; the correlation's range, corr_max_disp x its scale, is at most
 * max_disp rounded up to the scale and its map is wider than corr_max_disp;
 * every loss round has a weight per prediction.
 * @return MANTA_ERR_FORMAT with one line naming the field ("space.decoder:
 *         \"widths\" ..."), or MANTA_OK.
 */
manta_status stereo_space_validate(const stereo_space *s, manta_err *err);

/**
 * Read a stereo space from JSON text (the format above) and validate it.
 * @p out is zeroed first, so two parses of one text compare equal with memcmp.
 * @return MANTA_ERR_FORMAT naming the field and what is wrong; a
 *         classification spec (no "task", or "task": "classification") is
 *         refused with a message pointing at ofa_space_load().
 */
manta_status stereo_space_parse(const char *json, stereo_space *out, manta_err *err);

/**
 * Write @p s in the format stereo_space_parse() reads, as a malloc'd
 * NUL-terminated string the caller frees (*out; NULL on error), so that a
 * checkpoint can carry its space.
 * @return MANTA_ERR_NO_MEMORY when cJSON cannot allocate.
 */
manta_status stereo_space_to_json(const stereo_space *s, char **out, manta_err *err);

/**
 * A built-in by name ("stereo-cpu", "stereo-gpu") or stereo_space_parse() of a
 * file. Errors name the file: MANTA_ERR_IO when it cannot be read,
 * MANTA_ERR_FORMAT when its content is refused.
 */
manta_status stereo_space_load(const char *path_or_name, stereo_space *out, manta_err *err);

/**
 * Whether @p path_or_name is a stereo space: true for the stereo built-ins and
 * for a file whose top-level "task" is "stereo"; false for the classification
 * built-ins and for any other readable file (left for ofa_space_load() to
 * accept or refuse), so a program can choose its loader.
 * @return MANTA_ERR_IO naming the file when it cannot be read (the message lists
 *         the built-ins of both tasks).
 */
manta_status stereo_spec_is_stereo(const char *path_or_name, bool *stereo, manta_err *err);

/**
 * The encoder of @p s as an ofa_space, for the ofa_arch functions: name, stem,
 * units, kernel sizes, expand ratios, depths, and one resolution, the crop
 * height. It is not a classification network (no first block, head or
 * classes: its first_width is the stem width, head_expand 0, classes 0);
 * describe sub-networks with stereo_describe(), not ofa_describe().
 */
void stereo_space_ofa_view(const stereo_space *s, ofa_space *view);

/** Largest / smallest sub-network (ofa_arch_max() / ofa_arch_min() of the view; every
 *  decoder level at its widest / narrowest width). */
void stereo_arch_max(const stereo_space *s, ofa_arch *a);
void stereo_arch_min(const stereo_space *s, ofa_arch *a);
/** A uniformly random sub-network (ofa_arch_sample() of the view, then each decoder
 *  level's width uniformly from the same @p rng). */
void stereo_arch_sample(const stereo_space *s, manta_rng *rng, ofa_arch *a);
/** A random sub-network with per-network choice weights (ofa_arch_sample_mixed() of the
 *  view; the decoder widths drawn as in stereo_arch_sample()). */
void stereo_arch_sample_mixed(const stereo_space *s, manta_rng *rng, ofa_arch *a);
/** Set the decoder widths of @p a: level i to stereo_dec_width(s, i, choice[i]), or, with
 *  @p choice NULL, every level to ratio @p uniform (0 .. n_dec_ratios - 1). */
void stereo_arch_set_dec(const stereo_space *s, const int *choice, int uniform, ofa_arch *a);
/** Check every gene is one of the space's choices (the decoder widths those of
 *  stereo_dec_width(), the entries beyond n_levels 0) and r is the crop height;
 *  @p err names the first that is not (MANTA_ERR_INVALID_ARG). */
manta_status stereo_arch_validate(const stereo_space *s, const ofa_arch *a, manta_err *err);
/** OFA's JSON encoding of @p a into @p buf (ofa_arch_to_json() of the view) with "dw",
 *  the decoder widths, after "r".
 *  @return MANTA_ERR_INVALID_ARG when @p cap is too small. */
manta_status stereo_arch_to_json(const stereo_space *s, const ofa_arch *a, char *buf, size_t cap,
                                 manta_err *err);
/**
 * Parse OFA's encoding with "dw" (required: one width per decoder level) and
 * validate it. "r" may be left out (it is the crop
 * height); when given it must be the crop height.
 * @return MANTA_ERR_INVALID_ARG naming the member that is wrong,
 *         MANTA_ERR_NO_MEMORY when cJSON cannot allocate.
 */
manta_status stereo_arch_parse(const stereo_space *s, const char *json, ofa_arch *a,
                               manta_err *err);

/** Kinds of layers in a stereo description. */
typedef enum stereo_layer_kind {
    STEREO_L_CONV,     /**< dense KxK or 1x1 convolution */
    STEREO_L_DWCONV,   /**< depthwise convolution */
    STEREO_L_SE,       /**< squeeze-and-excite (both 1x1 layers) */
    STEREO_L_CORR,     /**< 1-D correlation of the left and right features */
    STEREO_L_DECONV,   /**< transposed convolution k4 s2 p1 */
    STEREO_L_UPSAMPLE, /**< bilinear x2 upsampling of a prediction */
    STEREO_L_CONCAT    /**< channel concatenation */
} stereo_layer_kind;

/** Name of a layer kind ("conv", "dwconv", "se", "corr", "deconv", "upsample",
 *  "concat"). */
const char *stereo_layer_kind_name(stereo_layer_kind k);

typedef struct stereo_layer {
    char name[48]; /**< "stem", "u2.b1.expand", "corr", "redir", "d5.deconv", "d6.pred", ... */
    stereo_layer_kind kind;
    int in_h, in_w, in_c; /**< one input, one view (a concatenation: its output) */
    int out_h, out_w, out_c;
    int kernel, stride; /**< the correlation: kernel 1, its displacement stride */
    bool bn;            /**< followed by batch norm */
    bool bias;
    nn_act act;
    bool residual; /**< adds the block input after this layer */
    int views;     /**< 2: runs on the left and the right view, shared weights */
    double macs;   /**< per image pair, all views counted */
    long params;   /**< weights + biases + BN gamma/beta, counted once */
} stereo_layer;

/** Most layers a description can hold. */
#define STEREO_MAX_LAYERS (1 + OFA_MAX_SLOTS * 4 + 4 + STEREO_MAX_LEVELS * 5)

typedef struct stereo_desc {
    int n;
    stereo_layer layer[STEREO_MAX_LAYERS];
    double macs; /**< sum of the layers' */
    long params; /**< sum of the layers' */
} stereo_desc;

/**
 * Shapes, MACs and parameters of every layer of sub-network @p a of @p s, for
 * one image pair (N = 1), in the order they run (the left path; a shared
 * layer is listed once with views = 2 and the MACs of both views).
 * MACs: convolutions out_h*out_w*out_c*in_c*k*k (depthwise without in_c),
 * border taps included; the transposed convolution in_h*in_w*in_c*out_c*16
 * (its GEMM); SE 2*mid*se; the correlation the products that meet the image,
 * as nn_corr_macs(); upsampling and concatenation none.
 * @return MANTA_ERR_FORMAT from stereo_space_validate() or
 *         MANTA_ERR_INVALID_ARG from stereo_arch_validate() (nothing described),
 *         MANTA_OK otherwise.
 */
manta_status stereo_describe(const stereo_space *s, const ofa_arch *a, stereo_desc *out,
                             manta_err *err);

#endif
