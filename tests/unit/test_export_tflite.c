/* The .tflite writer: the file as standard tools read it (flatc with
 * models/tflite_subset.fbs), operator codes, options and versions, buffer
 * alignment, the offline memory plan (equal to the engine's own plan, and
 * honoured by the engine), the preprocessing metadata, the C array output,
 * and errors. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "core/fileio.h"
#include "common/xgrand.h"
#include "engine/engine.h"
#include "export/tflite.h"

/* ---- helpers ---- */

typedef struct written {
    xgraph g;
    uint8_t *model;
    size_t size;
    tflite_report rep;
} written;

static void write_graph(written *w)
{
    manta_err err;
    if (tflite_write(&w->g, &w->model, &w->size, &w->rep, &err) != MANTA_OK)
        fail_msg("write: %s", err.msg);
    assert_int_equal((uintptr_t)w->model % 16, 0);
}

static void write_random(written *w, manta_rng *rng, const xgr_opts *o)
{
    manta_err err;
    memset(w, 0, sizeof *w);
    if (xgr_random(&w->g, rng, o, &err) != MANTA_OK)
        fail_msg("xgr_random: %s", err.msg);
    write_graph(w);
}

static void written_free(written *w)
{
    xgraph_free(&w->g);
    free(w->model);
}

/* An engine over a copy of @p model at a 16-aligned address, arena exactly sized. */
typedef struct run {
    uint8_t *copy;
    mengine_model m;
    mengine e;
    uint8_t *arena;
    size_t arena_size;
    mengine_stats s;
} run;

static void run_open(run *r, const uint8_t *model, size_t size)
{
    char msg[256];
    memset(r, 0, sizeof *r);
    r->copy = aligned_alloc(16, (size + 15) & ~(size_t)15);
    assert_non_null(r->copy);
    memcpy(r->copy, model, size);
    if (mengine_model_load(&r->m, r->copy, size, NULL, msg, sizeof msg) != MENGINE_OK)
        fail_msg("load: %s", msg);
    const size_t ws = mengine_plan_work_size(&r->m);
    void *work = malloc(ws);
    assert_non_null(work);
    if (mengine_arena_size(&r->m, work, ws, &r->arena_size, msg, sizeof msg) != MENGINE_OK)
        fail_msg("arena size: %s", msg);
    free(work);
    r->arena = aligned_alloc(16, (r->arena_size + 15) & ~(size_t)15);
    assert_non_null(r->arena);
    assert_int_equal(mengine_init(&r->e, &r->m, r->arena, r->arena_size), MENGINE_OK);
    if (mengine_prepare(&r->e, msg, sizeof msg) != MENGINE_OK)
        fail_msg("prepare: %s", msg);
    assert_int_equal(mengine_get_stats(&r->e, &r->s), MENGINE_OK);
}

/* Offset of tensor @p t in the activation area, -1 when it has no planned memory. */
static int32_t run_offset(const run *r, size_t t)
{
    mengine_view v;
    assert_int_equal(mengine_tensor(&r->e, t, &v), MENGINE_OK);
    return v.data ? (int32_t)((uint8_t *)v.data - (r->arena + r->s.records_bytes)) : -1;
}

static void run_close(run *r)
{
    free(r->arena);
    free(r->copy);
}

static int32_t rd32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ---- flatc ---- */

static int have_flatc(void)
{
    if (system("command -v flatc >/dev/null 2>&1") == 0)
        return 1;
    print_message("# flatc not installed: skipping (apt-get install flatbuffers-compiler)\n");
    return 0;
}

