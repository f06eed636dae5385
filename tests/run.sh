#!/bin/sh
# Runs every unit-test binary given as an argument, then tests/integration/*.sh, JOBS at a time
# (default 2; `make test JOBS=N` or JOBS=N in the environment; JOBS=1 runs them one by one), and
# prints one closing line "tests: N passed, N failed".
#
# Each test's output goes to its own file, $BUILD/test-logs/NAME.log (NAME.sh.log for a script;
# kept after the run), and is printed whole, in the order of the list whatever order the tests
# finish in, followed by the test's line "# NAME: ... s". A unit test's output is always
# printed, an integration script's only when it fails. The last lines give the wall time, the
# tests' seconds summed and the slowest tests, then the failed ones and the closing line.
#
# A test that must not share the machine carries the line "run.sh: alone (WHY)" in its source
# (tests/unit/NAME.c or the script): it starts once the tests before it have finished, and the
# next ones wait for it. Concurrent tests share the OpenCL program cache $BUILD/cache (entries
# are written to a temporary file and renamed into place, see runtime/cl/cl.c), take their
# temporary folders from mktemp/mkdtemp and their TCP ports from the kernel (port 0).
set -u
BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
case $JOBS in
'' | *[!0-9]* | 0)
    echo "tests/run.sh: JOBS='$JOBS': expected a positive number of tests to run at a time" >&2
    exit 2
    ;;
esac
export MANTA_CACHE_DIR="${MANTA_CACHE_DIR:-$PWD/$BUILD/cache}"
export CMOCKA_MESSAGE_OUTPUT=TAP
# PoCL compiles a kernel again for every work-group size it is launched with (work-group
# specialisation); the tests launch kernels at many sizes, and a cold run spent most of its time
# compiling (2,226 work-group functions, 59 MB of PoCL's cache). Without the specialisation each
# kernel is compiled once for all sizes: the same kernels and results, slower launches. Set
# POCL_WORK_GROUP_SPECIALIZATION=1 to test the specialised code instead.
export POCL_WORK_GROUP_SPECIALIZATION="${POCL_WORK_GROUP_SPECIALIZATION:-0}"
if [ "${SANITIZE:-}" = 1 ]; then
    # use_tls=0: LeakSanitizer's tracer crashed (SIGSEGV, "Tracer caught signal 11") reading the
    # thread-local storage of PoCL's worker threads at exit in some runs. Not scanning TLS as roots
    # can only add reports (an object held only from TLS would show as a leak), never hide one.
    export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0:use_tls=0"
    export ASAN_OPTIONS="detect_leaks=1"
fi

logs=$BUILD/test-logs
rm -rf "$logs"
mkdir -p "$logs" || exit 2
# the list: one "KIND PATH" line per test, u a unit-test binary, i an integration script
list=$logs/.list
: >"$list"
for t in "$@"; do echo "u $t" >>"$list"; done
for s in tests/integration/*.sh; do [ -f "$s" ] && echo "i $s" >>"$list"; done
total=$(wc -l <"$list")

# Finished tests announce their number on a FIFO (fd 9) the loop below reads: POSIX sh has no
# "wait for any child".
fifo=$logs/.done
mkfifo "$fifo" || exit 2
exec 9<>"$fifo"
rm -f "$fifo"

# alone KIND PATH: whether the test's source asks to run alone
alone() {
    case $1 in
    u) src=tests/unit/$(basename "$2").c ;;
    *) src=$2 ;;
    esac
    [ -f "$src" ] && grep -q 'run\.sh: alone' "$src"
}

# run_one N KIND PATH: runs test N; writes "RC SECONDS" to its .rc file, then N to the FIFO
run_one() {
    log=$logs/$(basename "$3").log
    start=$(date +%s)
    if [ "$2" = u ]; then
        "$3" >"$log" 2>&1 9>&-
    else
        BUILD="$BUILD" sh "$3" >"$log" 2>&1 9>&-
    fi
    # written whole before it appears: the loop below reads it as soon as it exists
    echo "$? $(($(date +%s) - start))" >"$log.rc.tmp" && mv "$log.rc.tmp" "$log.rc"
    echo "$1" >&9
}

pass=0 fail=0 failed="" summed=0 times=""
# show N KIND PATH: prints test N's output and line, counts it
show() {
    name=$(basename "$3" .sh)
    log=$logs/$(basename "$3").log
    read -r rc secs <"$log.rc"
    summed=$((summed + secs))
    times="$times$secs $(basename "$3")
"
    if [ "$2" = u ]; then
        p=$(grep -c '^ok ' "$log")
        f=$(grep -c '^not ok ' "$log")
        cat "$log"
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
            f=1 # crashed or failed outside a test case
        fi
        pass=$((pass + p))
        fail=$((fail + f))
        [ "$f" -ne 0 ] && failed="$failed $name"
        echo "# $name: $p passed, $f failed, $secs s"
    else
        if [ "$rc" -eq 0 ]; then
            pass=$((pass + 1))
            echo "ok - $name.sh"
        else
            fail=$((fail + 1))
            failed="$failed $name.sh"
            cat "$log"
            echo "not ok - $name.sh"
        fi
        echo "# $name.sh: $secs s"
    fi
}

t0=$(date +%s)
next=1 shown=1 running=0 solo=0
while [ "$shown" -le "$total" ]; do
    # start tests while there is room; a test that runs alone waits for an empty machine and
    # holds it
    while [ "$solo" -eq 0 ] && [ "$running" -lt "$JOBS" ] && [ "$next" -le "$total" ]; do
        set -- $(sed -n "${next}p" "$list")
        if alone "$1" "$2"; then
            [ "$running" -eq 0 ] || break
            solo=$next
        fi
        run_one "$next" "$1" "$2" &
        running=$((running + 1))
        next=$((next + 1))
    done
    # print the finished tests at the head of the list
    while [ "$shown" -le "$total" ]; do
        set -- $(sed -n "${shown}p" "$list")
        [ -f "$logs/$(basename "$2").log.rc" ] || break
        show "$shown" "$1" "$2"
        shown=$((shown + 1))
    done
    [ "$shown" -le "$total" ] || break
    read -r done <&9 || {
        echo "tests/run.sh: lost track of the running tests" >&2
        exit 2
    }
    running=$((running - 1))
    [ "$done" = "$solo" ] && solo=0
done
wait
exec 9>&-

echo "# $total tests in $(($(date +%s) - t0)) s wall, $summed s summed, $JOBS at a time; slowest:" \
    "$(printf '%s' "$times" | sort -rn | head -5 | awk '{printf "%s%s %d s", (NR > 1 ? ", " : ""), $2, $1}')"
[ -n "$failed" ] && echo "# failed:$failed"
echo "tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
