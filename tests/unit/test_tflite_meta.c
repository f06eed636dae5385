/* The reader of the models' preprocessing metadata (export/tflite_meta.h):
 * what the exporter writes reads back, escapes and UTF-8, unknown keys
 * skipped, long labels cut, and every malformed or truncated text refused
 * with one line naming the byte, leaving no labels behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/xgrand.h"
#include "engine/engine.h"
#include "export/tflite.h"
#include "export/tflite_meta.h"

static manta_status parse(const char *text, tflite_meta *m, manta_err *err)
{
    return tflite_meta_parse(text, strlen(text), m, err);
}

/* The metadata of the model tflite_write() makes of @p g, parsed. */
static void read_back(const xgraph *g, tflite_meta *m)
{
    manta_err err;
    uint8_t *model = NULL;
    size_t size = 0;
    if (tflite_write(g, &model, &size, NULL, &err) != MANTA_OK)
        fail_msg("write: %s", err.msg);
    mengine_model mm;
    char msg[256];
    if (mengine_model_load(&mm, model, size, NULL, msg, sizeof msg) != MENGINE_OK)
        fail_msg("load: %s", msg);
    const uint8_t *text = NULL;
    size_t n = 0;
    assert_int_equal(mengine_model_metadata(&mm, TFLITE_META_PREPROCESS, &text, &n), MENGINE_OK);
    assert_non_null(text);
    if (tflite_meta_parse((const char *)text, n, m, &err) != MANTA_OK)
        fail_msg("parse: %s", err.msg);
    free(model);
}

static void test_exporter_round_trip(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 17, 3);
    for (int k = 0; k < 6; k++) {
        xgraph g;
        manta_err err;
        memset(&g, 0, sizeof g);
        const xgr_opts o = {0, k % 2 ? 3 : 1, 0, 0};
        assert_int_equal(xgr_random(&g, &rng, &o, &err), MANTA_OK);
        tflite_meta m;
        read_back(&g, &m);
        const xg_tensor *in = &g.tensors[g.input];
        assert_int_equal(m.resolution, in->shape[1]);
        assert_int_equal(m.channels, in->shape[3]);
        assert_int_equal(m.n_mean, in->shape[3]);
        assert_int_equal(m.n_std, in->shape[3]);
        for (int c = 0; c < m.n_mean; c++) {
            assert_true(m.mean[c] == g.pre.mean[c]);
            assert_true(m.std[c] == g.pre.std[c]);
        }
        assert_int_equal(m.logits_tensor, g.logits);
        assert_int_equal(m.n_labels, g.pre.n_labels);
        for (int i = 0; i < m.n_labels; i++)
            assert_string_equal(m.labels[i], g.pre.labels[i]);
        tflite_meta_free(&m);
        assert_null(m.labels);
        xgraph_free(&g);
    }
    /* labels JSON must escape, and no preprocessing given (defaults 0 and 1) */
    xgraph g;
    manta_err err;
    memset(&g, 0, sizeof g);
    assert_int_equal(xgr_color_classifier(&g, 4, &err), MANTA_OK);
    free(g.pre.labels[1]);
    g.pre.labels[1] = strdup("gr\"een\\ \xc3\xa9t\xc3\xa9\n\t/");
    assert_non_null(g.pre.labels[1]);
    memset(g.pre.mean, 0, sizeof g.pre.mean);
    memset(g.pre.std, 0, sizeof g.pre.std);
    tflite_meta m;
    read_back(&g, &m);
    assert_int_equal(m.n_labels, 3);
    assert_string_equal(m.labels[0], "red");
    assert_string_equal(m.labels[1], g.pre.labels[1]);
    for (int c = 0; c < 3; c++) {
        assert_true(m.mean[c] == 0.0f);
        assert_true(m.std[c] == 1.0f);
    }
    tflite_meta_free(&m);
    xgraph_free(&g);
}

