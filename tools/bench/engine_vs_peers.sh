#!/bin/sh
# Single-thread latency and arena of exported sub-networks: the manta engine
# (manta-infer --bench) against LiteRT with XNNPACK (ai-edge-litert,
# num_threads=1) and TFLM's reference kernels (tflite-micro), on the same
# .tflite files, in interleaved rounds. Not a test.
#
#   tools/bench/engine_vs_peers.sh [ROUNDS]
#
# Environment:
#   BUILD        build folder with bin/manta and bin/manta-infer (default build)
#   INFER_NATIVE manta-infer whose engine is built for this CPU (make bench-engine
#                builds BUILD/bench-native with ENGINE_OPT="-O3 -march=native");
#                reported as "manta", the default build as "manta-generic"
#   VENV         virtual environment with ai-edge-litert, tflite-micro and numpy
#                (default BUILD/bench-venv, created and filled from PyPI when missing)
#   RUNS         timed invocations per round for manta and LiteRT (default 300);
#                TFLM_RUNS for TFLM (default 30, its kernels are slow)
#   OUT          working folder (default BUILD/bench-engine, BUILD/bench-engine-int8 with
#                INT8=1): checkpoint, models, results.jsonl, report.md
#   INT8         1: the same sub-networks exported fully int8 (manta export --int8, calibrated
#                on CALIB training images, default 64, min/max ranges), int8 input tensors
#
# Steps: a smoke-trained supernet checkpoint (2 steps: the weights do not matter
# for latency), five exported sub-networks of the default space (max, min,
# samples of seeds 1-3), one random input tensor per model (the same for every
# runtime), then ROUNDS rounds (default 5) in which every model runs in every
# runtime, the order of the runtimes rotating from round to round; each run
# reports the median of its invocation times after 3 warm-up runs (invoke only).
# Arena: manta-infer --stats against TFLM's recording allocator, with the
# file's OfflineMemoryAllocation plan and with that metadata renamed away.
set -eu
ROUNDS=${1:-5}
BUILD=${BUILD:-build}
M="$BUILD/bin/manta"
INFER="$BUILD/bin/manta-infer"
INFER_NATIVE=${INFER_NATIVE:-}
VENV=${VENV:-$BUILD/bench-venv}
RUNS=${RUNS:-300}
TFLM_RUNS=${TFLM_RUNS:-30}
INT8=${INT8:-0}
CALIB=${CALIB:-64}
if [ "$INT8" = 1 ]; then
    OUT=${OUT:-$BUILD/bench-engine-int8}
    QARGS="--int8 --calib $CALIB --calib-method minmax"
else
    OUT=${OUT:-$BUILD/bench-engine}
    QARGS=
fi
HERE=$(dirname "$0")
PEERS="$HERE/engine_peers.py"

for p in "$M" "$INFER" ${INFER_NATIVE:+"$INFER_NATIVE"}; do
    [ -x "$p" ] || { echo "engine_vs_peers: $p missing (make first)" >&2; exit 1; }
done
PY="$VENV/bin/python"
if ! "$PY" -c 'import ai_edge_litert, tflite_micro, numpy' 2>/dev/null; then
    echo "engine_vs_peers: installing ai-edge-litert, tflite-micro and numpy into $VENV" >&2
    [ -x "$PY" ] || python3 -m venv "$VENV"
    "$PY" -m pip install --quiet ai-edge-litert tflite-micro numpy
fi
mkdir -p "$OUT"
res="$OUT/results.jsonl"
: >"$res"

echo "== checkpoint and models" >&2
ckpt="$OUT/ckpt/latest.ckpt"
[ -s "$ckpt" ] || "$M" train --schedule smoke --batch 16 --eval-images 0 --stop-after 2 \
    --out "$OUT/ckpt" >/dev/null
