#!/bin/sh
# One measuring session on a GPU machine, within a fixed time (TOTAL, default 450 s,
# for a call of about 8 minutes): run it in the repository root and collect $OUT.
#
#   OUT=/path/to/results sh tools/bench/gpu_session.sh
#
# In order, each step bounded by its own time budget and by what is left of TOTAL,
# its elapsed time printed, everything logged to $OUT/session.log:
#   1. nvidia-smi (when present)
#   2. manta --version
#   3. manta devices (and $OUT/devices.json)
#   4. manta kernels build --device DEVICE: every OpenCL program built on the device
#   5. manta bench ops --device DEVICE --json -> $OUT/ops.json (its table in the log)
#   6. the op correctness tests, when test binaries were carried (TESTS_DIR)
#   7. tools/bench/gpu_vs_torch.sh (ROUNDS=3, all rows) -> $OUT/table.md and
#      $OUT/gpu_vs_torch.jsonl
#   8. manta train --schedule smoke, timed, when Fashion-MNIST is found under FMNIST_DIR
#      (default ./data-fmnist: the four .gz files of the IDX release, in it or in a
#      folder below it) -> $OUT/train_metrics.jsonl
#   9. stereo (STEREO=1, the default): manta train --space stereo-cpu --schedule
#      STEREO_SCHEDULE (default quick, 4,086 steps; full 8,560), bounded by STEREO_TRAIN_S
#      (default 240 s; its progress lines tell the rate where it stops), manta eval of its
#      last checkpoint (largest and smallest sub-networks), and a smoke schedule of
#      stereo-gpu (384x768) at batch 1 -> $OUT/stereo_cpu_metrics.jsonl,
#      $OUT/stereo_gpu_metrics.jsonl, $OUT/stereo_eval.json, and the last checkpoint as
#      $OUT/stereo_cpu.ckpt (for make bench-stereo CKPT=... where OpenCV is installed)
# A step that fails or runs out of time is reported and the next one runs. The script
# exits 0 when the table holds at least one measured figure, 1 otherwise.
#
# The OpenCL driver: unless OCL_ICD_VENDORS is already set, an ICD file naming
# NV_OPENCL (default /usr/local/nvidia/lib64/libnvidia-opencl.so.1, else the first
# libnvidia-opencl.so.1 found in the usual library folders) is written into a temporary
# folder and OCL_ICD_VENDORS points at it.
#
# Variables:
#   OUT           folder for the results (required; at most 9 files are written)
#   MANTA         the manta program; else BUNDLE/manta, BUNDLE being the newest
#                 build/bundle/manta-*/ folder (the relocatable bundle); else build/bin/manta
#   PYTHON        an interpreter with PyTorch (default python3)
#   DEVICE        manta's --device SPEC (default gpu); TORCH_DEVICE: cuda (default) or cpu
#   ROUNDS, STEPS, ROWS, RUN_TIMEOUT  passed to gpu_vs_torch.sh (defaults 3, 20, all, 120)
#   TOTAL         seconds for the whole session (default 450)
#   OPS_SECONDS   manta bench ops --seconds (default 0.2)
#   TESTS_DIR     folder of carried unit-test binaries (default: BUNDLE/tests, else
#                 build/tests, when present); OP_TESTS names the ones run (default: those
#                 of tests/op_tests)
#   FMNIST_DIR    where to look for Fashion-MNIST (default ./data-fmnist)
#   MANTA_CACHE_DIR  program cache (default: a temporary folder, new each session)
#
# Exercised on PoCL (CPU OpenCL), a small subset:
#   OCL_ICD_VENDORS=/etc/OpenCL/vendors OUT=/tmp/gs MANTA=build/bin/manta DEVICE=cpu \
#     TORCH_DEVICE=cpu PYTHON=build/bench-venv/bin/python ROUNDS=1 STEPS=2 ROWS=2 \
#     FMNIST_DIR=/usr/share/datasets/fashion-mnist sh tools/bench/gpu_session.sh
set -eu

