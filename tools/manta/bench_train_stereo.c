/* manta bench train --space stereo-...: training throughput of one sub-network of a stereo
 * space (forward on batch statistics, the multi-scale L1 loss, backward, an SGD step with
 * Nesterov momentum) on random pairs, as the PyTorch twin's training-speed mode
 * (tools/bench/torch_stereo.py --train-speed) measures it. Not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "cl/slab.h"
#include "cmd.h"
#include "core/rng.h"
#include "core/stats.h"
#include "nn/disp_loss.h"
#include "common/opts.h"
#include "stereo/net.h"
#include "stereo/train.h"
#include "stereo_cmd.h"
#include "train/optim.h"

/* Peak resident memory of this process, MiB. */
static double peak_rss_mib(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? (double)u.ru_maxrss / 1024.0 : 0.0;
}

/* The device buffers of the benchmark besides the network: ground truth of every scale,
 * the loss results and the loss's scratch. */
typedef struct bench_io {
    mslab mem;
    size_t gt[STEREO_MAX_PREDS], res, scratch;
} bench_io;

static int pred_h(const stereo_space *s, int p) { return s->crop_h >> (s->n_levels - p); }
static int pred_w(const stereo_space *s, int p) { return s->crop_w >> (s->n_levels - p); }

/* One training step: the loss of loss round 0 (every scale weighted). */
static manta_status step(mcl_dev *d, stereo_net *net, const stereo_space *s, int batch,
                         const bench_io *io)
{
    const optim_sgd opt = {0.9f, 3e-5f, true};
    ofa_slabs sl;
    stereo_net_slabs(net, &sl);
    double wsum = 0;
    for (int p = 0; p < stereo_preds(s); p++)
        wsum += s->loss_w[0][p];
    MANTA_TRY(mcl_fill(d, sl.grads, 0.0f, sl.n_params));
    MANTA_TRY(stereo_net_forward(net, sl.params, OFA_BN_TRAIN));
    for (int p = 0; p < stereo_preds(s); p++) {
        nn_disp_loss_shape sh = {batch, pred_h(s, p), pred_w(s, p)};
        nn_disp_loss_params lp = {NN_DISP_LOSS_L1, (float)(s->loss_w[0][p] / wsum),
                                  (float)s->max_disp, 0.0f};
        MANTA_TRY(nn_disp_loss(d, &sh, &lp, stereo_net_pred(net, p),
                               mslab_view(&io->mem, io->gt[p]),
                               mslab_view(&io->mem, io->res + NN_DISP_LOSS_RESULT * (size_t)p),
                               stereo_net_dpred(net, p), mslab_view(&io->mem, io->scratch)));
    }
    MANTA_TRY(stereo_net_backward(net));
    MANTA_TRY(optim_sgd_step(d, &opt, 0.01f, 1.0f, sl.params, sl.grads, sl.momentum, sl.n_decay,
                             sl.n_params));
    return mcl_finish(d);
}

/* Random pairs in [0, 1) and ground truth uniform in (0, max_disp] at every scale. */
static manta_status fill_data(mcl_dev *d, stereo_net *net, const stereo_space *s, int batch,
                              bench_io *io)
{
    const size_t nx = 2 * (size_t)batch * 3 * s->crop_h * s->crop_w;
    float *host = malloc(nx * sizeof *host);
    if (!host)
        return manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "bench train: out of host memory");
    manta_rng r;
    manta_rng_seed(&r, 3, 3);
    for (size_t i = 0; i < nx; i++)
        host[i] = manta_rng_uniform(&r);
    manta_status st = mcl_write(d, stereo_net_input(net), host, nx);
    for (int p = 0; p < stereo_preds(s) && st == MANTA_OK; p++) {
        const size_t n = (size_t)batch * pred_h(s, p) * pred_w(s, p);
        for (size_t i = 0; i < n; i++)
            host[i] = (float)s->max_disp * (1.0f - manta_rng_uniform(&r));
        st = mcl_write(d, mslab_view(&io->mem, io->gt[p]), host, n);
    }
    free(host);
    return st;
}

/* A file @p name in @p dir holding @p text. */
static manta_status write_text(mcl_dev *d, const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        return manta_err_set(mcl_err(d), MANTA_ERR_IO, "bench train: cannot write %s", path);
    return MANTA_OK;
}

/* space.json and arch.json into @p dir, for the twin. */
static manta_status write_twin_inputs(mcl_dev *d, const char *dir, const stereo_space *s,
                                      const ofa_arch *a)
{
    char *text = NULL, buf[4096];
    manta_status st = stereo_space_to_json(s, &text, mcl_err(d));
    if (st == MANTA_OK)
        st = write_text(d, dir, "space.json", text);
    free(text);
    if (st == MANTA_OK)
        st = stereo_arch_to_json(s, a, buf, sizeof buf, mcl_err(d));
    if (st == MANTA_OK)
        st = write_text(d, dir, "arch.json", buf);
    return st;
}

