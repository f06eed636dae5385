#include "common/graphcmp.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

void tu_assert_same_graph(const xgraph *a, const xgraph *b)
{
    assert_int_equal(a->n_tensors, b->n_tensors);
    assert_int_equal(a->n_ops, b->n_ops);
    assert_int_equal(a->input, b->input);
    assert_int_equal(a->logits, b->logits);
    assert_int_equal(a->output, b->output);
    assert_int_equal(a->n_inputs, b->n_inputs);
    assert_int_equal(a->n_outputs, b->n_outputs);
    assert_memory_equal(a->inputs, b->inputs, (size_t)a->n_inputs * sizeof *a->inputs);
    assert_memory_equal(a->outputs, b->outputs, (size_t)a->n_outputs * sizeof *a->outputs);
    for (int i = 0; i < a->n_tensors; i++) {
        const xg_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        if (strcmp(x->name, y->name) || x->rank != y->rank ||
            memcmp(x->shape, y->shape, sizeof x->shape))
            fail_msg("tensor %d: %s (%d: %dx%dx%dx%d) against %s (%d: %dx%dx%dx%d)", i, x->name,
                     x->rank, x->shape[0], x->shape[1], x->shape[2], x->shape[3], y->name, y->rank,
                     y->shape[0], y->shape[1], y->shape[2], y->shape[3]);
    }
    for (int i = 0; i < a->n_ops; i++) {
        const xg_op *x = &a->ops[i], *y = &b->ops[i];
        if (x->kind != y->kind || x->in0 != y->in0 || x->in1 != y->in1 || x->out != y->out ||
            x->kh != y->kh || x->kw != y->kw || x->stride != y->stride || x->same != y->same ||
            memcmp(x->pad, y->pad, sizeof x->pad) || x->act != y->act ||
            x->n_weights != y->n_weights || x->n_bias != y->n_bias ||
            (x->weights != NULL) != (y->weights != NULL) ||
            (x->bias != NULL) != (y->bias != NULL) || x->n_ins != y->n_ins ||
            memcmp(x->ins, y->ins, (size_t)x->n_ins * sizeof *x->ins) || x->alpha != y->alpha ||
            memcmp(x->begin, y->begin, sizeof x->begin) || memcmp(x->size, y->size, sizeof x->size))
            fail_msg(
                "operator %d (writing %s): kind %d/%d, kernel %d/%d, stride %d/%d, same %d/%d, "
                "act %d/%d, weights %zu/%zu, bias %zu/%zu",
                i, a->tensors[x->out].name, x->kind, y->kind, x->kh, y->kh, x->stride, y->stride,
                x->same, y->same, x->act, y->act, x->n_weights, y->n_weights, x->n_bias, y->n_bias);
    }
    assert_string_equal(a->description, b->description);
    assert_string_equal(a->arch_json, b->arch_json);
    const xg_preprocess *p = &a->pre, *q = &b->pre;
    assert_int_equal(p->resolution, q->resolution);
    assert_int_equal(p->channels, q->channels);
    assert_memory_equal(p->mean, q->mean, sizeof p->mean);
    assert_memory_equal(p->std, q->std, sizeof p->std);
    assert_int_equal(p->n_labels, q->n_labels);
    for (int i = 0; i < p->n_labels; i++)
        assert_string_equal(p->labels[i], q->labels[i]);
}