# ---- the steps that are shell functions: the session runs each one as
# `sh gpu_session.sh --step NAME` under `timeout`, with its variables exported ----
step_nvsmi() {
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
        --format=csv
}
step_devices() {
    MANTA_DEVICE=$DEVICE "$MANTA" devices
    MANTA_DEVICE=$DEVICE "$MANTA" devices --json >"$OUT/devices.json"
}
step_ops() { # the JSON to ops.json, the same figures as a table into the log
    "$MANTA" bench ops --device "$DEVICE" --seconds "$OPS_SECONDS" --json >"$OUT/ops.json" || return
    "$PYTHON" - "$OUT/ops.json" <<'EOF' || cat "$OUT/ops.json"
import json, sys
d = json.load(open(sys.argv[1]))
print("device: %s (%s kernels), batch %s" % (d.get("device", "?"), d.get("kernels", "?"), d.get("batch", "?")))
w = max([len(o["op"]) for o in d["ops"]] + [2])
print("%-*s %-22s %9s %8s %7s %9s %8s %7s" % (w, "op", "shape", "fwd ms", "GFLOP/s", "GB/s", "bwd ms", "GFLOP/s", "GB/s"))
for o in d["ops"]:
    b = ("%9.3f %8.2f %7.2f" % (o["bwd_ms"], o["bwd_gflops"], o["bwd_gbs"])) if "bwd_ms" in o else \
        "%9s %8s %7s" % ("-", "-", "-")
    print("%-*s %-22s %9.3f %8.2f %7.2f %s" % (w, o["op"], o["shape"], o["fwd_ms"], o["fwd_gflops"], o["fwd_gbs"], b))
EOF
}
step_optests() {
    libs=$TESTS_DIR/lib${BUNDLE:+:$BUNDLE/lib}
    pass=0 fail=0 bad=
    for t in $OP_FOUND; do
        if LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MANTA_DEVICE=$DEVICE \
            CMOCKA_MESSAGE_OUTPUT=TAP "$TESTS_DIR/$t" >"$SESSION_TMP/test.log" 2>&1; then rc=0; else rc=$?; fi
        p=$(grep -c '^ok ' "$SESSION_TMP/test.log") || p=0
        f=$(grep -c '^not ok ' "$SESSION_TMP/test.log") || f=0
        [ "$rc" = 0 ] || [ "$f" != 0 ] || f=1 # failed outside a test case (a crash, a missing library)
        grep -v '^ok \|^# ok - \|^1\.\.' "$SESSION_TMP/test.log" || true # failures and diagnostics
        echo "# $t: $p passed, $f failed"
        pass=$((pass + p))
        fail=$((fail + f))
        [ "$f" = 0 ] || bad="$bad $t"
    done
    echo "op tests: $pass passed, $fail failed${bad:+ (failing:$bad)}"
    [ "$fail" = 0 ]
}
step_table() {
    # gpu_vs_torch.sh gets a budget a little short of the step's, so that it stops
    # starting runs and prints the table in time
    rc=0
    BUDGET=$TABLE_BUDGET OUTDIR=$OUT sh "$BENCH_DIR/gpu_vs_torch.sh" >"$OUT/table.md" || rc=$?
    cat "$OUT/table.md"
    return "$rc"
}
step_train() {
    "$MANTA" train --schedule smoke --data "$FMNIST" --device "$DEVICE" --out "$SESSION_TMP/train" || return
    cp "$SESSION_TMP/train/metrics.jsonl" "$OUT/train_metrics.jsonl" 2>/dev/null || true
}
step_stereo() {
    st=$SESSION_TMP/stereo
    rc=0
    timeout -k 5 "$STEREO_TRAIN_S" "$MANTA" train --space stereo-cpu --schedule "$STEREO_SCHEDULE" \
        --log-every 100 --device "$DEVICE" --out "$st/cpu" || rc=$?
    cp "$st/cpu/metrics.jsonl" "$OUT/stereo_cpu_metrics.jsonl" 2>/dev/null || true
    ck=$(ls -t "$st"/cpu/*.ckpt 2>/dev/null | head -n 1) || ck=
    if [ -n "$ck" ]; then
        for a in max min; do
            "$MANTA" eval --ckpt "$ck" --arch $a --device "$DEVICE" --json || rc=$?
        done >"$OUT/stereo_eval.json"
        cat "$OUT/stereo_eval.json"
        cp "$ck" "$OUT/stereo_cpu.ckpt" || rc=$?
    fi
    "$MANTA" train --space stereo-gpu --schedule smoke --batch 1 --eval-pairs 8 --recal-pairs 8 \
        --log-every 3 --device "$DEVICE" --out "$st/gpu" || rc=$?
    cp "$st/gpu/metrics.jsonl" "$OUT/stereo_gpu_metrics.jsonl" 2>/dev/null || true
    return "$rc"
}
if [ "${1:-}" = --step ]; then
    if "step_$2"; then exit 0; else exit $?; fi
fi

[ -n "${OUT:-}" ] || { echo "gpu_session: set OUT to the folder for the results" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd -P)
SELF=$(cd "$(dirname "$0")" && pwd -P)/$(basename "$0")
BENCH_DIR=$(dirname "$SELF")
TOTAL=${TOTAL:-450}
DEVICE=${DEVICE:-gpu}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
PYTHON=${PYTHON:-python3}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-20}
ROWS=${ROWS:-1 2 3 4 5 6}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
OPS_SECONDS=${OPS_SECONDS:-0.2}
FMNIST_DIR=${FMNIST_DIR:-./data-fmnist}
OP_TESTS=${OP_TESTS:-}
STEREO=${STEREO:-1}
STEREO_TRAIN_S=${STEREO_TRAIN_S:-240}
STEREO_SCHEDULE=${STEREO_SCHEDULE:-quick}
LOG=$OUT/session.log
: >"$LOG"

SESSION_TMP=$(mktemp -d)
# Everything from here on goes to the terminal and to session.log.
mkfifo "$SESSION_TMP/log.fifo"
tee -a "$LOG" <"$SESSION_TMP/log.fifo" &
teepid=$!
exec 3>&1 4>&2 >"$SESSION_TMP/log.fifo" 2>&1
finish() {
    exec 1>&3 2>&4
    wait "$teepid" 2>/dev/null || true
    rm -rf "$SESSION_TMP"
}
trap finish EXIT
trap 'exit 130' INT TERM HUP

start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
left() { echo $((TOTAL - ($(date +%s) - start))); }
HAVE_TIMEOUT=1
command -v timeout >/dev/null 2>&1 || { HAVE_TIMEOUT=0; echo "gpu_session: no 'timeout' program: steps are not bounded"; }
summary=$SESSION_TMP/summary
: >"$summary"

# step NAME SECONDS COMMAND...: runs the command, bounded by SECONDS and by what is
# left of TOTAL, and reports its status and time. Never stops the session.
step() {
    _name=$1 _budget=$2
    shift 2
    _left=$(left)
    [ "$_left" -ge "$_budget" ] || _budget=$_left
    if [ "$_budget" -lt 5 ]; then
        echo
        echo "== $_name: skipped, the session's $TOTAL s are spent =="
        echo "$_name: skipped (time spent)" >>"$summary"
        last_rc=124
        return 0
    fi
    echo
    echo "== $_name (budget $_budget s; at $(elapsed) s of $TOTAL) =="
    echo "\$ $*"
    _t0=$(date +%s)
    if [ "$HAVE_TIMEOUT" = 1 ]; then
        if timeout -k 10 "$_budget" "$@"; then _rc=0; else _rc=$?; fi
    else
        if "$@"; then _rc=0; else _rc=$?; fi
    fi
    _dt=$(($(date +%s) - _t0))
    case $_rc in
    0) _st=ok ;;
    124 | 137) _st="TIMED OUT after $_budget s" ;;
    *) _st="FAILED (exit $_rc)" ;;
    esac
    echo "== $_name: $_st, $_dt s =="
    echo "$_name: $_st, $_dt s" >>"$summary"
    last_rc=$_rc
    return 0
}
skip() { # NAME WHY
    echo
    echo "== $1: skipped ($2) =="
    echo "$1: skipped ($2)" >>"$summary"
}

# ---- the program ----
BUNDLE=${BUNDLE:-}
if [ -z "${MANTA:-}" ]; then
    if [ -z "$BUNDLE" ]; then
        # the newest bundle folder, if any
        BUNDLE=$(ls -dt build/bundle/manta-*/ 2>/dev/null | head -n 1) || BUNDLE=
    fi
    BUNDLE=${BUNDLE%/}
    if [ -n "$BUNDLE" ] && [ -x "$BUNDLE/manta" ]; then
        MANTA=$BUNDLE/manta
    else
        MANTA=build/bin/manta
    fi
fi
case $MANTA in /*) ;; */*) MANTA=$PWD/$MANTA ;; esac
case $BUNDLE in /* | "") ;; *) BUNDLE=$PWD/${BUNDLE%/} ;; esac

# ---- the OpenCL driver ----
if [ -z "${OCL_ICD_VENDORS:-}" ]; then
    lib=${NV_OPENCL:-}
    if [ -z "$lib" ]; then
        for f in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
            /usr/lib64/libnvidia-opencl.so.1 /usr/lib/libnvidia-opencl.so.1; do
            if [ -e "$f" ]; then lib=$f; break; fi
        done
    fi
    if [ -z "$lib" ]; then
        lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libnvidia-opencl.so.1" { print $NF; exit }') || lib=
    fi
    if [ -z "$lib" ]; then
        lib=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
        echo "gpu_session: no libnvidia-opencl.so.1 found; naming $lib all the same"
    fi
    mkdir -p "$SESSION_TMP/icd"
    echo "$lib" >"$SESSION_TMP/icd/nvidia.icd"
    OCL_ICD_VENDORS=$SESSION_TMP/icd
    export OCL_ICD_VENDORS
fi
MANTA_CACHE_DIR=${MANTA_CACHE_DIR:-$SESSION_TMP/manta-cache}

# ---- op test binaries and Fashion-MNIST, if carried ----
if [ -z "${TESTS_DIR:-}" ]; then
    if [ -n "$BUNDLE" ] && [ -d "$BUNDLE/tests" ]; then
        TESTS_DIR=$BUNDLE/tests
    elif [ -d build/tests ]; then
        TESTS_DIR=build/tests
    else
        TESTS_DIR=
    fi
fi
OP_FOUND=
if [ -z "$OP_TESTS" ] && [ -f tests/op_tests ]; then # the op checks, as the bundle carries them
    OP_TESTS=$(grep -v '^#' tests/op_tests | sed 's/^/test_/' | tr '\n' ' ')
fi
for t in $OP_TESTS; do
    if [ -n "$TESTS_DIR" ] && [ -x "$TESTS_DIR/$t" ]; then OP_FOUND="$OP_FOUND $t"; fi
done
FMNIST=
for f in "$FMNIST_DIR"/train-images-idx3-ubyte.gz "$FMNIST_DIR"/*/train-images-idx3-ubyte.gz \
    "$FMNIST_DIR"/*/*/train-images-idx3-ubyte.gz; do
    d=$(dirname "$f")
    if [ -f "$f" ] && [ -f "$d/train-labels-idx1-ubyte.gz" ] && [ -f "$d/t10k-images-idx3-ubyte.gz" ] &&
        [ -f "$d/t10k-labels-idx1-ubyte.gz" ]; then
        FMNIST=$d
        break
    fi
