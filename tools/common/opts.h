/**
 * @file opts.h
 * @brief Command-line options of the programs in tools/ from one table per
 *        command: parsed with the C library's getopt_long, checked (integer
 *        and number ranges, allowed words), and printed as the command's usage.
 *
 * A command declares its options once:
 * @code
 *   int batch = 64; bool json = false; const char *device = NULL;
 *   const opt_def defs[] = {
 *       {.name = "batch", .kind = OPT_INT, .dest = &batch, .lo = 1, .hi = 4096,
 *        .metavar = "N", .help = "images per batch (default 64)"},
 *       {.name = "device", .kind = OPT_STRING, .dest = &device, .metavar = "SPEC",
 *        .help = "OpenCL device"},
 *       {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
 *       {.name = NULL}};
 *   const opt_cmd cmd = {"manta bench ops", "[OPTIONS]", "Times every op.\n", defs, 0, 0};
 *   int first;
 *   switch (opt_parse(&cmd, argc, argv, &first)) { ... }
 * @endcode
 * `--help` and `-h` are always accepted; so is `--options-json`, which prints the
 * table as one JSON document (name, kind, its help line or hidden, metavar, range, choices)
 * and returns OPT_HELP: the conformance test of every command reads it. Options may come in any order and
 * between positional arguments; `--` ends them. A long option goes by its whole
 * name (a prefix is refused, naming the options it begins). Every error is one line on
 * standard error naming the program, the option and what is wrong. The parser
 * keeps no state between calls (it resets getopt's before each parse), so one
 * process may parse several argument lists.
 */
#ifndef MANTA_TOOLS_OPTS_H
#define MANTA_TOOLS_OPTS_H

#include <stdbool.h>
#include <stdio.h>

/** What an option takes and where its value goes. */
typedef enum opt_kind {
    OPT_FLAG,   /**< no value; dest is a bool, set to true */
    OPT_INT,    /**< dest is an int; the value an integer in [lo, hi] */
    OPT_LONG,   /**< dest is a long; the value an integer in [lo, hi] */
    OPT_DOUBLE, /**< dest is a double; the value a finite number in [lo, hi] */
    OPT_STRING, /**< dest is a const char * pointing into argv; with choices, one of them */
} opt_kind;

/** One option. A table ends with an entry whose name is NULL. */
typedef struct opt_def {
    const char *name; /**< long name without "--" */
    char key;         /**< short option letter, or 0 */
    opt_kind kind;
    void *dest;                 /**< see opt_kind */
    double lo, hi;              /**< range of OPT_INT, OPT_LONG, OPT_DOUBLE (inclusive) */
    const char *metavar;        /**< the value's name in the usage ("N", "FILE") */
    const char *help;           /**< one line for the usage; NULL hides the option */
    const char *const *choices; /**< OPT_STRING: NULL-terminated allowed words, or NULL */
    bool *seen;                 /**< set to true when the option is given, or NULL */
} opt_def;

/** A command: its name, the usage's synopsis and text, its options. */
typedef struct opt_cmd {
    const char *prog;       /**< "manta eval": starts every message */
    const char *synopsis;   /**< after "usage: <prog> " (may hold several lines) */
    const char *about;      /**< paragraphs printed after the synopsis, or NULL */
    const opt_def *opts;    /**< the table */
    int min_args, max_args; /**< positional arguments allowed (max_args < 0: any number) */
} opt_cmd;

/** What opt_parse() found. */
typedef enum opt_result {
    OPT_OK = 0,    /**< parsed; the positional arguments are argv[*first .. argc-1] */
    OPT_HELP = 1,  /**< --help: the usage was printed on standard output (exit 0) */
    OPT_ERROR = 2, /**< one line was printed on standard error (exit 2) */
} opt_result;

/**
 * Parse argv[1 ..] (argv[0] is the command's name) against @p c: write the
 * values into the options' destinations, permute the positional arguments to
 * the end and give the index of the first in @p first.
 */
opt_result opt_parse(const opt_cmd *c, int argc, char **argv, int *first);

/** Print the usage: the synopsis, the text, and a line per visible option. */
void opt_usage(const opt_cmd *c, FILE *f);

#endif
