/* The option tables of the programs (tools/common/opts.h): values and ranges,
 * allowed words, flags, positional arguments, errors, repeated parses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "../../tools/common/opts.h"

typedef struct vals {
    int n;
    long big;
    double rate;
    const char *name, *mode;
    bool json, seen_n;
} vals;

static const char *const MODES[] = {"fast", "exact", NULL};

/* Parse the words of @p line (space-separated, at most 15) as argv[1 ..]. */
static opt_result parse(vals *v, const char *line, int *first, int *argc_out, char **argv)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s", line);
    int argc = 0;
    argv[argc++] = "prog";
    for (char *t = strtok(buf, " "); t && argc < 16; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    const opt_def defs[] = {
        {.name = "n",
         .kind = OPT_INT,
         .dest = &v->n,
         .lo = 1,
         .hi = 100,
         .metavar = "N",
         .help = "a count",
         .seen = &v->seen_n},
        {.name = "big",
         .kind = OPT_LONG,
         .dest = &v->big,
         .lo = 0,
         .hi = 1e12,
         .metavar = "B",
         .help = "a long"},
        {.name = "rate",
         .kind = OPT_DOUBLE,
         .dest = &v->rate,
         .lo = 0,
         .hi = 1,
         .metavar = "R",
         .help = "a number"},
        {.name = "name",
         .key = 'o',
         .kind = OPT_STRING,
         .dest = &v->name,
         .metavar = "S",
         .help = "a word"},
        {.name = "mode",
         .kind = OPT_STRING,
         .dest = &v->mode,
         .metavar = "M",
         .help = "a choice",
         .choices = MODES},
        {.name = "json", .kind = OPT_FLAG, .dest = &v->json, .help = "a flag"},
        {.name = NULL},
    };
    const opt_cmd cmd = {"prog", "[OPTIONS] A [B]", "Tests.\n", defs, 1, 2};
    *argc_out = argc;
    return opt_parse(&cmd, argc, argv, first);
}

static void test_values_ranges_and_positionals(void **state)
{
    (void)state;
    vals v = {.n = 7};
    char *argv[17];
    int first, argc;
    assert_int_equal(parse(&v, "A --n 5 --big 123456789012 --rate 0.25 -o x --mode exact --json B",
                           &first, &argc, argv),
                     OPT_OK);
    assert_int_equal(v.n, 5);
    assert_true(v.seen_n);
    assert_true(v.big == 123456789012L);
    assert_true(v.rate == 0.25);
    assert_string_equal(v.name, "x");
    assert_string_equal(v.mode, "exact");
    assert_true(v.json);
    assert_int_equal(argc - first, 2); /* positionals moved behind the options */
    assert_string_equal(argv[first], "A");
    assert_string_equal(argv[first + 1], "B");

    vals w = {.n = 7};
    assert_int_equal(parse(&w, "A --n=9", &first, &argc, argv), OPT_OK); /* and a second parse */
    assert_int_equal(w.n, 9);
    assert_false(w.json);
    assert_null(w.mode);
}

static void test_errors(void **state)
{
    (void)state;
    static const char *bad[] = {
        "A --n 0",        /* below the range */
        "A --n 101",      /* above */
        "A --n 5x",       /* not an integer */
        "A --rate nan",   /* not finite */
        "A --rate 2",     /* above */
        "A --mode slow",  /* not an allowed word */
        "A --frobnicate", /* unknown */
        "A --n",          /* no value */
        "",               /* too few positionals */
        "A B C",          /* too many */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vals v = {0};
        char *argv[17];
        int first, argc;
        if (parse(&v, bad[i], &first, &argc, argv) != OPT_ERROR)
            fail_msg("'%s' was accepted", bad[i]);
    }
}

/* The one line names the option, wherever it stands among the positional arguments. */
static void test_error_names_the_option(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"A B --frobnicate", "unknown option '--frobnicate'"},
        {"A --json --frobnicate=3", "unknown option '--frobnicate=3'"},
        {"A --json -x", "unknown option '-x'"},
        {"A B --n", "--n needs a value"},
        {"A -o", "-o needs a value"},
        /* a prefix of a long name is not the name: refused, naming what it begins */
        {"A --js", "unknown option '--js' (did you mean --json?)"},
        {"A B --na x", "unknown option '--na' (did you mean --name?)"},
        {"A --ra=0.5", "unknown option '--ra' (did you mean --rate?)"},
        {"--m fast A", "unknown option '--m' (did you mean --mode?)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vals v = {0};
        char *argv[17], text[256] = {0};
        int first, argc;
        FILE *keep = stderr;
        stderr = fmemopen(text, sizeof text - 1, "w");
        assert_non_null(stderr);
        opt_result r = parse(&v, cases[i][0], &first, &argc, argv);
        fclose(stderr);
        stderr = keep;
        assert_int_equal(r, OPT_ERROR);
        if (!strstr(text, cases[i][1]))
            fail_msg("'%s': '%s' does not say \"%s\"", cases[i][0], text, cases[i][1]);
    }
}

static void test_help(void **state)
{
    (void)state;
    vals v = {0};
    char *argv[17];
    int first, argc;
    FILE *keep = stdout;
    stdout = fopen("/dev/null", "w"); /* the usage goes to standard output */
    assert_non_null(stdout);
    opt_result r = parse(&v, "--help", &first, &argc, argv);
    fclose(stdout);
    stdout = keep;
    assert_int_equal(r, OPT_HELP);
}

static void test_usage_lists_every_visible_option(void **state)
{
    (void)state;
    int n = 0;
    const opt_def defs[] = {
        {.name = "count",
         .kind = OPT_INT,
         .dest = &n,
         .lo = 0,
         .hi = 9,
         .metavar = "N",
         .help = "how many"},
        {.name = "hidden", .kind = OPT_INT, .dest = &n, .lo = 0, .hi = 9, .metavar = "N"},
        {.name = NULL},
    };
    const opt_cmd cmd = {"prog", "[--count N]", "About.\n", defs, 0, 0};
    char text[1024] = {0};
    FILE *f = fmemopen(text, sizeof text - 1, "w");
    assert_non_null(f);
    opt_usage(&cmd, f);
    fclose(f);
    assert_non_null(strstr(text, "usage: prog [--count N]"));
    assert_non_null(strstr(text, "--count N"));
    assert_non_null(strstr(text, "how many"));
    assert_null(strstr(text, "--hidden"));
    assert_non_null(strstr(text, "--help"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_ranges_and_positionals),    cmocka_unit_test(test_errors),
        cmocka_unit_test(test_error_names_the_option),           cmocka_unit_test(test_help),
        cmocka_unit_test(test_usage_lists_every_visible_option),
    };
    return cmocka_run_group_tests_name("program options", tests, NULL, NULL);
}
