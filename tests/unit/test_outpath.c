/* Output paths checked before the work (tools/common/outpath.h): files, folders, paths
 * still to be created, and the one line each refusal prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../tools/common/outpath.h"

typedef bool (*check_fn)(const char *prog, const char *opt, const char *path);

/* Run @p fn on @p path with stderr captured into @p text (@p cap bytes). */
static bool checked(check_fn fn, const char *path, char *text, size_t cap)
{
    memset(text, 0, cap);
    FILE *keep = stderr;
    stderr = fmemopen(text, cap - 1, "w");
    assert_non_null(stderr);
    bool ok = fn("prog", "out", path);
    fclose(stderr);
    stderr = keep;
    return ok;
}

static void test_paths(void **state)
{
    (void)state;
    char root[] = "/tmp/manta-outpath-XXXXXX", p[512], text[512];
    assert_non_null(mkdtemp(root));
    snprintf(p, sizeof p, "%s/file", root);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    static const struct {
        check_fn fn;
        const char *rel; /* below root */
        bool ok;
        const char *says;
    } cases[] = {
        {out_check_file, "/file", true, ""},
        {out_check_file, "/new.csv", true, ""},
        {out_check_file, "/a/new.csv", false, "cannot write there: the folder"}, /* no folder a */
        {out_check_file, "", false, "is a folder; a file is meant"},
        {out_check_file, "/file/x.csv", false, "/file is not a folder"},
        {out_check_dir, "", true, ""},
        {out_check_dir, "/new/", true, ""},
        {out_check_dir, "/a/b/c", true, ""},
        {out_check_dir, "/file", false, "is a file; a folder is meant"},
        {out_check_dir, "/file/sub", false, "/file is not a folder"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(p, sizeof p, "%s%s", root, cases[i].rel);
        bool ok = checked(cases[i].fn, p, text, sizeof text);
        if (ok != cases[i].ok)
            fail_msg("'%s': %s (%s)", p, ok ? "accepted" : "refused", text);
        if (!ok && (!strstr(text, cases[i].says) || strncmp(text, "prog: --out ", 12) != 0 ||
                    strchr(text, '\n') != text + strlen(text) - 1))
            fail_msg("'%s': '%s' is not one line saying \"%s\"", p, text, cases[i].says);
        if (ok)
            assert_string_equal(text, "");
    }
    /* nothing was created */
    struct stat s;
    snprintf(p, sizeof p, "%s/a", root);
    assert_int_not_equal(stat(p, &s), 0);
    snprintf(p, sizeof p, "%s/new.csv", root);
    assert_int_not_equal(stat(p, &s), 0);
    assert_false(checked(out_check_file, "", text, sizeof text));
    snprintf(p, sizeof p, "%s/file", root);
    assert_int_equal(remove(p), 0);
    assert_int_equal(rmdir(root), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
    };
    return cmocka_run_group_tests_name("program output paths", tests, NULL, NULL);
}
