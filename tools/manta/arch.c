/* manta arch: sub-networks of a search space (sample, max, min) and their
 * per-layer shapes, MACs and parameters (describe, --arch). Classification
 * spaces (space/ofa_space.h) and stereo spaces (space/stereo_space.h), chosen by the
 * spec's "task". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "space/ofa_space.h"
#include "search/results.h"
#include "space/stereo_space.h"

/* The space the command works on: one of the two tasks. */
typedef struct arch_space {
    bool stereo;
    ofa_space ofa;
    stereo_space st;
} arch_space;

static const char *kind_name(ofa_layer_kind k)
{
    switch (k) {
    case OFA_L_CONV: return "conv";
    case OFA_L_DWCONV: return "dwconv";
    case OFA_L_SE: return "se";
    case OFA_L_POOL: return "pool";
    case OFA_L_LINEAR: return "linear";
    }
    return "?";
}

static void print_ofa(const ofa_space *s, const ofa_arch *a, bool layers, bool json)
{
    char enc[2048];
    ofa_desc *d = malloc(sizeof *d);
    if (!d || ofa_arch_to_json(s, a, enc, sizeof enc, NULL) != MANTA_OK ||
        ofa_describe(s, a, d, NULL) != MANTA_OK) {
        free(d);
        fprintf(stderr, "manta arch: internal error describing an architecture\n");
        return;
    }
    if (json) {
        printf("{\"space\":\"%s\",\"arch\":%s,\"macs\":%.0f,\"params\":%ld", s->name, enc, d->macs,
               d->params);
        if (layers) {
            printf(",\"layers\":[");
            for (int i = 0; i < d->n; i++) {
                const ofa_layer *l = &d->layer[i];
                printf("%s{\"name\":\"%s\",\"type\":\"%s\",\"in\":[%d,%d,%d],\"out\":[%d,%d,%d],"
                       "\"kernel\":%d,\"stride\":%d,\"act\":\"%s\",\"residual\":%s,\"macs\":%.0f,"
                       "\"params\":%ld}",
                       i ? "," : "", l->name, kind_name(l->kind), l->in_h, l->in_w, l->in_c,
                       l->out_h, l->out_w, l->out_c, l->kernel, l->stride, space_act_name(l->act),
                       l->residual ? "true" : "false", l->macs, l->params);
            }
            printf("]");
        }
        printf(",");
        cmd_json_version(stdout);
        printf("}\n");
    } else {
        printf("%s\n%.2f M MACs, %.3f M parameters, input %dx%dx%d\n", enc, d->macs / 1e6,
               d->params / 1e6, a->r, a->r, s->in_channels);
        if (layers) {
            printf("%-18s %-7s %-13s %-13s %2s %2s %-9s %12s %9s\n", "layer", "type", "input",
                   "output", "k", "s", "act", "MACs", "params");
            for (int i = 0; i < d->n; i++) {
                const ofa_layer *l = &d->layer[i];
                char in[32], out[32];
                snprintf(in, sizeof in, "%dx%dx%d", l->in_h, l->in_w, l->in_c);
                snprintf(out, sizeof out, "%dx%dx%d", l->out_h, l->out_w, l->out_c);
                printf("%-18s %-7s %-13s %-13s %2d %2d %-9s %12.0f %9ld%s\n", l->name,
                       kind_name(l->kind), in, out, l->kernel, l->stride, space_act_name(l->act),
                       l->macs, l->params, l->residual ? "  +skip" : "");
            }
        }
    }
    free(d);
}