static void test_escapes_and_unknown_keys(void **state)
{
    (void)state;
    tflite_meta m;
    manta_err err;
    const char *text =
        " {\"version\":1, \"arch\":{\"ks\":[3,5,[7,{}]],\"x\":null,\"y\":true,\"z\":false},"
        "\"resolution\":32,\"channels\":3,\"mean\":[0.5,0.25,-1e-2],\"std\":[2,4,8],"
        "\"labels\":[\"caf\\u00e9\",\"\\ud83d\\ude00\",\"\\ud800x\",\"a\\/b\\\\c\\\"d\\b\\f\\r\","
        "\"\\u20ac\",\"\"],\"logits_tensor\":7,\"extra\":[]}\n";
    assert_int_equal(parse(text, &m, &err), MANTA_OK);
    assert_int_equal(m.resolution, 32);
    assert_int_equal(m.channels, 3);
    assert_int_equal(m.n_mean, 3);
    assert_true(m.mean[1] == 0.25f && m.mean[2] == -1e-2f);
    assert_true(m.std[0] == 2.0f && m.std[2] == 8.0f);
    assert_int_equal(m.logits_tensor, 7);
    assert_int_equal(m.n_labels, 6);
    assert_string_equal(m.labels[0], "caf\xc3\xa9");
    assert_string_equal(m.labels[1], "\xf0\x9f\x98\x80"); /* a surrogate pair: U+1F600 */
    assert_string_equal(m.labels[2], "\xef\xbf\xbdx");    /* a lone surrogate: U+FFFD */
    assert_string_equal(m.labels[3], "a/b\\c\"d\b\f\r");
    assert_string_equal(m.labels[4], "\xe2\x82\xac");
    assert_string_equal(m.labels[5], "");
    tflite_meta_free(&m);

    /* absent keys: 0, and -1 for the logits tensor; an empty object */
    assert_int_equal(parse("{}", &m, &err), MANTA_OK);
    assert_int_equal(m.resolution, 0);
    assert_int_equal(m.n_labels, 0);
    assert_int_equal(m.logits_tensor, -1);
    tflite_meta_free(&m);

    /* a label longer than the room is cut, the rest of the text still read */
    char *big = malloc(2 * TFLITE_META_LABEL_MAX + 64);
    assert_non_null(big);
    int n = snprintf(big, 64, "{\"labels\":[\"");
    memset(big + n, 'q', 2 * TFLITE_META_LABEL_MAX);
    strcpy(big + n + 2 * TFLITE_META_LABEL_MAX, "\",\"b\"],\"channels\":1}");
    assert_int_equal(parse(big, &m, &err), MANTA_OK);
    assert_int_equal(m.n_labels, 2);
    assert_int_equal(strlen(m.labels[0]), TFLITE_META_LABEL_MAX - 1);
    assert_string_equal(m.labels[1], "b");
    assert_int_equal(m.channels, 1);
    tflite_meta_free(&m);
    free(big);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        {"", "not a JSON object"},
        {"[1]", "not a JSON object"},
        {"{\"resolution\":32", "expected ',' or '}' at byte 16"},
        {"{\"resolution\":32.5}", "expected a small integer"},
        {"{\"resolution\":1e7}", "expected a small integer"},
        {"{\"channels\":\"3\"}", "expected a number"},
        {"{\"mean\":[1,2,3,4]}", "more than 3 channel values"},
        {"{\"mean\":1}", "expected an array of numbers"},
        {"{\"labels\":[\"a\",3]}", "expected a string"},
        {"{\"labels\":\"a\"}", "labels: expected an array of strings"},
        {"{\"labels\":[\"a\\q\"]}", "bad escape in a string"},
        {"{\"labels\":[\"a\\u12\"]}", "bad \\u escape"},
        {"{\"labels\":[\"a\nb\"]}", "control character in a string"},
        {"{\"x\":tru}", "bad literal"},
        {"{\"x\":1e999}", "bad number"},
        {"{\"x\" 1}", "expected ':'"},
        {"{} {}", "text after the JSON object at byte 3"},
        {"{\"x\":[1 2]}", "expected ',' or a closing bracket"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tflite_meta m;
        manta_err err;
        manta_err_clear(&err);
        if (parse(bad[i][0], &m, &err) != MANTA_ERR_FORMAT)
            fail_msg("'%s' was accepted", bad[i][0]);
        if (!strstr(err.msg, bad[i][1]))
            fail_msg("'%s': '%s' does not say '%s'", bad[i][0], err.msg, bad[i][1]);
        assert_null(strchr(err.msg, '\n'));
        assert_int_equal(m.n_labels, 0);
        assert_null(m.labels);
        assert_int_equal(m.logits_tensor, -1);
    }
    /* labels read before the failure are released */
    tflite_meta m;
    manta_err err;
    assert_int_equal(parse("{\"labels\":[\"a\",\"b\"],\"x\":}", &m, &err), MANTA_ERR_FORMAT);
    assert_null(m.labels);
    /* no metadata; too large; nested too deep */
    assert_int_equal(tflite_meta_parse(NULL, 0, &m, &err), MANTA_ERR_FORMAT);
    assert_int_equal(tflite_meta_parse("{}", TFLITE_META_MAX_TEXT + 1u, &m, &err),
                     MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "larger than 1 MiB"));
    char deep[128] = "{\"x\":";
    size_t n = strlen(deep);
    for (int d = 0; d <= TFLITE_META_MAX_DEPTH; d++)
        deep[n++] = '[';
    deep[n] = '\0';
    assert_int_equal(parse(deep, &m, &err), MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "nested too deep"));
    /* the error record may be NULL */
    assert_int_equal(parse("{", &m, NULL), MANTA_ERR_FORMAT);
}

/* Every proper prefix of a valid text is refused, and reading stops at its end
 * (a prefix is copied to a buffer of exactly its size: the sanitizers catch any
 * read beyond it). */
static void test_prefixes(void **state)
{
    (void)state;
    const char *text = "{\"resolution\":8,\"mean\":[0.1,0.2],\"labels\":[\"\\u00e9a\",\"b\"],"
                       "\"arch\":{\"d\":[2,3]},\"logits_tensor\":4}";
    const size_t len = strlen(text);
    for (size_t n = 0; n < len; n++) {
        char *copy = malloc(n ? n : 1);
        assert_non_null(copy);
        memcpy(copy, text, n);
        tflite_meta m;
        manta_err err;
        if (tflite_meta_parse(copy, n, &m, &err) == MANTA_OK)
            fail_msg("the prefix of %zu bytes was accepted", n);
        assert_null(m.labels);
        free(copy);
    }
    tflite_meta m;
    assert_int_equal(tflite_meta_parse(text, len, &m, NULL), MANTA_OK);
    assert_int_equal(m.logits_tensor, 4);
    tflite_meta_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exporter_round_trip),
        cmocka_unit_test(test_escapes_and_unknown_keys),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_prefixes),
    };
    return cmocka_run_group_tests_name("model metadata reader", tests, NULL, NULL);
}
