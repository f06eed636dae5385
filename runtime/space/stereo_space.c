#include "space/stereo_space.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "space/spec_parse_impl.h"

/* Built-ins named when a spec file cannot be read. */
#define BUILTINS OFA_SPEC_BUILTINS ", stereo-cpu, stereo-gpu"

/* ---- built-ins ------------------------------------------------------------------------ */

static void set_units(stereo_space *s, const ofa_unit_spec *u, int n)
{
    s->n_units = n;
    ofa_spec_copy_units(s->unit, u, n);
}

/* FADNet's public schedule (notes: rounds 1, 3 and the last), written coarsest first. */
static void fadnet_rounds(stereo_space *s)
{
    static const double fine_first[3][7] = {{0.32, 0.16, 0.08, 0.04, 0.02, 0.01, 0.005},
                                            {0.8, 0.16, 0.04, 0.02, 0.01, 0.005, 0.0025},
                                            {1, 0, 0, 0, 0, 0, 0}};
    int np = stereo_preds(s);
    s->n_rounds = 3;
    for (int r = 0; r < 3; r++)
        for (int p = 0; p < np; p++)
            s->loss_w[r][p] = fine_first[r][np - 1 - p];
}

static void common_choices(stereo_space *s)
{
    ofa_spec_set_list(&s->n_ks, s->ks, (const int[]){3, 5, 7}, 3);
    ofa_spec_set_list(&s->n_e, s->e, (const int[]){3, 4, 6}, 3);
    ofa_spec_set_list(&s->n_d, s->d, (const int[]){2, 3, 4}, 3);
    s->max_depth = 4;
    static const double ratios[3] = {0.5, 0.75, 1.0};
    s->n_dec_ratios = 3;
    memcpy(s->dec_ratio, ratios, sizeof ratios);
}

void stereo_space_cpu(stereo_space *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "stereo-cpu");
    s->crop_h = 64, s->crop_w = 128;
    /* training crops as tall as wide and taller than wide too: at 64 rows the 1/32 maps
     * have 2, where the 7x7 kernels' outer rows never see the input (docs/stereo.md) */
    s->n_crops = 3;
    memcpy(s->crops, (const int[][2]){{64, 128}, {96, 96}, {128, 64}}, sizeof(int[3][2]));
    s->max_disp = 32;
    common_choices(s);
    s->stem_width = 16, s->stem_kernel = 3, s->stem_act = NN_ACT_HSWISH;
    const ofa_unit_spec u[6] = {{16, 2, NN_ACT_RELU, false},  {24, 1, NN_ACT_RELU, false},
                                {32, 2, NN_ACT_RELU, true},   {48, 2, NN_ACT_HSWISH, false},
                                {64, 2, NN_ACT_HSWISH, true}, {96, 1, NN_ACT_HSWISH, true}};
    set_units(s, u, 6);
    s->corr_after_unit = 2, s->corr_max_disp = 8, s->corr_stride = 1, s->redir_width = 16;
    ofa_spec_set_list(&s->n_levels, s->dec_width, (const int[]){64, 48, 32, 24, 16}, 5);
    fadnet_rounds(s);
}

void stereo_space_gpu(stereo_space *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "stereo-gpu");
    s->crop_h = 384, s->crop_w = 768;
    s->max_disp = 192;
    common_choices(s);
    s->stem_width = 64, s->stem_kernel = 7, s->stem_act = NN_ACT_HSWISH;
    const ofa_unit_spec u[6] = {{128, 2, NN_ACT_RELU, false},   {128, 1, NN_ACT_RELU, true},
                                {256, 2, NN_ACT_HSWISH, false}, {384, 2, NN_ACT_HSWISH, true},
                                {512, 2, NN_ACT_HSWISH, false}, {512, 2, NN_ACT_HSWISH, false}};
    set_units(s, u, 6);
    s->corr_after_unit = 2, s->corr_max_disp = 40, s->corr_stride = 1, s->redir_width = 64;
    ofa_spec_set_list(&s->n_levels, s->dec_width, (const int[]){512, 256, 128, 64, 32, 16}, 6);
    fadnet_rounds(s);
}

/* ---- derived sizes -------------------------------------------------------------------- */

int stereo_stride2_stages(const stereo_space *s)
{
    int n = 1; /* the stem */
    for (int u = 0; u < s->n_units && u < OFA_MAX_UNITS; u++)
        n += s->unit[u].stride == 2;
    return n;
}

int stereo_corr_scale(const stereo_space *s)
{
    int scale = 2;
    for (int u = 0; u < s->corr_after_unit && u < s->n_units && u < OFA_MAX_UNITS; u++)
        scale *= s->unit[u].stride == 2 ? 2 : 1;
    return scale;
}

int stereo_dec_width(const stereo_space *s, int level, int choice)
{
    long w = lround(s->dec_width[level] * s->dec_ratio[choice]);
    return w < 1 ? 1 : (int)w;
}

int stereo_corr_channels(const stereo_space *s)
{
    return s->corr_stride >= 1 && s->corr_max_disp >= 0 ? s->corr_max_disp / s->corr_stride + 1 : 0;
}

int stereo_space_n_crops(const stereo_space *s) { return s->n_crops > 0 ? s->n_crops : 1; }

void stereo_space_crop(const stereo_space *s, int i, int *h, int *w)
{
    const bool own = s->n_crops > 0 && i >= 0 && i < s->n_crops;
    *h = own ? s->crops[i][0] : s->crop_h;
    *w = own ? s->crops[i][1] : s->crop_w;
}