done
export OUT SESSION_TMP BENCH_DIR MANTA BUNDLE PYTHON DEVICE TORCH_DEVICE ROUNDS STEPS ROWS RUN_TIMEOUT \
    OPS_SECONDS TESTS_DIR OP_FOUND FMNIST MANTA_CACHE_DIR STEREO_TRAIN_S STEREO_SCHEDULE

echo "gpu_session: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n), $(uname -srm)"
echo "gpu_session: MANTA=$MANTA DEVICE=$DEVICE PYTHON=$PYTHON TORCH_DEVICE=$TORCH_DEVICE TOTAL=$TOTAL s"
echo "gpu_session: OCL_ICD_VENDORS=$OCL_ICD_VENDORS ($(cat "$OCL_ICD_VENDORS"/*.icd 2>/dev/null | tr '\n' ' '))"
rev=$(git rev-parse --short HEAD 2>/dev/null) || rev="unknown (no git)"
if [ -n "$(git status --porcelain 2>/dev/null | head -n 1)" ]; then rev="$rev, with local changes"; fi
echo "gpu_session: source revision $rev"

# ---- 1-3: the machine ----
if command -v nvidia-smi >/dev/null 2>&1; then
    step nvidia-smi 20 sh "$SELF" --step nvsmi
else
    skip nvidia-smi "not installed"
