/* Datasets: construction from IDX, class names, the seeded train/validation
 * split (deterministic, disjoint, complete), channel statistics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "data/dataset.h"

static void test_split_deterministic_and_disjoint(void **state)
{
    (void)state;
    dataset d;
    manta_err e;
    assert_int_equal(data_set_init_fixed(&d, 1000, 4, 4, 1, 3, &e), MANTA_OK);
    data_split a, b, c;
    assert_int_equal(data_set_split(&d, 100, 42, &a, &e), MANTA_OK);
    assert_int_equal(data_set_split(&d, 100, 42, &b, &e), MANTA_OK);
    assert_int_equal(data_set_split(&d, 100, 43, &c, &e), MANTA_OK);
    assert_int_equal(a.n_val, 100);
    assert_int_equal(a.n_train, 900);
    assert_memory_equal(a.val, b.val, 100 * sizeof(int));
    assert_memory_equal(a.train, b.train, 900 * sizeof(int));
    assert_true(memcmp(a.val, c.val, 100 * sizeof(int)) != 0);
    /* sorted, disjoint, covering [0, 1000) */
    char *seen = calloc(1000, 1);
    assert_non_null(seen);
    for (int i = 0; i < a.n_val; i++) {
        if (i)
            assert_true(a.val[i] > a.val[i - 1]);
        seen[a.val[i]]++;
    }
    for (int i = 0; i < a.n_train; i++) {
        if (i)
            assert_true(a.train[i] > a.train[i - 1]);
        seen[a.train[i]]++;
    }
    for (int i = 0; i < 1000; i++)
        assert_int_equal(seen[i], 1);
    /* not just the first or last 100 */
    assert_true(a.val[0] < 100 && a.val[99] > 900);
    free(seen);
    data_set_split_free(&a);
    data_set_split_free(&b);
    data_set_split_free(&c);
    data_set_free(&d);
}

static void test_split_edges_and_errors(void **state)
{
    (void)state;
    dataset d;
    manta_err e;
    assert_int_equal(data_set_init_fixed(&d, 10, 2, 2, 3, 2, &e), MANTA_OK);
    data_split s;
    assert_int_equal(data_set_split(&d, 0, 1, &s, &e), MANTA_OK);
    assert_int_equal(s.n_train, 10);
    assert_int_equal(s.n_val, 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(s.train[i], i);
    data_set_split_free(&s);
    assert_int_equal(data_set_split(&d, 10, 1, &s, &e), MANTA_OK);
    assert_int_equal(s.n_train, 0);
    data_set_split_free(&s);
    assert_int_equal(data_set_split(&d, 11, 1, &s, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "11 validation images"));
    assert_null(s.val);
    data_set_split_free(&s);
    data_set_free(&d);
}

/* A synthetic IDX set (malloc'd as data_idx_load would). */
static void fake_idx(idx_set *s, int n, int rows, int cols, int classes)
{
    s->count = n, s->rows = rows, s->cols = cols, s->classes = classes;
    s->images = malloc((size_t)n * rows * cols);
    s->labels = malloc((size_t)n);
    assert_true(s->images && s->labels);
    for (int i = 0; i < n * rows * cols; i++)
        s->images[i] = (uint8_t)i;
    for (int i = 0; i < n; i++)
        s->labels[i] = (uint8_t)(i % classes);
}

static void test_from_idx_moves_images(void **state)
{
    (void)state;
    idx_set s;
    fake_idx(&s, 6, 3, 5, 4);
    uint8_t *img = s.images;
    dataset d;
    manta_err e;
    assert_int_equal(data_set_from_idx(&s, NULL, 0, &d, &e), MANTA_OK);
    assert_null(s.images);
    assert_ptr_equal(d.pixels, img);
    assert_int_equal(d.count, 6);
    assert_int_equal(d.channels, 1);
    assert_int_equal(d.classes, 4);
    assert_int_equal(d.stored_size, 3);
    assert_string_equal(d.class_names[3], "3");
    assert_int_equal(d.labels[5], 1);
    assert_int_equal(d.height[2], 3);
    assert_int_equal(d.width[2], 5);
    assert_int_equal(dataset_image(&d, 2)[0], (uint8_t)(2 * 15));
    data_set_free(&d);

    /* labels beyond the names: refused, the IDX set left as it was */
    fake_idx(&s, 12, 2, 2, 11);
    assert_int_equal(data_set_from_idx(&s, data_set_fashion_mnist_classes, 10, &d, &e),
                     MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "10 class names"));
    assert_non_null(s.images);
    data_idx_free(&s);
}

