/* The activation memory planner (see plan.c). Depends on ops_impl.h (the operator
 * records), model_impl.h, fbread_impl.h and diag_impl.h. Not part of the public API.
 *
 * Works in a caller area of mengine_plan_work_bytes() bytes. Use: mengine_plan_begin(),
 * then mengine_plan_op() for every operator in order once it is prepared,
 * mengine_plan_run(), then read the results with mengine_plan_tensor_offset() /
 * mengine_plan_scratch_offset() before reusing the area. */
#ifndef MANTA_ENGINE_PLAN_H
#define MANTA_ENGINE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/ops_impl.h"

/* Bytes of work area for a model of @p n_tensors tensors and @p n_ops operators. */
size_t mengine_plan_work_bytes(uint32_t n_tensors, uint32_t n_ops);
/* Start planning @p m (verified) in @p work: the lifetime of every tensor.
 * MENGINE_ERR_ARG (work NULL or misaligned), MENGINE_ERR_ARENA (too small). */
mengine_status mengine_plan_begin(void *work, size_t work_size, const mengine_model *m, mdiag *d);
/* Operator @p op, prepared into @p node: its scratch buffer, and whether its
 * output shares an input's buffer (the registration's share rule). */
void mengine_plan_op(void *work, const mengine_model *m, uint32_t op, const mnode *node);
/* Keep tensor @p t's buffer (its group's) alive until operator @p op at least
 * (a fused kernel at @p op reads it). */
void mengine_plan_extend(void *work, uint32_t t, uint32_t op);
/* Whether activation @p t is neither a model input nor a model output and no
 * operator after @p op reads it (mengine_plan_begin()'s lifetimes). */
int mengine_plan_local(const void *work, uint32_t t, uint32_t op);
/* Whether an operator at @p op or later writes tensor @p t. */
int mengine_plan_written_after(const void *work, uint32_t t, uint32_t op);
/* Place every buffer; *total receives the activation area's size in bytes.
 * MENGINE_ERR_PLAN (offline buffers overlap), MENGINE_ERR_LIMIT (over 2 GiB). */
mengine_status mengine_plan_run(void *work, mdiag *d, size_t *total);
/* Offset of tensor @p t in the activation area; -1 for constants and unused tensors. */
int64_t mengine_plan_tensor_offset(const void *work, uint32_t t);
/* Offset of operator @p op's scratch buffer; -1 when it has none. */
int64_t mengine_plan_scratch_offset(const void *work, uint32_t op);

#endif
