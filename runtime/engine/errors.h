/**
 * @file errors.h
 * @brief Status codes of the inference engine and its kernels.
 *
 * The engine is freestanding C99 and does not use the host library's
 * ::manta_status: each failure of the model reader has its own code so that a
 * caller (or a test) can tell a truncated file from a bad index without
 * parsing the message.
 */
#ifndef MANTA_ENGINE_ERRORS_H
#define MANTA_ENGINE_ERRORS_H

/** Result of an engine or kernel call. MENGINE_OK is zero; every error is positive. */
typedef enum mengine_status {
    MENGINE_OK = 0,
    /** NULL or misaligned pointer, bad kernel argument */
    MENGINE_ERR_ARG,
    /** shorter than the header, or a table runs past the end */
    MENGINE_ERR_TRUNCATED,
    /** file identifier is not "TFL3" */
    MENGINE_ERR_IDENTIFIER,
    /** an offset is 0, too large, or points outside the data */
    MENGINE_ERR_OFFSET,
    /** an object, field or constant buffer is not aligned */
    MENGINE_ERR_ALIGNMENT,
    /** vtable outside the data, odd or small; field outside table */
    MENGINE_ERR_VTABLE,
    /** vector length overflows or runs past the end */
    MENGINE_ERR_VECTOR,
    /** string without its 0 terminator */
    MENGINE_ERR_STRING,
    /** tables nested deeper than the limit */
    MENGINE_ERR_DEPTH,
    /** too many tables, tensors, operators or inputs */
    MENGINE_ERR_LIMIT,
    /** schema version is not 3 */
    MENGINE_ERR_VERSION,
    /** not exactly one subgraph, or a required vector is missing */
    MENGINE_ERR_SUBGRAPH,
    /** operator refers to an operator code that does not exist */
    MENGINE_ERR_OPCODE_INDEX,
    /** a tensor index is out of range */
    MENGINE_ERR_TENSOR_INDEX,
    /** a buffer index is out of range */
    MENGINE_ERR_BUFFER_INDEX,
    /** constant data size does not match the shape; buffer 0 not empty */
    MENGINE_ERR_BUFFER_SIZE,
    /** tensor type not supported where it is used */
    MENGINE_ERR_TYPE,
    /** shape invalid or inconsistent with its operator */
    MENGINE_ERR_SHAPE,
    /** builtin operator not implemented, or a custom operator */
    MENGINE_ERR_UNSUPPORTED_OP,
    /** operator version not supported */
    MENGINE_ERR_OP_VERSION,
    /** options of the wrong type or with values out of range */
    MENGINE_ERR_OPTIONS,
    /** tensor written twice, read before written, bad model inputs/outputs */
    MENGINE_ERR_GRAPH,
    /** "OfflineMemoryAllocation" metadata malformed or overlapping */
    MENGINE_ERR_PLAN,
    /** the arena (or planner work area) is too small */
    MENGINE_ERR_ARENA,
    /** functions called out of order */
    MENGINE_ERR_STATE,
    /** valid feature the engine does not implement (sparsity, ...) */
    MENGINE_ERR_UNSUPPORTED
} mengine_status;

/** Short, static name of a status ("offset out of bounds", ...). Never NULL. */
const char *mengine_status_str(mengine_status s);

#endif
