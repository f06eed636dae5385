#!/bin/sh
# Training images/s on a GPU: manta (OpenCL, `manta bench train`) against
# PyTorch (CUDA, tools/bench/torch_ofa_train.py) on the same GPU, PyTorch both
# in float32 (TF32 off) and with its defaults (TF32 convolutions on Ampere and
# later). For each round, every row runs manta, torch fp32 and torch TF32 one
# after the other; the table gives the medians over the rounds and the ratios,
# in the Markdown of docs/benchmarks.md, under a line naming the machine.
#
#   tools/bench/gpu_vs_torch.sh                        # or: make bench-gpu
#   ROWS=1,2 ROUNDS=1 STEPS=5 tools/bench/gpu_vs_torch.sh
#   DEVICE=cpu TORCH_DEVICE=cpu PYTHON=build/bench-venv/bin/python \
#       ROWS=2 ROUNDS=1 STEPS=1 tools/bench/gpu_vs_torch.sh  # exercise it on PoCL
#
# Rows (ROWS picks some, by number, separated by spaces or commas):
#   1  cpu-default  largest   32 px  batch 64
#   2  cpu-default  smallest  24 px  batch 64
#   3  cpu-default  largest   32 px  batch 512
#   4  mbv3-w1.0    largest  224 px  batch 64
#   5  mbv3-w1.0    smallest 128 px  batch 64
#   6  mbv3-w1.0    largest  224 px  batch 128
#
# Variables:
#   MANTA         the manta program (default build/bin/manta; a bundle's wrapper works)
#   PYTHON        an interpreter with torch (default python3)
#   ROUNDS        rounds (default 3); STEPS: timed steps of every run (default 20)
#   DEVICE        manta's --device SPEC (default gpu)
#   TORCH_DEVICE  cuda (default) or cpu; with cpu, THREADS threads (default nproc)
#   ROWS          rows to run (default: all six)
#   RUN_TIMEOUT   seconds one run may take before it is stopped (default 300)
#   BUDGET        seconds for the whole script (default 0: no limit); past it the
#                 remaining runs are skipped and the table is printed with what ran
#   OUTDIR        if set, every run's JSON line goes to OUTDIR/gpu_vs_torch.jsonl
#                 as {"row":N,"round":R,"impl":"manta|torch-fp32|torch-tf32","result":{...}}
#   MODELS        folder of the spec files PyTorch builds its networks from (default: the
#                 repository's models/)
# The table and the machine line go to standard output; progress and failures to
# standard error. A run that fails or times out is reported on one line and the
# others go on; after a failure that implementation is not run again in that row.
set -eu
MANTA=${MANTA:-build/bin/manta}
PYTHON=${PYTHON:-python3}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-20}
DEVICE=${DEVICE:-gpu}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
ROWS=${ROWS:-1 2 3 4 5 6}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
BUDGET=${BUDGET:-0}
OUTDIR=${OUTDIR:-}
HERE=$(dirname "$0")
MODELS=${MODELS:-$HERE/../../models}
THREADS=${THREADS:-$(nproc 2>/dev/null || echo 1)}
TORCH_SCRIPT=$HERE/torch_ofa_train.py

# number  manta space  spec file  arch  resolution  batch
ROW_TABLE='1 cpu-default ofa_cpu_default.json max 32 64
2 cpu-default ofa_cpu_default.json min 24 64
3 cpu-default ofa_cpu_default.json max 32 512
4 mbv3-w1.0 ofa_mbv3_w10.json max 224 64
5 mbv3-w1.0 ofa_mbv3_w10.json min 128 64
6 mbv3-w1.0 ofa_mbv3_w10.json max 224 128'

log() { echo "$*" >&2; }

case $TORCH_DEVICE in cuda | cpu) ;; *) log "gpu_vs_torch: TORCH_DEVICE must be cuda or cpu"; exit 2 ;; esac
ROWS=$(echo "$ROWS" | tr ',' ' ')
for r in $ROWS; do
    echo "$ROW_TABLE" | awk -v r="$r" '$1 == r { f = 1 } END { exit !f }' ||
        { log "gpu_vs_torch: no row '$r' (rows are 1-6)"; exit 2; }