void stereo_space_plan_size(const stereo_space *s, int *h, int *w)
{
    *h = s->crop_h, *w = s->crop_w;
    for (int i = 0; i < s->n_crops && i < STEREO_MAX_CROPS; i++) {
        *h = s->crops[i][0] > *h ? s->crops[i][0] : *h;
        *w = s->crops[i][1] > *w ? s->crops[i][1] : *w;
    }
}

/* The smallest distance a (1 .. k/2) from the centre at which a tap of a k-tap convolution
 * of stride @p st (padding k/2) over @p n inputs multiplies padding for every output, with
 * the side in *side (-1 before the centre, +1 after); 0 when every tap reaches an input. */
static int dead_offset(int n, int k, int st, int *side)
{
    const int no = (n - 1) / st + 1;
    for (int a = 1; a <= k / 2; a++)
        for (int sg = -1; sg <= 1; sg += 2) {
            bool reached = false;
            for (int y = 0; y < no && !reached; y++)
                reached = st * y + sg * a >= 0 && st * y + sg * a < n;
            if (!reached) {
                *side = sg;
                return a;
            }
        }
    return 0;
}

/* One convolution of @p s: count it when a tap is dead, describe the first. */
static int check_taps(const char *name, int h, int w, int k, int st, char *what, size_t cap,
                      int found)
{
    int sy = 0, sx = 0;
    const int dy = dead_offset(h, k, st, &sy), dx = dead_offset(w, k, st, &sx);
    if (!dy && !dx)
        return found;
    if (!found && what && cap)
        snprintf(what, cap,
                 "%s: %dx%d kernels on %dx%d maps (stride %d): their taps %d %s %s "
                 "the centre multiply only padding",
                 name, k, k, w, h, st, dy ? dy : dx, dy ? "rows" : "columns",
                 dy ? (sy < 0 ? "above" : "below") : (sx < 0 ? "left of" : "right of"));
    return found + 1;
}

int stereo_space_dead_taps(const stereo_space *s, int h, int w, char *what, size_t cap)
{
    if (what && cap)
        what[0] = '\0';
    int found = check_taps("stem", h, w, s->stem_kernel, 2, what, cap, 0);
    h = (h - 1) / 2 + 1, w = (w - 1) / 2 + 1;
    const int k = s->ks[s->n_ks - 1];
    for (int u = 0; u < s->n_units; u++) {
        char name[48];
        const int st = s->unit[u].stride;
        snprintf(name, sizeof name, "unit %d block 1", u + 1);
        found = check_taps(name, h, w, k, st, what, cap, found);
        h = (h - 1) / st + 1, w = (w - 1) / st + 1;
        if (s->max_depth > 1) {
            snprintf(name, sizeof name, "unit %d blocks 2-%d", u + 1, s->max_depth);
            found = check_taps(name, h, w, k, 1, what, cap, found);
        }
    }
    return found;
}

/* ---- validation ----------------------------------------------------------------------- */

static manta_status check_choices(const char *key, int n, const int *v, int lo, int hi,
                                  manta_err *err)
{
    if (n < 1 || n > OFA_MAX_CHOICES)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space: \"%s\" must be a list of 1 to %d values", key,
                             OFA_MAX_CHOICES);
    for (int i = 0; i < n; i++)
        if (v[i] < lo || v[i] > hi || (i > 0 && v[i] <= v[i - 1]))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space: \"%s\"[%d] must be an integer in [%d, %d], ascending", key,
                                 i, lo, hi);
    return MANTA_OK;
}

/* The decoder's width ratios: ascending in (0, 1], the last 1, and distinct widths at
 * every level. */
static manta_status check_dec_ratios(const stereo_space *s, manta_err *err)
{
    const int n = s->n_dec_ratios;
    if (n < 1 || n > OFA_MAX_CHOICES)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.decoder: \"width_ratios\" must list 1 to %d ratios",
                             OFA_MAX_CHOICES);
    for (int j = 0; j < n; j++)
        if (!(s->dec_ratio[j] > 0 && s->dec_ratio[j] <= 1) ||
            (j > 0 && !(s->dec_ratio[j] > s->dec_ratio[j - 1])))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space.decoder: \"width_ratios\"[%d] is %g: ratios ascend in "
                                 "(0, 1]",
                                 j, s->dec_ratio[j]);
    if (s->dec_ratio[n - 1] != 1.0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.decoder: \"width_ratios\" must end with 1 (the full width), "
                             "not %g",
                             s->dec_ratio[n - 1]);
    for (int i = 0; i < s->n_levels; i++)
        for (int j = 1; j < n; j++)
            if (stereo_dec_width(s, i, j) == stereo_dec_width(s, i, j - 1))
                return manta_err_set(err, MANTA_ERR_FORMAT,
                                     "space.decoder: \"width_ratios\" %g and %g give level %d "
                                     "(%d wide) the same %d channels",
                                     s->dec_ratio[j - 1], s->dec_ratio[j], i, s->dec_width[i],
                                     stereo_dec_width(s, i, j));
    return MANTA_OK;
}

/* A size's sides in range; max_disp below its width. */
static manta_status check_size(const stereo_space *s, const char *where, int h, int w,
                               manta_err *err)
{
    if (h < 2 || h > 16384)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"height\" is %d, outside [2, 16384]",
                             where, h);
    if (w < 2 || w > 16384)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"width\" is %d, outside [2, 16384]",
                             where, w);
    if (s->max_disp >= w)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: \"width\" %d is not above \"max_disp\" %d px", where, w,
                             s->max_disp);
    return MANTA_OK;
}

/* A size the network's stride-2 stages divide, whose correlation map is wider than the
 * correlation's range (after the units were checked). */
