#!/bin/sh
# Searched sub-network against the best uniform one (the same kernel, expand
# ratio and depth everywhere) under the same latency budget, all measured:
#   latency:          manta-profile --arch (end to end in the engine, this machine)
#   validation top-1: the supernet's sub-network, BN re-calibrated on RECAL training
#                     images, on the 10,000 validation images (manta eval --ckpt)
#   test top-1:       exported (.tflite, BN re-calibrated the same way) and run by
#                     the engine on the 10,000 test images (manta eval --model,
#                     with each image's answer kept for the paired comparison)
# A uniform sub-network qualifies when its measured latency is at most the
# budget. Two of them are reported: the best by validation top-1 (chosen as the
# search chooses, without the test set) and the best by test top-1 (chosen with
# the test set: an upper bound with the test noise in its favour). Each is
# compared with the searched one image by image on the test set: the images
# only one of the two gets right, and the difference's 95% confidence interval
# (paired, normal approximation): "ahead" when it lies above 0, "behind" below,
# "level" when it holds 0.
#
#   tools/bench/search_vs_uniform.sh [DEMO_DIR] [SEARCH_DIR]
# DEMO_DIR (default runs/demo, after make demo) gives supernet/latest.ckpt and
# latency_table.json; SEARCH_DIR (default DEMO_DIR/search) the searched
# arch.json and search.json, whose budget applies. Writes SEARCH_DIR/uniform.csv
# and SEARCH_DIR/search_vs_uniform.txt. Figures of the uniform sub-networks are
# kept in DEMO_DIR/uniform-rRECAL/; REUSE=1 reuses them (they depend on the
# checkpoint, the table and RECAL only), so that several searches can be
# compared at little cost. RECAL defaults to 2000 (OFA's, and manta search
# --rerank's). Each latency is the fastest of LAT_TRIES (default 3) timings,
# the searched one's and the uniform ones' alike.
set -eu
BUILD=${BUILD:-build}
DIR=${1:-runs/demo}
SEARCH=${2:-$DIR/search}
RECAL=${RECAL:-2000}
REUSE=${REUSE:-0}
LAT_TRIES=${LAT_TRIES:-3}
M=$BUILD/bin/manta
P=$BUILD/bin/manta-profile
CKPT=$DIR/supernet/latest.ckpt
LUT=$DIR/latency_table.json
work=$DIR/uniform-r$RECAL
mkdir -p "$work"
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
num() { sed -n "s/.*\"$2\": *\(-\{0,1\}[0-9.eE+-]*\).*/\1/p" "$1" | head -n 1; }
BUDGET=$(num "$SEARCH/search.json" max_latency_ms)
echo "budget: $BUDGET ms (from $SEARCH/search.json)"

# measure NAME ARCH_FILE OUT_PREFIX [latency-only]: OUT_PREFIX.{lat,val,test}.json
measure() {
    if [ "$REUSE" != 1 ] || [ ! -s "$3.lat.json" ]; then
        # LAT_TRIES timings, the fastest kept: other work on the machine only
        # ever adds time, and a burst of it can land on any one timing
        i=0
        rm -f "$3.lat.json"
        while [ "$i" -lt "$LAT_TRIES" ]; do
            "$P" --lut "$LUT" --arch "$2" --json --quiet >"$3.lat.try"
            if [ ! -s "$3.lat.json" ] ||
                gt "$(num "$3.lat.json" measured_ms)" "$(num "$3.lat.try" measured_ms)"; then
                mv "$3.lat.try" "$3.lat.json"
            fi
            i=$((i + 1))
        done
        rm -f "$3.lat.try"
    fi
    [ -n "${4:-}" ] && return 0
    if [ "$REUSE" != 1 ] || [ ! -s "$3.val.json" ]; then
        "$M" eval --ckpt "$CKPT" --arch "$2" --images 10000 --recal-images "$RECAL" --json \
            >"$3.val.json" 2>/dev/null
    fi
    if [ "$REUSE" != 1 ] || [ ! -s "$3.test.json" ] || [ ! -s "$3.test.csv" ]; then
        "$M" export --ckpt "$CKPT" --arch "$2" --out "$3.tflite" --recal-images "$RECAL" \
            --json >/dev/null
        "$M" eval --model "$3.tflite" --split test --predictions "$3.test.csv" \
            --json >"$3.test.json"
        rm -f "$3.tflite"
    fi
}

