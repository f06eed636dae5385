/* The stereo search space: shipped specs equal the built-ins, the spec and the
 * architecture encoding round-trip, specs whose parts do not line up are
 * refused with the field named, classification and stereo loaders refuse each
 * other's specs, and per-layer shapes, MACs and parameters are right (a small
 * space computed by hand). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "nn/depthwise.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

static char *read_model(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: cannot open", path);
    char *buf = malloc(8192);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 8191, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void test_builtins_are_valid_and_equal_the_model_files(void **state)
{
    (void)state;
    const char *files[] = {"models/stereo_cpu.json", "models/stereo_gpu.json"};
    const char *names[] = {"stereo-cpu", "stereo-gpu"};
    void (*builtin[])(stereo_space *) = {stereo_space_cpu, stereo_space_gpu};
    for (int i = 0; i < 2; i++) {
        stereo_space a, b, c;
        manta_err e;
        builtin[i](&b);
        if (stereo_space_validate(&b, &e) != MANTA_OK)
            fail_msg("%s: %s", names[i], e.msg);
        if (stereo_space_load(files[i], &a, &e) != MANTA_OK)
            fail_msg("%s", e.msg);
        assert_memory_equal(&a, &b, sizeof a);
        assert_int_equal(stereo_space_load(names[i], &c, &e), MANTA_OK);
        assert_memory_equal(&c, &b, sizeof c);
        assert_string_equal(a.name, names[i]);
        bool stereo = false;
        assert_int_equal(stereo_spec_is_stereo(files[i], &stereo, &e), MANTA_OK);
        assert_true(stereo);
        stereo = false;
        assert_int_equal(stereo_spec_is_stereo(names[i], &stereo, &e), MANTA_OK);
        assert_true(stereo);
    }
    stereo_space s;
    stereo_space_cpu(&s);
    /* stem s2 + unit 1 s2: the correlation at 1/4, 8 columns there = the 32 px */
    assert_int_equal(stereo_corr_scale(&s), 4);
    assert_int_equal(stereo_corr_channels(&s), 9);
    assert_int_equal(s.n_levels, 5);
    assert_int_equal(stereo_stride2_stages(&s), 5);
    stereo_space_gpu(&s);
    assert_int_equal(stereo_corr_scale(&s), 4);
    assert_int_equal(stereo_corr_channels(&s), 41); /* DispNetC's D */
    assert_int_equal(s.n_levels, 6);
    assert_int_equal(stereo_preds(&s), 7);
    /* FADNet's first round, finest first 0.32 .. 0.005, is stored coarsest first */
    assert_true(s.loss_w[0][0] == 0.005 && s.loss_w[0][6] == 0.32);
    assert_true(s.loss_w[2][6] == 1 && s.loss_w[2][5] == 0);

    bool stereo = true;
    manta_err e;
    assert_int_equal(stereo_spec_is_stereo("models/ofa_cpu_default.json", &stereo, &e), MANTA_OK);
    assert_false(stereo);
    stereo = true;
    assert_int_equal(stereo_spec_is_stereo("mbv3-w1.0", &stereo, &e), MANTA_OK);
    assert_false(stereo);
    assert_int_equal(stereo_spec_is_stereo("/nonexistent.json", &stereo, &e), MANTA_ERR_IO);
    assert_non_null(strstr(e.msg, "/nonexistent.json"));
    assert_non_null(strstr(e.msg, "stereo-cpu"));
}

static void test_space_json_round_trip(void **state)
{
    (void)state;
    void (*builtin[])(stereo_space *) = {stereo_space_cpu, stereo_space_gpu};
    for (int i = 0; i < 2; i++) {
        stereo_space a, b;
        builtin[i](&a);
        char *text = NULL;
        manta_err e;
        assert_int_equal(stereo_space_to_json(&a, &text, &e), MANTA_OK);
        assert_non_null(strstr(text, "\"task\":\"stereo\""));
        if (stereo_space_parse(text, &b, &e) != MANTA_OK)
            fail_msg("%s", e.msg);
        free(text);
        assert_memory_equal(&a, &b, sizeof a);
    }
}

/* models/stereo_cpu.json with @p from replaced by @p to: refused in one line holding
 * @p needle and, when not NULL, @p needle2. */
