#!/bin/sh
# Runs every unit-test binary given as an argument, then tests/integration/*.sh,
# and prints one closing line "tests: N passed, N failed".
# Tests use their own OpenCL program cache under $BUILD/cache.
set -u
BUILD=${BUILD:-build}
export MANTA_CACHE_DIR="${MANTA_CACHE_DIR:-$PWD/$BUILD/cache}"
export CMOCKA_MESSAGE_OUTPUT=TAP
if [ "${SANITIZE:-}" = 1 ]; then
    # use_tls=0: LeakSanitizer's tracer crashed (SIGSEGV, "Tracer caught signal 11") reading the
    # thread-local storage of PoCL's worker threads at exit in some runs. Not scanning TLS as roots
    # can only add reports (an object held only from TLS would show as a leak), never hide one.
    export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0:use_tls=0"
    export ASAN_OPTIONS="detect_leaks=1"
fi
pass=0
fail=0
failed=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
    start=$(date +%s)
    "$t" >"$log" 2>&1
    rc=$?
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^not ok ' "$log")
    cat "$log"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1 # crashed or failed outside a test case
    fi
    pass=$((pass + p))
    fail=$((fail + f))
    [ "$f" -ne 0 ] && failed="$failed $(basename "$t")"
    echo "# $(basename "$t"): $p passed, $f failed, $(( $(date +%s) - start )) s"
done
for s in tests/integration/*.sh; do
    [ -f "$s" ] || continue
    start=$(date +%s)
    if BUILD="$BUILD" sh "$s" >"$log" 2>&1; then
        pass=$((pass + 1))
        echo "ok - $(basename "$s")"
    else
        fail=$((fail + 1))
        failed="$failed $(basename "$s")"
        cat "$log"
        echo "not ok - $(basename "$s")"
    fi
    echo "# $(basename "$s"): $(( $(date +%s) - start )) s"
done
[ -n "$failed" ] && echo "# failed:$failed"
echo "tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
