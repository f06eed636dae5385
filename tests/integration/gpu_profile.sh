#!/bin/sh
# The GPU kernel variants on PoCL, under a small GPU's limits:
#  1. the op checks (forward against the plain-C references, gradients against finite
#     differences) once more with MANTA_KERNELS=gpu and MANTA_DEVICE_LIMITS clamping the
#     device to a Mali/Adreno-class GPU (work-groups of 256, 32 KiB of local memory, extents
#     256 x 256 x 64, 256 MiB buffers): every launch must fit those limits;
#  2. the parallelism of a training step: at batch 64 on the largest sub-network, no launch
#     uses fewer than 16,384 work-items unless it writes fewer values than that
#     (tools/bench/launch_check.sh; docs/gpu.md lists those launches); its activations
#     (395 MB) exceed a 256 MiB allocation limit: split across buffers at their tensors, the
#     step runs; under a 16 MiB limit one of its tensors (25 MB) does not fit one buffer:
#     refused in one line naming the slab and the limit.
set -eu
B=${BUILD:-build}
M="$B/bin/manta"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

export MANTA_KERNELS=gpu CMOCKA_MESSAGE_OUTPUT=TAP
small=local=32k,wg=256,items=256x256x64
export MANTA_DEVICE_LIMITS=$small,alloc=256m
failed=""
for t in $(grep -v '^#' tests/op_tests); do
    bin="$B/tests/test_$t"
    [ -x "$bin" ] || fail "$bin not built"
    if "$bin" >"$tmp/log" 2>&1; then
        echo "ok: test_$t ($(grep -c '^ok ' "$tmp/log") checks) with GPU kernels under $MANTA_DEVICE_LIMITS"
    else
        cat "$tmp/log"
        failed="$failed test_$t"
    fi
done
[ -z "$failed" ] || fail "with GPU kernels under a small GPU's limits:$failed"

"$M" devices | grep -q "local=32 KiB" || fail "manta devices does not show the clamped local memory"
"$M" bench train --arch max --batch 64 --steps 1 >"$tmp/out" 2>"$tmp/err" ||
    { cat "$tmp/err"; fail "395 MB of activations not split across buffers under alloc=256m"; }
echo "ok: 395 MB of activations trained under alloc=256m (split across buffers)"
if MANTA_DEVICE_LIMITS=$small,alloc=16m "$M" bench train --arch max --batch 64 --steps 1 \
    >"$tmp/out" 2>"$tmp/err"; then
    fail "a 25 MB tensor was placed under alloc=16m"
fi
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "activations.*16777216" "$tmp/err" ||
    { cat "$tmp/err"; fail "the allocation limit's error does not name the buffer and the limit"; }
echo "ok: $(cat "$tmp/err")"

MANTA_DEVICE_LIMITS=$small "$M" bench train --arch max --batch 64 --steps 1 --launches "$tmp/launches.jsonl" --json \
    >"$tmp/bench.json" || fail "manta bench train with GPU kernels"
grep -q '"kernels":"gpu"' "$tmp/bench.json" || fail "bench train did not run the GPU kernels"
sh tools/bench/launch_check.sh "$tmp/launches.jsonl" 16384 || fail "launches short of 16384 work-items"