static void expect_bad_spec(const char *from, const char *to, const char *needle,
                            const char *needle2)
{
    char *buf = read_model("models/stereo_cpu.json");
    char *p = strstr(buf, from);
    if (!p)
        fail_msg("'%s' is not in models/stereo_cpu.json", from);
    char out[9000];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(p - buf), buf, to, p + strlen(from));
    free(buf);
    stereo_space s;
    manta_err e;
    manta_err_clear(&e);
    assert_int_equal(stereo_space_parse(out, &s, &e), MANTA_ERR_FORMAT);
    if (!strstr(e.msg, needle) || (needle2 && !strstr(e.msg, needle2)))
        fail_msg("message '%s' lacks '%s' or '%s'", e.msg, needle, needle2 ? needle2 : "");
    assert_null(strchr(e.msg, '\n'));
}

static void test_bad_specs_name_the_field(void **state)
{
    (void)state;
    /* units that do not line up: unit 4 at stride 1 leaves 4 stride-2 stages for 5 levels */
    expect_bad_spec("{\"width\": 48, \"stride\": 2", "{\"width\": 48, \"stride\": 1",
                    "space.decoder", "\"widths\"");
    /* 6 stride-2 stages: 64 is not a multiple of 2^6 */
    expect_bad_spec("{\"width\": 96, \"stride\": 1", "{\"width\": 96, \"stride\": 2",
                    "space.decoder", "6 stride-2 stages");
    expect_bad_spec("\"widths\": [64, 48, 32, 24, 16]", "\"widths\": [64, 48, 32, 24, 16, 16]",
                    "space.loss", "\"rounds\"[0]");
    /* H not divisible by 2^5 */
    expect_bad_spec("\"height\": 64", "\"height\": 48", "space.crop", "\"height\"");
    expect_bad_spec("\"width\": 128", "\"width\": 100", "space.crop", "\"width\"");
    /* the correlation's level */
    expect_bad_spec("\"after_unit\": 2", "\"after_unit\": 4", "space.correlation",
                    "\"after_unit\"");
    expect_bad_spec("\"after_unit\": 2", "\"after_unit\": 1", "space.correlation",
                    "\"after_unit\"");
    /* 9 columns at 1/4 = 36 px, beyond the 32 px max_disp */
    expect_bad_spec("\"max_disp\": 8", "\"max_disp\": 9", "space.correlation", "\"max_disp\"");
    expect_bad_spec("\"max_disp\": 32", "\"max_disp\": 16", "space.correlation", "\"max_disp\"");
    expect_bad_spec("\"stride\": 1, \"redir", "\"stride\": 9, \"redir", "space.correlation",
                    "\"stride\"");
    /* missing fields */
    expect_bad_spec("\"redir_width\": 16", "\"redir\": 16", "space.correlation", "\"redir_width\"");
    expect_bad_spec("\"decoder\"", "\"decoders\"", "\"decoder\"", NULL);
    expect_bad_spec("\"crop\": {\"height\": 64, \"width\": 128}", "\"crop\": {\"height\": 64}",
                    "space.crop", "\"width\"");
    /* other fields */
    expect_bad_spec("\"widths\": [64, 48, 32, 24, 16]", "\"widths\": [64, 48, 0, 24, 16]",
                    "space.decoder", "\"widths\"[2]");
    /* elastic decoder width */
    expect_bad_spec(", \"width_ratios\": [0.5, 0.75, 1]", "", "space.decoder", "\"width_ratios\"");
    expect_bad_spec("[0.5, 0.75, 1]", "[0.5, 0.75]", "space.decoder", "end with 1");
    expect_bad_spec("[0.5, 0.75, 1]", "[0.75, 0.5, 1]", "space.decoder", "[1] is 0.5");
    expect_bad_spec("[0.5, 0.75, 1]", "[0, 0.75, 1]", "space.decoder", "[0] is 0");
    expect_bad_spec("[0.5, 0.75, 1]", "[0.5, \"x\", 1]", "space.decoder", "not a number");
    /* 24 * 0.94 and 24 * 0.97 both round to 23 channels */
    expect_bad_spec("[0.5, 0.75, 1]", "[0.94, 0.97, 1]", "space.decoder", "level 3");
    expect_bad_spec("[0, 0, 0, 0, 0, 1]", "[0, 0, 0, 0, 0, 0]", "space.loss", "\"rounds\"[2]");
    expect_bad_spec("[0, 0, 0, 0, 0, 1]", "[0, 0, 0, 0, -1, 1]", "space.loss", "[2][4]");
    expect_bad_spec("\"kernel_sizes\": [3, 5, 7]", "\"kernel_sizes\": [3, 4, 7]", "not odd", NULL);
    expect_bad_spec("\"act\": \"relu\", \"se\": true", "\"act\": \"leaky-relu\", \"se\": true",
                    "space.units[2]", "\"act\"");
    expect_bad_spec("\"max_disp\": 32", "\"max_disp\": 128", "\"max_disp\"", NULL);
    expect_bad_spec("\"kernel\": 3", "\"kernel\": 4", "space.stem", "\"kernel\"");
    expect_bad_spec("{\"width\": 16, \"stride\": 2, \"act\": \"relu\", \"se\": false},", "",
                    "space", NULL); /* 5 units: the strides no longer match the decoder */
    /* training crops */
    expect_bad_spec("{\"height\": 96, \"width\": 96}", "{\"height\": 80, \"width\": 96}",
                    "space.crops[1]", "multiple of 2^5");
    expect_bad_spec("{\"height\": 128, \"width\": 64}", "{\"height\": 128, \"width\": 32}",
                    "space.crops[2]", "max_disp");
    expect_bad_spec("{\"height\": 96, \"width\": 96}", "{\"height\": 96}", "space.crops[1]",
                    "\"width\"");
    expect_bad_spec("\"crops\": [", "\"crops\": [[64, 128], ", "space.crops[0]", "not an object");
    expect_bad_spec("\"version\": 1", "\"version\": 2", "version", NULL);
    expect_bad_spec("\"task\": \"stereo\"", "\"task\": \"segmentation\"", "\"task\"", NULL);

    /* a classification spec is refused, pointing at its loader, and the reverse */
    char *cls = read_model("models/ofa_cpu_default.json");
    stereo_space s;
    manta_err e;
    assert_int_equal(stereo_space_parse(cls, &s, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "ofa_space_load"));
    free(cls);
    assert_int_equal(stereo_space_load("models/ofa_cpu_default.json", &s, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "models/ofa_cpu_default.json"));
    ofa_space o;
    assert_int_equal(ofa_space_load("models/stereo_cpu.json", &o, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "stereo_space_load"));
    assert_int_equal(ofa_space_load("stereo-cpu", &o, &e), MANTA_ERR_IO);
    assert_int_equal(stereo_space_parse("{\"format\":", &s, &e), MANTA_ERR_FORMAT);
    assert_int_equal(stereo_space_load("/nonexistent.json", &s, &e), MANTA_ERR_IO);
    assert_non_null(strstr(e.msg, "/nonexistent.json"));
}

