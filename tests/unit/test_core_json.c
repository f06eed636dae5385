/* The typed JSON getters (core/json.h): each type and range accepted and
 * refused, outputs untouched on refusal, and absent members, NULL objects and
 * non-objects read as absent. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/json.h"

static const char doc[] = "{\"s\":\"text\",\"o\":{\"k\":1},\"a\":[1,2,3],\"n\":2.5,\"i\":-7,"
                          "\"big\":3e9,\"huge\":1e999,\"t\":true,\"f\":false,\"z\":null}";

static void test_strings_objects_arrays(void **state)
{
    (void)state;
    cJSON *j = cJSON_Parse(doc);
    assert_non_null(j);
    assert_string_equal(manta_json_string(j, "s"), "text");
    assert_null(manta_json_string(j, "n"));
    assert_null(manta_json_string(j, "S")); /* names are case-sensitive */
    assert_null(manta_json_string(j, "absent"));
    const cJSON *o = manta_json_object(j, "o");
    assert_non_null(o);
    int k = 0;
    assert_true(manta_json_int(o, "k", 1, 1, &k));
    assert_int_equal(k, 1);
    assert_null(manta_json_object(j, "a"));
    assert_non_null(manta_json_array(j, "a", 3));
    assert_non_null(manta_json_array(j, "a", -1));
    assert_null(manta_json_array(j, "a", 2));
    assert_null(manta_json_array(j, "o", -1));
    /* NULL and non-objects have no members */
    assert_null(manta_json_string(NULL, "s"));
    assert_null(manta_json_object(manta_json_object(j, "absent"), "k"));
    assert_null(manta_json_array(cJSON_GetObjectItemCaseSensitive(j, "a"), "a", -1));
    cJSON_Delete(j);
}

static void test_numbers_integers_booleans(void **state)
{
    (void)state;
    cJSON *j = cJSON_Parse(doc);
    assert_non_null(j);
    double x = -1;
    assert_true(manta_json_number(j, "n", 0, 3, &x));
    assert_true(x == 2.5);
    x = -1;
    assert_false(manta_json_number(j, "n", 0, 2, &x)); /* out of range: untouched */
    assert_false(manta_json_number(j, "s", -HUGE_VAL, HUGE_VAL, &x));
    assert_false(manta_json_number(j, "absent", -HUGE_VAL, HUGE_VAL, &x));
    assert_false(manta_json_number(j, "huge", -DBL_MAX, DBL_MAX, &x)); /* not finite */
    assert_true(x == -1);
    assert_true(manta_json_number(j, "huge", -HUGE_VAL, HUGE_VAL, &x));
    assert_true(isinf(x));

    int i = 99;
    assert_true(manta_json_int(j, "i", -7, 0, &i));
    assert_int_equal(i, -7);
    i = 99;
    assert_false(manta_json_int(j, "i", -6, 0, &i));
    assert_false(manta_json_int(j, "n", INT_MIN, INT_MAX, &i));   /* a fraction */
    assert_false(manta_json_int(j, "big", INT_MIN, INT_MAX, &i)); /* beyond int */
    assert_false(manta_json_int(j, "t", INT_MIN, INT_MAX, &i));
    assert_int_equal(i, 99);
    const cJSON *a = manta_json_array(j, "a", 3);
    assert_true(manta_json_int_item(a->child->next, 2, 2, &i));
    assert_int_equal(i, 2);
    assert_false(manta_json_int_item(NULL, INT_MIN, INT_MAX, &i));

    bool b = false;
    assert_true(manta_json_bool(j, "t", &b));
    assert_true(b);
    assert_true(manta_json_bool(j, "f", &b));
    assert_false(b);
    b = true;
    assert_false(manta_json_bool(j, "z", &b));
    assert_false(manta_json_bool(j, "i", &b));
    assert_true(b);
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings_objects_arrays),
        cmocka_unit_test(test_numbers_integers_booleans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
