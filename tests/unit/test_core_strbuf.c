/* The text buffer's CSV field (core/strbuf.h): quoted, inner quotes doubled,
 * appended after what is there, and nothing appended once out of memory; its JSON string:
 * quotes and backslashes escaped, control characters as \u00XX, UTF-8 as it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "core/strbuf.h"

static void test_csv_field(void **state)
{
    (void)state;
    manta_strbuf b = {0};
    manta_strbuf_printf(&b, "1,");
    manta_strbuf_csv_str(&b, "{\"ks\":[3,5],\"r\":[24]}");
    manta_strbuf_printf(&b, ",");
    manta_strbuf_csv_str(&b, "");
    manta_strbuf_printf(&b, ",");
    manta_strbuf_csv_str(&b, "\"\"a,b\n\"");
    assert_false(b.oom);
    assert_string_equal(b.p, "1,\"{\"\"ks\"\":[3,5],\"\"r\"\":[24]}\",\"\",\"\"\"\"\"a,b\n\"\"\"");
    assert_int_equal(b.n, strlen(b.p));
    manta_strbuf_free(&b);
    b.oom = true; /* a failed append before: later ones do nothing */
    manta_strbuf_csv_str(&b, "x");
    assert_null(b.p);
    assert_int_equal(b.n, 0);
}

static void test_json_string(void **state)
{
    (void)state;
    manta_strbuf b = {0};
    manta_strbuf_printf(&b, "[");
    manta_strbuf_json_str(&b, "a\"b\\c\n\t\x7f\x01 \xc3\xa9");
    manta_strbuf_printf(&b, ",");
    manta_strbuf_json_str(&b, "");
    manta_strbuf_printf(&b, "]");
    assert_false(b.oom);
    assert_string_equal(b.p, "[\"a\\\"b\\\\c\\u000a\\u0009\\u007f\\u0001 \xc3\xa9\",\"\"]");
    manta_strbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_field),
        cmocka_unit_test(test_json_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