/* flatc's JSON of @p w (strict JSON, enums as names). */
static cJSON *flatc_json(const written *w)
{
    char dir[] = "/tmp/manta-tfl-XXXXXX", path[128], cmd[512], json[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/model.tflite", dir);
    snprintf(json, sizeof json, "%s/model.json", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(w->model, 1, w->size, f), w->size);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "flatc --json --raw-binary --strict-json -o %s models/tflite_subset.fbs -- %s", dir,
             path);
    if (system(cmd) != 0)
        fail_msg("flatc failed on the written model: %s", cmd);
    f = fopen(json, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    manta_file_remove_tree(dir);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    return root;
}

static int builtin_value(const char *name)
{
    if (!name[0])
        return 0; /* builtin_code left at its default: ADD */
    static const struct {
        const char *name;
        int code;
    } codes[] = {
        {"ADD", 0},    {"CONV_2D", 3},         {"DEPTHWISE_CONV_2D", 4}, {"FULLY_CONNECTED", 9},
        {"MUL", 18},   {"RESHAPE", 22},        {"SOFTMAX", 25},          {"PAD", 34},
        {"MEAN", 40},  {"HARD_SWISH", 117},    {"CONCATENATION", 2},     {"RESIZE_BILINEAR", 23},
        {"SLICE", 65}, {"TRANSPOSE_CONV", 67}, {"LEAKY_RELU", 98}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (!strcmp(codes[i].name, name))
            return codes[i].code;
    fail_msg("unexpected operator %s", name);
    return -1;
}

static double num(const cJSON *o, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void check_flatc(const written *w)
{
    const xgraph *g = &w->g;
    cJSON *root = flatc_json(w);
    assert_int_equal((int)num(root, "version", 0), 3);
    const cJSON *codes = cJSON_GetObjectItemCaseSensitive(root, "operator_codes");
    const cJSON *sg = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "subgraphs"), 0);
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(sg, "tensors");
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(sg, "operators");
    const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(root, "buffers");
    assert_true(cJSON_IsArray(codes) && cJSON_IsArray(tensors) && cJSON_IsArray(ops));
    /* both code fields, matching; versions */
    const cJSON *c;
    cJSON_ArrayForEach(c, codes)
    {
        /* both codes and the version are written explicitly, even at their defaults */
        assert_non_null(cJSON_GetObjectItemCaseSensitive(c, "builtin_code"));
        assert_non_null(cJSON_GetObjectItemCaseSensitive(c, "deprecated_builtin_code"));
        assert_non_null(cJSON_GetObjectItemCaseSensitive(c, "version"));
        const int code = builtin_value(str(c, "builtin_code"));
        assert_int_equal((int)num(c, "deprecated_builtin_code", -1), code);
        const int version = (int)num(c, "version", 1);
        /* FULLY_CONNECTED without bias 6; TRANSPOSE_CONV with bias and RESIZE_BILINEAR with
         * half-pixel centres 3 */
        assert_true(version == 1 || (code == 9 && version == 6) ||
                    ((code == 67 || code == 23) && version == 3));
    }
    assert_int_equal(cJSON_GetArraySize(ops), g->n_ops);
    assert_int_equal(cJSON_GetArraySize(tensors), w->rep.n_tensors);
    /* graph tensors keep their indices and names */
    for (int t = 0; t < g->n_tensors; t++)
        assert_string_equal(str(cJSON_GetArrayItem(tensors, t), "name"), g->tensors[t].name);
    const int n_in = g->n_inputs ? g->n_inputs : 1, n_out = g->n_inputs ? g->n_outputs : 1;
    const cJSON *sg_in = cJSON_GetObjectItemCaseSensitive(sg, "inputs");
    const cJSON *sg_out = cJSON_GetObjectItemCaseSensitive(sg, "outputs");
    assert_int_equal(cJSON_GetArraySize(sg_in), n_in);
    assert_int_equal(cJSON_GetArraySize(sg_out), n_out);
    for (int k = 0; k < n_in; k++)
        assert_int_equal(cJSON_GetArrayItem(sg_in, k)->valueint,
                         g->n_inputs ? g->inputs[k] : g->input);
    for (int k = 0; k < n_out; k++)
        assert_int_equal(cJSON_GetArrayItem(sg_out, k)->valueint,
                         g->n_inputs ? g->outputs[k] : g->output);
    /* buffer 0 is the empty sentinel */
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(bufs, 0), "data"));
    /* operators and their options */
    for (int i = 0; i < g->n_ops; i++) {
        const xg_op *op = &g->ops[i];
        const cJSON *o = cJSON_GetArrayItem(ops, i);
        const cJSON *code = cJSON_GetArrayItem(codes, (int)num(o, "opcode_index", 0));
        const cJSON *opt = cJSON_GetObjectItemCaseSensitive(o, "builtin_options");
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "inputs");
        const char *type = str(o, "builtin_options_type");
        const char *name = str(code, "builtin_code")[0] ? str(code, "builtin_code") : "ADD";
        assert_int_equal(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "outputs"), 0)->valueint,
            op->out);
        assert_int_equal(cJSON_GetArrayItem(in, op->kind == XG_TCONV ? 2 : 0)->valueint, op->in0);
        switch (op->kind) {
        case XG_CONV:
        case XG_DWCONV:
            assert_string_equal(name, op->kind == XG_CONV ? "CONV_2D" : "DEPTHWISE_CONV_2D");
            assert_string_equal(type,
                                op->kind == XG_CONV ? "Conv2DOptions" : "DepthwiseConv2DOptions");
            assert_int_equal(cJSON_GetArraySize(in), 3); /* always a bias */
            assert_int_equal((int)num(opt, "stride_w", 0), op->stride);
            assert_int_equal((int)num(opt, "stride_h", 0), op->stride);
            assert_string_equal(
                cJSON_GetObjectItemCaseSensitive(opt, "padding") ? str(opt, "padding") : "SAME",
                op->same ? "SAME" : "VALID");
            if (op->kind == XG_DWCONV)
                assert_int_equal((int)num(opt, "depth_multiplier", 0), 1);
            break;
        case XG_PAD:
            assert_string_equal(name, "PAD");
            assert_string_equal(type, "PadOptions");
            assert_int_equal(cJSON_GetArraySize(in), 2);
            break;
        case XG_ADD: assert_string_equal(type, "AddOptions"); break;
        case XG_MUL: assert_string_equal(type, "MulOptions"); break;
        case XG_HSWISH: assert_string_equal(name, "HARD_SWISH"); break;
        case XG_MEAN:
            assert_string_equal(type, "ReducerOptions");
            assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opt, "keep_dims")) ==
                        (g->tensors[op->out].rank == 4));
            break;
        case XG_RESHAPE: {
            const cJSON *ns = cJSON_GetObjectItemCaseSensitive(opt, "new_shape");
            assert_string_equal(type, "ReshapeOptions");
            assert_int_equal(cJSON_GetArraySize(ns), g->tensors[op->out].rank);
            for (int k = 0; k < g->tensors[op->out].rank; k++)
                assert_int_equal(cJSON_GetArrayItem(ns, k)->valueint, g->tensors[op->out].shape[k]);
            assert_int_equal(cJSON_GetArraySize(in), 2);
            break;
        }
        case XG_FC:
            assert_string_equal(type, "FullyConnectedOptions");
            assert_int_equal(cJSON_GetArraySize(in), op->bias ? 3 : 2);
            assert_int_equal((int)num(code, "version", 1), op->bias ? 1 : 6);
            break;
        case XG_SOFTMAX:
            assert_string_equal(type, "SoftmaxOptions");
            assert_true(num(opt, "beta", 0.0) == 1.0);
            break;
        case XG_TCONV:
            assert_string_equal(name, "TRANSPOSE_CONV");
            assert_string_equal(type, "TransposeConvOptions");
            assert_int_equal(cJSON_GetArraySize(in), op->bias ? 4 : 3);
            assert_int_equal((int)num(code, "version", 1), op->bias ? 3 : 1);
            assert_int_equal((int)num(opt, "stride_w", 0), op->stride);
            assert_int_equal((int)num(opt, "stride_h", 0), op->stride);
            assert_string_equal(
                cJSON_GetObjectItemCaseSensitive(opt, "padding") ? str(opt, "padding") : "SAME",
                op->same ? "SAME" : "VALID");
            break;
        case XG_REQUANT:
            assert_string_equal(name, "QUANTIZE");
            assert_int_equal(cJSON_GetArraySize(in), 1);
            break;
        case XG_CONCAT:
            assert_string_equal(name, "CONCATENATION");
            assert_string_equal(type, "ConcatenationOptions");
            assert_int_equal((int)num(opt, "axis", 0), 3);
            assert_int_equal(cJSON_GetArraySize(in), op->n_ins);
            for (int k = 0; k < op->n_ins; k++)
                assert_int_equal(cJSON_GetArrayItem(in, k)->valueint, op->ins[k]);
            break;
        case XG_LEAKY_RELU:
            assert_string_equal(name, "LEAKY_RELU");
            assert_string_equal(type, "LeakyReluOptions");
            assert_true((float)num(opt, "alpha", 0.0) == op->alpha);
            break;
        case XG_MEAN_C:
            assert_string_equal(name, "MEAN");
            assert_string_equal(type, "ReducerOptions");
            assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opt, "keep_dims")));
            break;
        case XG_SLICE:
            assert_string_equal(name, "SLICE");
            assert_string_equal(type, "SliceOptions");
            assert_int_equal(cJSON_GetArraySize(in), 3);
            break;
        case XG_RESIZE:
            assert_string_equal(name, "RESIZE_BILINEAR");
            assert_string_equal(type, "ResizeBilinearOptions");
            assert_int_equal((int)num(code, "version", 1), 3);
            assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opt, "half_pixel_centers")));
            assert_null(cJSON_GetObjectItemCaseSensitive(opt, "align_corners"));
            break;
        }
    }
    /* metadata */
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    assert_int_equal(cJSON_GetArraySize(meta), 2);
    assert_string_equal(str(cJSON_GetArrayItem(meta, 0), "name"), TFLITE_META_OFFLINE);
    assert_string_equal(str(cJSON_GetArrayItem(meta, 1), "name"), TFLITE_META_PREPROCESS);
    cJSON_Delete(root);
}

