/* The activation memory planner (see plan.c). Depends on ops.h (the operator
 * records), model.h, fbread.h and diag.h. Not part of the public API.
 *
 * Works in a caller area of me_plan_work_size() bytes. Use: me_plan_begin(),
 * then me_plan_op() for every operator in order once it is prepared,
 * me_plan_run(), then read the results with me_plan_tensor_offset() /
 * me_plan_scratch_offset() before reusing the area. */
#ifndef MANTA_ENGINE_PLAN_H
#define MANTA_ENGINE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/ops.h"

/* Bytes of work area for a model of @p n_tensors tensors and @p n_ops operators. */
size_t me_plan_work_size(uint32_t n_tensors, uint32_t n_ops);
/* Start planning @p m (verified) in @p work: the lifetime of every tensor.
 * MENGINE_ERR_ARG (work NULL or misaligned), MENGINE_ERR_ARENA (too small). */
mengine_status me_plan_begin(void *work, size_t work_size, const mengine_model *m, mdiag *d);
/* Operator @p op, prepared into @p node: its scratch buffer, and whether its
 * output shares an input's buffer (the registration's share rule). */
void me_plan_op(void *work, const mengine_model *m, uint32_t op, const mnode *node);
/* Keep tensor @p t's buffer (its group's) alive until operator @p op at least
 * (a fused kernel at @p op reads it). */
void me_plan_extend(void *work, uint32_t t, uint32_t op);
/* Whether activation @p t is neither a model input nor a model output and no
 * operator after @p op reads it (me_plan_begin()'s lifetimes). */
int me_plan_local(const void *work, uint32_t t, uint32_t op);
/* Whether an operator at @p op or later writes tensor @p t. */
int me_plan_written_after(const void *work, uint32_t t, uint32_t op);
/* Place every buffer; *total receives the activation area's size in bytes.
 * MENGINE_ERR_PLAN (offline buffers overlap), MENGINE_ERR_LIMIT (over 2 GiB). */
mengine_status me_plan_run(void *work, mdiag *d, size_t *total);
/* Offset of tensor @p t in the activation area; -1 for constants and unused tensors. */
int64_t me_plan_tensor_offset(const void *work, uint32_t t);
/* Offset of operator @p op's scratch buffer; -1 when it has none. */
int64_t me_plan_scratch_offset(const void *work, uint32_t op);

#endif
