/* manta arch: sub-networks of an OFA search space (sample, max, min) and
 * their per-layer shapes, MACs and parameters (describe). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "ofa/space.h"

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

static void print_arch(const ofa_space *s, const ofa_arch *a, bool layers, bool json)
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
                       l->out_h, l->out_w, l->out_c, l->kernel, l->stride, nn_act_name(l->act),
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
                       kind_name(l->kind), in, out, l->kernel, l->stride, nn_act_name(l->act),
                       l->macs, l->params, l->residual ? "  +skip" : "");
            }
        }
    }
    free(d);
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

int cmd_arch(int argc, char **argv)
{
    const char *space_name = "cpu-default";
    int res = 0, count = 1;
    long seed = 1;
    bool json = false;
    const opt_def defs[] = {
        {.name = "space", .kind = OPT_STRING, .dest = &space_name, .metavar = "S",
         .help = "a spec file (models/*.json) or a built-in: cpu-default (default), mbv3-w1.0"},
        {.name = "res", .kind = OPT_INT, .dest = &res, .lo = 1, .hi = 65536, .metavar = "R",
         .help = "resolution for max/min (default: the largest / smallest)"},
        {.name = "seed", .kind = OPT_LONG, .dest = &seed, .lo = 0, .hi = 4294967295.0,
         .metavar = "N", .help = "seed for sample (default 1)"},
        {.name = "count", .kind = OPT_INT, .dest = &count, .lo = 1, .hi = 100000, .metavar = "N",
         .help = "sub-networks for sample (default 1)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "JSON output"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta arch",
        "sample|max|min [--space S] [--res R] [--seed N] [--count N] [--json]\n"
        "       manta arch describe ARCH [--space S] [--json]",
        "Prints sub-networks in OFA's encoding {\"ks\":[...],\"e\":[...],\"d\":[...],\"r\":[R]}\n"
        "with their MACs and parameters; describe also lists every layer's shapes.\n"
        "ARCH is a file holding the encoding, '-' for standard input, or the JSON itself.\n",
        defs, 1, 2};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    const char *verb = argv[first], *arch_arg = argc - first > 1 ? argv[first + 1] : NULL;
    ofa_space s;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = ofa_space_load(space_name, &s, &err);
    if (st != MANTA_OK) {
        cmd_error("space", st, &err);
        return 1;
    }
    ofa_arch a;
    if (!strcmp(verb, "max") || !strcmp(verb, "min")) {
        (verb[1] == 'a' ? ofa_arch_max : ofa_arch_min)(&s, res, &a);
        if ((st = ofa_arch_validate(&s, &a, &err)) != MANTA_OK) {
            cmd_error("arch", st, &err);
            return 1;
        }
        print_arch(&s, &a, false, json);
    } else if (!strcmp(verb, "sample")) {
        manta_rng rng;
        manta_rng_seed(&rng, (uint64_t)seed, 0);
        for (int i = 0; i < count; i++) {
            ofa_arch_sample(&s, &rng, &a);
            print_arch(&s, &a, false, json);
        }
    } else if (!strcmp(verb, "describe")) {
        if (!arch_arg) {
            fprintf(stderr, "manta arch describe: give an architecture (file, '-' or JSON)\n");
            return 2;
        }
        char *text = read_text(arch_arg);
        if (!text) {
            fprintf(stderr, "manta arch: %s: cannot read\n", arch_arg);
            return 1;
        }
        st = ofa_arch_parse(&s, text, &a, &err);
        free(text);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta arch: %s: %s\n", arch_arg[0] == '{' ? "argument" : arch_arg,
                    err.msg);
            return 1;
        }
        print_arch(&s, &a, true, json);
    } else {
        fprintf(stderr, "manta arch: unknown verb '%s' (sample, max, min, describe)\n", verb);
        return 2;
    }
    return 0;
}
