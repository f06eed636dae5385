/* manta bench train: training throughput of one sub-network of the supernet
 * (forward, loss, backward, SGD step) on random data, as the PyTorch peer
 * (tools/bench/torch_ofa_train.py) measures it. Not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cl/slab.h"
#include "cmd.h"
#include "common/opts.h"
#include "core/rng.h"
#include "core/stats.h"
#include "nn/loss.h"
#include "classify/supernet.h"
#include "space/stereo_space.h"
#include "train/optim.h"

/* One training step of @p net: labels at io[0 .. batch), losses after them. */
static manta_status train_step(mcl_dev *d, ofa_supernet *net, int classes, int batch, mslab *io)
{
    const optim_sgd opt = {0.9f, 3e-5f, true};
    ofa_slabs sl;
    ofa_supernet_slabs(net, &sl);
    manta_status st = mcl_fill(d, sl.grads, 0.0f, sl.n_params);
    if (st == MANTA_OK)
        st = ofa_supernet_forward(net, sl.params, OFA_BN_TRAIN);
    if (st == MANTA_OK)
        st = nn_xent_forward_backward(d, batch, classes, 0.1f, ofa_supernet_logits(net),
                                      mslab_view(io, 0), mslab_view(io, (size_t)batch + 16),
                                      ofa_supernet_dlogits(net), 1.0f / (float)batch, 0.0f);
    if (st == MANTA_OK)
        st = ofa_supernet_backward(net);
    if (st == MANTA_OK)
        st = optim_sgd_step(d, &opt, 0.05f, 1.0f, sl.params, sl.grads, sl.momentum, sl.n_decay,
                            sl.n_params);
    if (st == MANTA_OK)
        st = mcl_finish(d);
    return st;
}

/* The records of @p log into @p path, one JSON object a line. */
static manta_status write_launches(mcl_dev *d, const char *path, const mcl_launch_log *log)
{
    FILE *f = fopen(path, "w");
    for (size_t k = 0; f && k < log->count; k++) {
        bench_print_launch(f, &log->rec[k]);
        fputc('\n', f);
    }
    if (!f || fclose(f) != 0 || log->dropped)
        return manta_err_set(mcl_err(d), MANTA_ERR_IO, "bench train: %s: %s", path,
                             f ? "cannot write (or over "
                                 "4096 launches)"
                               : "cannot open");
    return MANTA_OK;
}