static manta_status check_fit(const stereo_space *s, const char *where, int h, int w,
                              manta_err *err)
{
    const int stages = stereo_stride2_stages(s), full = 1 << stages;
    if (h % full || w % full)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: \"%s\" %d is not a multiple of 2^%d = %d (the stride-2 stages)",
                             where, h % full ? "height" : "width", h % full ? h : w, stages, full);
    const int scale = stereo_corr_scale(s);
    if (s->corr_max_disp >= w / scale)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.correlation: \"max_disp\" %d is not below the width %d of "
                             "the map at 1/%d (%s)",
                             s->corr_max_disp, w / scale, scale, where);
    return MANTA_OK;
}

static bool unit_act(nn_act a) { return a == NN_ACT_RELU || a == NN_ACT_HSWISH; }

manta_status stereo_space_validate(const stereo_space *s, manta_err *err)
{
    if (!memchr(s->name, '\0', sizeof s->name) || !s->name[0])
        return manta_err_set(err, MANTA_ERR_FORMAT, "space: \"name\" must be a short string");
    MANTA_TRY(check_size(s, "space.crop", s->crop_h, s->crop_w, err));
    if (s->max_disp < 1 || s->max_disp >= s->crop_w)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space: \"max_disp\" is %d px, outside [1, crop width %d - 1]",
                             s->max_disp, s->crop_w);
    if (s->n_crops < 0 || s->n_crops > STEREO_MAX_CROPS)
        return manta_err_set(err, MANTA_ERR_FORMAT, "space: \"crops\" lists %d sizes, at most %d",
                             s->n_crops, STEREO_MAX_CROPS);
    MANTA_TRY(check_choices("kernel_sizes", s->n_ks, s->ks, 1, 9, err));
    MANTA_TRY(check_choices("expand_ratios", s->n_e, s->e, 1, 8, err));
    MANTA_TRY(check_choices("depths", s->n_d, s->d, 1, OFA_MAX_DEPTH, err));
    for (int i = 0; i < s->n_ks; i++)
        if (s->ks[i] % 2 == 0)
            return manta_err_set(err, MANTA_ERR_FORMAT, "space: \"kernel_sizes\": %d is not odd",
                                 s->ks[i]);
    if (s->max_depth != s->d[s->n_d - 1])
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space: max_depth %d is not the largest of \"depths\" (%d)",
                             s->max_depth, s->d[s->n_d - 1]);
    if (s->stem_width < 1 || s->stem_width > 4096)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.stem: \"width\" is %d, outside [1, 4096]", s->stem_width);
    if (s->stem_kernel < 1 || s->stem_kernel > 9 || s->stem_kernel % 2 == 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.stem: \"kernel\" is %d, not an odd size in [1, 9]",
                             s->stem_kernel);
    if (!unit_act(s->stem_act) && s->stem_act != NN_ACT_LEAKY_RELU)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.stem: \"act\" must be \"relu\", \"h-swish\" or \"leaky-relu\"");
    if (s->n_units < 3 || s->n_units > OFA_MAX_UNITS)
        return manta_err_set(err, MANTA_ERR_FORMAT, "space: \"units\" must list 3 to %d units",
                             OFA_MAX_UNITS);
    for (int u = 0; u < s->n_units; u++) {
        const ofa_unit_spec *us = &s->unit[u];
        if (us->width < 1 || us->width > 4096)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space.units[%d]: \"width\" is %d, outside [1, 4096]", u,
                                 us->width);
        if (us->stride != 1 && us->stride != 2)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space.units[%d]: \"stride\" is %d, not 1 or 2", u, us->stride);
        if (!unit_act(us->act))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space.units[%d]: \"act\" must be \"relu\" or \"h-swish\"", u);
    }
    if (s->corr_after_unit < 2 || s->corr_after_unit > 3 || s->corr_after_unit >= s->n_units)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.correlation: \"after_unit\" is %d: must be 2 or 3, and below "
                             "the %d units",
                             s->corr_after_unit, s->n_units);
    if (s->redir_width < 1 || s->redir_width > 4096)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.correlation: \"redir_width\" is %d, outside [1, 4096]",
                             s->redir_width);
    if (s->corr_max_disp < 1 || s->corr_stride < 1 || s->corr_stride > s->corr_max_disp)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.correlation: \"max_disp\" %d and \"stride\" %d: need 1 <= "
                             "stride <= max_disp",
                             s->corr_max_disp, s->corr_stride);

    /* the units line up with the decoder and the crop */
    int stages = stereo_stride2_stages(s);
    if (s->n_levels != stages)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.decoder: \"widths\" has %d levels, but the stem and the "
                             "units' strides make %d stride-2 stages (one level each)",
                             s->n_levels, stages);
    for (int i = 0; i < s->n_levels; i++)
        if (s->dec_width[i] < 1 || s->dec_width[i] > 4096)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space.decoder: \"widths\"[%d] is %d, outside [1, 4096]", i,
                                 s->dec_width[i]);
    MANTA_TRY(check_dec_ratios(s, err));
    int scale = stereo_corr_scale(s);
    int reach = (s->max_disp + scale - 1) / scale;
    if (s->corr_max_disp > reach)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.correlation: \"max_disp\" is %d at 1/%d (%d px), beyond "
                             "max_disp %d px (at most %d there)",
                             s->corr_max_disp, scale, s->corr_max_disp * scale, s->max_disp, reach);
    MANTA_TRY(check_fit(s, "space.crop", s->crop_h, s->crop_w, err));
    for (int i = 0; i < s->n_crops; i++) {
        char where[32];
        snprintf(where, sizeof where, "space.crops[%d]", i);
        MANTA_TRY(check_size(s, where, s->crops[i][0], s->crops[i][1], err));
        MANTA_TRY(check_fit(s, where, s->crops[i][0], s->crops[i][1], err));
    }
    if (s->n_rounds < 1 || s->n_rounds > STEREO_MAX_ROUNDS)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.loss: \"rounds\" must list 1 to %d weight vectors",
                             STEREO_MAX_ROUNDS);
    for (int r = 0; r < s->n_rounds; r++) {
        double sum = 0;
        for (int p = 0; p < stereo_preds(s); p++) {
            double w = s->loss_w[r][p];
            if (!isfinite(w) || w < 0)
                return manta_err_set(err, MANTA_ERR_FORMAT,
                                     "space.loss: \"rounds\"[%d][%d] must be a finite number >= 0",
                                     r, p);
            sum += w;
        }
        if (!(sum > 0))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space.loss: \"rounds\"[%d] has no weight above 0", r);
    }
    return MANTA_OK;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static manta_status need_int(const cJSON *o, const char *key, int lo, int hi, int *out,
                             const char *ctx, manta_err *err)
{
    if (!manta_json_int(o, key, lo, hi, out))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" must be an integer in [%d, %d]",
                             ctx, key, lo, hi);
    return MANTA_OK;
}

