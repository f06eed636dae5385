/* libFuzzer target: any byte string through the engine's verifier, metadata
 * lookup, planner, prepare and interpreter (tests/common/fuzz_body.c). Built
 * by `make fuzz`; run with tools/fuzz/run.sh. */
#include <stddef.h>
#include <stdint.h>

#include "common/fuzz_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_engine_one(data, size, NULL, 0);
    return 0;
}