static void test_flatc_reads_written_models(void **state)
{
    (void)state;
    if (!have_flatc())
        return;
    manta_rng rng;
    manta_rng_seed(&rng, 201, 1);
    int fc_no_bias = 0, fc_bias = 0;
    for (int i = 0; i < 8 || !fc_no_bias || !fc_bias; i++) {
        written w;
        write_random(&w, &rng, NULL);
        for (int k = 0; k < w.g.n_ops; k++)
            if (w.g.ops[k].kind == XG_FC)
                w.g.ops[k].bias ? fc_bias++ : fc_no_bias++;
        check_flatc(&w);
        written_free(&w);
        assert_true(i < 40);
    }
}

static void test_flatc_reads_stereo_models(void **state)
{
    (void)state;
    if (!have_flatc())
        return;
    manta_rng rng;
    manta_rng_seed(&rng, 202, 1);
    for (int i = 0; i < 4; i++) {
        written w;
        manta_err err;
        memset(&w, 0, sizeof w);
        if (xgr_stereo(&w.g, &rng, NULL, &err) != MANTA_OK)
            fail_msg("xgr_stereo: %s", err.msg);
        write_graph(&w);
        check_flatc(&w);
        written_free(&w);
    }
}

/* ---- layout ---- */

static void test_constants_aligned_and_named(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 202, 1);
    written w;
    write_random(&w, &rng, NULL);
    run r;
    run_open(&r, w.model, w.size);
    size_t weights = 0;
    for (size_t t = (size_t)w.g.n_tensors; t < r.m.n_tensors; t++) {
        mengine_view v;
        assert_int_equal(mengine_tensor(&r.e, t, &v), MENGINE_OK);
        assert_null(v.data); /* constants */
        weights += v.count * 4;
        if (v.cdata)
            assert_int_equal(((const uint8_t *)v.cdata - r.copy) % 16, 0);
    }
    assert_int_equal(weights, w.rep.weights_bytes);
    assert_int_equal(r.m.n_ops, (uint32_t)w.rep.n_ops);
    assert_int_equal(w.rep.file_bytes, w.size);
    assert_int_equal(memcmp(w.model + 4, "TFL3", 4), 0);
    run_close(&r);
    written_free(&w);
}