static manta_status need_object(const cJSON *j, const char *key, const cJSON **out, manta_err *err)
{
    *out = manta_json_object(j, key);
    if (!*out)
        return manta_err_set(err, MANTA_ERR_FORMAT, "space: \"%s\" must be an object", key);
    return MANTA_OK;
}

static manta_status parse_obj(const cJSON *j, void *out, manta_err *err)
{
    stereo_space *s = out;
    MANTA_TRY(ofa_spec_format(j, err));
    const char *task = manta_json_string(j, "task");
    if (!task || !strcmp(task, "classification"))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space: \"task\" is %s: a classification space, read by "
                             "ofa_space_load() (space/ofa_space.h), not by the stereo loader",
                             task ? "\"classification\"" : "absent");
    if (strcmp(task, "stereo") != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space: \"task\" must be \"stereo\" (or \"classification\")");
    int version;
    MANTA_TRY(need_int(j, "version", 1, 1, &version, "space", err));
    MANTA_TRY(ofa_spec_name(j, s->name, sizeof s->name, err));

    const cJSON *o;
    MANTA_TRY(need_object(j, "crop", &o, err));
    MANTA_TRY(need_int(o, "height", 2, 16384, &s->crop_h, "space.crop", err));
    MANTA_TRY(need_int(o, "width", 2, 16384, &s->crop_w, "space.crop", err));
    MANTA_TRY(need_int(j, "max_disp", 1, 16384, &s->max_disp, "space", err));
    const cJSON *crops = cJSON_GetObjectItemCaseSensitive(j, "crops");
    if (crops) {
        if (!cJSON_IsArray(crops) || cJSON_GetArraySize(crops) < 1 ||
            cJSON_GetArraySize(crops) > STEREO_MAX_CROPS)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space: \"crops\" must list 1 to %d sizes {\"height\", \"width\"}",
                                 STEREO_MAX_CROPS);
        const cJSON *c;
        cJSON_ArrayForEach(c, crops)
        {
            char where[32];
            snprintf(where, sizeof where, "space.crops[%d]", s->n_crops);
            if (!cJSON_IsObject(c))
                return manta_err_set(err, MANTA_ERR_FORMAT, "%s: not an object", where);
            MANTA_TRY(need_int(c, "height", 2, 16384, &s->crops[s->n_crops][0], where, err));
            MANTA_TRY(need_int(c, "width", 2, 16384, &s->crops[s->n_crops][1], where, err));
            s->n_crops++;
        }
    }
    MANTA_TRY(ofa_spec_choices(j, &s->n_ks, s->ks, &s->n_e, s->e, &s->n_d, s->d, err));
    s->max_depth = s->d[s->n_d - 1];

    MANTA_TRY(need_object(j, "stem", &o, err));
    MANTA_TRY(need_int(o, "width", 1, 4096, &s->stem_width, "space.stem", err));
    MANTA_TRY(need_int(o, "kernel", 1, 9, &s->stem_kernel, "space.stem", err));
    MANTA_TRY(ofa_spec_act(o, "act", true, &s->stem_act, "space.stem", err));

    MANTA_TRY(ofa_spec_units(j, 3, need_int, s->unit, &s->n_units, err));

    MANTA_TRY(need_object(j, "correlation", &o, err));
    MANTA_TRY(need_int(o, "after_unit", 2, 3, &s->corr_after_unit, "space.correlation", err));
    MANTA_TRY(need_int(o, "max_disp", 1, 4096, &s->corr_max_disp, "space.correlation", err));
    MANTA_TRY(need_int(o, "stride", 1, 4096, &s->corr_stride, "space.correlation", err));
    MANTA_TRY(need_int(o, "redir_width", 1, 4096, &s->redir_width, "space.correlation", err));

    MANTA_TRY(need_object(j, "decoder", &o, err));
    MANTA_TRY(ofa_spec_list(o, "widths", STEREO_MAX_LEVELS, 1, 4096, false, &s->n_levels,
                            s->dec_width, "space.decoder", err));
    const cJSON *ratios = manta_json_array(o, "width_ratios", -1);
    s->n_dec_ratios = cJSON_GetArraySize(ratios);
    if (!ratios || s->n_dec_ratios < 1 || s->n_dec_ratios > OFA_MAX_CHOICES)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.decoder: \"width_ratios\" must list 1 to %d ratios (the "
                             "elastic width of every level, ascending, the last 1)",
                             OFA_MAX_CHOICES);
    for (int j = 0; j < s->n_dec_ratios; j++) {
        const cJSON *v = cJSON_GetArrayItem(ratios, j);
        if (!cJSON_IsNumber(v))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space.decoder: \"width_ratios\"[%d] is not a number", j);
        s->dec_ratio[j] = v->valuedouble;
    }

    MANTA_TRY(need_object(j, "loss", &o, err));
    const cJSON *rounds = manta_json_array(o, "rounds", -1);
    s->n_rounds = cJSON_GetArraySize(rounds);
    if (!rounds || s->n_rounds < 1 || s->n_rounds > STEREO_MAX_ROUNDS)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space.loss: \"rounds\" must list 1 to %d weight vectors",
                             STEREO_MAX_ROUNDS);
    for (int r = 0; r < s->n_rounds; r++) {
        const cJSON *w = cJSON_GetArrayItem(rounds, r);
        int np = cJSON_GetArraySize(w);
        if (!cJSON_IsArray(w) || np != stereo_preds(s))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "space.loss: \"rounds\"[%d] must list %d weights (one per "
                                 "prediction, coarsest first: %d decoder levels + 1)",
                                 r, stereo_preds(s), s->n_levels);
        for (int p = 0; p < np; p++) {
            const cJSON *v = cJSON_GetArrayItem(w, p);
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
                return manta_err_set(err, MANTA_ERR_FORMAT,
                                     "space.loss: \"rounds\"[%d][%d] must be a finite number >= 0",
                                     r, p);
            s->loss_w[r][p] = v->valuedouble;
        }
    }
    return stereo_space_validate(s, err);
}