int bench_train(int argc, char **argv)
{
    const char *space_name = "cpu-default", *arch_arg = "max", *device = NULL, *launches = NULL;
    const char *twin_dir = NULL;
    int res = 0, batch = 0, steps = 10;
    bool json = false;
    const opt_def defs[] = {
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &space_name,
         .metavar = "S",
         .help = "search space: cpu-default (default), mbv3-w1.0, stereo-cpu, stereo-gpu or a "
                 "spec file"},
        {.name = "arch",
         .kind = OPT_STRING,
         .dest = &arch_arg,
         .metavar = "ARCH",
         .help = "max (default), min or a file in OFA's encoding"},
        {.name = "res",
         .kind = OPT_INT,
         .dest = &res,
         .lo = 1,
         .hi = 2147483647,
         .metavar = "R",
         .help = "input resolution (default: the sub-network's)"},
        {.name = "batch",
         .kind = OPT_INT,
         .dest = &batch,
         .lo = 1,
         .hi = 4096,
         .metavar = "N",
         .help = "images (stereo: pairs) per step (default 64; stereo 8)"},
        {.name = "steps",
         .kind = OPT_INT,
         .dest = &steps,
         .lo = 1,
         .hi = 100000,
         .metavar = "N",
         .help = "timed steps (default 10)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &device,
         .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "launches",
         .kind = OPT_STRING,
         .dest = &launches,
         .metavar = "FILE",
         .help = "write the kernel launches of the last step to FILE (see above)"},
        {.name = "twin-dir",
         .kind = OPT_STRING,
         .dest = &twin_dir,
         .metavar = "DIR",
         .help = "stereo: write space.json and arch.json to DIR for the PyTorch twin"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta bench train",
        "[--space S] [--arch max|min|FILE] [--res R] [--batch N]\n"
        "                         [--steps N] [--device SPEC] [--launches FILE]\n"
        "                         [--twin-dir DIR] [--json]",
        "Training throughput of one sub-network of the supernet: forward, label-smoothed\n"
        "cross-entropy, backward and an SGD step per batch of random data, as\n"
        "tools/bench/torch_ofa_train.py does in PyTorch. Prints the median step time\n"
        "over --steps timed steps (after 2 warm-up steps) and images/s. --launches\n"
        "writes one JSON object per launch (kernel, global and local sizes, work-items,\n"
        "values written; CLBlast GEMMs with m, n, k).\n"
        "A stereo space (stereo-cpu, stereo-gpu, a stereo spec file) times a sub-network's\n"
        "training step on random pairs at the space's crop: forward on batch statistics,\n"
        "the multi-scale L1 loss (loss round 0), backward and the SGD step, as\n"
        "tools/bench/torch_stereo.py --train-speed does in PyTorch; pairs/s and the peak\n"
        "resident memory.\n",
        defs,
        0,
        0};
    int first;
    opt_result pr = opt_parse(&cmd, argc, argv, &first);
    if (pr != OPT_OK)
        return pr == OPT_HELP ? 0 : 2;
    manta_err err;
    manta_err_clear(&err);
    bool stereo = false;
    manta_status sst = stereo_spec_is_stereo(space_name, &stereo, &err);
    if (sst != MANTA_OK) {
        cmd_error("bench train", sst, &err);
        return 1;
    }
    if (stereo) {
        if (res > 0 || launches) {
            fprintf(stderr, "manta bench train: --res and --launches are for classification "
                            "spaces\n");
            return 2;
        }
        return bench_train_stereo(space_name, arch_arg, batch ? batch : 8, steps, device, twin_dir,
                                  json);
    }
    if (!batch)
        batch = 64;
    ofa_space sp;
    ofa_arch arch;
    manta_status st = ofa_space_load(space_name, &sp, &err);
    if (st != MANTA_OK) {
        cmd_error("bench train", st, &err);
        return 1;
    }
    if (!cmd_load_arch("bench train", &sp, arch_arg, &arch))
        return 1;
    if (res > 0)
        arch.r = res;
    st = ofa_arch_validate(&sp, &arch, &err);
    if (st != MANTA_OK) {
        cmd_error("bench train", st, &err);
        return 1;
    }
    mcl_dev *d = cmd_open_device("bench train", device);
    if (!d)
        return 1;
    ofa_supernet *net = NULL;
    mslab io = {0};
    float *host = NULL;
    double *times = calloc((size_t)steps, sizeof *times);
    int rc = 1;
    const size_t nx = (size_t)batch * sp.in_channels * arch.r * arch.r;
    st = ofa_supernet_create(d, &sp, batch, 1, &net);
    if (st == MANTA_OK)
        st = ofa_supernet_set_arch(net, &arch);
    if (st == MANTA_OK)
        st = mslab_create(d, &io, 2 * (size_t)batch + 32, "labels and losses");
    if (st == MANTA_OK &&
        (!(host = malloc((nx > (size_t)batch ? nx : (size_t)batch) * sizeof *host)) || !times))
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "bench train: out of host memory");
    if (st == MANTA_OK) {
        manta_rng r;
        manta_rng_seed(&r, 3, 3);
        for (size_t i = 0; i < nx; i++)
            host[i] = manta_rng_normal(&r);
        st = mcl_write(d, ofa_supernet_input(net), host, nx);
        for (int i = 0; i < batch && st == MANTA_OK; i++)
            host[i] = (float)manta_rng_below(&r, (uint32_t)sp.classes);
        if (st == MANTA_OK)
            st = mcl_write(d, mslab_view(&io, 0), host, (size_t)batch);
    }
    mcl_launch_record *recs = launches ? calloc(BENCH_LOG_CAP, sizeof *recs) : NULL;
    mcl_launch_log log = {recs, BENCH_LOG_CAP, 0, 0};
    if (st == MANTA_OK && launches && !recs)
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "bench train: out of host memory");
    for (int i = 0; i < steps + 2 && st == MANTA_OK; i++) { /* 2 warm-up steps */
        if (recs && i == steps + 1)
            mcl_set_launch_log(d, &log);
        double t0 = cmd_now();
        st = train_step(d, net, sp.classes, batch, &io);
        if (i >= 2)
            times[i - 2] = cmd_now() - t0;
    }
    mcl_set_launch_log(d, NULL);
    if (st == MANTA_OK && recs)
        st = write_launches(d, launches, &log);
    free(recs);
    if (st == MANTA_OK) {
        qsort(times, (size_t)steps, sizeof *times, manta_cmp_double);
        double med = times[steps / 2];
        if (json) {
            printf("{\"runtime\":\"manta\",");
            cmd_json_provenance(stdout, d);
            printf(",\"kernels\":\"%s\",\"space\":\"%s\",\"arch\":\"%s\",\"r\":%d,\"batch\":%d,"
                   "\"steps\":%d,\"median_step_s\":%.5f,\"images_per_s\":%.2f}\n",
                   mcl_variant_name(mcl_get_variant(d)), sp.name, arch_arg, arch.r, batch, steps,
                   med, batch / med);
        } else
            printf("manta on %s: %s r=%d batch %d: %.1f images/s (median step %.1f ms)\n",
                   mcl_info(d)->name, arch_arg, arch.r, batch, batch / med, med * 1e3);
        rc = 0;
    } else {
        cmd_error("bench train", st, mcl_err(d));
    }
    free(host);
    free(times);
    mslab_destroy(d, &io);
    ofa_supernet_destroy(net);
    mcl_close(d);
    return rc;
}