static void test_fashion_mnist_names_and_ofa_split(void **state)
{
    (void)state;
    if (access(IDX_FASHION_MNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0)
        skip(); /* dataset-fashion-mnist not installed */
    dataset d;
    manta_err e;
    assert_int_equal(data_set_load_fashion_mnist(IDX_FASHION_MNIST_DIR, "train", &d, &e), MANTA_OK);
    assert_int_equal(d.count, 60000);
    assert_int_equal(d.classes, 10);
    assert_string_equal(d.class_names[0], "T-shirt/top");
    assert_string_equal(d.class_names[9], "Ankle boot");
    data_split s;
    assert_int_equal(data_set_split(&d, DATASET_OFA_VAL_COUNT, 0, &s, &e), MANTA_OK);
    assert_int_equal(s.n_train, 50000);
    assert_int_equal(s.n_val, 10000);
    /* roughly balanced validation set (6000 of each class in the training file) */
    int hist[10] = {0};
    for (int i = 0; i < s.n_val; i++)
        hist[d.labels[s.val[i]]]++;
    for (int k = 0; k < 10; k++)
        assert_true(hist[k] > 850 && hist[k] < 1150);
    float mean, std;
    assert_int_equal(data_set_channel_stats(&d, s.train, 5000, &mean, &std, &e), MANTA_OK);
    assert_true(fabsf(mean - IDX_FASHION_MEAN) < 0.01f);
    assert_true(fabsf(std - IDX_FASHION_STD) < 0.01f);
    data_set_split_free(&s);
    data_set_free(&d);
}

static void test_channel_stats(void **state)
{
    (void)state;
    dataset d;
    manta_err e;
    assert_int_equal(data_set_init_fixed(&d, 2, 2, 2, 3, 1, &e), MANTA_OK);
    /* channel 0 all 255, channel 1 half 0 half 255, channel 2 all 51 */
    for (int i = 0; i < 8; i++) {
        d.pixels[i * 3 + 0] = 255;
        d.pixels[i * 3 + 1] = (uint8_t)(i % 2 ? 255 : 0);
        d.pixels[i * 3 + 2] = 51;
    }
    float m[3], s[3];
    assert_int_equal(data_set_channel_stats(&d, NULL, 0, m, s, &e), MANTA_OK);
    assert_true(fabsf(m[0] - 1.0f) < 1e-6f && fabsf(s[0]) < 1e-3f);
    assert_true(fabsf(m[1] - 0.5f) < 1e-6f && fabsf(s[1] - 0.5f) < 1e-6f);
    assert_true(fabsf(m[2] - 0.2f) < 1e-6f);
    int bad = 5;
    assert_int_equal(data_set_channel_stats(&d, &bad, 1, m, s, &e), MANTA_ERR_INVALID_ARG);
    data_set_free(&d);
}

static void test_init_fixed_errors(void **state)
{
    (void)state;
    dataset d;
    manta_err e;
    assert_int_equal(data_set_init_fixed(&d, 4, 8, 8, 2, 3, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "channels"));
    assert_null(d.pixels);
    assert_int_equal(data_set_init_fixed(&d, 0, 8, 8, 1, 3, &e), MANTA_ERR_INVALID_ARG);
    data_set_free(&d); /* freeing a zeroed set is fine */
    data_set_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_deterministic_and_disjoint),
        cmocka_unit_test(test_split_edges_and_errors),
        cmocka_unit_test(test_from_idx_moves_images),
        cmocka_unit_test(test_fashion_mnist_names_and_ofa_split),
        cmocka_unit_test(test_channel_stats),
        cmocka_unit_test(test_init_fixed_errors),
    };
    return cmocka_run_group_tests_name("datasets and splits", tests, NULL, NULL);
}