manta_status stereo_space_parse(const char *json, stereo_space *out, manta_err *err)
{
    return ofa_spec_parse_text(json, parse_obj, out, sizeof *out, err);
}

manta_status stereo_space_load(const char *path_or_name, stereo_space *out, manta_err *err)
{
    if (!strcmp(path_or_name, "stereo-cpu")) {
        stereo_space_cpu(out);
        return MANTA_OK;
    }
    if (!strcmp(path_or_name, "stereo-gpu")) {
        stereo_space_gpu(out);
        return MANTA_OK;
    }
    return ofa_spec_load_file(path_or_name, BUILTINS, parse_obj, out, sizeof *out, err);
}

manta_status stereo_spec_is_stereo(const char *path_or_name, bool *stereo, manta_err *err)
{
    *stereo = false;
    if (!strcmp(path_or_name, "stereo-cpu") || !strcmp(path_or_name, "stereo-gpu")) {
        *stereo = true;
        return MANTA_OK;
    }
    if (!strcmp(path_or_name, "cpu-default") || !strcmp(path_or_name, "mbv3-w1.0"))
        return MANTA_OK;
    char *buf;
    MANTA_TRY(ofa_spec_read_file(path_or_name, BUILTINS, &buf, err));
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    const char *task = manta_json_string(j, "task");
    *stereo = task && !strcmp(task, "stereo");
    cJSON_Delete(j);
    return MANTA_OK;
}

static const char *act_json(nn_act a)
{
    return a == NN_ACT_RELU ? "relu" : a == NN_ACT_LEAKY_RELU ? "leaky-relu" : "h-swish";
}

/* cJSON_Add* return NULL when out of memory; the object is then incomplete and
 * the caller frees it. */
static bool add_units(cJSON *units, const stereo_space *s)
{
    for (int u = 0; u < s->n_units; u++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(units, o))
            return cJSON_Delete(o), false;
        if (!cJSON_AddNumberToObject(o, "width", s->unit[u].width) ||
            !cJSON_AddNumberToObject(o, "stride", s->unit[u].stride) ||
            !cJSON_AddStringToObject(o, "act", act_json(s->unit[u].act)) ||
            !cJSON_AddBoolToObject(o, "se", s->unit[u].se))
            return false;
    }
    return true;
}

static bool add_rounds(cJSON *rounds, const stereo_space *s)
{
    for (int r = 0; r < s->n_rounds; r++) {
        cJSON *w = cJSON_CreateDoubleArray(s->loss_w[r], stereo_preds(s));
        if (!w || !cJSON_AddItemToArray(rounds, w))
            return cJSON_Delete(w), false;
    }
    return true;
}

static bool build_json(cJSON *j, const stereo_space *s)
{
    cJSON *crop = NULL;
    bool ok = cJSON_AddStringToObject(j, "format", "manta-ofa-space") &&
              cJSON_AddNumberToObject(j, "version", 1) &&
              cJSON_AddStringToObject(j, "task", "stereo") &&
              cJSON_AddStringToObject(j, "name", s->name) &&
              (crop = cJSON_AddObjectToObject(j, "crop")) &&
              cJSON_AddNumberToObject(crop, "height", s->crop_h) &&
              cJSON_AddNumberToObject(crop, "width", s->crop_w) &&
              cJSON_AddNumberToObject(j, "max_disp", s->max_disp);
    if (!ok)
        return false;
    cJSON *crops = s->n_crops > 0 ? cJSON_AddArrayToObject(j, "crops") : NULL;
    if (s->n_crops > 0 && !crops)
        return false;
    for (int i = 0; i < s->n_crops; i++) {
        cJSON *c = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(crops, c))
            return cJSON_Delete(c), false;
        if (!cJSON_AddNumberToObject(c, "height", s->crops[i][0]) ||
            !cJSON_AddNumberToObject(c, "width", s->crops[i][1]))
            return false;
    }
    cJSON *lists[3] = {cJSON_CreateIntArray(s->ks, s->n_ks), cJSON_CreateIntArray(s->e, s->n_e),
                       cJSON_CreateIntArray(s->d, s->n_d)};
    const char *keys[3] = {"kernel_sizes", "expand_ratios", "depths"};
    for (int i = 0; i < 3; i++)
        if (!lists[i] || !cJSON_AddItemToObject(j, keys[i], lists[i])) {
            for (int k = i; k < 3; k++)
                cJSON_Delete(lists[k]);
            return false;
        }
    cJSON *stem = cJSON_AddObjectToObject(j, "stem");
    if (!stem || !cJSON_AddNumberToObject(stem, "width", s->stem_width) ||
        !cJSON_AddNumberToObject(stem, "kernel", s->stem_kernel) ||
        !cJSON_AddStringToObject(stem, "act", act_json(s->stem_act)))
        return false;
    cJSON *units = cJSON_AddArrayToObject(j, "units");
    if (!units || !add_units(units, s))
        return false;
    cJSON *corr = cJSON_AddObjectToObject(j, "correlation");
    if (!corr || !cJSON_AddNumberToObject(corr, "after_unit", s->corr_after_unit) ||
        !cJSON_AddNumberToObject(corr, "max_disp", s->corr_max_disp) ||
        !cJSON_AddNumberToObject(corr, "stride", s->corr_stride) ||
        !cJSON_AddNumberToObject(corr, "redir_width", s->redir_width))
        return false;
    cJSON *dec = cJSON_AddObjectToObject(j, "decoder");
    cJSON *widths = cJSON_CreateIntArray(s->dec_width, s->n_levels);
    if (!dec || !widths || !cJSON_AddItemToObject(dec, "widths", widths))
        return cJSON_Delete(widths), false;
    cJSON *ratios = cJSON_CreateDoubleArray(s->dec_ratio, s->n_dec_ratios);
    if (!ratios || !cJSON_AddItemToObject(dec, "width_ratios", ratios))
        return cJSON_Delete(ratios), false;
    cJSON *loss = cJSON_AddObjectToObject(j, "loss");
    cJSON *rounds = loss ? cJSON_AddArrayToObject(loss, "rounds") : NULL;
    return rounds && add_rounds(rounds, s);
}

