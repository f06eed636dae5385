#!/bin/sh
# Searched sub-network against the best uniform one (the same kernel, expand
# ratio and depth everywhere) under the same latency budget, both measured:
#   latency: manta-profile --arch (end to end in the engine, this machine)
#   top-1:   exported (.tflite, BN re-calibrated) and run by the engine on the
#            10,000 test images (manta eval --model)
# A uniform sub-network qualifies when its measured latency is at most the
# budget; the best qualifying one is the one of highest measured test top-1.
#
#   tools/bench/search_vs_uniform.sh [DEMO_DIR]     (default runs/demo, after make demo)
# Uses DEMO_DIR/supernet/latest.ckpt, latency_table.json, search/ (arch.json,
# search.json) and writes DEMO_DIR/uniform.csv and DEMO_DIR/search_vs_uniform.txt.
set -eu
BUILD=${BUILD:-build}
DIR=${1:-runs/demo}
RECAL=${RECAL:-500}
M=$BUILD/bin/manta
P=$BUILD/bin/manta-profile
CKPT=$DIR/supernet/latest.ckpt
LUT=$DIR/latency_table.json
work=$DIR/uniform
mkdir -p "$work"
num() { sed -n "s/.*\"$2\": *\(-\{0,1\}[0-9.eE+-]*\).*/\1/p" "$1" | head -n 1; }
BUDGET=$(num "$DIR/search/search.json" max_latency_ms)
echo "budget: $BUDGET ms (from $DIR/search/search.json)"

# the searched sub-network, measured the same way as the uniform ones
"$P" --lut "$LUT" --arch "$DIR/search/arch.json" --json >"$work/searched_latency.json"
"$M" export --ckpt "$CKPT" --arch "$DIR/search/arch.json" --out "$work/searched.tflite" \
    --recal-images "$RECAL" --json >/dev/null
"$M" eval --model "$work/searched.tflite" --split test --json >"$work/searched_test.json"
S_LAT=$(num "$work/searched_latency.json" measured_ms)
S_TOP=$(num "$work/searched_test.json" top1)
echo "searched: $(cat "$DIR/search/arch.json")  measured $S_LAT ms  test top-1 $S_TOP"

echo "k,e,d,r,predicted_ms,measured_ms,test_top1" >"$DIR/uniform.csv"
best_top=0
best=""
n=0
q=0
for r in 24 28 32; do
    for d in 2 3 4; do
        for e in 3 4 6; do
            for k in 3 5 7; do
                n=$((n + 1))
                ks=$(printf "$k,%.0s" $(seq 20) | sed 's/,$//')
                es=$(printf "$e,%.0s" $(seq 20) | sed 's/,$//')
                arch="{\"ks\":[$ks],\"e\":[$es],\"d\":[$d,$d,$d,$d,$d],\"r\":[$r]}"
                name="k${k}e${e}d${d}r${r}"
                echo "$arch" >"$work/$name.json"
                "$P" --lut "$LUT" --arch "$work/$name.json" --json >"$work/$name.lat.json"
                lat=$(num "$work/$name.lat.json" measured_ms)
                pred=$(num "$work/$name.lat.json" predicted_ms)
                top=""
                if awk -v l="$lat" -v b="$BUDGET" 'BEGIN { exit !(l <= b) }'; then
                    q=$((q + 1))
                    "$M" export --ckpt "$CKPT" --arch "$work/$name.json" --out "$work/$name.tflite" \
                        --recal-images "$RECAL" --json >/dev/null
                    "$M" eval --model "$work/$name.tflite" --split test --json >"$work/$name.test.json"
                    top=$(num "$work/$name.test.json" top1)
                    if awk -v t="$top" -v b="$best_top" 'BEGIN { exit !(t > b) }'; then
                        best_top=$top
                        best="$name ($lat ms)"
                    fi
                fi
                echo "$k,$e,$d,$r,$pred,$lat,$top" >>"$DIR/uniform.csv"
                echo "uniform $n/81 $name: measured $lat ms (predicted $pred)${top:+, test top-1 $top}"
            done
        done
    done
done
{
    echo "budget $BUDGET ms; $q of 81 uniform sub-networks measured within it"
    echo "searched: $(cat "$DIR/search/arch.json"): measured $S_LAT ms, test top-1 $S_TOP"
    echo "best uniform: $best, test top-1 $best_top"
    awk -v s="$S_TOP" -v u="$best_top" 'BEGIN { printf "searched - best uniform: %+.2f points\n", 100 * (s - u) }'
} | tee "$DIR/search_vs_uniform.txt"
