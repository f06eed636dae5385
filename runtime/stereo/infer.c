#include "stereo/infer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/stats.h"

struct stereo_infer {
    mcl_dev *d;
    stereo_net *src; /* borrowed: parameters and BN statistics to copy */
    ofa_arch arch;
    stereo_net *net; /* made for ph x pw; NULL before the first pair or after a failure */
    int ph, pw;
    float *host;     /* (2, 3, ph, pw) padded views, then (ph, pw) the finest prediction */
    size_t host_cap; /* floats */
    const stereo_source *recal; /* borrowed; NULL: the source's statistics as they are */
    long recal_pairs; /* at the crop; fewer at larger sizes (stereo_infer_recal_pairs()) */
};

void stereo_pad_size(int height, int width, int n_levels, int *padded_h, int *padded_w)
{
    const int m = 1 << n_levels;
    *padded_h = (height + m - 1) / m * m;
    *padded_w = (width + m - 1) / m * m;
}

void stereo_pad_planes(const float *src, int c, int h, int w, int ph, int pw, float *dst)
{
    for (int k = 0; k < c; k++) {
        const float *s = src + (size_t)k * h * w;
        float *o = dst + (size_t)k * ph * pw;
        for (int y = 0; y < h; y++) {
            float *row = o + (size_t)y * pw;
            memcpy(row, s + (size_t)y * w, (size_t)w * sizeof *row);
            for (int x = w; x < pw; x++)
                row[x] = row[w - 1];
        }
        for (int y = h; y < ph; y++)
            memcpy(o + (size_t)y * pw, o + (size_t)(h - 1) * pw, (size_t)pw * sizeof *o);
    }
}

void stereo_crop_plane(const float *src, int ph, int pw, int h, int w, float *dst)
{
    (void)ph;
    for (int y = 0; y < h; y++)
        memcpy(dst + (size_t)y * w, src + (size_t)y * pw, (size_t)w * sizeof *dst);
}

manta_status stereo_infer_create(mcl_dev *d, stereo_net *src, const ofa_arch *a, stereo_infer **out,
                                 manta_err *err)
{
    *out = NULL;
    const stereo_space *s = stereo_net_space(src);
    ofa_arch arch = *a;
    arch.r = s->crop_h; /* each network's own height replaces it */
    MANTA_TRY(stereo_arch_validate(s, &arch, err));
    stereo_infer *r = calloc(1, sizeof *r);
    if (!r)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "stereo inference: out of host memory");
    r->d = d;
    r->src = src;
    r->arch = arch;
    *out = r;
    return MANTA_OK;
}

void stereo_infer_set_recal(stereo_infer *r, const stereo_source *src, long pairs)
{
    r->recal = pairs > 0 ? src : NULL;
    r->recal_pairs = pairs;
}

long stereo_infer_recal_pairs(const stereo_space *s, long pairs, int padded_h, int padded_w)
{
    const double at = (double)pairs * s->crop_h * s->crop_w / ((double)padded_h * padded_w);
    long n = (long)ceil(at);
    n = n > STEREO_RECAL_MIN_PAIRS ? n : STEREO_RECAL_MIN_PAIRS;
    return n < pairs ? n : pairs;
}

void stereo_infer_destroy(stereo_infer *r)
{
    if (!r)
        return;
    stereo_net_destroy(r->net);
    free(r->host);
    free(r);
}

/* The device's last message into @p err with status @p st. */
static manta_status device_error(stereo_infer *r, manta_status st, manta_err *err)
{
    return manta_err_set(err, st, "%s", manta_err_msg(mcl_err(r->d), st));
}

/* A forward-only network for ph x pw and batches of @p batch pairs: the source's space at
 * that size, the parameters and BN statistics of @p from (the source or a network made
 * here) copied in, the sub-network selected. */