manta_status stereo_space_to_json(const stereo_space *s, char **out, manta_err *err)
{
    *out = NULL;
    cJSON *j = cJSON_CreateObject();
    if (j && build_json(j, s))
        *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!*out)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "space '%s': out of memory", s->name);
    return MANTA_OK;
}

/* ---- architectures --------------------------------------------------------------------- */

void stereo_space_ofa_view(const stereo_space *s, ofa_space *v)
{
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", s->name);
    v->in_channels = 3;
    v->n_res = 1;
    v->res[0] = s->crop_h;
    v->stem_width = s->stem_width;
    v->stem_kernel = s->stem_kernel;
    v->stem_stride1_max_res = 0; /* always stride 2 */
    v->stem_act = s->stem_act;
    v->first_width = s->stem_width;
    v->first_act = s->stem_act;
    v->n_units = s->n_units;
    v->max_depth = s->max_depth;
    ofa_spec_copy_units(v->unit, s->unit, s->n_units < OFA_MAX_UNITS ? s->n_units : OFA_MAX_UNITS);
    ofa_spec_set_list(&v->n_ks, v->ks, s->ks, s->n_ks);
    ofa_spec_set_list(&v->n_e, v->e, s->e, s->n_e);
    ofa_spec_set_list(&v->n_d, v->d, s->d, s->n_d);
}

void stereo_arch_set_dec(const stereo_space *s, const int *choice, int uniform, ofa_arch *a)
{
    memset(a->dw, 0, sizeof a->dw);
    for (int i = 0; i < s->n_levels; i++)
        a->dw[i] = stereo_dec_width(s, i, choice ? choice[i] : uniform);
}

void stereo_arch_max(const stereo_space *s, ofa_arch *a)
{
    ofa_space v;
    stereo_space_ofa_view(s, &v);
    ofa_arch_max(&v, 0, a);
    stereo_arch_set_dec(s, NULL, s->n_dec_ratios - 1, a);
}

void stereo_arch_min(const stereo_space *s, ofa_arch *a)
{
    ofa_space v;
    stereo_space_ofa_view(s, &v);
    ofa_arch_min(&v, 0, a);
    stereo_arch_set_dec(s, NULL, 0, a);
}

/* Each decoder level's width uniformly from @p rng. */
static void sample_dec(const stereo_space *s, manta_rng *rng, ofa_arch *a)
{
    int choice[STEREO_MAX_LEVELS];
    for (int i = 0; i < s->n_levels; i++)
        choice[i] = (int)manta_rng_below(rng, (uint32_t)s->n_dec_ratios);
    stereo_arch_set_dec(s, choice, 0, a);
}

void stereo_arch_sample(const stereo_space *s, manta_rng *rng, ofa_arch *a)
{
    ofa_space v;
    stereo_space_ofa_view(s, &v);
    ofa_arch_sample(&v, rng, a);
    sample_dec(s, rng, a);
}

void stereo_arch_sample_mixed(const stereo_space *s, manta_rng *rng, ofa_arch *a)
{
    ofa_space v;
    stereo_space_ofa_view(s, &v);
    ofa_arch_sample_mixed(&v, rng, a);
    sample_dec(s, rng, a);
}

manta_status stereo_arch_validate(const stereo_space *s, const ofa_arch *a, manta_err *err)
{
    ofa_space v;
    stereo_space_ofa_view(s, &v);
    if (a->r != s->crop_h)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "architecture: \"r\" is %d, not the crop height %d of space '%s'",
                             a->r, s->crop_h, s->name);
    MANTA_TRY(ofa_arch_validate(&v, a, err));
    for (int i = 0; i < STEREO_MAX_LEVELS; i++) {
        bool ok = i >= s->n_levels && a->dw[i] == 0;
        for (int j = 0; j < s->n_dec_ratios && i < s->n_levels && !ok; j++)
            ok = a->dw[i] == stereo_dec_width(s, i, j);
        if (!ok)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "architecture: dw[%d] = %d is not a width of decoder level %d of "
                                 "space '%s'",
                                 i, a->dw[i], i, s->name);
    }
    return MANTA_OK;
}