static void print_stereo(const stereo_space *s, const ofa_arch *a, bool layers, bool json)
{
    char enc[2048];
    stereo_desc *d = malloc(sizeof *d);
    if (!d || stereo_arch_to_json(s, a, enc, sizeof enc, NULL) != MANTA_OK ||
        stereo_describe(s, a, d, NULL) != MANTA_OK) {
        free(d);
        fprintf(stderr, "manta arch: internal error describing an architecture\n");
        return;
    }
    if (json) {
        printf("{\"space\":\"%s\",\"task\":\"stereo\",\"arch\":%s,\"macs\":%.0f,\"params\":%ld,"
               "\"input\":[%d,%d,3],\"max_disp\":%d,\"predictions\":%d",
               s->name, enc, d->macs, d->params, s->crop_h, s->crop_w, s->max_disp,
               stereo_preds(s));
        if (layers) {
            printf(",\"layers\":[");
            for (int i = 0; i < d->n; i++) {
                const stereo_layer *l = &d->layer[i];
                printf("%s{\"name\":\"%s\",\"type\":\"%s\",\"in\":[%d,%d,%d],\"out\":[%d,%d,%d],"
                       "\"kernel\":%d,\"stride\":%d,\"act\":\"%s\",\"residual\":%s,\"views\":%d,"
                       "\"macs\":%.0f,\"params\":%ld}",
                       i ? "," : "", l->name, stereo_layer_kind_name(l->kind), l->in_h, l->in_w,
                       l->in_c, l->out_h, l->out_w, l->out_c, l->kernel, l->stride,
                       space_act_name(l->act), l->residual ? "true" : "false", l->views, l->macs,
                       l->params);
            }
            printf("]");
        }
        printf(",");
        cmd_json_version(stdout);
        printf("}\n");
    } else {
        printf("%s\n%.2f M MACs, %.3f M parameters, input %dx%dx3 left and right, %d predictions\n",
               enc, d->macs / 1e6, d->params / 1e6, s->crop_h, s->crop_w, stereo_preds(s));
        if (layers) {
            printf("%-16s %-8s %-13s %-13s %2s %2s %-10s %5s %13s %9s\n", "layer", "type", "input",
                   "output", "k", "s", "act", "views", "MACs", "params");
            for (int i = 0; i < d->n; i++) {
                const stereo_layer *l = &d->layer[i];
                char in[32], out[32];
                snprintf(in, sizeof in, "%dx%dx%d", l->in_h, l->in_w, l->in_c);
                snprintf(out, sizeof out, "%dx%dx%d", l->out_h, l->out_w, l->out_c);
                printf("%-16s %-8s %-13s %-13s %2d %2d %-10s %5d %13.0f %9ld%s\n", l->name,
                       stereo_layer_kind_name(l->kind), in, out, l->kernel, l->stride,
                       space_act_name(l->act), l->views, l->macs, l->params,
                       l->residual ? "  +skip" : "");
            }
            printf("total%*s %13.0f %9ld\n", 72, "", d->macs, d->params);
        }
    }
    free(d);
}

static void print_arch(const arch_space *s, const ofa_arch *a, bool layers, bool json)
{
    if (s->stereo)
        print_stereo(&s->st, a, layers, json);
    else
        print_ofa(&s->ofa, a, layers, json);
}

static char *read_text(const char *arg)
{
    if (arg[0] == '{')
        return strdup(arg);
    FILE *f = strcmp(arg, "-") ? fopen(arg, "rb") : stdin;
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (buf) {
        n = fread(buf, 1, cap - 1, f);
        buf[n] = '\0';
    }
    if (f != stdin)
        fclose(f);
    return buf;
}

/* "max", "min", a file, '-' or the JSON itself; prints one line and returns 1 on error. */
static int load_arch(const arch_space *s, const char *arg, int res, ofa_arch *a)
{
    manta_err err;
    manta_err_clear(&err);
    manta_status st;
    if (!strcmp(arg, "max") || !strcmp(arg, "min")) {
        bool mx = arg[1] == 'a';
        if (s->stereo)
            (mx ? stereo_arch_max : stereo_arch_min)(&s->st, a);
        else
            (mx ? ofa_arch_max : ofa_arch_min)(&s->ofa, res, a);
        st =
            s->stereo ? stereo_arch_validate(&s->st, a, &err) : ofa_arch_validate(&s->ofa, a, &err);
        if (st != MANTA_OK)
            cmd_error("arch", st, &err);
        return st != MANTA_OK;
    }
    char *text = read_text(arg);
    if (!text) {
        fprintf(stderr, "manta arch: %s: cannot read\n", arg);
        return 1;
    }
    st = s->stereo ? stereo_arch_parse(&s->st, text, a, &err)
                   : ofa_arch_parse(&s->ofa, text, a, &err);
    free(text);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta arch: %s: %s\n", arg[0] == '{' ? "argument" : arg, err.msg);
        return 1;
    }
    return 0;
}

