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
    MENGINE_ERR_ARG,            /**< NULL or misaligned pointer, bad kernel argument */
    MENGINE_ERR_TRUNCATED,      /**< shorter than the 8-byte header, or a table body runs past the end */
    MENGINE_ERR_IDENTIFIER,     /**< file identifier is not "TFL3" */
    MENGINE_ERR_OFFSET,         /**< an offset is 0, too large, or points outside the data */
    MENGINE_ERR_ALIGNMENT,      /**< an object, field or constant buffer is not aligned */
    MENGINE_ERR_VTABLE,         /**< vtable outside the data, odd or too small, or a field outside its table */
    MENGINE_ERR_VECTOR,         /**< vector length overflows or runs past the end */
    MENGINE_ERR_STRING,         /**< string without its 0 terminator */
    MENGINE_ERR_DEPTH,          /**< tables nested deeper than the limit */
    MENGINE_ERR_LIMIT,          /**< too many tables, tensors, operators or inputs */
    MENGINE_ERR_VERSION,        /**< schema version is not 3 */
    MENGINE_ERR_SUBGRAPH,       /**< not exactly one subgraph, or a required vector is missing */
    MENGINE_ERR_OPCODE_INDEX,   /**< operator refers to an operator code that does not exist */
    MENGINE_ERR_TENSOR_INDEX,   /**< a tensor index is out of range */
    MENGINE_ERR_BUFFER_INDEX,   /**< a buffer index is out of range */
    MENGINE_ERR_BUFFER_SIZE,    /**< constant data size does not match the shape; buffer 0 not empty */
    MENGINE_ERR_TYPE,           /**< tensor type not supported where it is used */
    MENGINE_ERR_SHAPE,          /**< shape invalid or inconsistent with its operator */
    MENGINE_ERR_UNSUPPORTED_OP, /**< builtin operator not implemented, or a custom operator */
    MENGINE_ERR_OP_VERSION,     /**< operator version not supported */
    MENGINE_ERR_OPTIONS,        /**< options of the wrong type or with values out of range */
    MENGINE_ERR_GRAPH,          /**< tensor written twice, read before written, bad model inputs/outputs */
    MENGINE_ERR_PLAN,           /**< "OfflineMemoryAllocation" metadata malformed or overlapping */
    MENGINE_ERR_ARENA,          /**< the arena (or planner work area) is too small */
    MENGINE_ERR_STATE,          /**< functions called out of order */
    MENGINE_ERR_UNSUPPORTED     /**< valid feature the engine does not implement (sparsity, ...) */
} mengine_status;

/** Short, static name of a status ("offset out of bounds", ...). Never NULL. */
const char *mengine_status_str(mengine_status s);

#endif