/* Kernel taps that only ever multiply padding: stereo-cpu's 64-row crop leaves the 7x7
 * kernels of unit 5 (2-row maps at 1/32) with rows that see no input, its training crops
 * (the plan size) leave none, nor does stereo-gpu's crop; and the rule is the device op's:
 * the depthwise weight gradient is exactly zero at those taps and only there. */
static void test_dead_taps(void **state)
{
    (void)state;
    stereo_space s;
    stereo_space_cpu(&s);
    char what[256];
    int h, w;
    assert_true(stereo_space_dead_taps(&s, s.crop_h, s.crop_w, what, sizeof what) > 0);
    if (!strstr(what, "unit 5 block 1") || !strstr(what, "7x7") ||
        !strstr(what, "taps 3 rows above"))
        fail_msg("first dead taps at 64x128: '%s'", what);
    stereo_space_plan_size(&s, &h, &w);
    assert_int_equal(h, 128);
    assert_int_equal(w, 128);
    assert_int_equal(stereo_space_dead_taps(&s, h, w, what, sizeof what), 0);
    assert_string_equal(what, "");
    for (int i = 0; i < stereo_space_n_crops(&s); i++) { /* each crop alone leaves some */
        stereo_space_crop(&s, i, &h, &w);
        assert_true(stereo_space_dead_taps(&s, h, w, NULL, 0) > 0);
    }
    stereo_space_gpu(&s);
    assert_int_equal(stereo_space_dead_taps(&s, s.crop_h, s.crop_w, NULL, 0), 0);

    /* a 7x7 depthwise convolution on a 2-row map: rows 2 and 3 from the centre get no
     * gradient (stride 1); on a 4-row map at stride 2, the row 3 before the centre */
    mcl_dev *d = tu_open_device();
    const nn_dw_shape shapes[2] = {{1, 3, 2, 6, 7, 1, 3}, {1, 3, 4, 6, 7, 2, 3}};
    for (int t = 0; t < 2; t++) {
        const nn_dw_shape *sh = &shapes[t];
        const size_t nx = (size_t)sh->c * sh->h * sh->w, nw = (size_t)sh->c * 49;
        const size_t ny = (size_t)sh->c * nn_dw_out_h(sh) * nn_dw_out_w(sh);
        double *x = tu_doubles(nx), *dy = tu_doubles(ny), *g = tu_doubles(nw);
        manta_rng rng;
        manta_rng_seed(&rng, 3, (uint64_t)t);
        tu_fill_uniform(&rng, x, nx, 0.5, 1);
        tu_fill_uniform(&rng, dy, ny, 0.5, 1);
        size_t ns = nn_dw_scratch_floats(d, sh);
        mview vx = tu_alloc_from(d, x, nx), vdy = tu_alloc_from(d, dy, ny), vdw = tu_alloc(d, nw);
        mview scratch = tu_scratch(d, ns), none = {NULL, 0};
        TU_OK(d, mcl_fill(d, vdw, 0.0f, nw));
        TU_OK(d, nn_dw_backward(d, sh, vx, none, vdy, none, vdw, scratch));
        tu_download(d, vdw, g, nw);
        for (int c = 0; c < sh->c; c++)
            for (int r = 0; r < 7; r++) {
                const int dyo = r - 3;
                const bool dead = t == 0 ? (dyo <= -2 || dyo >= 2) : dyo == -3;
                for (int q = 0; q < 7; q++) {
                    const double v = g[(size_t)c * 49 + (size_t)r * 7 + q];
                    if (dead != (v == 0.0))
                        fail_msg("7x7 on %d rows, stride %d: tap (%d, %d) gradient %g", sh->h,
                                 sh->stride, dyo, q - 3, v);
                }
            }
        tu_scratch_free(d, scratch, ns);
        tu_free(d, vx), tu_free(d, vdy), tu_free(d, vdw);
        free(x), free(dy), free(g);
    }
    mcl_close(d);
}

