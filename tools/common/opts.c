#include "opts.h"

#include "json.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Most options one command declares (the tables hold far fewer). */
#define OPT_MAX 96
/* getopt_long's value of option i of the table (above every short letter). */
#define OPT_VAL0 256

static size_t count_defs(const opt_def *d)
{
    size_t n = 0;
    while (d[n].name)
        n++;
    return n;
}

static bool parse_number(const opt_def *o, const char *v, double *out)
{
    char *end = NULL;
    errno = 0;
    if (o->kind == OPT_DOUBLE) {
        double x = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(x) || x < o->lo || x > o->hi)
            return false;
        *out = x;
        return true;
    }
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || (double)x < o->lo || (double)x > o->hi)
        return false;
    *out = (double)x;
    return true;
}

/* Store the value @p v of option @p o, given by its letter when @p by_key
 * (messages name it as it was given); false after printing why not. */
static bool store(const opt_cmd *c, const opt_def *o, bool by_key, const char *v)
{
    char name[72];
    if (by_key)
        snprintf(name, sizeof name, "-%c", o->key);
    else
        snprintf(name, sizeof name, "--%s", o->name);
    if (o->seen)
        *o->seen = true;
    switch (o->kind) {
    case OPT_FLAG: *(bool *)o->dest = true; return true;
    case OPT_STRING:
        if (o->choices) {
            size_t i = 0;
            while (o->choices[i] && strcmp(o->choices[i], v) != 0)
                i++;
            if (!o->choices[i]) {
                fprintf(stderr, "%s: %s must be one of ", c->prog, name);
                for (i = 0; o->choices[i]; i++)
                    fprintf(stderr, "%s%s", i ? ", " : "", o->choices[i]);
                fprintf(stderr, "; got '%s'\n", v);
                return false;
            }
        }
        *(const char **)o->dest = v;
        return true;
    case OPT_INT:
    case OPT_LONG:
    case OPT_DOUBLE: {
        double x;
        if (!parse_number(o, v, &x)) {
            if (o->kind == OPT_DOUBLE)
                fprintf(stderr, "%s: %s needs a number in [%g, %g], got '%s'\n", c->prog, name,
                        o->lo, o->hi, v);
            else
                fprintf(stderr, "%s: %s needs an integer in [%.0f, %.0f], got '%s'\n", c->prog,
                        name, o->lo, o->hi, v);
            return false;
        }
        if (o->kind == OPT_INT)
            *(int *)o->dest = (int)x;
        else if (o->kind == OPT_LONG)
            *(long *)o->dest = (long)x;
        else
            *(double *)o->dest = x;
        return true;
    }
    }
    return false;
}

/* getopt_long takes an unambiguous prefix of a long name as the name ("--val 5" as
 * "--val-data 5"): refuse it, naming the options it begins. Called right after
 * getopt_long returned option @p o, whose word is argv[optind - 1], or argv[optind - 2]
 * when the value was the next word. */
static bool exact_word(const opt_cmd *c, const opt_def *o, int argc, char **argv)
{
    int at = optind - 1;
    if (o->kind != OPT_FLAG && at >= 1 && optarg == argv[at])
        at--;
    if (at < 1 || at >= argc)
        return true;
    const char *w = argv[at];
    if (strncmp(w, "--", 2) != 0)
        return true;
    w += 2;
    size_t len = strcspn(w, "=");
    if (len == strlen(o->name) && !strncmp(w, o->name, len))
        return true;
    fprintf(stderr, "%s: unknown option '--%.*s' (did you mean", c->prog, (int)len, w);
    const char *sep = " ";
    for (const opt_def *d = c->opts; d->name; d++)
        if (!strncmp(d->name, w, len)) {
            fprintf(stderr, "%s--%s", sep, d->name);
            sep = " or ";
        }
    fprintf(stderr, "?)\n");
    return false;
}

/* --options-json: the table as one JSON document on standard output (for the conformance
 * test of every command's options, tests/integration/cli_options.sh). */
static void print_table_json(const opt_cmd *c)
{
    static const char *const KINDS[] = {"flag", "int", "long", "double", "string"};
    printf("{\"prog\":");
    json_put_str(stdout, c->prog);
    printf(",\"options\":[");
    for (size_t i = 0; c->opts[i].name; i++) {
        const opt_def *o = &c->opts[i];
        printf("%s{\"name\":", i ? "," : "");
        json_put_str(stdout, o->name);
        printf(",\"kind\":\"%s\",\"help\":%s,\"text\":", KINDS[o->kind],
               o->help ? "true" : "false");
        json_put_str(stdout, o->help ? o->help : "");
        printf(",\"metavar\":");
        json_put_str(stdout, o->metavar ? o->metavar : "");
        if (o->kind == OPT_INT || o->kind == OPT_LONG || o->kind == OPT_DOUBLE)
            printf(",\"lo\":%.17g,\"hi\":%.17g", o->lo, o->hi);
        if (o->choices) {
            printf(",\"choices\":[");
            for (size_t k = 0; o->choices[k]; k++) {
                printf("%s", k ? "," : "");
                json_put_str(stdout, o->choices[k]);
            }
            printf("]");
        }
        printf("}");
    }
    printf("]}\n");
}

