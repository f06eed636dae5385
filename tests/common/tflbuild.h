/**
 * @file tflbuild.h
 * @brief Tests only: describe a small .tflite model (tensors, operators,
 *        buffers) and serialise it with the FlatBuffers builder. Writes
 *        whatever it is told, invalid indices included, so that the verifier
 *        tests can build broken models too.
 */
#ifndef MANTA_TESTS_TFLBUILD_H
#define MANTA_TESTS_TFLBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "engine/engine.h"

#define TB_MAX_TENSORS 96
#define TB_MAX_OPS 32
#define TB_MAX_BUFFERS 112
#define TB_MAX_CODES 16
#define TB_MAX_IO 16

/** Builtin options; @c type is the BuiltinOptions union type (0 = none). */
typedef struct tb_opts {
    int type;
    int padding; /* 0 SAME, 1 VALID */
    int stride_w, stride_h;
    int act;
    int depth_multiplier;
    int dilation_w, dilation_h; /* 0 = not written (1) */
    int filter_w, filter_h;
    int keep_dims; /* ReducerOptions.keep_dims, FullyConnectedOptions.keep_num_dims */
    int weights_format;
    int axis;
    float beta, alpha;
    /* StridedSliceOptions */
    int begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask, offset;
    /* ResizeBilinearOptions */
    int align_corners, half_pixel_centers;
} tb_opts;

typedef struct tb_tensor {
    char name[32];
    int type;
    int rank;
    int32_t dims[8];
    uint32_t buffer;
} tb_tensor;

typedef struct tb_op {
    uint32_t opcode;
    int n_in, n_out;
    int32_t in[TB_MAX_IO], out[TB_MAX_IO];
    tb_opts o;
} tb_op;

typedef struct tb_buffer {
    uint8_t *data;
    size_t bytes;
} tb_buffer;

typedef struct tb_model {
    uint32_t version; /* schema version, 3 */
    tb_tensor t[TB_MAX_TENSORS];
    int n_t;
    tb_op op[TB_MAX_OPS];
    int n_op;
    tb_buffer buf[TB_MAX_BUFFERS]; /* buf[0] is the empty sentinel */
    int n_buf;
    int32_t code[TB_MAX_CODES], code_version[TB_MAX_CODES];
    int n_code;
    int32_t in[TB_MAX_IO], out[TB_MAX_IO];
    int n_in, n_out;
    int offline_buffer; /* buffer of the OfflineMemoryAllocation metadata, 0 = none */
} tb_model;

/** Start an empty model (version 3, buffer 0). */
void tb_init(tb_model *m);
/** Free the buffer copies. */
void tb_release(tb_model *m);
/** Append a buffer holding a copy of @p bytes bytes; returns its index. */
int tb_buffer_add(tb_model *m, const void *data, size_t bytes);
/** Tensor with buffer @p buffer (0 = activation); returns its index. */
int tb_tensor_buf(tb_model *m, const char *name, int type, int rank, const int32_t *dims,
                  uint32_t buffer);
/** FLOAT32 tensor; @p data (count floats) makes it a constant, NULL an activation. */
int tb_tensor_f32(tb_model *m, const char *name, int rank, const int32_t *dims, const float *data);
/** Constant INT32 vector. */
int tb_tensor_i32(tb_model *m, const char *name, int n, const int32_t *values);
/** Index of the operator code (builtin, version), added if new. */
uint32_t tb_code(tb_model *m, int32_t builtin, int32_t version);
/** Operator with one output; @p o may be NULL. Returns its index. */
int tb_op_add(tb_model *m, int32_t builtin, int32_t version, int n_in, const int32_t *in,
              int32_t out, const tb_opts *o);
/** Model inputs and outputs. */
void tb_io(tb_model *m, int n_in, const int32_t *in, int n_out, const int32_t *out);
/** Attach an OfflineMemoryAllocation plan with one offset per tensor (-1 = planned at run time). */
void tb_offline(tb_model *m, const int32_t *offsets);

/**
 * Serialise. @return a 16-byte aligned copy (free() it), size in @p size;
 * fails the current test on a builder error.
 */
uint8_t *tb_finish(const tb_model *m, size_t *size);

/** A model loaded and prepared in an arena of exactly mengine_arena_size() bytes. */
typedef struct tb_run {
    uint8_t *file;
    size_t size;
    mengine_model m;
    mengine e;
    void *arena;
    size_t arena_size;
} tb_run;

/** Serialise, load, size the arena, init and prepare; fails the test on any error. */
void tb_run_open(tb_run *r, const tb_model *m);
/** tb_run_open() with the operators of @p ops only (mengine_model_load_ops()). */
void tb_run_open_ops(tb_run *r, const tb_model *m, const mengine_op_resolver *ops);
/** Copy @p n floats into model input @p i (n must match). */
void tb_run_input(tb_run *r, size_t i, const float *x, size_t n);
/** Invoke once; fails the test on error. */
void tb_run_invoke(tb_run *r);
/** Model output @p i as doubles (n must match). */
void tb_run_output(tb_run *r, size_t i, double *y, size_t n);
void tb_run_close(tb_run *r);

/** @p n uniform values in [lo, hi) as floats, and the same values as doubles. */
void tb_rand(manta_rng *rng, float *f, double *d, size_t n, double lo, double hi);

#endif
