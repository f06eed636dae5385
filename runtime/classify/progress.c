#include "classify/progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double ofa_work_left(const ofa_schedule *s, const double *work, long step)
{
    double left = 0;
    for (int p = 0; p < s->n_phases; p++) {
        long n = s->phase[p].steps < step ? 0 : s->phase[p].steps - step;
        step = step > s->phase[p].steps ? step - s->phase[p].steps : 0;
        left += (double)n * work[p];
    }
    return left;
}

void ofa_progress_start(train_progress *p, const ofa_schedule *sched, const double *work,
                        long start, int batch, double now)
{
    memset(p, 0, sizeof *p);
    p->sched = sched;
    p->work = work;
    p->start = start;
    p->batch = batch;
    p->t0 = p->t_win = now;
}

void ofa_progress_add(train_progress *p, const ofa_step_result *r, double wait_s, double step_s)
{
    p->wait += wait_s;
    p->loss += r->loss;
    p->correct += r->correct;
    p->predictions += r->predictions;
    p->step_s += step_s;
    p->steps++;
}

void ofa_progress_report(train_progress *p, const ofa_step_result *last, long done, double now,
                         train_report *out)
{
    const double dt = now - p->t_win;
    const double left = ofa_work_left(p->sched, p->work, done);
    *out = (train_report){
        .step = done,
        .steps = ofa_schedule_total_steps(p->sched),
        .phase = last->phase,
        .phase_name = p->sched->phase[last->phase].name,
        .loss = p->loss / p->steps,
        .batch_top1 = (double)p->correct / p->predictions,
        .r = last->r,
        .lr = last->lr,
        .images_per_s = (double)p->steps * p->batch / dt,
        .data_wait = p->wait / dt,
        .step_ms = 1e3 * p->step_s / p->steps,
        .eta_s = left * (now - p->t0) / (ofa_work_left(p->sched, p->work, p->start) - left),
    };
    p->t_win = now;
    p->wait = p->loss = p->step_s = 0;
    p->correct = p->predictions = p->steps = 0;
}

void ofa_report_record(const train_report *r, manta_rec_progress *out)
{
    *out = (manta_rec_progress){
        .step = r->step,
        .steps = r->steps,
        .phase_index = r->phase,
        .loss = r->loss,
        .batch_top1 = r->batch_top1,
        .r = r->r,
        .lr = r->lr,
        .images_per_s = r->images_per_s,
        .data_wait = r->data_wait,
        .step_ms = r->step_ms,
        .eta_s = r->eta_s,
        .time = NAN,
    };
    snprintf(out->phase, sizeof out->phase, "%s", r->phase_name ? r->phase_name : "");
}

int ofa_report_json(const train_report *r, char *buf, size_t cap)
{
    manta_rec_progress rec;
    ofa_report_record(r, &rec);
    manta_strbuf b = {0};
    manta_rec_progress_json(&rec, &b);
    int n = b.oom ? -1 : (int)b.n;
    if (cap > 0)
        snprintf(buf, cap, "%s", b.oom || !b.p ? "" : b.p);
    manta_strbuf_free(&b);
    return n;
}

void ofa_progress_subnets_start(ofa_subnet_sizes *z, uint64_t sample_seed)
{
    memset(z, 0, sizeof *z);
    z->seed = sample_seed;
}

void ofa_progress_subnets_add(ofa_subnet_sizes *z, const ofa_space *sp, const ofa_schedule *sched,
                              long step, int phase, int res)
{
    if (phase < 0 || phase >= sched->n_phases)
        return;
    const ofa_phase *p = &sched->phase[phase];
    for (int k = 0; k < p->subnets; k++) {
        ofa_arch a;
        manta_err err;
        ofa_sample_subnet(sp, p, z->seed, step, k, res, &a);
        if (ofa_describe(sp, &a, &z->desc, &err) != MANTA_OK)
            continue;
        const double macs = z->desc.macs, params = (double)z->desc.params;
        if (z->n++ == 0) {
            z->macs_min = z->macs_max = macs;
            z->params_min = z->params_max = params;
        }
        z->macs_sum += macs;
        z->params_sum += params;
        z->macs_min = macs < z->macs_min ? macs : z->macs_min;
        z->macs_max = macs > z->macs_max ? macs : z->macs_max;
        z->params_min = params < z->params_min ? params : z->params_min;
        z->params_max = params > z->params_max ? params : z->params_max;
    }
}

void ofa_progress_subnets_take(ofa_subnet_sizes *z, manta_rec_subnets *out)
{
    *out = (manta_rec_subnets){0};
    if (z->n > 0)
        *out = (manta_rec_subnets){z->n,         z->macs_sum / (double)z->n,   z->macs_min,
                                   z->macs_max,  z->params_sum / (double)z->n, z->params_min,
                                   z->params_max};
    z->n = 0;
    z->macs_sum = z->params_sum = 0;
}