fi
step "manta --version" 15 "$MANTA" --version
step "manta devices" 30 sh "$SELF" --step devices

# ---- 4: every OpenCL program built on the device ----
step "manta kernels build" 120 "$MANTA" kernels build --device "$DEVICE"

# ---- 5: op throughput ----
step "manta bench ops" 90 sh "$SELF" --step ops

# ---- 6: op correctness checks --------------------------------------------------------
# The unit tests of the ops (forward against the plain-C double-precision references,
# backward by finite differences) on DEVICE, when their binaries were carried to this
# machine: TESTS_DIR holds them (for example build/tests of a build made for this
# machine, or BUNDLE/tests), their shared libraries in TESTS_DIR/lib or the bundle's lib/.
if [ -n "$OP_FOUND" ]; then
    step "op tests ($TESTS_DIR)" 90 sh "$SELF" --step optests
else
    skip "op tests" "no test binaries carried (TESTS_DIR)"
fi
# ---- end of the op correctness checks --------------------------------------------------

# ---- 7: training images/s against PyTorch ----
reserve=0
[ -z "$FMNIST" ] || reserve=${TRAIN_BUDGET:-75}
stereo_reserve=0
[ "$STEREO" = 0 ] || stereo_reserve=$((STEREO_TRAIN_S + 60))
reserve=$((reserve + stereo_reserve))
TABLE_BUDGET=$(($(left) - reserve - 10))
export TABLE_BUDGET
step "gpu_vs_torch.sh" $(($(left) - reserve)) sh "$SELF" --step table
table_rc=$last_rc

# ---- 8: a short real training run ----
if [ -n "$FMNIST" ]; then
    step "manta train --schedule smoke ($FMNIST)" $((reserve - stereo_reserve)) sh "$SELF" --step train
else
    skip "manta train --schedule smoke" "no Fashion-MNIST under $FMNIST_DIR"
fi

# ---- 9: the stereo trainer ----
if [ "$STEREO" != 0 ]; then
    step "stereo: train stereo-cpu $STEREO_SCHEDULE (${STEREO_TRAIN_S} s at most), eval, stereo-gpu smoke" \
        "$stereo_reserve" sh "$SELF" --step stereo
else
    skip "stereo" "STEREO=0"
fi

echo
echo "== summary ($(elapsed) s of $TOTAL) =="
cat "$summary"
echo "results in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
[ "$table_rc" = 0 ]