/* Classification specs keep working, with or without "task": "classification". */
static void test_classification_task_field(void **state)
{
    (void)state;
    char *buf = read_model("models/ofa_cpu_default.json");
    char *p = strstr(buf, "\"version\": 1,");
    assert_non_null(p);
    char out[9000];
    ofa_space a, b;
    manta_err e;
    snprintf(out, sizeof out, "%.*s\"task\": \"classification\", %s", (int)(p - buf), buf, p);
    if (ofa_space_parse(out, &a, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    ofa_space_cpu_default(&b);
    assert_memory_equal(&a, &b, sizeof a);
    snprintf(out, sizeof out, "%.*s\"task\": \"stereo\", %s", (int)(p - buf), buf, p);
    assert_int_equal(ofa_space_parse(out, &a, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "stereo_space_load"));
    snprintf(out, sizeof out, "%.*s\"task\": 3, %s", (int)(p - buf), buf, p);
    assert_int_equal(ofa_space_parse(out, &a, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "\"task\""));
    free(buf);
}

static void test_arch_sample_validate_json_round_trip(void **state)
{
    (void)state;
    stereo_space s;
    stereo_space_gpu(&s);
    manta_rng r;
    manta_rng_seed(&r, 7, 0);
    for (int i = 0; i < 50; i++) {
        ofa_arch a, b;
        if (i % 2)
            stereo_arch_sample(&s, &r, &a);
        else
            stereo_arch_sample_mixed(&s, &r, &a);
        assert_int_equal(a.r, s.crop_h);
        assert_int_equal(stereo_arch_validate(&s, &a, NULL), MANTA_OK);
        char buf[1024];
        manta_err e;
        assert_int_equal(stereo_arch_to_json(&s, &a, buf, sizeof buf, &e), MANTA_OK);
        if (stereo_arch_parse(&s, buf, &b, &e) != MANTA_OK)
            fail_msg("%s: %s", buf, e.msg);
        assert_memory_equal(&a, &b, sizeof a);
    }
    /* max and min; "r" may be left out */
    ofa_arch mx, mn, b;
    manta_err e;
    stereo_arch_max(&s, &mx);
    stereo_arch_min(&s, &mn);
    assert_int_equal(mx.ks[0], 7);
    assert_int_equal(mn.e[23], 3);
    assert_int_equal(mn.d[5], 2);
    /* the decoder: every level at its narrowest / widest (512 .. 16 at 0.5, 0.75, 1) */
    static const int dmin[6] = {256, 128, 64, 32, 16, 8}, dmax[6] = {512, 256, 128, 64, 32, 16};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(mn.dw[i], dmin[i]);
        assert_int_equal(mx.dw[i], dmax[i]);
        assert_int_equal(stereo_dec_width(&s, i, 1), dmax[i] * 3 / 4);
    }
    assert_int_equal(mx.dw[6], 0);
    char buf[1024];
    assert_int_equal(stereo_arch_to_json(&s, &mn, buf, sizeof buf, &e), MANTA_OK);
    assert_non_null(strstr(buf, ",\"r\":[384],\"dw\":[256,128,64,32,16,8]}"));
    char *rpos = strstr(buf, ",\"r\":");
    assert_non_null(rpos);
    memmove(rpos, rpos + strlen(",\"r\":[384]"), strlen(rpos + strlen(",\"r\":[384]")) + 1);
    if (stereo_arch_parse(&s, buf, &b, &e) != MANTA_OK)
        fail_msg("%s: %s", buf, e.msg);
    assert_memory_equal(&mn, &b, sizeof b);
    /* refusals name the member */
    char bad[1100];
    snprintf(bad, sizeof bad, "%.*s,\"r\":[64]%s", (int)(rpos - buf), buf, rpos);
    assert_int_equal(stereo_arch_parse(&s, bad, &b, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "crop height 384"));
    char *dpos = strstr(buf, ",\"dw\":");
    assert_non_null(dpos);
    snprintf(bad, sizeof bad, "%.*s}", (int)(dpos - buf), buf); /* no "dw" */
    assert_int_equal(stereo_arch_parse(&s, bad, &b, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "\"dw\""));
    snprintf(bad, sizeof bad, "%.*s,\"dw\":[256,128,63,32,16,8]}", (int)(dpos - buf), buf);
    assert_int_equal(stereo_arch_parse(&s, bad, &b, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "dw[2] = 63"));
    snprintf(bad, sizeof bad, "%.*s,\"dw\":[256,128,64,32,16]}", (int)(dpos - buf), buf);
    assert_int_equal(stereo_arch_parse(&s, bad, &b, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "6 integer widths"));
    b = mx;
    b.dw[6] = 16; /* beyond the levels */
    assert_int_equal(stereo_arch_validate(&s, &b, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "dw[6]"));
    mx.ks[3] = 4;
    assert_int_equal(stereo_arch_validate(&s, &mx, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "ks[3]"));
    assert_int_equal(stereo_arch_parse(&s, "{\"ks\":[3],\"e\":[3],\"d\":[2]}", &b, &e),
                     MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "\"ks\""));
    assert_int_equal(stereo_arch_parse(&s, "[1,2]", &b, &e), MANTA_ERR_INVALID_ARG);
    char small[16];
    assert_int_equal(stereo_arch_to_json(&s, &mn, small, sizeof small, NULL),
                     MANTA_ERR_INVALID_ARG);
    stereo_desc *d = malloc(sizeof *d);
    assert_non_null(d);
    assert_int_equal(stereo_describe(&s, &mx, d, &e), MANTA_ERR_INVALID_ARG);
    free(d);
}