int cmd_arch(int argc, char **argv)
{
    const char *space_name = "cpu-default", *arch_opt = NULL;
    int res = 0, count = 1;
    long seed = 1;
    bool json = false, res_seen = false;
    const opt_def defs[] = {
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &space_name,
         .metavar = "S",
         .help = "a spec file (models/*.json) or a built-in: cpu-default (default), mbv3-w1.0, "
                 "stereo-cpu, stereo-gpu"},
        {.name = "arch",
         .kind = OPT_STRING,
         .dest = &arch_opt,
         .metavar = "A",
         .help = "describe A: max, min, a file, '-' or the JSON (the same as describe A)"},
        {.name = "res",
         .kind = OPT_INT,
         .dest = &res,
         .lo = 1,
         .hi = 65536,
         .metavar = "R",
         .seen = &res_seen,
         .help = "resolution for max/min (default: the largest / smallest; classification only)"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &seed,
         .lo = 0,
         .hi = 4294967295.0,
         .metavar = "N",
         .help = "seed for sample (default 1)"},
        {.name = "count",
         .kind = OPT_INT,
         .dest = &count,
         .lo = 1,
         .hi = 100000,
         .metavar = "N",
         .help = "sub-networks for sample (default 1)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "JSON output"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta arch",
        "sample|max|min|uniform [--space S] [--res R] [--seed N] [--count N] [--json]\n"
        "       manta arch describe ARCH [--space S] [--json]\n"
        "       manta arch [--space S] [--arch max|min|ARCH] [--json]",
        "Prints sub-networks in OFA's encoding {\"ks\":[...],\"e\":[...],\"d\":[...],\"r\":[R]}\n"
        "with their MACs and parameters; describe (and --arch, default max) also lists every\n"
        "layer's shapes, MACs and parameters, then the totals. uniform prints every uniform\n"
        "sub-network (one kernel size, expand ratio and depth everywhere, at each resolution;\n"
        "of a stereo space also one width ratio in every decoder level): manta search's seeds.\n"
        "ARCH is max, min, a file holding the encoding, '-' for standard input, or the JSON.\n"
        "A stereo space (\"task\": \"stereo\": stereo-cpu, stereo-gpu, models/stereo_*.json)\n"
        "has one input size, its crop (r is the crop height and may be left out), and its\n"
        "encoding adds \"dw\", the width of each decoder level (one of the space's\n"
        "\"width_ratios\" of its \"widths\"); its layers are the left and right encoder\n"
        "(views 2: both views counted in the MACs), the correlation, the rest of the\n"
        "encoder and the decoder's levels and predictions.\n",
        defs,
        0,
        2};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    const char *verb = first < argc ? argv[first] : "describe";
    const char *arch_arg = argc - first > 1 ? argv[first + 1] : arch_opt;
    if (first == argc && !arch_arg)
        arch_arg = "max";
    arch_space *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "manta arch: out of memory\n");
        return 1;
    }
    manta_err err;
    manta_err_clear(&err);
    manta_status st = stereo_spec_is_stereo(space_name, &s->stereo, &err);
    if (st == MANTA_OK)
        st = s->stereo ? stereo_space_load(space_name, &s->st, &err)
                       : ofa_space_load(space_name, &s->ofa, &err);
    int rc = 0;
    ofa_arch a;
    if (st != MANTA_OK) {
        cmd_error("arch", st, &err);
        rc = 1;
    } else if (arch_opt && first < argc && strcmp(verb, "describe") != 0) {
        fprintf(stderr, "manta arch: --arch goes with describe or no verb, not with '%s'\n", verb);
        rc = 2;
    } else if (s->stereo && res_seen) {
        fprintf(stderr,
                "manta arch: --res: stereo space '%s' has one input size, its crop "
                "%dx%d\n",
                s->st.name, s->st.crop_h, s->st.crop_w);
        rc = 2;
    } else if (!strcmp(verb, "max") || !strcmp(verb, "min")) {
        rc = load_arch(s, verb, res, &a);
        if (!rc)
            print_arch(s, &a, false, json);
    } else if (!strcmp(verb, "sample")) {
        manta_rng rng;
        manta_rng_seed(&rng, (uint64_t)seed, 0);
        for (int i = 0; i < count; i++) {
            if (s->stereo)
                stereo_arch_sample(&s->st, &rng, &a);
            else
                ofa_arch_sample(&s->ofa, &rng, &a);
            print_arch(s, &a, false, json);
        }
    } else if (!strcmp(verb, "uniform")) {
        ofa_arch *seeds = NULL;
        int n = 0;
        st = s->stereo ? search_uniform_seeds_stereo(&s->st, &seeds, &n, &err)
                       : search_uniform_seeds(&s->ofa, &seeds, &n, &err);
        if (st != MANTA_OK) {
            cmd_error("arch", st, &err);
            rc = 1;
        }
        for (int i = 0; i < n; i++)
            print_arch(s, &seeds[i], false, json);
        free(seeds);
    } else if (!strcmp(verb, "describe")) {
        if (!arch_arg) {
            fprintf(stderr, "manta arch describe: give an architecture (max, min, file, '-' or "
                            "JSON)\n");
            rc = 2;
        } else {
            rc = load_arch(s, arch_arg, res, &a);
            if (!rc)
                print_arch(s, &a, true, json);
        }
    } else {
        fprintf(stderr, "manta arch: unknown verb '%s' (sample, max, min, uniform, describe)\n",
                verb);
        rc = 2;
    }
    free(s);
    return rc;
}