opt_result opt_parse(const opt_cmd *c, int argc, char **argv, int *first)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (!strcmp(argv[i], "--options-json")) {
            print_table_json(c);
            return OPT_HELP;
        }
    size_t n = count_defs(c->opts);
    if (n > OPT_MAX) {
        fprintf(stderr, "%s: %zu options declared, at most %d\n", c->prog, n, OPT_MAX);
        return OPT_ERROR;
    }
    struct option lo[OPT_MAX + 2];
    char shorts[2 * OPT_MAX + 4] = ":h"; /* ':' first: a missing value returns ':' */
    size_t ns = strlen(shorts);
    for (size_t i = 0; i < n; i++) {
        const opt_def *o = &c->opts[i];
        lo[i] = (struct option){o->name, o->kind == OPT_FLAG ? no_argument : required_argument,
                                NULL, OPT_VAL0 + (int)i};
        if (o->key) {
            shorts[ns++] = o->key;
            if (o->kind != OPT_FLAG)
                shorts[ns++] = ':';
        }
    }
    shorts[ns] = '\0';
    lo[n] = (struct option){"help", no_argument, NULL, 'h'};
    lo[n + 1] = (struct option){NULL, 0, NULL, 0};
    optind = 0; /* glibc: start afresh, whatever an earlier parse left */
    opterr = 0;
    for (;;) {
        int r = getopt_long(argc, argv, shorts, lo, NULL);
        if (r == -1)
            break;
        if (r == 'h') {
            opt_usage(c, stdout);
            return OPT_HELP;
        }
        if (r == '?' || r == ':') {
            /* a short option by its letter (it may stand in a group, "-jx"); a long one as
             * the word getopt_long just passed (positional arguments may stand before it) */
            char letter[3] = {'-', (char)optopt, '\0'};
            const char *what = optopt > 0 && optopt < OPT_VAL0 ? letter : argv[optind - 1];
            if (r == ':')
                fprintf(stderr, "%s: %s needs a value (see --help)\n", c->prog, what);
            else
                fprintf(stderr, "%s: unknown option '%s' (see --help)\n", c->prog, what);
            return OPT_ERROR;
        }
        const opt_def *o = NULL;
        if (r >= OPT_VAL0 && r < OPT_VAL0 + (int)n) {
            o = &c->opts[r - OPT_VAL0];
            if (!exact_word(c, o, argc, argv))
                return OPT_ERROR;
        }
        bool by_key = !o;
        for (size_t i = 0; !o && i < n; i++)
            if (c->opts[i].key == r)
                o = &c->opts[i];
        if (!o || !store(c, o, by_key, optarg))
            return OPT_ERROR;
    }
    int args = argc - optind;
    if (args < c->min_args || (c->max_args >= 0 && args > c->max_args)) {
        if (args > 0 && c->max_args >= 0 && args > c->max_args)
            fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", c->prog,
                    argv[optind + c->max_args]);
        else
            fprintf(stderr, "%s: needs %d argument%s (see --help)\n", c->prog, c->min_args,
                    c->min_args == 1 ? "" : "s");
        return OPT_ERROR;
    }
    *first = optind;
    return OPT_OK;
}

void opt_usage(const opt_cmd *c, FILE *f)
{
    fprintf(f, "usage: %s %s\n", c->prog, c->synopsis ? c->synopsis : "[OPTIONS]");
    if (c->about)
        fprintf(f, "\n%s", c->about);
    size_t n = count_defs(c->opts);
    if (n)
        fprintf(f, "\noptions:\n");
    for (size_t i = 0; i < n; i++) {
        const opt_def *o = &c->opts[i];
        if (!o->help)
            continue;
        char head[64], key[8] = "    ";
        if (o->key)
            snprintf(key, sizeof key, "-%c, ", o->key);
        snprintf(head, sizeof head, "%s--%s%s%s", key, o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        fprintf(f, "  %-24s %s\n", head, o->help);
    }
    fprintf(f, "  %-24s %s\n", "-h, --help", "this text");
}