manta_status stereo_arch_to_json(const stereo_space *s, const ofa_arch *a, char *buf, size_t cap,
                                 manta_err *err)
{
    ofa_space v;
    stereo_space_ofa_view(s, &v);
    MANTA_TRY(ofa_arch_to_json(&v, a, buf, cap, err));
    size_t pos = strlen(buf) - 1; /* over the closing brace */
    for (int i = 0; i < s->n_levels; i++)
        pos += (size_t)snprintf(buf + (pos < cap ? pos : cap), pos < cap ? cap - pos : 0, "%s%d",
                                i ? "," : ",\"dw\":[", a->dw[i]);
    pos += (size_t)snprintf(buf + (pos < cap ? pos : cap), pos < cap ? cap - pos : 0, "]}");
    if (pos >= cap)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "architecture JSON needs %zu bytes, buffer has %zu", pos + 1, cap);
    return MANTA_OK;
}

manta_status stereo_arch_parse(const stereo_space *s, const char *json, ofa_arch *a, manta_err *err)
{
    memset(a, 0, sizeof *a);
    cJSON *j = cJSON_Parse(json);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "architecture: not a JSON object");
    }
    /* "r" (a number or a one-element list) must be the crop height, the space's only
     * resolution; left out, it is added */
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "r");
    const cJSON *rv = cJSON_IsArray(r) && cJSON_GetArraySize(r) == 1 ? cJSON_GetArrayItem(r, 0) : r;
    if (r && cJSON_IsNumber(rv) && rv->valuedouble != s->crop_h) {
        double got = rv->valuedouble;
        cJSON_Delete(j);
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "architecture: \"r\" is %g, not the crop height %d of space '%s'", got,
                             s->crop_h, s->name);
    }
    /* "dw": one width per decoder level */
    int dw[STEREO_MAX_LEVELS] = {0};
    const cJSON *dj = cJSON_GetObjectItemCaseSensitive(j, "dw");
    bool dw_ok = cJSON_IsArray(dj) && cJSON_GetArraySize(dj) == s->n_levels;
    for (int i = 0; dw_ok && i < s->n_levels; i++) {
        const cJSON *x = cJSON_GetArrayItem(dj, i);
        dw_ok = cJSON_IsNumber(x) && fabs(x->valuedouble) <= 1e6 &&
                x->valuedouble == floor(x->valuedouble);
        dw[i] = dw_ok ? x->valueint : 0;
    }
    char *text = NULL;
    if (r || cJSON_AddNumberToObject(j, "r", s->crop_h))
        text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "architecture: out of memory");
    ofa_space v;
    stereo_space_ofa_view(s, &v);
    manta_status st = ofa_arch_parse(&v, text, a, err);
    free(text);
    if (st == MANTA_OK && !dw_ok)
        st = manta_err_set(err, MANTA_ERR_INVALID_ARG,
                           "architecture: \"dw\" must list %d integer widths, one per decoder "
                           "level of space '%s'",
                           s->n_levels, s->name);
    memcpy(a->dw, dw, sizeof dw);
    return st == MANTA_OK ? stereo_arch_validate(s, a, err) : st;
}

/* ---- description ----------------------------------------------------------------------- */

const char *stereo_layer_kind_name(stereo_layer_kind k)
{
    switch (k) {
    case STEREO_L_CONV: return "conv";
    case STEREO_L_DWCONV: return "dwconv";
    case STEREO_L_SE: return "se";
    case STEREO_L_CORR: return "corr";
    case STEREO_L_DECONV: return "deconv";
    case STEREO_L_UPSAMPLE: return "upsample";
    case STEREO_L_CONCAT: return "concat";
    }
    return "?";
}

static int conv_out(int in, int k, int stride) { return (in + 2 * (k / 2) - k) / stride + 1; }

/* The output shape of @p kind on an (h, w, cin) input; MACs and parameters of one view. */
static stereo_layer *add_layer(stereo_desc *d, const char *name, stereo_layer_kind kind, int h,
                               int w, int cin, int cout, int k, int stride, bool bn, bool bias,
                               nn_act act, int views)
{
    stereo_layer *l = &d->layer[d->n++];
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->kind = kind;
    l->in_h = h, l->in_w = w, l->in_c = cin, l->out_c = cout;
    l->kernel = k, l->stride = stride, l->bn = bn, l->bias = bias, l->act = act;
    l->views = views;
    switch (kind) {
    case STEREO_L_CONV:
    case STEREO_L_DWCONV:
    case STEREO_L_SE: l->out_h = conv_out(h, k, stride), l->out_w = conv_out(w, k, stride); break;
    case STEREO_L_DECONV: /* k4 s2 p1: (h - 1) * 2 - 2 + 4 */
    case STEREO_L_UPSAMPLE: l->out_h = 2 * h, l->out_w = 2 * w; break;
    case STEREO_L_CORR:
    case STEREO_L_CONCAT: l->out_h = h, l->out_w = w; break;
    }
    double out_px = (double)l->out_h * l->out_w;
    switch (kind) {
    case STEREO_L_CONV:
        l->macs = out_px * cout * cin * k * k;
        l->params = (long)cout * cin * k * k;
        break;
    case STEREO_L_DWCONV:
        l->macs = out_px * cout * k * k;
        l->params = (long)cout * k * k;
        break;
    case STEREO_L_DECONV:
        l->macs = (double)h * w * cin * cout * k * k;
        l->params = (long)cin * cout * k * k;
        break;
    default: /* SE is filled in by its caller; the others have no weights */ break;
    }
    if (bias)
        l->params += cout;
    if (bn)
        l->params += 2L * cout;
    l->macs *= views;
    return l;
}