int bench_train_stereo(const char *space_name, const char *arch_arg, int batch, int steps,
                       const char *device, const char *twin_dir, bool json)
{
    manta_err err;
    manta_err_clear(&err);
    stereo_space s;
    ofa_arch a;
    manta_status st = stereo_space_load(space_name, &s, &err);
    if (st == MANTA_OK)
        st = stereo_cmd_arch(&s, arch_arg, &a, &err);
    if (st != MANTA_OK) {
        cmd_error("bench train", st, &err);
        return 1;
    }
    mcl_dev *d = cmd_open_device("bench train", device);
    if (!d)
        return 1;
    stereo_net *net = NULL;
    bench_io io;
    memset(&io, 0, sizeof io);
    double *times = calloc((size_t)steps, sizeof *times);
    int rc = 1;
    st = times ? MANTA_OK
               : manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "bench train: out of host memory");
    if (st == MANTA_OK && twin_dir)
        st = write_twin_inputs(d, twin_dir, &s, &a);
    if (st == MANTA_OK)
        st = stereo_net_create(d, &s, batch, 1, &net);
    if (st == MANTA_OK)
        st = stereo_net_set_arch(net, &a);
    if (st == MANTA_OK) {
        mlayout l = {0};
        for (int p = 0; p < stereo_preds(&s); p++)
            io.gt[p] = mlayout_add(&l, (size_t)batch * pred_h(&s, p) * pred_w(&s, p));
        io.res = mlayout_add(&l, NN_DISP_LOSS_RESULT * (size_t)stereo_preds(&s));
        nn_disp_loss_shape fine = {batch, s.crop_h, s.crop_w};
        io.scratch = mlayout_add(&l, nn_disp_loss_scratch_floats(d, &fine) + 1);
        st = mslab_create(d, &io.mem, l.total, "ground truth and losses");
    }
    if (st == MANTA_OK)
        st = fill_data(d, net, &s, batch, &io);
    for (int i = 0; i < steps + 2 && st == MANTA_OK; i++) { /* 2 warm-up steps */
        double t0 = cmd_now();
        st = step(d, net, &s, batch, &io);
        if (i >= 2)
            times[i - 2] = cmd_now() - t0;
    }
    if (st == MANTA_OK) {
        qsort(times, (size_t)steps, sizeof *times, manta_cmp_double);
        const double med = times[steps / 2];
        mcl_stats ms;
        mcl_get_stats(d, &ms);
        if (json) {
            printf("{\"runtime\":\"manta\",");
            cmd_json_provenance(stdout, d);
            printf(",\"kernels\":\"%s\",\"space\":\"%s\",\"arch\":\"%s\",\"h\":%d,\"w\":%d,"
                   "\"batch\":%d,\"steps\":%d,\"median_step_s\":%.5f,\"pairs_per_s\":%.3f,"
                   "\"peak_rss_mib\":%.1f,\"device_bytes\":%llu}\n",
                   mcl_variant_name(mcl_get_variant(d)), s.name, arch_arg, s.crop_h, s.crop_w,
                   batch, steps, med, batch / med, peak_rss_mib(),
                   (unsigned long long)ms.bytes_allocated);
        } else
            printf("manta on %s: %s %s %dx%d batch %d: %.2f pairs/s (median step %.1f ms), "
                   "peak RSS %.0f MiB\n",
                   mcl_info(d)->name, s.name, arch_arg, s.crop_w, s.crop_h, batch, batch / med,
                   med * 1e3, peak_rss_mib());
        rc = 0;
    } else {
        cmd_error("bench train", st, mcl_err(d));
    }
    free(times);
    mslab_destroy(d, &io.mem);
    stereo_net_destroy(net);
    mcl_close(d);
    return rc;
}

/* A byte count: a number with an optional k, m or g suffix (powers of 1000 with "GB"-style
 * "k", "m", "g"; "ki", "mi", "gi": of 1024). 0 when it is not one. */
static unsigned long long parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return 0;
    double unit = 1;
    if (*end == 'k' || *end == 'm' || *end == 'g') {
        const int p = *end == 'k' ? 1 : *end == 'm' ? 2 : 3;
        const double base = end[1] == 'i' ? 1024.0 : 1000.0;
        for (int i = 0; i < p; i++)
            unit *= base;
        end += end[1] == 'i' ? 2 : 1;
    }
    return *end ? 0 : (unsigned long long)(v * unit);
}

static void print_mem_row(int batch, const stereo_mem *m)
{
    const ofa_net_mem *n = &m->net;
    const double f = sizeof(float) / 1e9;
    printf("%6d %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f  %s\n", batch, n->acts * f,
           n->dacts * f, n->scratch * f, (n->params + n->grads + n->mom + n->params) * f,
           (m->io + n->state * 2) * f, m->bytes / 1e9, m->unit_bytes / 1e9,
           m->unit_what ? m->unit_what : "-");
}