/* A small space whose every layer is computed by hand below. */
static const char small_spec[] =
    "{\"format\": \"manta-ofa-space\", \"version\": 1, \"task\": \"stereo\", \"name\": \"tiny\","
    " \"crop\": {\"height\": 16, \"width\": 32}, \"max_disp\": 8,"
    " \"kernel_sizes\": [3, 5], \"expand_ratios\": [1, 2], \"depths\": [1, 2],"
    " \"stem\": {\"width\": 8, \"kernel\": 3, \"act\": \"relu\"},"
    " \"units\": [{\"width\": 8, \"stride\": 2, \"act\": \"relu\", \"se\": false},"
    "             {\"width\": 8, \"stride\": 1, \"act\": \"relu\", \"se\": false},"
    "             {\"width\": 16, \"stride\": 2, \"act\": \"h-swish\", \"se\": true}],"
    " \"correlation\": {\"after_unit\": 2, \"max_disp\": 2, \"stride\": 1, \"redir_width\": 4},"
    " \"decoder\": {\"widths\": [8, 4, 4], \"width_ratios\": [0.5, 1]},"
    " \"loss\": {\"rounds\": [[0.25, 0.25, 0.25, 0.25]]}}";

typedef struct hand_layer {
    const char *name;
    int out_h, out_w, out_c, views;
    double macs;
    long params;
} hand_layer;