done
if [ -n "$OUTDIR" ]; then
    mkdir -p "$OUTDIR"
    JSONL=$OUTDIR/gpu_vs_torch.jsonl
    : >"$JSONL"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/results" # lines: row impl images/s
failed=" "        # "row:impl" pairs that failed, not run again

HAVE_TIMEOUT=1
command -v timeout >/dev/null 2>&1 || { HAVE_TIMEOUT=0; log "gpu_vs_torch: no 'timeout' program: runs are not bounded"; }
bounded() { # SECONDS COMMAND...: the command, stopped after SECONDS (exit 124)
    _secs=$1
    shift
    if [ "$HAVE_TIMEOUT" = 1 ]; then timeout -k 10 "$_secs" "$@"; else "$@"; fi
}

start=$(date +%s)
remaining() { # seconds left of BUDGET (a large number without one)
    if [ "$BUDGET" -gt 0 ]; then echo $((BUDGET - ($(date +%s) - start))); else echo 1000000; fi
}

# The machine: the OpenCL device manta picks for DEVICE and the torch side.
devjson=$(MANTA_DEVICE=$DEVICE bounded 60 "$MANTA" devices --json 2>"$tmp/dev.err") || devjson=
ocl=$(printf '%s\n' "$devjson" | "$PYTHON" -c '
import json, sys
try:
    d = [x for x in json.load(sys.stdin)["devices"] if x.get("selected")][0]
    k = ", %s kernels" % d["kernels"] if d.get("kernels") else ""
    print("%s (OpenCL: %s, driver %s%s)" % (d["name"], d["platform"], d["driver"], k))
except Exception:
    print("unknown")' 2>/dev/null) || ocl=unknown
[ "$ocl" != unknown ] || log "gpu_vs_torch: manta devices: no device selected by '$DEVICE':" \
    "$(grep -v '^ *$' "$tmp/dev.err" | tail -n 1)"
torchinfo=$(bounded 120 "$PYTHON" -c '
import sys, torch
if sys.argv[1] == "cuda":
    c = torch.cuda.is_available()
    print("PyTorch %s, CUDA %s, cuDNN %s, %s" % (torch.__version__, torch.version.cuda,
          torch.backends.cudnn.version(), torch.cuda.get_device_name(0) if c else "no CUDA device"))
else:
    print("PyTorch %s on the CPU, %s threads" % (torch.__version__, sys.argv[2]))' \
    "$TORCH_DEVICE" "$THREADS" 2>"$tmp/torch.err") ||
    { torchinfo="no PyTorch ($(tail -n 1 "$tmp/torch.err"))"; log "gpu_vs_torch: $PYTHON: $torchinfo"; }
mver=$(bounded 30 "$MANTA" --version 2>/dev/null | head -n 1) || mver=
machine="Machine: ${mver:-manta} on $ocl, --device $DEVICE; $torchinfo; $(date -u '+%Y-%m-%d %H:%M UTC')"
log "$machine"

# run ROW ROUND IMPL COMMAND...: one timed run; records its images/s or reports why not.
run() {
    _row=$1 _round=$2 _impl=$3
    shift 3
    case $failed in *" $_row:$_impl "*) return 0 ;; esac
    _left=$(remaining)
    if [ "$_left" -lt 15 ]; then
        log "row $_row round $_round $_impl: skipped (time budget of ${BUDGET}s spent)"
        echo "row $_row round $_round $_impl" >>"$tmp/skipped"
        return 0
    fi
    _limit=$RUN_TIMEOUT
    [ "$_left" -ge "$_limit" ] || _limit=$_left
    _t0=$(date +%s)
    if bounded "$_limit" "$@" >"$tmp/out" 2>"$tmp/err"; then _rc=0; else _rc=$?; fi
    _dt=$(($(date +%s) - _t0))
    _line=$(grep '"images_per_s"' "$tmp/out" | tail -n 1) || _line=
    _ips=$(printf '%s\n' "$_line" | sed -n 's/.*"images_per_s": *\([0-9.eE+-]*\).*/\1/p')
    if [ "$_rc" = 0 ] && [ -n "$_ips" ]; then
        echo "$_row $_impl $_ips" >>"$tmp/results"
        [ -z "$OUTDIR" ] ||
            echo "{\"row\":$_row,\"round\":$_round,\"impl\":\"$_impl\",\"result\":$_line}" >>"$JSONL"
        log "row $_row round $_round $_impl: $(echo "$_ips" | awk '{ printf "%.1f", $1 }') images/s (${_dt}s)"
        return 0
    fi
    if [ "$_rc" = 124 ] || [ "$_rc" = 137 ]; then
        _why="timed out after ${_limit}s"
    elif [ "$_rc" != 0 ]; then
        _why="exit $_rc: $(grep -v '^ *$' "$tmp/err" | tail -n 1)"
    else
        _why="no images_per_s in its output"
    fi
    log "row $_row round $_round $_impl: FAILED ($_why); not run again in this row"
    echo "row $_row round $_round $_impl: $_why" >>"$tmp/failures"
    failed="$failed$_row:$_impl "
}

row_fields() { echo "$ROW_TABLE" | awk -v r="$1" '$1 == r'; }

for round in $(seq "$ROUNDS"); do
    for r in $ROWS; do
        read -r _ space spec arch res batch <<EOF
$(row_fields "$r")
EOF
        spec=$MODELS/$spec
        run "$r" "$round" manta "$MANTA" bench train --space "$space" --arch "$arch" --res "$res" \
            --batch "$batch" --steps "$STEPS" --device "$DEVICE" --json
        for tf32 in off on; do
            impl=torch-tf32
            [ "$tf32" = on ] || impl=torch-fp32
            run "$r" "$round" "$impl" env OMP_NUM_THREADS="$THREADS" "$PYTHON" "$TORCH_SCRIPT" \
                --space "$spec" --arch "$arch" --res "$res" --batch "$batch" --steps "$STEPS" \
                --threads "$THREADS" --device "$TORCH_DEVICE" --tf32 "$tf32" --json
        done
    done
done

# median ROW IMPL: "median n" of the recorded images/s, or nothing
median() {
    awk -v r="$1" -v i="$2" '$1 == r && $2 == i { print $3 }' "$tmp/results" | sort -n |
        awk '{ a[NR] = $1 } END { if (NR) printf "%.1f %d\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR }'
}
cell() { # "median n" -> table cell (the count shown when short of ROUNDS)
    if [ -z "$1" ]; then echo "failed"; return; fi
    echo "$1" | awk -v n="$ROUNDS" '{ print ($2 < n) ? $1 " (" $2 " of " n ")" : $1 }'
}
ratio() { # "median n" "median n"
    if [ -z "$1" ] || [ -z "$2" ]; then echo "-"; return; fi
    echo "$1 $2" | awk '{ x = $1 / $3; printf (x < 0.1 ? "%.3f\n" : "%.2f\n"), x }'
}

echo "$machine"
echo "manta \`bench train --device $DEVICE\` against PyTorch \`--device $TORCH_DEVICE\` (fp32: TF32 off;" \
    "TF32: PyTorch's defaults); median images/s of $ROUNDS rounds of $STEPS timed steps, random data."
echo
echo "| space | sub-network | resolution | batch | manta images/s | PyTorch fp32 images/s | PyTorch TF32 images/s | manta / fp32 | manta / TF32 |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for r in $ROWS; do
    read -r _ space spec arch res batch <<EOF
$(row_fields "$r")
EOF
    case $arch in max) name="largest (k7, e6, d4)" ;; *) name="smallest (k3, e3, d2)" ;; esac
    m=$(median "$r" manta)
    f=$(median "$r" torch-fp32)
    t=$(median "$r" torch-tf32)
    echo "| $space | $name | $res | $batch | $(cell "$m") | $(cell "$f") | $(cell "$t") | $(ratio "$m" "$f") | $(ratio "$m" "$t") |"
done
if [ -s "$tmp/failures" ]; then
    echo
    echo "Failed runs:"
    sed 's/^/- /' "$tmp/failures"
fi
if [ -s "$tmp/skipped" ]; then
    echo
    echo "Not run, the time budget of ${BUDGET}s being spent: $(wc -l <"$tmp/skipped" | tr -d ' ') runs" \
        "(from $(head -n 1 "$tmp/skipped") on)."
fi
[ -s "$tmp/results" ] || { log "gpu_vs_torch: no run gave a figure"; exit 1; }
exit 0