/* The blocks of unit @p u (0-based) on an (h, w, c) input, as ofa_describe() lists them. */
static void add_unit(stereo_desc *d, const stereo_space *s, const ofa_arch *a, int u, int views,
                     int *h, int *w, int *c)
{
    const ofa_unit_spec *us = &s->unit[u];
    char name[48];
    for (int j = 0; j < a->d[u]; j++) {
        int slot = u * s->max_depth + j, k = a->ks[slot];
        int st1 = j == 0 ? us->stride : 1;
        int mid = ofa_make_divisible((double)*c * a->e[slot], 8);
        snprintf(name, sizeof name, "u%d.b%d.expand", u + 1, j + 1);
        add_layer(d, name, STEREO_L_CONV, *h, *w, *c, mid, 1, 1, true, false, us->act, views);
        snprintf(name, sizeof name, "u%d.b%d.dw", u + 1, j + 1);
        stereo_layer *l = add_layer(d, name, STEREO_L_DWCONV, *h, *w, mid, mid, k, st1, true, false,
                                    us->act, views);
        *h = l->out_h, *w = l->out_w;
        if (us->se) {
            int se = ofa_make_divisible(mid / 4.0, 8);
            snprintf(name, sizeof name, "u%d.b%d.se", u + 1, j + 1);
            l = add_layer(d, name, STEREO_L_SE, *h, *w, mid, mid, 1, 1, false, false,
                          NN_ACT_HSIGMOID, views);
            l->macs = 2.0 * mid * se * views;
            l->params = 2L * mid * se + se + mid;
        }
        snprintf(name, sizeof name, "u%d.b%d.project", u + 1, j + 1);
        l = add_layer(d, name, STEREO_L_CONV, *h, *w, mid, us->width, 1, 1, true, false,
                      NN_ACT_NONE, views);
        l->residual = st1 == 1 && *c == us->width;
        *c = us->width;
    }
}

/* The left path's last tensor at each scale 1/2^k: its channels. */
typedef struct skip_table {
    int c[STEREO_MAX_LEVELS + 1];
} skip_table;

manta_status stereo_describe(const stereo_space *s, const ofa_arch *a, stereo_desc *d,
                             manta_err *err)
{
    memset(d, 0, sizeof *d);
    MANTA_TRY(stereo_space_validate(s, err));
    MANTA_TRY(stereo_arch_validate(s, a, err));
    skip_table skip = {{0}};
    skip.c[0] = 3; /* the left image */
    int k = 1;     /* the current scale is 1/2^k */
    stereo_layer *l = add_layer(d, "stem", STEREO_L_CONV, s->crop_h, s->crop_w, 3, s->stem_width,
                                s->stem_kernel, 2, true, false, s->stem_act, 2);
    int h = l->out_h, w = l->out_w, c = s->stem_width;
    skip.c[k] = c;
    for (int u = 0; u < s->n_units; u++) {
        if (u == s->corr_after_unit) {
            l = add_layer(d, "corr", STEREO_L_CORR, h, w, c, stereo_corr_channels(s), 1,
                          s->corr_stride, false, false, NN_ACT_NONE, 1);
            double cols = 0; /* as nn_corr_macs(): products with x - d >= 0 */
            for (int i = 0; i < l->out_c; i++)
                cols += w > i * s->corr_stride ? w - i * s->corr_stride : 0;
            l->macs = (double)c * h * cols;
            add_layer(d, "redir", STEREO_L_CONV, h, w, c, s->redir_width, 1, 1, true, false,
                      NN_ACT_LEAKY_RELU, 1);
            c = stereo_corr_channels(s) + s->redir_width;
            add_layer(d, "corr.concat", STEREO_L_CONCAT, h, w, c, c, 1, 1, false, false,
                      NN_ACT_NONE, 1);
            skip.c[k] = c;
        }
        add_unit(d, s, a, u, u < s->corr_after_unit ? 2 : 1, &h, &w, &c);
        k += s->unit[u].stride == 2;
        skip.c[k] = c;
    }
    /* decoder: k == n_levels; predictions named by their scale 1/2^k */
    char name[48];
    snprintf(name, sizeof name, "d%d.pred", k);
    add_layer(d, name, STEREO_L_CONV, h, w, c, 1, 3, 1, false, true, NN_ACT_NONE, 1);
    for (int i = 0; i < s->n_levels; i++) {
        int dw = a->dw[i];
        k--;
        snprintf(name, sizeof name, "d%d.deconv", k);
        l = add_layer(d, name, STEREO_L_DECONV, h, w, c, dw, 4, 2, false, true, NN_ACT_LEAKY_RELU,
                      1);
        snprintf(name, sizeof name, "d%d.upsample", k);
        add_layer(d, name, STEREO_L_UPSAMPLE, h, w, 1, 1, 1, 2, false, false, NN_ACT_NONE, 1);
        h = l->out_h, w = l->out_w;
        c = skip.c[k] + dw + 1;
        snprintf(name, sizeof name, "d%d.concat", k);
        add_layer(d, name, STEREO_L_CONCAT, h, w, c, c, 1, 1, false, false, NN_ACT_NONE, 1);
        snprintf(name, sizeof name, "d%d.conv", k);
        add_layer(d, name, STEREO_L_CONV, h, w, c, dw, 3, 1, false, true, NN_ACT_LEAKY_RELU, 1);
        c = dw;
        snprintf(name, sizeof name, "d%d.pred", k);
        add_layer(d, name, STEREO_L_CONV, h, w, c, 1, 3, 1, false, true, NN_ACT_NONE, 1);
    }
    for (int i = 0; i < d->n; i++) {
        d->macs += d->layer[i].macs;
        d->params += d->layer[i].params;
    }
    return MANTA_OK;
}