static manta_status net_at(stereo_infer *r, stereo_net *from_net, int ph, int pw, int batch,
                           stereo_net **out, manta_err *err)
{
    stereo_space s = *stereo_net_space(r->src);
    s.crop_h = ph, s.crop_w = pw, s.n_crops = 0; /* planned for this size alone */
    manta_err verr = {0};
    if (stereo_space_validate(&s, &verr) != MANTA_OK)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "too small for the network of space "
                             "'%s' (%s)",
                             s.name, verr.msg);
    stereo_net *n = NULL;
    manta_status st = stereo_net_create_forward_only(r->d, &s, batch, 0, &n);
    if (st != MANTA_OK)
        return device_error(r, st, err);
    ofa_slabs from, to;
    stereo_net_slabs(from_net, &from);
    stereo_net_slabs(n, &to);
    if (from.n_params != to.n_params || from.n_decay != to.n_decay || from.n_state != to.n_state) {
        stereo_net_destroy(n);
        return manta_err_set(err, MANTA_ERR_INTERNAL,
                             "the network at this size has %zu parameters (%zu decayed) and %zu "
                             "batch-norm values, the trained one %zu (%zu) and %zu: their "
                             "layouts differ",
                             to.n_params, to.n_decay, to.n_state, from.n_params, from.n_decay,
                             from.n_state);
    }
    ofa_arch a = r->arch;
    a.r = ph;
    st = mcl_copy(r->d, to.params, from.params, from.n_params);
    if (st == MANTA_OK)
        st = mcl_copy(r->d, to.state, from.state, from.n_state);
    if (st == MANTA_OK)
        st = stereo_net_set_arch(n, &a);
    if (st != MANTA_OK) {
        stereo_net_destroy(n);
        return device_error(r, st, err);
    }
    *out = n;
    return MANTA_OK;
}

/* Make the network of the pairs for ph x pw (net_at(), one pair a batch). */
static manta_status make_net(stereo_infer *r, int ph, int pw, manta_err *err)
{
    stereo_net_destroy(r->net);
    r->net = NULL;
    r->ph = r->pw = 0;
    MANTA_TRY(net_at(r, r->src, ph, pw, 1, &r->net, err));
    r->ph = ph, r->pw = pw;
    return MANTA_OK;
}

/* An eval-mode forward of the input on the device, finished, in ms. */
static manta_status timed_forward(stereo_infer *r, double *ms)
{
    ofa_slabs sl;
    stereo_net_slabs(r->net, &sl);
    MANTA_TRY(mcl_finish(r->d));
    const double t0 = manta_now();
    MANTA_TRY(stereo_net_forward(r->net, sl.params, OFA_BN_EVAL));
    MANTA_TRY(mcl_finish(r->d));
    *ms = (manta_now() - t0) * 1e3;
    return MANTA_OK;
}

/* Recal pair @p i of the source at h x w (a folder's: a crop of at most that size at a place
 * drawn from i) into @p q, which this allocates. */
static manta_status recal_pair(const stereo_source *src, long i, int h, int w, stereo_pair *q,
                               manta_err *err)
{
    const long at = i % src->count;
    if (src->kind == STEREO_SOURCE_SYNTH) {
        stereo_synth_opts o = src->synth;
        o.width = w, o.height = h;
        MANTA_TRY(stereo_pair_alloc(q, h, w, err));
        return stereo_synth_generate(&o, src->base + (uint64_t)at, q, err);
    }
    stereo_pair raw = {0};
    MANTA_TRY(stereo_folder_load(src->set, (int)at, &raw, err));
    stereo_aug_params crop = {.crop_h = h < raw.height ? h : raw.height,
                              .crop_w = w < raw.width ? w : raw.width,
                              .per_view = true};
    manta_rng rng;
    manta_rng_seed(&rng, (uint64_t)i, 11);
    manta_status st = stereo_pair_alloc(q, crop.crop_h, crop.crop_w, err);
    if (st == MANTA_OK)
        st = stereo_aug_apply(&crop, &raw, &rng, q, err);
    stereo_pair_free(&raw);
    return st;
}

/* Recal pairs [first, first + count) of the source at h x w, padded to the network's size,
 * into @p dst: (2 count, 3, ph, pw), the left views then the right ones. */
