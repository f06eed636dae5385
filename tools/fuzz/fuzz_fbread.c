/* libFuzzer target: any byte string through the engine's checked FlatBuffers
 * reader alone (runtime/engine/fbread.c), walked without a schema
 * (tests/common/fbwalk.c): every field of every reachable table as each
 * scalar, table, vector and string. A finding is a read outside the input
 * (the address sanitizer) or a result the reader promises never to give.
 * Built by `make fuzz`; run with tools/fuzz/run.sh SECONDS BUILD fbread. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fbwalk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1); /* exact size, and 4-byte aligned */
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    const char *broken = fbw_walk(copy, size, NULL);
    free(copy);
    if (broken) {
        fprintf(stderr, "fuzz finding: %s\n", broken);
        abort();
    }
    return 0;
}