/* ---- offline plan ---- */

static void test_offline_plan_is_the_engine_plan(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 203, 1);
    for (int i = 0; i < 10; i++) {
        written w;
        write_random(&w, &rng, NULL);
        run r, bare;
        run_open(&r, w.model, w.size);
        const uint8_t *plan;
        size_t plan_bytes;
        assert_int_equal(mengine_model_metadata(&r.m, TFLITE_META_OFFLINE, &plan, &plan_bytes),
                         MENGINE_OK);
        assert_non_null(plan);
        const int n_t = w.rep.n_tensors;
        assert_int_equal(plan_bytes, 4 * (3 + (size_t)n_t));
        assert_int_equal(rd32(plan), 1);
        assert_int_equal(rd32(plan + 4), 1);
        assert_int_equal(rd32(plan + 8), n_t);
        /* the same file with the plan cleared: the engine plans it itself */
        uint8_t *copy = malloc(w.size);
        assert_non_null(copy);
        memcpy(copy, w.model, w.size);
        const size_t at = (size_t)(plan - r.copy) + 12;
        for (int t = 0; t < n_t; t++)
            memset(copy + at + 4 * t, 0xff, 4);
        run_open(&bare, copy, w.size);
        int shared = 0;
        for (int t = 0; t < n_t; t++) {
            const int32_t off = rd32(plan + 12 + 4 * t);
            /* the file's plan is the engine's plan of the bare file ... */
            assert_int_equal(off, run_offset(&bare, (size_t)t));
            /* ... and the engine puts every tensor where the file says */
            assert_int_equal(off, run_offset(&r, (size_t)t));
            if (t >= w.g.n_tensors)
                assert_int_equal(off, -1); /* constants */
            for (int u = 0; u < t && off >= 0; u++)
                shared += rd32(plan + 12 + 4 * u) == off;
        }
        assert_true(shared > 0); /* reshape and in-place ops share buffers */
        /* the reported arena is exact for the final file */
        assert_int_equal(r.arena_size, w.rep.arena_bytes);
        assert_true(bare.arena_size >= r.arena_size);
        assert_int_equal(r.s.activation_bytes, w.rep.activation_bytes);
        mengine e;
        char msg[256];
        assert_int_equal(mengine_init(&e, &r.m, r.arena, r.arena_size - 1), MENGINE_OK);
        assert_int_equal(mengine_prepare(&e, msg, sizeof msg), MENGINE_ERR_ARENA);
        run_close(&bare);
        run_close(&r);
        free(copy);
        written_free(&w);
    }
}