static manta_status recal_views(stereo_infer *r, long first, int count, int h, int w, float *dst,
                                manta_err *err)
{
    const size_t view = (size_t)STEREO_CHANNELS * r->ph * r->pw;
    for (int k = 0; k < count; k++) {
        stereo_pair q = {0};
        manta_err e = {0};
        manta_status st = recal_pair(r->recal, first + k, h, w, &q, &e);
        if (st == MANTA_OK) {
            stereo_pad_planes(q.left, STEREO_CHANNELS, q.height, q.width, r->ph, r->pw,
                              dst + (size_t)k * view);
            stereo_pad_planes(q.right, STEREO_CHANNELS, q.height, q.width, r->ph, r->pw,
                              dst + (size_t)(count + k) * view);
        }
        stereo_pair_free(&q);
        if (st != MANTA_OK)
            return manta_err_set(err, st, "BN re-calibration at this size: %s", e.msg);
    }
    return MANTA_OK;
}

/* Re-calibration on the source network (its batch of B pairs, as training normalises), run
 * at the network's size, its statistics then copied into the network. */
static manta_status recal_on_source(stereo_infer *r, long n, int h, int w, manta_err *err)
{
    stereo_net *s = r->src;
    const int B = stereo_net_batch(s);
    const long batches = (n + B - 1) / B;
    const size_t view = (size_t)STEREO_CHANNELS * r->ph * r->pw;
    float *host = malloc(2 * (size_t)B * view * sizeof *host);
    if (!host)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of host memory");
    int h0, w0;
    stereo_net_size(s, &h0, &w0);
    ofa_slabs from, to;
    stereo_net_slabs(s, &from);
    stereo_net_slabs(r->net, &to);
    manta_status st = stereo_net_set_size(s, r->ph, r->pw);
    if (st == MANTA_OK)
        st = stereo_net_recal_begin(s, batches * B);
    for (long i = 0; i < batches && st == MANTA_OK; i++) {
        if ((st = recal_views(r, i * B, B, h, w, host, err)) != MANTA_OK) {
            stereo_net_set_size(s, h0, w0);
            free(host);
            return st;
        }
        st = mcl_write(r->d, stereo_net_input(s), host, 2 * (size_t)B * view);
        if (st == MANTA_OK)
            st = stereo_net_forward(s, from.params, OFA_BN_RECAL);
    }
    if (st == MANTA_OK)
        st = mcl_copy(r->d, to.state, from.state, from.n_state);
    manta_status back = stereo_net_set_size(s, h0, w0);
    free(host);
    st = st == MANTA_OK ? back : st;
    return st == MANTA_OK ? st : device_error(r, st, err);
}

/* Pairs a batch of a re-calibration beyond the source's sizes: up to STEREO_RECAL_BATCH
 * (and @p n), as many as the device takes in one activation buffer and a quarter of its
 * memory, judged by the one-pair network. */
static int recal_batch(const stereo_infer *r, long n)
{
    const mcl_device_info *lim = mcl_info(r->d);
    const double per_pair = 4.0 * (double)stereo_net_act_floats(r->net);
    double cap = (double)lim->max_alloc;
    if ((double)lim->global_mem / 4.0 < cap)
        cap = (double)lim->global_mem / 4.0;
    long b = per_pair > 0.0 ? (long)(cap / per_pair) : 1;
    b = b < STEREO_RECAL_BATCH ? b : STEREO_RECAL_BATCH;
    b = b < n ? b : n;
    return b > 1 ? (int)b : 1;
}

/* Batch norm of the network re-calibrated at its size on pairs of the source at @p h x @p w
 * (the pair's size), padded to the network's size as the pairs it runs are: on the source
 * network where it can run that size, else in batches of recal_batch() pairs (on a network
 * made for them when that is more than one), pooled. */
