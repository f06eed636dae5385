/**
 * @file slab.h
 * @brief One device buffer per category of tensors (parameters, gradients,
 *        optimizer state, activations), laid out once and then addressed by
 *        views, so the steady-state training loop creates no buffers.
 *
 * Use: reserve every tensor with mlayout_add() to get its offset, create the
 * slab with mslab_create() for the layout's total, and take views with
 * mslab_view(). Offsets are aligned to MLAYOUT_ALIGN floats (64 bytes) so
 * kernels may use vector loads.
 */
#ifndef MANTA_CL_SLAB_H
#define MANTA_CL_SLAB_H

#include "cl/cl.h"

#define MLAYOUT_ALIGN 16

/** A layout being planned: the next free offset, in floats. */
typedef struct mlayout {
    size_t total;
} mlayout;

/** Reserve @p n floats; returns their offset. */
size_t mlayout_add(mlayout *l, size_t n);

/** A device buffer holding one layout. */
typedef struct mslab {
    cl_mem mem;
    size_t floats;
    const char *name; /**< static string for messages ("parameters", ...) */
} mslab;

/** Create the buffer for @p floats (the layout's total) and zero it. */
manta_status mslab_create(mcl_dev *d, mslab *s, size_t floats, const char *name);
/** Release the buffer; the struct is reset. NULL mem is allowed. */
void mslab_destroy(mcl_dev *d, mslab *s);
/** The view at @p off floats into the slab. */
static inline mview mslab_view(const mslab *s, size_t off)
{
    mview v = {s->mem, off};
    return v;
}

#endif
