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

#include <limits.h>

#include "cl/cl.h"

#define MLAYOUT_ALIGN 16

/** A tensor's lifetime in a layout planned by lifetime (mlayout_pack_plan()): the phases
 *  [first, last] it holds data in; first > last: never (a place for its gradient only). */
typedef struct mlayout_life {
    size_t off, n;        /**< its layout offset and floats (aligned) */
    unsigned first, last; /**< phases; last MLAYOUT_END: to the end of the step */
} mlayout_life;

/** The last phase of a step: a tensor living to it is read by the backward pass (or after). */
#define MLAYOUT_END UINT_MAX

/** A layout being planned: the next free offset, in floats. With @c record set (before the
 *  first mlayout_add()), every offset mlayout_add() returns is also kept in @c cuts: the
 *  places where the layout may be split across buffers (mslab_create_split()), since no
 *  tensor spans one. With @c lives set too, every tensor's lifetime is kept in @c life for
 *  mlayout_pack_plan(): a network plans its activations in the order its forward pass
 *  writes them, starting each step of the pass (an MBConv slot, a layer) with
 *  mlayout_phase(); mlayout_add() reserves a tensor read until the end of the step (by the
 *  backward pass), mlayout_add_temp() one read by nothing after its phase of the forward,
 *  mlayout_add_always() one used in any phase, mlayout_add_unused() one never holding data
 *  (a gradient's place). Without @c lives the four reserve alike. mlayout_free() releases
 *  what was kept. */
typedef struct mlayout {
    size_t total;
    bool record;    /**< keep the offsets in cuts */
    bool cuts_lost; /**< out of host memory while keeping them: no split possible */
    size_t *cuts;   /**< the offsets mlayout_add() returned, ascending */
    size_t n_cuts, cap_cuts;
    bool lives;         /**< keep the lifetimes in life (with record) */
    unsigned phase;     /**< the current phase (mlayout_phase()), from 0 */
    mlayout_life *life; /**< one per tensor, in layout order */
    size_t n_life, cap_life;
} mlayout;

/** Reserve @p n floats read until the end of the step; returns their offset. */
size_t mlayout_add(mlayout *l, size_t n);
/** Reserve @p n floats written and read only in the current phase of the forward pass. */
size_t mlayout_add_temp(mlayout *l, size_t n);
/** Reserve @p n floats that any phase may use (they share memory with nothing). */
size_t mlayout_add_always(mlayout *l, size_t n);
/** Reserve @p n floats that never hold data (the layout place of a gradient without an
 *  activation): they may share memory with anything. */
size_t mlayout_add_unused(mlayout *l, size_t n);
/** Start the next phase: the tensors reserved from now on are written after those before. */
void mlayout_phase(mlayout *l);
/** Release the kept offsets and lifetimes (the total stays). */
void mlayout_free(mlayout *l);

/**
 * A layout planned by lifetime: tensors whose lifetimes overlap get disjoint places in one
 * buffer of @c total floats; the others may share memory. Tensor i of the layout (ascending
 * layout offsets lo[i], lifetime life[i]) is at at[i]. cuts: the planned offsets where no
 * tensor spans, ascending (where the buffer may be split: mslab_create_split()). Owned
 * arrays (mlayout_pack_free()).
 */
typedef struct mlayout_pack {
    size_t n;           /**< tensors; 0: not planned (the layout's offsets are the buffer's) */
    size_t *lo, *at;    /**< layout offset, planned offset */
    mlayout_life *life; /**< the layout's lifetimes (a copy) */
    size_t total;
    size_t *cuts;
    size_t n_cuts;
} mlayout_pack;

/**
 * Plan @p l (recorded with lives) by lifetime into @p p: largest tensor first, each at the
 * lowest offset free of every tensor already placed whose lifetime overlaps its own (first
 * fit); a tensor that never holds data is at 0. A pure function (tests/unit/test_slab.c).
 * @return MANTA_ERR_INVALID_ARG when @p l kept no lifetimes (or lost some: out of host
 *         memory while planning); MANTA_ERR_NO_MEMORY. @p p is then empty.
 */
