/**
 * @file devset.h
 * @brief Several devices of one process, chosen by one list
 *        (`manta train --devices all|0,1|gpu,cpu`).
 */
#ifndef MANTA_CL_DEVSET_H
#define MANTA_CL_DEVSET_H

#include <stddef.h>

#include "cl/cl.h"

/**
 * Choose several devices of @p list. @p specs is "all" (every device, at most
 * @p max of them) or a comma-separated list of mcl_select() specs ("0,1",
 * "gpu,cpu"; empty entries are skipped, at most 511 characters are read),
 * each naming a device no other entry names.
 * @param index receives the chosen indices in the order given (room for @p max).
 * @param n     receives how many were chosen (at least 1 on success).
 * @return MANTA_ERR_NO_DEVICE with a message that starts with "--devices":
 *         an entry that matches nothing (mcl_select()'s reason), a device
 *         listed twice, more than @p max entries, a list without entries, no
 *         device at all.
 * Thread-safety: reentrant (reads MANTA_DEVICE only through mcl_select(),
 * which no entry leaves empty).
 */
manta_status mcl_select_many(const mcl_device_list *list, const char *specs, size_t *index,
                             size_t max, size_t *n, manta_err *err);

#endif