/* ---- metadata ---- */

static void test_metadata_round_trip(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 204, 1);
    written w;
    const xgr_opts o = {11, 3, 6, 4};
    write_random(&w, &rng, &o);
    run r;
    run_open(&r, w.model, w.size);
    const uint8_t *text;
    size_t n;
    assert_int_equal(mengine_model_metadata(&r.m, TFLITE_META_PREPROCESS, &text, &n), MENGINE_OK);
    assert_non_null(text);
    cJSON *j = cJSON_ParseWithLength((const char *)text, n);
    assert_non_null(j);
    const xgraph *g = &w.g;
    assert_int_equal((int)num(j, "version", 0), 1);
    assert_int_equal((int)num(j, "resolution", 0), 11);
    assert_int_equal((int)num(j, "channels", 0), 3);
    assert_int_equal((int)num(j, "logits_tensor", -1), g->logits);
    assert_int_equal((int)num(j, "input_tensor", -1), g->input);
    assert_int_equal((int)num(j, "output_tensor", -1), g->output);
    const cJSON *mean = cJSON_GetObjectItemCaseSensitive(j, "mean"),
                *std = cJSON_GetObjectItemCaseSensitive(j, "std"),
                *labels = cJSON_GetObjectItemCaseSensitive(j, "labels");
    assert_int_equal(cJSON_GetArraySize(mean), 3);
    for (int c = 0; c < 3; c++) {
        assert_true(fabs(cJSON_GetArrayItem(mean, c)->valuedouble - g->pre.mean[c]) < 1e-6);
        assert_true(fabs(cJSON_GetArrayItem(std, c)->valuedouble - g->pre.std[c]) < 1e-6);
    }
    assert_int_equal(cJSON_GetArraySize(labels), 6);
    for (int k = 0; k < 6; k++)
        assert_string_equal(cJSON_GetArrayItem(labels, k)->valuestring, g->pre.labels[k]);
    cJSON *arch = cJSON_Parse(g->arch_json);
    assert_true(cJSON_Compare(arch, cJSON_GetObjectItemCaseSensitive(j, "arch"), 1));
    cJSON_Delete(arch);
    cJSON_Delete(j);
    /* the logits tensor the metadata names is readable after invoke, and is the reference's */
    mengine_view vin, vl;
    assert_int_equal(mengine_input(&r.e, 0, &vin), MENGINE_OK);
    float *x = malloc(vin.count * sizeof *x), ref[6];
    assert_non_null(x);
    for (size_t i = 0; i < vin.count; i++)
        x[i] = vin.data[i] = (float)((int)(i % 7) - 3) * 0.3f;
    assert_int_equal(mengine_invoke(&r.e), MENGINE_OK);
    manta_err err;
    assert_int_equal(xgraph_reference(g, x, ref, &err), MANTA_OK);
    assert_int_equal(mengine_tensor(&r.e, (size_t)g->logits, &vl), MENGINE_OK);
    for (int k = 0; k < 6; k++)
        assert_true(fabs(vl.cdata[k] - ref[k]) <= 1e-5 * (1 + fabs(ref[k])));
    free(x);
    /* labels with characters JSON must escape; no preprocessing given: defaults */
    written_free(&w);
    run_close(&r);
    memset(&w, 0, sizeof w);
    assert_int_equal(xgr_color_classifier(&w.g, 4, &err), MANTA_OK);
    free(w.g.pre.labels[1]);
    w.g.pre.labels[1] = strdup("gr\"een\\ \xc3\xa9t\xc3\xa9\n");
    memset(w.g.pre.std, 0, sizeof w.g.pre.std);
    w.g.arch_json[0] = '\0';
    write_graph(&w);
    run_open(&r, w.model, w.size);
    assert_int_equal(mengine_model_metadata(&r.m, TFLITE_META_PREPROCESS, &text, &n), MENGINE_OK);
    j = cJSON_ParseWithLength((const char *)text, n);
    assert_non_null(j);
    labels = cJSON_GetObjectItemCaseSensitive(j, "labels");
    assert_string_equal(cJSON_GetArrayItem(labels, 1)->valuestring, w.g.pre.labels[1]);
    assert_true(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "std"), 2)->valuedouble ==
                1.0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "arch")));
    cJSON_Delete(j);
    run_close(&r);
    written_free(&w);
}