static manta_status recalibrate(stereo_infer *r, int h, int w, manta_err *err)
{
    const stereo_space *sp = stereo_net_space(r->src);
    const long n = stereo_infer_recal_pairs(sp, r->recal_pairs, r->ph, r->pw);
    int plan_h, plan_w;
    stereo_space_plan_size(sp, &plan_h, &plan_w);
    if (r->ph <= plan_h && r->pw <= plan_w)
        return recal_on_source(r, n, h, w, err);
    const int B = recal_batch(r, n);
    stereo_net *rn = r->net;
    if (B > 1)
        MANTA_TRY(net_at(r, r->net, r->ph, r->pw, B, &rn, err));
    const size_t view = (size_t)STEREO_CHANNELS * r->ph * r->pw;
    const long batches = (n + B - 1) / B;
    float *host = malloc(2 * (size_t)B * view * sizeof *host);
    ofa_slabs sl, to;
    stereo_net_slabs(rn, &sl);
    stereo_net_slabs(r->net, &to);
    manta_status st = MANTA_OK,
                 dev = host ? stereo_net_recal_begin_pooled(rn, batches * B) : MANTA_OK;
    if (!host)
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of host memory");
    for (long i = 0; i < batches && st == MANTA_OK && dev == MANTA_OK; i++) {
        st = recal_views(r, i * B, B, h, w, host, err);
        if (st == MANTA_OK)
            dev = mcl_write(r->d, stereo_net_input(rn), host, 2 * (size_t)B * view);
        if (st == MANTA_OK && dev == MANTA_OK)
            dev = stereo_net_forward(rn, sl.params, OFA_BN_RECAL);
    }
    if (host) {
        manta_status end = stereo_net_recal_end(rn);
        dev = dev == MANTA_OK ? end : dev;
    }
    if (st == MANTA_OK && dev == MANTA_OK && rn != r->net)
        dev = mcl_copy(r->d, to.state, sl.state, sl.n_state);
    if (st == MANTA_OK && dev != MANTA_OK)
        st = device_error(r, dev, err);
    if (rn != r->net)
        stereo_net_destroy(rn);
    free(host);
    return st;
}

static manta_status run_pair(stereo_infer *r, const stereo_pair *p, int ph, int pw, float *pred,
                             stereo_infer_run *out, manta_err *err)
{
    const size_t view = (size_t)STEREO_CHANNELS * ph * pw, plane = (size_t)ph * pw;
    if (2 * view + plane > r->host_cap) {
        free(r->host);
        r->host_cap = 0;
        r->host = malloc((2 * view + plane) * sizeof *r->host);
        if (!r->host)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of host memory");
        r->host_cap = 2 * view + plane;
    }
    out->new_size = !r->net || r->ph != ph || r->pw != pw;
    if (out->new_size)
        MANTA_TRY(make_net(r, ph, pw, err));
    if (out->new_size && r->recal)
        MANTA_TRY(recalibrate(r, p->height, p->width, err));
    float *left = r->host, *right = r->host + view, *full = r->host + 2 * view;
    stereo_pad_planes(p->left, STEREO_CHANNELS, p->height, p->width, ph, pw, left);
    stereo_pad_planes(p->right, STEREO_CHANNELS, p->height, p->width, ph, pw, right);
    mview in = stereo_net_input(r->net);
    manta_status st = mcl_write(r->d, in, left, 2 * view); /* left then right: (2, 3, PH, PW) */
    if (st == MANTA_OK)
        st = timed_forward(r, &out->ms);
    if (st == MANTA_OK)
        st = mcl_read(r->d, stereo_net_pred(r->net, stereo_preds(stereo_net_space(r->net)) - 1),
                      full, plane);
    if (st != MANTA_OK)
        return device_error(r, st, err);
    stereo_crop_plane(full, ph, pw, p->height, p->width, pred);
    return MANTA_OK;
}

manta_status stereo_infer_pair(stereo_infer *r, const stereo_pair *pair, const char *name,
                               float *pred, stereo_infer_run *out, manta_err *err)
{
    stereo_infer_run run = {0};
    int ph = 0, pw = 0;
    manta_err e = {0};
    manta_status st;
    if (pair->height < 1 || pair->width < 1 || pair->height > STEREO_MAX_SIDE ||
        pair->width > STEREO_MAX_SIDE) {
        st = manta_err_set(&e, MANTA_ERR_INVALID_ARG, "a side outside [1, %d]", STEREO_MAX_SIDE);
    } else {
        stereo_pad_size(pair->height, pair->width, stereo_net_space(r->src)->n_levels, &ph, &pw);
        st = run_pair(r, pair, ph, pw, pred, &run, &e);
    }
    if (st != MANTA_OK)
        return manta_err_set(err, st, "%s (%dx%d, padded to %dx%d): %s", name, pair->width,
                             pair->height, pw, ph, e.msg);
    run.padded_h = ph, run.padded_w = pw;
    if (out)
        *out = run;
    return MANTA_OK;
}

