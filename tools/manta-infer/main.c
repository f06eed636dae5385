/* manta-infer: run a .tflite model on JPEG images with the manta engine.
 *
 *   manta-infer MODEL IMAGE... [--top K] [--json] [--bench N] [--stats] [--check]
 *
 * Linked with libmanta_engine.a, two plain-C files of the runtime (the error
 * record and the metadata reader, export/tflite_meta.h), libturbojpeg and
 * libc/libm only. The model is read into a 16-byte aligned buffer and
 * verified; the arena is allocated with malloc (aligned_alloc) at exactly
 * mengine_arena_size() bytes, once, before anything runs: the engine itself
 * never allocates. The preprocessing
 * (resolution, gray or RGB, mean and std, labels) comes from the model's
 * "manta_preprocess" metadata; a model without it is fed pixel / 255 at its
 * input's size and its classes are printed by index.
 *
 * Exit status: 0 success, 1 a model or image error (one line on stderr
 * naming the file and the reason; remaining images are still run), 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/json.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "common/provenance.h"
#include "core/stats.h"
#include "engine/engine.h"
#include "engine_size.h"
#include "export/tflite.h"
#include "export/tflite_meta.h"
#include "image.h"
#include "stereo.h"

#define MAX_MODEL_BYTES 0x7fffffffu
#define WARMUP_RUNS 3

typedef struct opts {
    const char *model;
    char **images;
    int n_images;
    int top, bench;
    bool json, stats, check, raw, all, version;
    const char *dump_input, *dump_output, *out, *color, *requant;
} opts;

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_args(int argc, char **argv, opts *o)
{
    static const char *const requant_words[] = {"ref", "fp32", NULL};
    *o = (opts){.top = 5};
    const opt_def defs[] = {
        {.name = "top",
         .kind = OPT_INT,
         .dest = &o->top,
         .lo = 1,
         .hi = 1000000,
         .metavar = "K",
         .help = "classes to print per image (default 5)"},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &o->json,
         .help = "one JSON document on stdout instead of text"},
        {.name = "bench",
         .kind = OPT_INT,
         .dest = &o->bench,
         .lo = 1,
         .hi = 100000000,
         .metavar = "N",
         .help = "after a warm-up, time N runs: latency min / p10 / median / p90"},
        {.name = "stats",
         .kind = OPT_FLAG,
         .dest = &o->stats,
         .help = "model, arena and weight bytes; engine code (see above)"},
        {.name = "check",
         .kind = OPT_FLAG,
         .dest = &o->check,
         .help = "only verify the model (and size its arena)"},
        {.name = "raw",
         .kind = OPT_FLAG,
         .dest = &o->raw,
         .help = "IMAGE files are raw input tensors (NHWC; float32, or int8 for an int8 model)"},
        {.name = "dump-input",
         .kind = OPT_STRING,
         .dest = &o->dump_input,
         .metavar = "F",
         .help = "write the first image's input tensor (NHWC, float32 or int8) to F"},
        {.name = "dump-output",
         .kind = OPT_STRING,
         .dest = &o->dump_output,
         .metavar = "F",
         .help = "stereo: write the output tensor ((1, H, W, 1) at the model's size; float32, or "
                 "int8 for an int8 model) to F"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &o->out,
         .metavar = "F.png",
         .help = "stereo: the disparity as a 16-bit PNG, KITTI's d * 256"},
        {.name = "color",
         .kind = OPT_STRING,
         .dest = &o->color,
         .metavar = "F.png",
         .help = "stereo: the disparity colour-mapped (dark blue 0 .. dark red max_disp)"},
        {.name = "requant",
         .kind = OPT_STRING,
         .dest = &o->requant,
         .choices = requant_words,
         .metavar = "MODE",
         .help =
             "int8: ref (TFLite's fixed point, default) or fp32 (XNNPACK's, as LiteRT's default)"},
        {.name = "all",
         .kind = OPT_FLAG,
         .dest = &o->all,
         .help = "with --json, also print every logit and probability (int8: output_q raw)"},
        {.name = "version",
         .kind = OPT_FLAG,
         .dest = &o->version,
         .help = "the version and the git revision it was built from"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta-infer",
        "MODEL [IMAGE...] [--top K] [--json] [--bench N] [--stats] [--check]\n"
        "       manta-infer STEREO_MODEL LEFT RIGHT [--out F.png] [--color F.png] [--json]",
        "Runs a .tflite model on JPEG images in the manta inference engine.\n\n"
        "  MODEL   .tflite file (float32, verified before use)\n"
        "  IMAGE   JPEG files, decoded gray or RGB as the model's metadata says\n\n"
        "A stereo model (manta export of a stereo checkpoint) takes a left and a right\n"
        "image, JPEG or PNG (PNG where built with libpng: not the board builds), of any size:\n"
        "each is resized to the model's input size (its triangle filter), and the disparity\n"
        "is resized back to the left image's size and multiplied by the width ratio, so it\n"
        "is in the image's pixels. --out writes it as a 16-bit PNG (KITTI: d * 256),\n"
        "--color colour-mapped; --dump-input both input tensors (left then right);\n"
        "--stats says whether the correlation runs fused and how many PADs are folded\n"
        "into the convolution that follows.\n\n"
        "The preprocessing (resolution, gray or RGB, mean and std, labels) comes from the\n"
        "model's manta_preprocess metadata; a model without it is fed pixel / 255 at its\n"
        "input's size and its classes are printed by index. --stats' engine code is the\n"
        "text + data of the engine library's objects, measured at build time.\n"
        "Exit status: 0 success, 1 a model or image error (the other images still run),\n"
        "2 usage.\n",
        defs,
        0,
        -1};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (o->version) {
        tool_print_version(stdout, "manta-infer");
        return 0;
    }
    if (first == argc) {
        fprintf(stderr, "manta-infer: no model given\n");
        return 2;
    }
    if ((o->dump_input && !out_check_file("manta-infer", "dump-input", o->dump_input)) ||
        (o->dump_output && !out_check_file("manta-infer", "dump-output", o->dump_output)) ||
        (o->out && !out_check_file("manta-infer", "out", o->out)) ||
        (o->color && !out_check_file("manta-infer", "color", o->color)))
        return 2;
    o->model = argv[first];
    o->images = argv + first + 1;
    o->n_images = argc - first - 1;
    if (!o->n_images && !o->check && !o->bench && !o->stats) {
        fprintf(stderr, "manta-infer: no image given (or --check, --bench, --stats)\n");
        return 2;
    }
    return 1;
}

/* Read a whole file into a 16-byte aligned buffer. */
static uint8_t *read_file(const char *path, size_t *size, size_t max, char *why, size_t cap)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f) {
        snprintf(why, cap, "%s", strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, cap, "not a regular file");
        fclose(f);
        return NULL;
    }
    if ((uint64_t)st.st_size > max) {
        snprintf(why, cap, "file of %lld bytes is too large", (long long)st.st_size);
        fclose(f);
        return NULL;
    }
    const size_t n = (size_t)st.st_size;
    uint8_t *buf = aligned_alloc(16, (n + 16) & ~(size_t)15);
    if (!buf) {
        snprintf(why, cap, "out of memory for %zu bytes", n);
        fclose(f);
        return NULL;
    }
    if (fread(buf, 1, n, f) != n || fgetc(f) != EOF) {
        snprintf(why, cap, "read failed or the file changed while reading");
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *size = n;
    return buf;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Everything about the loaded model. */
typedef struct session {
    uint8_t *file;
    size_t size;
    mengine_model m;
    mengine e;
    void *arena;
    size_t arena_size;
    tflite_meta meta;
    int has_meta;
    image_norm norm;
    int res;
    mengine_view in, out, logits;
    int has_logits;
    int stereo; /* two inputs and one output: stereo_infer_run() */
} session;

/* Bytes per element of a view (INT8: 1). */
static size_t esize(const mengine_view *v) { return v->type == MENGINE_INT8 ? 1 : 4; }

/* Element i of a float32 or int8 (dequantized) view. */
static float val(const mengine_view *v, size_t i)
{
    if (v->type == MENGINE_INT8)
        return v->scale * (float)(((const int8_t *)v->cdata)[i] - v->zero_point);
    return v->cdata[i];
}

/* An int8 model's input: the float image (@p x) quantized with the input's scale and zero
 * point, rounded to nearest (ties away from zero) and saturated, as TFLite's QUANTIZE. */
static void quantize_input(const mengine_view *in, const float *x)
{
    int8_t *q = (int8_t *)in->data;
    for (size_t i = 0; i < in->count; i++) {
        const float r = x[i] / in->scale;
        const long k = (long)(r >= 0 ? r + 0.5f : r - 0.5f) + in->zero_point;
        q[i] = (int8_t)(k < -128 ? -128 : k > 127 ? 127 : k);
    }
}

static int open_session(session *s, const opts *o)
{
    char why[512], msg[512];
    memset(s, 0, sizeof *s);
    s->meta.logits_tensor = -1;
    s->file = read_file(o->model, &s->size, MAX_MODEL_BYTES, why, sizeof why);
    if (!s->file)
        return fprintf(stderr, "manta-infer: %s: %s\n", o->model, why), -1;
    mengine_status st = mengine_model_load(&s->m, s->file, s->size, NULL, msg, sizeof msg);
    if (st != MENGINE_OK)
        return fprintf(stderr, "manta-infer: %s: invalid model (%s): %s\n", o->model,
                       mengine_status_str(st), msg),
               -1;
    const uint8_t *md;
    size_t md_size;
    if (mengine_model_metadata(&s->m, TFLITE_META_PREPROCESS, &md, &md_size) == MENGINE_OK && md) {
        manta_err err;
        if (tflite_meta_parse((const char *)md, md_size, &s->meta, &err) != MANTA_OK)
            return fprintf(stderr, "manta-infer: %s: manta_preprocess metadata: %s\n", o->model,
                           err.msg),
                   -1;
        s->has_meta = 1;
    }
    const size_t ws = mengine_plan_work_size(&s->m);
    void *work = malloc(ws ? ws : 1);
    if (!work)
        return fprintf(stderr, "manta-infer: out of memory\n"), -1;
    st = mengine_arena_size(&s->m, work, ws, &s->arena_size, msg, sizeof msg);
    free(work);
    if (st != MENGINE_OK)
        return fprintf(stderr, "manta-infer: %s: cannot plan the model: %s\n", o->model, msg), -1;
    s->arena = aligned_alloc(MENGINE_ARENA_ALIGN, (s->arena_size + 15) & ~(size_t)15);
    if (!s->arena)
        return fprintf(stderr, "manta-infer: out of memory for an arena of %zu bytes\n",
                       s->arena_size),
               -1;
    if (mengine_init(&s->e, &s->m, s->arena, s->arena_size) != MENGINE_OK ||
        mengine_prepare(&s->e, msg, sizeof msg) != MENGINE_OK)
        return fprintf(stderr, "manta-infer: %s: prepare failed: %s\n", o->model, msg), -1;
    if (o->requant && !strcmp(o->requant, "fp32"))
        mengine_set_requant(&s->e, MENGINE_REQUANT_FP32);
    if (mengine_input_count(&s->e) == 2 && mengine_output_count(&s->e) == 1) {
        s->stereo = 1; /* the rest is stereo_infer_run()'s */
        return 0;
    }
    if (mengine_input_count(&s->e) != 1 || mengine_output_count(&s->e) != 1)
        return fprintf(stderr, "manta-infer: %s: %zu inputs and %zu outputs (1 and 1 expected)\n",
                       o->model, mengine_input_count(&s->e), mengine_output_count(&s->e)),
               -1;
    mengine_input(&s->e, 0, &s->in);
    mengine_output(&s->e, 0, &s->out);
    memset(s->in.data, 0, s->in.count * esize(&s->in)); /* --bench without an image */
    const int32_t *d = s->in.dims;
    if (s->in.rank != 4 || d[0] != 1 || d[1] != d[2])
        return fprintf(stderr, "manta-infer: %s: the input is not one square image (1, R, R, C)\n",
                       o->model),
               -1;
    s->res = d[1];
    s->norm.channels = d[3];
    for (int c = 0; c < 3; c++)
        s->norm.mean[c] = 0.0f, s->norm.std[c] = 1.0f;
    if (s->has_meta) {
        const tflite_meta *mt = &s->meta;
        if ((mt->resolution && mt->resolution != s->res) || (mt->channels && mt->channels != d[3]))
            return fprintf(
                       stderr,
                       "manta-infer: %s: metadata says %dx%dx%d, the input tensor is %dx%dx%d\n",
                       o->model, mt->resolution, mt->resolution, mt->channels, d[1], d[2], d[3]),
                   -1;
        for (int c = 0; c < d[3] && c < 3; c++) {
            if (c < mt->n_mean)
                s->norm.mean[c] = mt->mean[c];
            if (c < mt->n_std)
                s->norm.std[c] = mt->std[c];
            if (!(s->norm.std[c] > 0.0f))
                return fprintf(stderr, "manta-infer: %s: metadata std[%d] is not positive\n",
                               o->model, c),
                       -1;
        }
        if (mt->n_labels && (size_t)mt->n_labels != s->out.count)
            return fprintf(stderr, "manta-infer: %s: %d labels for %zu outputs\n", o->model,
                           mt->n_labels, s->out.count),
                   -1;
        if (mt->logits_tensor >= 0 &&
            mengine_tensor(&s->e, (size_t)mt->logits_tensor, &s->logits) == MENGINE_OK &&
            s->logits.cdata && s->logits.count == s->out.count && s->logits.type == s->out.type)
            s->has_logits = 1;
    }
    return 0;
}

static void close_session(session *s)
{
    tflite_meta_free(&s->meta);
    free(s->arena);
    free(s->file);
}

/* Fill the input from one IMAGE argument. */
static int load_input(const session *s, const opts *o, const char *path, char *why, size_t cap)
{
    size_t n;
    uint8_t *data = read_file(path, &n, 0x7fffffffu, why, cap);
    if (!data)
        return -1;
    int rc = 0;
    const int q8 = s->in.type == MENGINE_INT8;
    if (o->raw) { /* the tensor as the engine holds it: float32, or int8 for an int8 model */
        if (n != s->in.count * esize(&s->in)) {
            snprintf(why, cap, "%zu bytes, the input tensor takes %zu %s (%zu bytes)", n,
                     s->in.count, q8 ? "int8 values" : "floats", s->in.count * esize(&s->in));
            rc = -1;
        } else {
            memcpy(s->in.data, data, n);
        }
    } else if (q8) {
        float *x = malloc(s->in.count * sizeof *x);
        rc = x ? image_load_jpeg(data, n, s->res, &s->norm, x, why, cap) : -1;
        if (!x)
            snprintf(why, cap, "out of memory");
        if (rc == 0)
            quantize_input(&s->in, x);
        free(x);
    } else {
        rc = image_load_jpeg(data, n, s->res, &s->norm, s->in.data, why, cap);
    }
    free(data);
    return rc;
}

static const char *label_of(const session *s, size_t k, char *buf, size_t cap)
{
    if (s->has_meta && (size_t)s->meta.n_labels > k)
        return s->meta.labels[k];
    snprintf(buf, cap, "class %zu", k);
    return buf;
}

static void print_result(const session *s, const opts *o, const char *path, int first)
{
    const size_t K = s->out.count;
    const size_t top = (size_t)o->top < K ? (size_t)o->top : K;
    size_t *order = malloc(K * sizeof *order);
    char buf[32];
    if (!order)
        return;
    for (size_t i = 0; i < K; i++)
        order[i] = i;
    for (size_t i = 0; i < top; i++) /* partial selection sort: K is small */
        for (size_t j = i + 1; j < K; j++)
            if (val(&s->out, order[j]) > val(&s->out, order[i])) {
                const size_t t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    if (o->json) {
        printf("%s\n    {\"image\": ", first ? "" : ",");
        json_put_str(stdout, path);
        printf(", \"top\": [");
        for (size_t i = 0; i < top; i++) {
            printf("%s{\"index\": %zu, \"label\": ", i ? ", " : "", order[i]);
            json_put_str(stdout, label_of(s, order[i], buf, sizeof buf));
            printf(", \"prob\": %.6g}", (double)val(&s->out, order[i]));
        }
        printf("]");
        if (o->all) {
            printf(", \"probs\": [");
            for (size_t i = 0; i < K; i++)
                printf("%s%.9g", i ? ", " : "", (double)val(&s->out, i));
            printf("]");
            if (s->out.type == MENGINE_INT8) { /* the raw int8 output, bit for bit */
                printf(", \"output_q\": [");
                for (size_t i = 0; i < K; i++)
                    printf("%s%d", i ? ", " : "", ((const int8_t *)s->out.cdata)[i]);
                printf("], \"output_scale\": %.9g, \"output_zero_point\": %d", (double)s->out.scale,
                       (int)s->out.zero_point);
                printf(", \"input_scale\": %.9g, \"input_zero_point\": %d", (double)s->in.scale,
                       (int)s->in.zero_point);
            }
            if (s->has_logits) {
                printf(", \"logits\": [");
                for (size_t i = 0; i < K; i++)
                    printf("%s%.9g", i ? ", " : "", (double)val(&s->logits, i));
                printf("]");
                if (s->logits.type == MENGINE_INT8) {
                    printf(", \"logits_q\": [");
                    for (size_t i = 0; i < K; i++)
                        printf("%s%d", i ? ", " : "", ((const int8_t *)s->logits.cdata)[i]);
                    printf("]");
                }
            }
        }
        printf("}");
    } else {
        printf("%s:\n", path);
        for (size_t i = 0; i < top; i++)
            printf("  %zu. %-24s %.6f\n", i + 1, label_of(s, order[i], buf, sizeof buf),
                   (double)val(&s->out, order[i]));
    }
    free(order);
}

static int bench(session *s, const opts *o, double *stat)
{
    double *t = malloc((size_t)o->bench * sizeof *t);
    if (!t)
        return fprintf(stderr, "manta-infer: out of memory for %d timings\n", o->bench), -1;
    for (int i = 0; i < WARMUP_RUNS; i++)
        mengine_invoke(&s->e);
    for (int i = 0; i < o->bench; i++) {
        const double t0 = now_ms();
        mengine_invoke(&s->e);
        t[i] = now_ms() - t0;
    }
    const int n = o->bench;
    stat[1] = manta_sort_median(t, (size_t)n);
    stat[0] = t[0];
    for (int q = 0; q < 2; q++) { /* p90 and p10, nearest rank */
        int k = (int)((q ? 0.1 : 0.9) * n + 0.999999) - 1;
        stat[2 + q] = t[k < 0 ? 0 : k >= n ? n - 1 : k];
    }
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    session s;
    int pr = parse_args(argc, argv, &o);
    if (pr != 1)
        return pr;
    if (open_session(&s, &o) != 0) {
        close_session(&s);
        return 1;
    }
    if (s.stereo && !o.check) {
        const stereo_infer_opts so = {o.model, o.images, o.n_images, o.json,       o.stats,
                                      o.bench, o.out,    o.color,    o.dump_input, o.dump_output};
        const int rc = stereo_infer_run(&so, &s.e, &s.m, &s.meta, s.size, s.arena_size);
        close_session(&s);
        return rc;
    }
    if (!s.stereo && (o.out || o.color || o.dump_output)) {
        fprintf(stderr,
                "manta-infer: %s is a classification model: --%s takes a stereo model "
                "and a pair of images\n",
                o.model,
                o.out     ? "out"
                : o.color ? "color"
                          : "dump-output");
        close_session(&s);
        return 2;
    }
    int failed = 0, dumped = 0;
    if (o.json) {
        printf("{");
        tool_json_version(stdout);
        printf(", \"model\": ");
        json_put_str(stdout, o.model);
    }
    if (o.check) {
        if (o.json)
            printf(", \"ok\": true, \"operators\": %u, \"tensors\": %u, \"arena_bytes\": %zu}\n",
                   s.m.n_ops, s.m.n_tensors, s.arena_size);
        else
            printf("%s: ok: %u operators, %u tensors, arena %zu bytes\n", o.model, s.m.n_ops,
                   s.m.n_tensors, s.arena_size);
        close_session(&s);
        return 0;
    }
    if (o.json)
        printf(", \"images\": [");
    int shown = 0;
    for (int i = 0; i < o.n_images; i++) {
        char why[512];
        if (load_input(&s, &o, o.images[i], why, sizeof why) != 0) {
            fprintf(stderr, "manta-infer: %s: %s\n", o.images[i], why);
            failed++;
            continue;
        }
        if (o.dump_input && !dumped++) {
            FILE *f = fopen(o.dump_input, "wb");
            if (!f || fwrite(s.in.data, esize(&s.in), s.in.count, f) != s.in.count ||
                fclose(f) != 0) {
                fprintf(stderr, "manta-infer: %s: cannot write the input tensor\n", o.dump_input);
                failed++;
            }
        }
        if (mengine_invoke(&s.e) != MENGINE_OK) {
            fprintf(stderr, "manta-infer: %s: invoke failed\n", o.images[i]);
            failed++;
            continue;
        }
        print_result(&s, &o, o.images[i], shown++ == 0);
    }
    if (o.json)
        printf("%s]", shown ? "\n  " : "");
    if (o.bench) {
        double st[4];
        if (bench(&s, &o, st) != 0) {
            failed++;
        } else if (o.json) {
            printf(", \"bench\": {\"runs\": %d, \"min_ms\": %.4f, \"p10_ms\": %.4f, "
                   "\"median_ms\": %.4f, \"p90_ms\": %.4f}",
                   o.bench, st[0], st[3], st[1], st[2]);
        } else {
            printf("latency over %d runs (after %d warm-up): min %.4f ms, p10 %.4f ms, median %.4f "
                   "ms, p90 %.4f ms\n",
                   o.bench, WARMUP_RUNS, st[0], st[3], st[1], st[2]);
        }
    }
    if (o.stats) {
        mengine_stats es;
        size_t weights = 0;
        mengine_get_stats(&s.e, &es);
        for (size_t t = 0; t < s.m.n_tensors; t++) {
            mengine_view v;
            if (mengine_tensor(&s.e, t, &v) == MENGINE_OK && !v.data &&
                (v.cdata || v.type == MENGINE_INT32))
                weights += v.count * esize(&v);
        }
        if (o.json)
            printf(", \"stats\": {\"model_bytes\": %zu, \"arena_bytes\": %zu, "
                   "\"activation_bytes\": %zu, \"records_bytes\": %zu, \"weight_bytes\": %zu, "
                   "\"engine_code_bytes\": %u, \"folded_pads\": %zu}",
                   s.size, s.arena_size, es.activation_bytes, es.records_bytes, weights,
                   (unsigned)MANTA_ENGINE_CODE_BYTES, es.folded_pads);
        else
            printf("model %zu bytes, arena %zu bytes (activations %zu, records %zu), weights %zu "
                   "bytes, engine code %u bytes, PADs folded into convolutions: %zu\n",
                   s.size, s.arena_size, es.activation_bytes, es.records_bytes, weights,
                   (unsigned)MANTA_ENGINE_CODE_BYTES, es.folded_pads);
    }
    if (o.json)
        printf(", \"errors\": %d}\n", failed);
    close_session(&s);
    return failed ? 1 : 0;
}