manta_status mlayout_pack_plan(const mlayout *l, mlayout_pack *p);
/** The planned offset of layout offset @p off (a tensor's, or inside one): identity when
 *  @p p is empty. */
size_t mlayout_pack_map(const mlayout_pack *p, size_t off);
/** Release the arrays of @p p (an empty pack is left). */
void mlayout_pack_free(mlayout_pack *p);

/** Most buffers one slab is split across (mslab_create_split()). */
#define MSLAB_MAX_PIECES 64

/**
 * A device buffer holding one layout, or several (pieces) when the layout is larger than one
 * allocation may be: piece k holds the floats [piece_lo[k], piece_lo[k + 1]) of the layout
 * (the last up to floats), each tensor inside one piece, so that a view of a tensor is a
 * view of one buffer (mslab_view() finds it).
 */
typedef struct mslab {
    cl_mem mem; /**< the buffer (the first piece of a split slab) */
    size_t floats;
    const char *name; /**< static string for messages ("parameters", ...) */
    int n_pieces;     /**< buffers of a split slab; 0 or 1: one buffer, mem */
    cl_mem piece[MSLAB_MAX_PIECES];
    size_t piece_lo[MSLAB_MAX_PIECES];
} mslab;

/** Create the buffer for @p floats (the layout's total) and zero it. */
manta_status mslab_create(mcl_dev *d, mslab *s, size_t floats, const char *name);
/**
 * The pieces of a layout of @p floats floats for buffers of at most @p max_piece floats:
 * cut only at the offsets @p cuts (ascending; a cut at 0 or at @p floats is ignored), each
 * piece as long as it can be. One piece when @p floats <= @p max_piece. Writes the first
 * float of each piece into @p lo (room for MSLAB_MAX_PIECES) and returns their count; 0 when
 * no cut fits (a tensor longer than @p max_piece: *@p too_long gets its offset and *@p
 * too_long_floats its length, the distance to the next cut) or more than MSLAB_MAX_PIECES
 * pieces would be needed (*@p too_long_floats 0). A pure function (tests/unit/test_slab.c).
 */
int mslab_split(size_t floats, const size_t *cuts, size_t n_cuts, size_t max_piece, size_t *lo,
                size_t *too_long, size_t *too_long_floats);
/**
 * As mslab_create(), split by mslab_split() into buffers of at most @p max_piece floats (0:
 * the device's largest allocation, and at most 2^32 - 16 floats, what a view's offset may
 * be: mcl_piece_floats()). One buffer, as mslab_create(), when the layout fits one.
 * @return MANTA_ERR_DEVICE_MEMORY naming the slab, the tensor's size and the limit when a
 *         tensor does not fit one buffer; the device's errors.
 */
manta_status mslab_create_split(mcl_dev *d, mslab *s, size_t floats, const size_t *cuts,
                                size_t n_cuts, size_t max_piece, const char *name);
/** The most floats one buffer of a slab on @p d holds: the device's largest allocation, and
 *  at most 2^32 - 16 floats (a view's offset is a 32-bit kernel argument). */
size_t mcl_piece_floats(const mcl_dev *d);
/** Release the buffer(s); the struct is reset. NULL mem is allowed. */
void mslab_destroy(mcl_dev *d, mslab *s);
/** The view at @p off floats into the slab. */
static inline mview mslab_view(const mslab *s, size_t off)
{
    if (s->n_pieces <= 1) {
        mview v = {s->mem, off};
        return v;
    }
    int lo = 0, hi = s->n_pieces - 1; /* the last piece starting at or before off */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (s->piece_lo[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    mview v = {s->piece[lo], off - s->piece_lo[lo]};
    return v;
}

#endif
