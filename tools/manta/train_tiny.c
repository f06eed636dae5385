/* manta train-tiny: trains the small fixed CNN (runtime/classify/tinynet.h) on
 * Fashion-MNIST and reports loss, accuracy and images/s. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/rng.h"
#include "data/idx.h"
#include "classify/tinynet.h"

typedef struct train_opts {
    const char *device;
    const char *data;
    long steps;
    int batch;
    float lr;
    long warmup;
    unsigned long long seed;
    int log_every;
    int eval_images;
    bool json;
} train_opts;

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_args(int argc, char **argv, train_opts *o)
{
    long seed = 1;
    double lr = 0.1;
    *o = (train_opts){.data = IDX_FASHION_MNIST_DIR,
                      .steps = 300,
                      .batch = 64,
                      .warmup = -1,
                      .log_every = 25,
                      .eval_images = 10000};
    const opt_def defs[] = {
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &o->device,
         .metavar = "SPEC",
         .help = "OpenCL device: index, gpu|cpu|accelerator, or part of a name"},
        {.name = "data",
         .kind = OPT_STRING,
         .dest = &o->data,
         .metavar = "DIR",
         .help = "folder with the IDX files (default " IDX_FASHION_MNIST_DIR ")"},
        {.name = "steps",
         .kind = OPT_LONG,
         .dest = &o->steps,
         .lo = 1,
         .hi = 100000000,
         .metavar = "N",
         .help = "training steps (default 300)"},
        {.name = "batch",
         .kind = OPT_INT,
         .dest = &o->batch,
         .lo = 1,
         .hi = 4096,
         .metavar = "N",
         .help = "batch size (default 64)"},
        {.name = "lr",
         .kind = OPT_DOUBLE,
         .dest = &lr,
         .lo = 0,
         .hi = 100,
         .metavar = "X",
         .help = "peak learning rate, in (0, 100) (default 0.1)"},
        {.name = "warmup",
         .kind = OPT_LONG,
         .dest = &o->warmup,
         .lo = 0,
         .hi = 100000000,
         .metavar = "N",
         .help = "warm-up steps (default steps/10; 0: none)"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &seed,
         .lo = 0,
         .hi = 2147483647,
         .metavar = "N",
         .help = "seed for weights and data order (default 1)"},
        {.name = "log-every",
         .kind = OPT_INT,
         .dest = &o->log_every,
         .lo = 1,
         .hi = 1000000,
         .metavar = "N",
         .help = "progress line every N steps (default 25)"},
        {.name = "eval-images",
         .kind = OPT_INT,
         .dest = &o->eval_images,
         .lo = 0,
         .hi = 100000000,
         .metavar = "N",
         .help = "test images to evaluate at the end, 0 = none (default 10000)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &o->json, .help = "JSON lines instead of text"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta train-tiny",
        "[OPTIONS]",
        "Trains a small fixed CNN (conv, depthwise, SE, residual; see runtime/classify/tinynet.h)\n"
        "on Fashion-MNIST with SGD (Nesterov momentum 0.9, weight decay 3e-5, warm-up then\n"
        "cosine learning rate), printing loss, batch accuracy and images/s, then the\n"
        "accuracy on the test set. --device defaults to MANTA_DEVICE, else device 0.\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!(lr > 0 && lr < 100)) {
        fprintf(stderr, "manta train-tiny: --lr needs a number in (0, 100), got '%g'\n", lr);
        return 2;
    }
    o->lr = (float)lr;
    o->seed = (unsigned long long)seed;
    if (o->warmup < 0)
        o->warmup = o->steps / 10;
    if (o->warmup >= o->steps)
        o->warmup = o->steps - 1;
    return 1;
}

static void shuffle(int *idx, int n, manta_rng *r)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)manta_rng_below(r, (uint32_t)i + 1);
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* Top-1 on the first n test images, in batches (the last one padded). */
static manta_status evaluate(tinynet *net, const idx_set *test, int n, int batch, float *images,
                             float *labels, int *index, double *acc)
{
    const int K = test->classes;
    float *logits = malloc((size_t)batch * K * sizeof *logits);
    if (!logits)
        return MANTA_ERR_NO_MEMORY;
    int correct = 0;
    manta_status st = MANTA_OK;
    for (int b0 = 0; b0 < n && st == MANTA_OK; b0 += batch) {
        int m = n - b0 < batch ? n - b0 : batch;
        for (int i = 0; i < batch; i++)
            index[i] = b0 + (i < m ? i : 0);
        data_idx_batch(test, index, batch, IDX_FASHION_MEAN, IDX_FASHION_STD, images, labels);
        st = tinynet_predict(net, images, logits);
        for (int i = 0; i < m && st == MANTA_OK; i++) {
            int best = 0;
            for (int k = 1; k < K; k++)
                if (logits[(size_t)i * K + k] > logits[(size_t)i * K + best])
                    best = k;
            correct += best == (int)labels[i];
        }
    }
    free(logits);
    *acc = n ? (double)correct / n : 0.0;
    return st;
}