/* ---- C array ---- */

static void test_c_array_compiles(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 205, 1);
    xgraph g;
    manta_err err;
    tflite_report rep;
    char dir[] = "/tmp/manta-carray-XXXXXX", path[128], cmd[512];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(xgr_random(&g, &rng, NULL, &err), MANTA_OK);
    snprintf(path, sizeof path, "%s/model.tflite", dir);
    if (tflite_write_file(&g, path, dir, &rep, &err) != MANTA_OK)
        fail_msg("write: %s", err.msg);
    snprintf(cmd, sizeof cmd,
             "cd %s && cc -std=c99 -Wall -Wextra -Wpedantic -Werror -c model.c -o model99.o && "
             "cc -std=c11 -Wall -Wextra -Wpedantic -Werror -c model.c -o model11.o",
             dir);
    if (system(cmd) != 0)
        fail_msg("the generated C does not compile: %s", cmd);
    /* the macros */
    snprintf(path, sizeof path, "%s/model.h", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    unsigned long long arena = 0, data = 0;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "#define MODEL_ARENA_SIZE %lluu", &arena);
        sscanf(line, "#define MODEL_DATA_SIZE %lluu", &data);
    }
    fclose(f);
    assert_int_equal(arena, rep.arena_bytes);
    assert_int_equal(data, rep.file_bytes);
    /* the array holds the file's bytes: read them back from the generated C */
    snprintf(path, sizeof path, "%s/model.c", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    uint8_t *bytes = malloc(data), *file = malloc(data);
    assert_true(bytes && file);
    size_t k = 0;
    unsigned v;
    int c;
    while ((c = fgetc(f)) != EOF && k < data)
        if (c == '0' && (c = fgetc(f)) == 'x' && fscanf(f, "%2x", &v) == 1)
            bytes[k++] = (uint8_t)v;
    fclose(f);
    assert_int_equal(k, data);
    snprintf(path, sizeof path, "%s/model.tflite", dir);
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(file, 1, data, f), data);
    fclose(f);
    assert_memory_equal(bytes, file, data);
    /* and the engine's figure for it */
    run r;
    run_open(&r, file, data);
    assert_int_equal(r.arena_size, arena);
    run_close(&r);
    free(bytes), free(file);
    manta_file_remove_tree(dir);
    xgraph_free(&g);
}

/* ---- errors ---- */

static void test_write_errors(void **state)
{
    (void)state;
    xgraph g;
    manta_err err;
    tflite_report rep;
    assert_int_equal(xgr_color_classifier(&g, 4, &err), MANTA_OK);
    manta_status st = tflite_write_file(&g, "/nonexistent-dir/m.tflite", NULL, &rep, &err);
    assert_int_equal(st, MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/m.tflite"));
    char dir[] = "/tmp/manta-werr-XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.tflite", dir);
    st = tflite_write_file(&g, path, "/nonexistent-dir", &rep, &err);
    assert_int_equal(st, MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/model.h"));
    manta_file_remove_tree(dir);
    g.pre.std[1] = -1.0f;
    uint8_t *model;
    size_t size;
    assert_int_equal(tflite_write(&g, &model, &size, &rep, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "std[1]"));
    xgraph_free(&g);
    assert_int_equal(tflite_write(&g, &model, &size, &rep, &err), MANTA_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flatc_reads_written_models),
        cmocka_unit_test(test_flatc_reads_stereo_models),
        cmocka_unit_test(test_constants_aligned_and_named),
        cmocka_unit_test(test_offline_plan_is_the_engine_plan),
        cmocka_unit_test(test_metadata_round_trip),
        cmocka_unit_test(test_c_array_compiles),
        cmocka_unit_test(test_write_errors),
    };
    return cmocka_run_group_tests_name("export tflite", tests, NULL, NULL);
}