static void test_describe_small_space_by_hand(void **state)
{
    (void)state;
    stereo_space s;
    manta_err e;
    if (stereo_space_parse(small_spec, &s, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(s.n_levels, 3); /* stem, u1, u3 */
    ofa_arch a;
    stereo_arch_min(&s, &a); /* k3, e1, d1, the decoder at 0.5: 4, 2, 2 */
    assert_int_equal(a.dw[0], 4);
    assert_int_equal(a.dw[1], 2);
    assert_int_equal(a.dw[2], 2);
    stereo_arch_set_dec(&s, NULL, 1, &a); /* the decoder at full width: 8, 4, 4 */
    /* Input 16x32x3 per view. Shared layers (views 2) count both views' MACs.
     * mid = make_divisible(c * 1, 8) = 8 for c = 8 and c = 7; SE: make_divisible(8/4, 8) = 8. */
    const hand_layer want[] = {
        /* stem 3x3 s2: 8x16 out, 8*16*8*3*9 = 27648 per view; 8*3*9 + BN 16 */
        {"stem", 8, 16, 8, 2, 2 * 27648.0, 8 * 3 * 9 + 16},
        /* u1.b1 at 8x16: expand 128*8*8, dw s2 -> 4x8: 32*8*9, project 32*8*8 */
        {"u1.b1.expand", 8, 16, 8, 2, 2 * 8192.0, 64 + 16},
        {"u1.b1.dw", 4, 8, 8, 2, 2 * 2304.0, 72 + 16},
        {"u1.b1.project", 4, 8, 8, 2, 2 * 2048.0, 64 + 16},
        {"u2.b1.expand", 4, 8, 8, 2, 2 * 2048.0, 64 + 16},
        {"u2.b1.dw", 4, 8, 8, 2, 2 * 2304.0, 72 + 16},
        {"u2.b1.project", 4, 8, 8, 2, 2 * 2048.0, 64 + 16},
        /* correlation of 4x8x8 maps, d = 0, 1, 2: columns 8 + 7 + 6 = 21; 8*4*21 */
        {"corr", 4, 8, 3, 1, 672.0, 0},
        /* redirect 1x1 8 -> 4: 32*4*8; 32 + BN 8 */
        {"redir", 4, 8, 4, 1, 1024.0, 32 + 8},
        {"corr.concat", 4, 8, 7, 1, 0.0, 0},
        /* u3.b1 on 7 channels: expand 32*8*7, dw s2 -> 2x4: 8*8*9, SE 2*8*8 (+ biases 8 + 8),
         * project 8 -> 16: 8*16*8 */
        {"u3.b1.expand", 4, 8, 8, 1, 1792.0, 56 + 16},
        {"u3.b1.dw", 2, 4, 8, 1, 576.0, 72 + 16},
        {"u3.b1.se", 2, 4, 8, 1, 128.0, 2 * 64 + 8 + 8},
        {"u3.b1.project", 2, 4, 16, 1, 1024.0, 128 + 32},
        /* coarsest prediction at 1/8: 3x3 16 -> 1 on 2x4: 8*16*9; 144 + bias */
        {"d3.pred", 2, 4, 1, 1, 1152.0, 145},
        /* level 0 (width 8) to 1/4: deconv 2x4x16 -> 4x8x8: 8*16*8*16; 16*8*16 + 8 */
        {"d2.deconv", 4, 8, 8, 1, 16384.0, 2056},
        {"d2.upsample", 4, 8, 1, 1, 0.0, 0},
        /* skip at 1/4: the [corr, redir] concatenation (7): 7 + 8 + 1 */
        {"d2.concat", 4, 8, 16, 1, 0.0, 0},
        {"d2.conv", 4, 8, 8, 1, 32.0 * 8 * 16 * 9, 16 * 8 * 9 + 8},
        {"d2.pred", 4, 8, 1, 1, 32.0 * 8 * 9, 73},
        /* level 1 (width 4) to 1/2: deconv 4x8x8 -> 8x16x4; skip the stem (8): 8 + 4 + 1 */
        {"d1.deconv", 8, 16, 4, 1, 32.0 * 8 * 4 * 16, 8 * 4 * 16 + 4},
        {"d1.upsample", 8, 16, 1, 1, 0.0, 0},
        {"d1.concat", 8, 16, 13, 1, 0.0, 0},
        {"d1.conv", 8, 16, 4, 1, 128.0 * 4 * 13 * 9, 13 * 4 * 9 + 4},
        {"d1.pred", 8, 16, 1, 1, 128.0 * 4 * 9, 37},
        /* level 2 (width 4) to full resolution; skip the left image (3): 3 + 4 + 1 */
        {"d0.deconv", 16, 32, 4, 1, 128.0 * 4 * 4 * 16, 4 * 4 * 16 + 4},
        {"d0.upsample", 16, 32, 1, 1, 0.0, 0},
        {"d0.concat", 16, 32, 8, 1, 0.0, 0},
        {"d0.conv", 16, 32, 4, 1, 512.0 * 4 * 8 * 9, 8 * 4 * 9 + 4},
        {"d0.pred", 16, 32, 1, 1, 512.0 * 4 * 9, 37},
    };
    const int nw = (int)(sizeof want / sizeof want[0]);
    stereo_desc *d = malloc(sizeof *d);
    assert_non_null(d);
    if (stereo_describe(&s, &a, d, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(d->n, nw);
    double macs = 0;
    long params = 0;
    for (int i = 0; i < nw; i++) {
        const stereo_layer *l = &d->layer[i];
        if (strcmp(l->name, want[i].name) || l->out_h != want[i].out_h ||
            l->out_w != want[i].out_w || l->out_c != want[i].out_c || l->views != want[i].views ||
            l->macs != want[i].macs || l->params != want[i].params)
            fail_msg("layer %d: %s %dx%dx%d views %d, %.0f MACs, %ld params; want %s %dx%dx%d "
                     "views %d, %.0f MACs, %ld params",
                     i, l->name, l->out_h, l->out_w, l->out_c, l->views, l->macs, l->params,
                     want[i].name, want[i].out_h, want[i].out_w, want[i].out_c, want[i].views,
                     want[i].macs, want[i].params);
        macs += want[i].macs;
        params += want[i].params;
    }
    assert_true(d->macs == macs);
    assert_int_equal(d->params, params);
    assert_true(d->macs == 434656.0);
    assert_int_equal(d->params, 6280);
    assert_false(d->layer[3].residual); /* u1.b1: stride 2 */
    assert_true(d->layer[6].residual);  /* u2.b1: stride 1, 8 -> 8 */
    assert_int_equal(d->layer[d->n - 1].out_h, s.crop_h);

    /* the decoder at half width (4, 2, 2): the same layers, narrower */
    ofa_arch half = a;
    stereo_arch_set_dec(&s, NULL, 0, &half);
    stereo_desc *dh = malloc(sizeof *dh);
    assert_non_null(dh);
    assert_int_equal(stereo_describe(&s, &half, dh, &e), MANTA_OK);
    assert_int_equal(dh->n, d->n);
    const hand_layer want_half[] = {
        /* level 0 (width 4): deconv 2x4x16 -> 4x8x4: 8*16*4*16; 16*4*16 + 4 */
        {"d2.deconv", 4, 8, 4, 1, 8192.0, 1028},
        {"d2.concat", 4, 8, 12, 1, 0.0, 0}, /* 7 + 1 + 4 */
        {"d2.conv", 4, 8, 4, 1, 32.0 * 4 * 12 * 9, 12 * 4 * 9 + 4},
        {"d2.pred", 4, 8, 1, 1, 32.0 * 4 * 9, 37},
        /* level 1 (width 2): deconv 4x8x4 -> 8x16x2 */
        {"d1.deconv", 8, 16, 2, 1, 32.0 * 4 * 2 * 16, 4 * 2 * 16 + 2},
        {"d1.concat", 8, 16, 11, 1, 0.0, 0}, /* 8 + 1 + 2 */
        {"d1.conv", 8, 16, 2, 1, 128.0 * 2 * 11 * 9, 11 * 2 * 9 + 2},
        {"d0.deconv", 16, 32, 2, 1, 128.0 * 2 * 2 * 16, 2 * 2 * 16 + 2},
        {"d0.conv", 16, 32, 2, 1, 512.0 * 2 * 6 * 9, 6 * 2 * 9 + 2},
        {"d0.pred", 16, 32, 1, 1, 512.0 * 2 * 9, 19},
    };
    for (size_t k = 0; k < sizeof want_half / sizeof want_half[0]; k++) {
        const hand_layer *w = &want_half[k];
        const stereo_layer *l = NULL;
        for (int i = 0; i < dh->n && !l; i++)
            l = strcmp(dh->layer[i].name, w->name) ? NULL : &dh->layer[i];
        assert_non_null(l);
        if (l->out_h != w->out_h || l->out_w != w->out_w || l->out_c != w->out_c ||
            l->macs != w->macs || l->params != w->params)
            fail_msg("half decoder, %s: %dx%dx%d, %.0f MACs, %ld params; want %dx%dx%d, %.0f "
                     "MACs, %ld params",
                     w->name, l->out_h, l->out_w, l->out_c, l->macs, l->params, w->out_h, w->out_w,
                     w->out_c, w->macs, w->params);
    }
    assert_true(dh->macs < d->macs && dh->params < d->params);
    free(dh);

    /* a larger sub-network of the same space: deeper and wider, more of both */
    ofa_arch mx;
    stereo_arch_max(&s, &mx);
    stereo_desc *dm = malloc(sizeof *dm);
    assert_non_null(dm);
    assert_int_equal(stereo_describe(&s, &mx, dm, &e), MANTA_OK);
    assert_int_equal(dm->n, d->n + 3 * 3 + 1); /* one more block per unit, u3's with SE */
    assert_true(dm->macs > d->macs && dm->params > d->params);
    free(dm);
    free(d);
}

/* The two shipped spaces: every layer's shapes chain, totals are the sums, the
 * largest sub-network is above the smallest. */
static void test_describe_shipped_spaces(void **state)
{
    (void)state;
    void (*builtin[])(stereo_space *) = {stereo_space_cpu, stereo_space_gpu};
    stereo_desc *mx = malloc(sizeof *mx), *mn = malloc(sizeof *mn);
    assert_non_null(mx);
    assert_non_null(mn);
    for (int i = 0; i < 2; i++) {
        stereo_space s;
        builtin[i](&s);
        ofa_arch a, b;
        stereo_arch_max(&s, &a);
        stereo_arch_min(&s, &b);
        assert_int_equal(stereo_describe(&s, &a, mx, NULL), MANTA_OK);
        assert_int_equal(stereo_describe(&s, &b, mn, NULL), MANTA_OK);
        assert_true(mx->macs > 1.5 * mn->macs);
        assert_true(mx->params > mn->params);
        double sum = 0;
        int preds = 0;
        for (int j = 0; j < mx->n; j++) {
            const stereo_layer *l = &mx->layer[j];
            sum += l->macs;
            if (strstr(l->name, ".pred")) {
                preds++;
                assert_int_equal(l->out_c, 1);
            }
            if (l->kind == STEREO_L_CORR) {
                assert_int_equal(l->out_c, stereo_corr_channels(&s));
                assert_int_equal(l->in_h, s.crop_h / stereo_corr_scale(&s));
                assert_int_equal(mx->layer[j - 1].views, 2);
                assert_int_equal(mx->layer[j + 1].views, 1);
            }
        }
        assert_true(sum == mx->macs);
        assert_int_equal(preds, stereo_preds(&s));
        const stereo_layer *last = &mx->layer[mx->n - 1];
        assert_int_equal(last->out_h, s.crop_h);
        assert_int_equal(last->out_w, s.crop_w);
        assert_int_equal(mx->layer[0].views, 2);
    }
    free(mx);
    free(mn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins_are_valid_and_equal_the_model_files),
        cmocka_unit_test(test_space_json_round_trip),
        cmocka_unit_test(test_bad_specs_name_the_field),
        cmocka_unit_test(test_classification_task_field),
        cmocka_unit_test(test_arch_sample_validate_json_round_trip),
        cmocka_unit_test(test_describe_small_space_by_hand),
        cmocka_unit_test(test_describe_shipped_spaces),
        cmocka_unit_test(test_dead_taps),
    };
    return cmocka_run_group_tests_name("stereo search space", tests, NULL, NULL);
}
