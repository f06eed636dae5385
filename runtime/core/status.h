/**
 * @file status.h
 * @brief Status codes and the error record every fallible manta function fills.
 *
 * Library functions return a ::manta_status and never exit. Where a caller may
 * want to know *what* failed, the function takes a `manta_err *` (may be NULL)
 * and writes one line naming the object (file, device, field) and the cause.
 */
#ifndef MANTA_CORE_STATUS_H
#define MANTA_CORE_STATUS_H

#include <stddef.h>

/** Result of a manta call. MANTA_OK is zero; every error is positive. */
typedef enum manta_status {
    MANTA_OK = 0,
    MANTA_ERR_INVALID_ARG,   /**< a parameter or shape is out of range */
    MANTA_ERR_NO_MEMORY,     /**< host allocation failed */
    MANTA_ERR_IO,            /**< file system or stream error */
    MANTA_ERR_FORMAT,        /**< a file or record is malformed */
    MANTA_ERR_NO_PLATFORM,   /**< no OpenCL platform is installed */
    MANTA_ERR_NO_DEVICE,     /**< the requested OpenCL device does not exist */
    MANTA_ERR_BUILD,         /**< an OpenCL program failed to compile */
    MANTA_ERR_DEVICE_MEMORY, /**< the device cannot hold the requested buffer */
    MANTA_ERR_OPENCL,        /**< any other OpenCL error (name in the message) */
    MANTA_ERR_BLAS,          /**< CLBlast reported an error */
    MANTA_ERR_UNSUPPORTED,   /**< valid request the device or build cannot do */
    MANTA_ERR_INTERNAL       /**< a broken invariant: a bug in manta */
} manta_status;

/** Longest message an error record holds, including the terminator. */
#define MANTA_ERR_MSG_MAX 1024

/** One error: its code and a one-line, human-readable message. */
typedef struct manta_err {
    manta_status code;
    char msg[MANTA_ERR_MSG_MAX];
} manta_err;

/** Short, static name of a status ("invalid argument", ...). Never NULL. */
const char *manta_status_str(manta_status s);

/**
 * Record an error and return its code, so call sites read
 * `return manta_err_set(err, MANTA_ERR_IO, "%s: %s", path, strerror(errno));`.
 * @param err  record to fill; NULL is allowed (the message is dropped).
 * @param code the status to return (must not be MANTA_OK).
 * @param fmt  printf format of the message (truncated to MANTA_ERR_MSG_MAX-1).
 */
manta_status manta_err_set(manta_err *err, manta_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/** Clear a record to MANTA_OK with an empty message. NULL is allowed. */
void manta_err_clear(manta_err *err);

/**
 * Message of a record, or the status name when the record holds no message.
 * @return a string owned by @p err (or static); never NULL.
 */
const char *manta_err_msg(const manta_err *err, manta_status s);

/** Return the status of @p expr from the calling function when it is not MANTA_OK. */
#define MANTA_TRY(expr)                      \
    do {                                     \
        manta_status manta_try_st_ = (expr); \
        if (manta_try_st_ != MANTA_OK)       \
            return manta_try_st_;            \
    } while (0)

#endif