MODELS="max min s1 s2 s3"
for name in $MODELS; do
    case $name in
    max | min) "$M" arch "$name" >"$OUT/$name.arch" ;;
    s*) "$M" arch sample --seed "${name#s}" >"$OUT/$name.arch" ;;
    esac
    head -1 "$OUT/$name.arch" >"$OUT/$name.json"
    macs=$(sed -n 's/^\([0-9.]*\) M MACs.*/\1/p' "$OUT/$name.arch")
    # shellcheck disable=SC2086
    "$M" export --ckpt "$ckpt" --arch "$OUT/$name.json" --out "$OUT/$name.tflite" \
        --recal-images 16 $QARGS >/dev/null
    "$PY" "$PEERS" input "$OUT/$name.tflite" --out "$OUT/$name.in.f32"
    # arenas: ours, TFLM's with the offline plan, and without it (metadata renamed)
    st=$("$INFER" "$OUT/$name.tflite" --stats --json)
    a=$(echo "$st" | sed -n 's/.*"arena_bytes": \([0-9]*\).*/\1/p')
    act=$(echo "$st" | sed -n 's/.*"activation_bytes": \([0-9]*\).*/\1/p')
    rec=$(echo "$st" | sed -n 's/.*"records_bytes": \([0-9]*\).*/\1/p')
    t1=$("$PY" "$PEERS" tflm-arena "$OUT/$name.tflite")
    sed 's/OfflineMemoryAllocation/OfflineMemoryAllocatioX/' "$OUT/$name.tflite" >"$OUT/$name.noplan.tflite"
    t2=$("$PY" "$PEERS" tflm-arena "$OUT/$name.noplan.tflite")
    "$PY" - "$name" "$macs" "$a" "$act" "$rec" "$t1" "$t2" >>"$res" <<'EOF'
import json, sys
name, macs, a, act, rec, t1, t2 = sys.argv[1:]
t1, t2 = json.loads(t1), json.loads(t2)
print(json.dumps({"kind": "info", "name": name, "macs": f"{macs} M", "arena_bytes": int(a),
                  "activation_bytes": int(act), "records_bytes": int(rec),
                  "tflm_used_total": t1["used_total"], "tflm_used_head": t1["used_head"],
                  "tflm_used_tail": t1["used_tail"], "tflm_min_arena": t1["min_arena"],
                  "tflm_offline_refused": t1["offline_plan_refused"],
                  "tflm_noplan_used_total": t2["used_total"]}))
EOF
done

manta_run() { # RUNTIME-NAME INFER MODEL-NAME
    med=$("$2" "$OUT/$3.tflite" "$OUT/$3.in.f32" --raw --bench "$RUNS" --json |
        sed -n 's/.*"median_ms": \([0-9.]*\).*/\1/p')
    echo "{\"kind\": \"latency\", \"name\": \"$3\", \"runtime\": \"$1\", \"median_ms\": $med}" >>"$res"
}
peer_run() { # RUNTIME MODEL-NAME RUNS
    "$PY" "$PEERS" "$1" "$OUT/$2.tflite" --runs "$3" 2>/dev/null |
        "$PY" -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"kind": "latency", "name": sys.argv[1], "runtime": sys.argv[2], "median_ms": r["median_ms"]}))' \
            "$2" "$1" >>"$res"
}
one() { # RUNTIME MODEL-NAME
    case $1 in
    manta) manta_run manta "${INFER_NATIVE:-$INFER}" "$2" ;;
    manta-generic) manta_run manta-generic "$INFER" "$2" ;;
    litert) peer_run litert "$2" "$RUNS" ;;
    tflm) peer_run tflm "$2" "$TFLM_RUNS" ;;
    esac
}
order="manta litert tflm${INFER_NATIVE:+ manta-generic}"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    echo "== round $r of $ROUNDS: $order (load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))" >&2
    for name in $MODELS; do
        for rt in $order; do
            one "$rt" "$name"
        done
    done
    order="$(echo "$order" | cut -d' ' -f2-) $(echo "$order" | cut -d' ' -f1)"
    r=$((r + 1))
done
{
    echo "Machine: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
        "$(uname -sr); date $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    "$PY" "$PEERS" report "$res"
} | tee "$OUT/report.md"
