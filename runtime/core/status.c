#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>

const char *manta_status_str(manta_status s)
{
    switch (s) {
    case MANTA_OK: return "ok";
    case MANTA_ERR_INVALID_ARG: return "invalid argument";
    case MANTA_ERR_NO_MEMORY: return "out of host memory";
    case MANTA_ERR_IO: return "i/o error";
    case MANTA_ERR_FORMAT: return "malformed input";
    case MANTA_ERR_NO_PLATFORM: return "no OpenCL platform";
    case MANTA_ERR_NO_DEVICE: return "no such OpenCL device";
    case MANTA_ERR_BUILD: return "OpenCL program build failed";
    case MANTA_ERR_DEVICE_MEMORY: return "out of device memory";
    case MANTA_ERR_OPENCL: return "OpenCL error";
    case MANTA_ERR_BLAS: return "CLBlast error";
    case MANTA_ERR_UNSUPPORTED: return "unsupported";
    case MANTA_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

manta_status manta_err_set(manta_err *err, manta_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void manta_err_clear(manta_err *err)
{
    if (err) {
        err->code = MANTA_OK;
        err->msg[0] = '\0';
    }
}

const char *manta_err_msg(const manta_err *err, manta_status s)
{
    if (err && err->code != MANTA_OK && err->msg[0])
        return err->msg;
    return manta_status_str(s);
}
