#!/bin/sh
# The engine's unit tests built for this CPU (ENGINE_OPT="-O3 -march=native") in
# $BUILD/native-engine: the default build targets generic x86-64 (SSE), so the
# kernels' AVX, AVX-512 and FMA paths are tested only where the CPU has them and
# only by a build made for it. Reports which vector paths the build took.
set -eu
BUILD=${BUILD:-build}
OUT=$BUILD/native-engine
MAKE=${MAKE:-make}
DIR=$OUT
[ "${SANITIZE:-}" = 1 ] && DIR=$OUT/san # the Makefile puts sanitized builds in BUILD/san
tests=$(ls tests/unit/test_engine_*.c | sed "s|tests/unit/\(.*\)\.c|$DIR/tests/\1|")
# shellcheck disable=SC2086
$MAKE --no-print-directory -j2 BUILD="$OUT" ENGINE_OPT="-O3 -march=native" \
    SANITIZE="${SANITIZE:-}" $tests >"$OUT.log" 2>&1 || { cat "$OUT.log"; exit 1; }
flags=$(echo | ${CC:-cc} -march=native -dM -E - |
    sed -n 's/^#define __\(AVX512F\|AVX2\|AVX\|FMA\|SSE2\|ARM_NEON\)__ 1$/\1/p' | sort | tr '\n' ' ')
echo "engine_native: vector extensions of this CPU's build: ${flags:-none}"
fail=0
for t in $tests; do
    if "$t" >"$t.log" 2>&1; then
        echo "ok   $(basename "$t") ($(grep -c '^\[       OK \]' "$t.log") tests)"
    else
        echo "FAIL $(basename "$t")"
        tail -n 20 "$t.log"
        fail=1
    fi
done
exit "$fail"