int cmd_train_tiny(int argc, char **argv)
{
    train_opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr != 1)
        return pr;

    manta_err err;
    manta_err_clear(&err);
    idx_set train = {0}, test = {0};
    manta_status st = data_idx_load_split(o.data, "train", &train, &err);
    if (st == MANTA_OK && o.eval_images > 0)
        st = data_idx_load_split(o.data, "t10k", &test, &err);
    if (st != MANTA_OK) {
        cmd_error("train-tiny", st, &err);
        data_idx_free(&train);
        return 1;
    }
    if (o.eval_images > test.count)
        o.eval_images = test.count;

    int rc = 1;
    tinynet *net = NULL;
    float *images = NULL, *labels = NULL;
    int *order = NULL, *index = NULL;
    mcl_dev *d = cmd_open_device("train-tiny", o.device);
    if (!d)
        goto out;
    const mcl_device_info *di = mcl_info(d);
    if (!o.json)
        printf("device: %s (%s, %u compute units)\n", di->name, mcl_type_name(di->type),
               di->compute_units);

    tinynet_config cfg = {1, train.rows, train.cols, train.classes, o.batch, 0.1f};
    st = tinynet_create(d, &cfg, o.seed, &net);
    if (st != MANTA_OK) {
        cmd_error("train-tiny", st, mcl_err(d));
        goto out;
    }
    size_t px = (size_t)train.rows * train.cols;
    images = malloc((size_t)o.batch * px * sizeof *images);
    labels = malloc((size_t)o.batch * sizeof *labels);
    order = malloc((size_t)train.count * sizeof *order);
    index = malloc((size_t)o.batch * sizeof *index);
    if (!images || !labels || !order || !index) {
        fprintf(stderr, "manta train-tiny: out of host memory\n");
        goto out;
    }
    for (int i = 0; i < train.count; i++)
        order[i] = i;
    manta_rng rng;
    manta_rng_seed(&rng, o.seed, 2);
    shuffle(order, train.count, &rng);
    if (!o.json)
        printf("model: tinynet, %zu parameters; data: %d training images %dx%d, %d classes; "
               "batch %d, %ld steps\n",
               tinynet_param_count(net), train.count, train.rows, train.cols, train.classes,
               o.batch, o.steps);

    optim_sgd opt = {0.9f, 3e-5f, true};
    lr_schedule sched = {o.lr, o.warmup, o.steps};
    int pos = 0;
    double t_start = cmd_now(), t_win = t_start, loss_win = 0;
    long correct_win = 0, seen_win = 0;
    for (long step = 0; step < o.steps; step++) {
        if (pos + o.batch > train.count) {
            shuffle(order, train.count, &rng);
            pos = 0;
        }
        data_idx_batch(&train, order + pos, o.batch, IDX_FASHION_MEAN, IDX_FASHION_STD, images,
                       labels);
        pos += o.batch;
        tinynet_step_result r;
        float lr = train_lr_at(&sched, step);
        st = tinynet_train_step(net, images, labels, &opt, lr, &r);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta train-tiny: step %ld: %s\n", step + 1,
                    manta_err_msg(mcl_err(d), st));
            goto out;
        }
        loss_win += r.loss;
        correct_win += r.correct;
        seen_win += o.batch;
        if ((step + 1) % o.log_every == 0 || step + 1 == o.steps) {
            double t = cmd_now();
            long n_steps = seen_win / o.batch;
            double ips = (double)seen_win / (t - t_win);
            double eta = (double)(o.steps - step - 1) * (t - t_start) / (double)(step + 1);
            if (o.json)
                printf("{\"step\":%ld,\"steps\":%ld,\"loss\":%.5f,\"batch_top1\":%.4f,"
                       "\"lr\":%.5f,\"images_per_s\":%.1f,\"eta_s\":%.1f}\n",
                       step + 1, o.steps, loss_win / n_steps, (double)correct_win / seen_win, lr,
                       ips, eta);
            else
                printf("step %5ld/%ld  loss %.4f  batch top-1 %5.1f%%  lr %.4f  %7.1f images/s  "
                       "ETA %.0f s\n",
                       step + 1, o.steps, loss_win / n_steps, 100.0 * correct_win / seen_win, lr,
                       ips, eta);
            fflush(stdout);
            t_win = t;
            loss_win = 0;
            correct_win = seen_win = 0;
        }
    }
    double train_s = cmd_now() - t_start;
    double acc = 0;
    if (o.eval_images > 0) {
        st = evaluate(net, &test, o.eval_images, o.batch, images, labels, index, &acc);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta train-tiny: evaluation: %s\n", manta_err_msg(mcl_err(d), st));
            goto out;
        }
    }
    double ips = (double)o.steps * o.batch / train_s;
    if (o.json) {
        printf("{\"done\":true,\"train_seconds\":%.2f,\"images_per_s\":%.1f,\"test_images\":%d,"
               "\"test_top1\":%.4f,",
               train_s, ips, o.eval_images, acc);
        cmd_json_provenance(stdout, d);
        printf("}\n");
    } else {
        printf("trained %ld steps in %.1f s (%.1f images/s)\n", o.steps, train_s, ips);
        if (o.eval_images > 0)
            printf("test top-1: %.2f%% on %d images\n", 100.0 * acc, o.eval_images);
    }
    rc = 0;
out:
    free(images);
    free(labels);
    free(order);
    free(index);
    tinynet_destroy(net);
    mcl_close(d);
    data_idx_free(&train);
    data_idx_free(&test);
    return rc;
}