manta_status stereo_infer_time_again(stereo_infer *r, double *ms, manta_err *err)
{
    if (!r->net)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo inference: no pair has been run to time again");
    manta_status st = timed_forward(r, ms);
    return st == MANTA_OK ? st : device_error(r, st, err);
}

manta_status stereo_infer_folder(stereo_infer *r, const stereo_set *set, long pairs,
                                 stereo_metrics *m, stereo_infer_pair_fn each, void *ctx,
                                 stereo_infer_summary *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    const long n = pairs < set->count ? pairs : set->count;
    double *ms = malloc((size_t)(n > 0 ? n : 1) * sizeof *ms);
    if (!ms)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "stereo inference: out of host memory");
    stereo_pair p = {0};
    float *pred = NULL;
    size_t pred_cap = 0;
    manta_status st = MANTA_OK;
    for (long i = 0; i < n && st == MANTA_OK; i++) {
        st = stereo_folder_load(set, (int)i, &p, err);
        const size_t plane = (size_t)p.height * p.width;
        if (st == MANTA_OK && plane > pred_cap) {
            free(pred);
            pred_cap = 0;
            if ((pred = malloc(plane * sizeof *pred)) != NULL)
                pred_cap = plane;
            else
                st = manta_err_set(err, MANTA_ERR_NO_MEMORY,
                                   "%s: out of host memory for its prediction", set->left[i]);
        }
        stereo_infer_run run = {0};
        if (st == MANTA_OK)
            st = stereo_infer_pair(r, &p, set->left[i], pred, &run, err);
        if (st == MANTA_OK) {
            stereo_metrics_add(m, pred, &p);
            out->pairs++;
            out->sizes += run.new_size;
            if (each)
                st = each(ctx, i, &p, pred, &run, err);
        }
        bool timed = false;
        if (st == MANTA_OK && !run.new_size) { /* the first forward at a size is not timed */
            ms[out->timed++] = run.ms;
            timed = true;
        } else if (st == MANTA_OK && i == n - 1 && out->timed == 0) { /* each pair a new size */
            st = stereo_infer_time_again(r, &ms[out->timed++], err);
            timed = st == MANTA_OK;
        }
        if (timed) {
            const int first = out->min_h == 0;
            if (first || run.padded_h < out->min_h)
                out->min_h = run.padded_h;
            if (first || run.padded_w < out->min_w)
                out->min_w = run.padded_w;
            if (run.padded_h > out->max_h)
                out->max_h = run.padded_h;
            if (run.padded_w > out->max_w)
                out->max_w = run.padded_w;
        }
        stereo_pair_free(&p);
    }
    if (st == MANTA_OK)
        out->ms_median = manta_sort_median(ms, (size_t)out->timed);
    free(ms);
    free(pred);
    return st;
}

manta_status stereo_infer_net(stereo_infer *r, int height, int width, stereo_net **net,
                              manta_err *err)
{
    *net = NULL;
    int ph = 0, pw = 0;
    manta_err e = {0};
    manta_status st = MANTA_OK;
    if (height < 1 || width < 1 || height > STEREO_MAX_SIDE || width > STEREO_MAX_SIDE)
        st = manta_err_set(&e, MANTA_ERR_INVALID_ARG, "a side outside [1, %d]", STEREO_MAX_SIDE);
    else {
        stereo_pad_size(height, width, stereo_net_space(r->src)->n_levels, &ph, &pw);
        if (!r->net || r->ph != ph || r->pw != pw) {
            st = make_net(r, ph, pw, &e);
            if (st == MANTA_OK && r->recal)
                st = recalibrate(r, height, width, &e);
        }
    }
    if (st != MANTA_OK)
        return manta_err_set(err, st, "%dx%d (padded to %dx%d): %s", width, height, pw, ph, e.msg);
    *net = r->net;
    return MANTA_OK;
}