# the searched sub-network, measured the same way as the uniform ones
REUSE_SAVED=$REUSE
REUSE=0
measure searched "$SEARCH/arch.json" "$SEARCH/searched"
REUSE=$REUSE_SAVED
S_LAT=$(num "$SEARCH/searched.lat.json" measured_ms)
S_VAL=$(num "$SEARCH/searched.val.json" top1)
S_TOP=$(num "$SEARCH/searched.test.json" top1)
echo "searched: $(cat "$SEARCH/arch.json")  measured $S_LAT ms  validation $S_VAL  test $S_TOP"

echo "k,e,d,r,predicted_ms,measured_ms,val_top1,test_top1" >"$SEARCH/uniform.csv"
bv_val=0 bv_top=0 bv="" bv_f="" bt_val=0 bt_top=0 bt="" bt_f=""
n=0
q=0
for r in 24 28 32; do
    for d in 2 3 4; do
        for e in 3 4 6; do
            for k in 3 5 7; do
                n=$((n + 1))
                ks=$(printf "$k,%.0s" $(seq 20) | sed 's/,$//')
                es=$(printf "$e,%.0s" $(seq 20) | sed 's/,$//')
                name="k${k}e${e}d${d}r${r}"
                echo "{\"ks\":[$ks],\"e\":[$es],\"d\":[$d,$d,$d,$d,$d],\"r\":[$r]}" >"$work/$name.json"
                measure "$name" "$work/$name.json" "$work/$name" latency-only
                lat=$(num "$work/$name.lat.json" measured_ms)
                pred=$(num "$work/$name.lat.json" predicted_ms)
                val=""
                top=""
                if ! gt "$lat" "$BUDGET"; then
                    q=$((q + 1))
                    measure "$name" "$work/$name.json" "$work/$name"
                    val=$(num "$work/$name.val.json" top1)
                    top=$(num "$work/$name.test.json" top1)
                    if gt "$val" "$bv_val"; then
                        bv_val=$val bv_top=$top bv="$name ($lat ms)" bv_f="$work/$name"
                    fi
                    if gt "$top" "$bt_top"; then
                        bt_val=$val bt_top=$top bt="$name ($lat ms)" bt_f="$work/$name"
                    fi
                fi
                echo "$k,$e,$d,$r,$pred,$lat,$val,$top" >>"$SEARCH/uniform.csv"
                echo "uniform $n/81 $name: measured $lat ms (predicted $pred)${top:+, validation $val, test $top}"
            done
        done
    done
done
pts() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f", 100 * (a - b) }'; }
# paired A B: image by image on the test set, A's answers (CSV) against B's
paired() {
    [ -n "$2" ] || { echo "no uniform sub-network within the budget"; return 0; }
    awk -F, 'FNR == 1 { f++; next }
        f == 1 { ra[$1] = $2 == $3; next }
        { n++; a = ra[$1]; b = $2 == $3; if (a && !b) only_a++; if (b && !a) only_b++ }
        END {
            d = (only_a - only_b) / n
            se = sqrt((only_a + only_b) - (only_a - only_b) ^ 2 / n) / n
            lo = d - 1.96 * se
            hi = d + 1.96 * se
            printf "%d images right for the searched only, %d for the uniform only: %+.2f points, 95%% CI %+.2f to %+.2f (%s)\n",
                only_a, only_b, 100 * d, 100 * lo, 100 * hi, (lo > 0 ? "ahead" : (hi < 0 ? "behind" : "level"))
        }' "$1.test.csv" "$2.test.csv"
}
{
    echo "budget $BUDGET ms; $q of 81 uniform sub-networks measured within it; BN re-calibrated on $RECAL images"
    echo "searched: $(cat "$SEARCH/arch.json"): measured $S_LAT ms, validation top-1 $S_VAL, test top-1 $S_TOP"
    if gt "$S_LAT" "$BUDGET"; then
        echo "note: the searched sub-network measured $(awk -v a="$S_LAT" -v b="$BUDGET" \
            'BEGIN { printf "%.1f%%", 100 * (a / b - 1) }') over the budget its table predicts it within"
    fi
    echo "best uniform by validation: $bv, validation top-1 $bv_val, test top-1 $bv_top"
    echo "best uniform by test:       $bt, validation top-1 $bt_val, test top-1 $bt_top"
    echo "searched - best uniform by validation: test $(pts "$S_TOP" "$bv_top") points (validation $(pts "$S_VAL" "$bv_val"))"
    echo "searched - best uniform by test:       test $(pts "$S_TOP" "$bt_top") points (validation $(pts "$S_VAL" "$bt_val"))"
    echo "paired, against the best by validation: $(paired "$SEARCH/searched" "$bv_f")"
    echo "paired, against the best by test:       $(paired "$SEARCH/searched" "$bt_f")"
} | tee "$SEARCH/search_vs_uniform.txt"