int bench_memory(int argc, char **argv)
{
    const char *space_name = "stereo-gpu", *device = NULL, *batches = "1,2,4,8,16";
    const char *mem_arg = NULL, *alloc_arg = NULL;
    int subnets = 4, max_batch = 64;
    const opt_def defs[] = {
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &space_name,
         .metavar = "S",
         .help = "a stereo space: stereo-gpu (default), stereo-cpu or a spec file"},
        {.name = "batches",
         .kind = OPT_STRING,
         .dest = &batches,
         .metavar = "LIST",
         .help = "batch sizes of the table (default 1,2,4,8,16)"},
        {.name = "mem",
         .kind = OPT_STRING,
         .dest = &mem_arg,
         .metavar = "BYTES",
         .help = "global memory of the device planned for (default the device's; 80g = 80e9)"},
        {.name = "alloc",
         .kind = OPT_STRING,
         .dest = &alloc_arg,
         .metavar = "BYTES",
         .help = "its largest allocation (default the device's)"},
        {.name = "subnets",
         .kind = OPT_INT,
         .dest = &subnets,
         .lo = 1,
         .hi = 64,
         .metavar = "N",
         .help = "sub-networks a step at most (the results buffer; default 4)"},
        {.name = "max-batch",
         .kind = OPT_INT,
         .dest = &max_batch,
         .lo = 1,
         .hi = 1 << 20,
         .metavar = "N",
         .help = "the largest batch to consider (default 64, as --batch)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &device,
         .metavar = "SPEC",
         .help = "OpenCL device whose kernel variant plans the op scratch (MANTA_KERNELS=gpu "
                 "plans a GPU's on any device)"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta bench memory",
        "[--space S] [--batches LIST] [--mem BYTES] [--alloc BYTES] [--subnets N]\n"
        "                          [--max-batch N] [--device SPEC]",
        "Device memory of a stereo training step (stereo_trainer_plan_memory()), planned\n"
        "without running anything: per batch size the activations, their gradients, the op\n"
        "scratch, parameters with their gradients, momentum and teacher, the trainer's\n"
        "buffers with the statistics, the total and the largest part that must fit one\n"
        "allocation (GB, 1e9 bytes); then the batch manta train --batch auto would pick for\n"
        "--mem and --alloc.\n",
        defs,
        0,
        0};
    int first;
    opt_result pr = opt_parse(&cmd, argc, argv, &first);
    if (pr != OPT_OK)
        return pr == OPT_HELP ? 0 : 2;
    manta_err err;
    manta_err_clear(&err);
    stereo_space s;
    manta_status st = stereo_space_load(space_name, &s, &err);
    if (st != MANTA_OK) {
        cmd_error("bench memory", st, &err);
        return 1;
    }
    mcl_dev *d = cmd_open_device("bench memory", device);
    if (!d)
        return 1;
    unsigned long long gm = mem_arg ? parse_bytes(mem_arg) : mcl_info(d)->global_mem;
    unsigned long long ma = alloc_arg ? parse_bytes(alloc_arg) : mcl_info(d)->max_alloc;
    if (!gm || !ma) {
        fprintf(stderr, "manta bench memory: --mem and --alloc take bytes, e.g. 80g or 20e9\n");
        mcl_close(d);
        return 2;
    }
    printf("%s at %dx%d, training (%s kernels); GB of device memory:\n", s.name, s.crop_w, s.crop_h,
           mcl_variant_name(mcl_get_variant(d)));
    printf("%6s %10s %10s %10s %10s %10s %10s %10s  %s\n", "batch", "acts", "act grads", "scratch",
           "params*4", "io+stats", "total", "largest", "largest part");
    int rc = 0;
    for (const char *p = batches; *p && rc == 0;) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p || b < 1 || b > 1 << 20) {
            fprintf(stderr, "manta bench memory: --batches: '%s' is not a list of batches\n", p);
            rc = 2;
            break;
        }
        stereo_mem m;
        st = stereo_trainer_plan_memory(d, &s, subnets, (int)b, &m);
        if (st != MANTA_OK) {
            cmd_error("bench memory", st, mcl_err(d));
            rc = 1;
            break;
        }
        print_mem_row((int)b, &m);
        p = *end == ',' ? end + 1 : end;
    }
    if (rc == 0) {
        int batch;
        stereo_mem m;
        st = stereo_trainer_pick_batch(d, &s, subnets, max_batch, gm, ma, &batch, &m);
        if (st != MANTA_OK) {
            cmd_error("bench memory", st, mcl_err(d));
            rc = 1;
        } else if (batch == 0) {
            printf("no batch fits %.2f GB with allocations of at most %.2f GB: at batch 1 %.2f "
                   "GB in all, the largest part (%s) %.2f GB\n",
                   gm / 1e9, ma / 1e9, m.bytes / 1e9, m.unit_what, m.unit_bytes / 1e9);
        } else {
            printf("--batch auto on %.2f GB (allocations up to %.2f GB): batch %d%s, %.2f GB "
                   "planned, the largest part %.2f GB (%s)\n",
                   gm / 1e9, ma / 1e9, batch, batch == max_batch ? " (--max-batch)" : "",
                   m.bytes / 1e9, m.unit_bytes / 1e9, m.unit_what);
        }
    }
    mcl_close(d);
    return rc;
}
