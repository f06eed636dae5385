#!/bin/sh
# The int8 vector path of 32-bit Arm with the DSP extension (runtime/engine/kernels_q8_dsp.c) on
# the build machine: test_engine_q8 and the int8 kernels compiled with MK_Q8_DSP_MODEL, which
# selects that path with its instructions (SXTB16, SXTAB16, SMLAD) as plain C, so that its
# patches, tiles, tails and scratch use are compared with the portable kernels byte for byte
# here (under ASan and UBSan with SANITIZE=1). The instructions themselves run in
# `make test-boards` (BOARD=armv7 under qemu-arm).
set -eu
BUILD=${BUILD:-build}
OUT=$BUILD/dsp-model
mkdir -p "$OUT"
san=""
[ "${SANITIZE:-}" = 1 ] && san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# shellcheck disable=SC2086
${CC:-cc} -std=c11 -O2 -g -Wall -Wextra -Wpedantic -Werror $san -DMK_Q8_DSP_MODEL -Iruntime -Itests \
    -o "$OUT/test_engine_q8" tests/unit/test_engine_q8.c runtime/engine/kernels_q8.c \
    runtime/engine/kernels_q8_dsp.c runtime/engine/kernels_q8_simd.c -lcmocka -lm
CMOCKA_MESSAGE_OUTPUT=TAP "$OUT/test_engine_q8" >"$OUT/test_engine_q8.log" 2>&1 || {
    tail -n 30 "$OUT/test_engine_q8.log"
    echo "FAIL: test_engine_q8 with the DSP path's model (MK_Q8_DSP_MODEL)"
    exit 1
}
n=$(grep -c '^ok ' "$OUT/test_engine_q8.log" || true)
[ "$n" -gt 0 ] || { cat "$OUT/test_engine_q8.log"; echo "FAIL: no test ran"; exit 1; }
grep -q 'no int8 vector path' "$OUT/test_engine_q8.log" &&
    { echo "FAIL: MK_Q8_DSP_MODEL build without the vector path"; exit 1; }
echo "engine_dsp_model: test_engine_q8 with the DSP path's model, $n tests passed"
