#!/bin/sh
# Stereo: the searched sub-network against the best uniform one (the same kernel, expand
# ratio and depth in every block and the same width ratio in every decoder level) under the
# same latency budget, at three budgets between the smallest and the largest sub-network,
# all measured:
#   latency:  manta-profile --arch (end to end in the engine, this machine; the fastest of
#             LAT_TRIES timings, the searched ones' and the uniform ones' alike; CLOCK wall
#             (default) or cpu, for a machine shared with other work: docs/stereo.md)
#   test EPE: manta eval --ckpt --arch --data TEST (the supernet's sub-network, BN
#             re-calibrated on RECAL of the run's training pairs, on TEST_PAIRS procedural
#             pairs of seed 2718 that neither training nor the search's re-rank saw, made with
#             TEXTURES: default (the photographs, as manta train's pairs, when installed) or
#             none)
# A uniform sub-network qualifies when its measured latency is at most the budget. The
# budgets are 25, 50 and 75% of the way from the smallest to the largest sub-network's
# measured latency (FRACS). Each search: manta search --rerank K (default 5) with the
# RERANK_SEEDS (default 3) uniform ones the predictor rates highest, re-ranked on RERANK_PAIRS
# of the run's held-out pairs (not the test pairs).
#
#   tools/bench/stereo_search_vs_uniform.sh [DIR]
# DIR (default runs/demo-stereo, after make demo TASK=stereo) gives supernet/latest.ckpt,
# latency_table.json and epe_predictor.accp; SPACE (default: the checkpoint's space's name,
# a built-in) the space's spec for manta-profile and manta arch. Writes DIR/uniform/ (each
# uniform sub-network's arch, latency and test EPE; REUSE=1 keeps them, e.g. for another
# RERANK_SEEDS), DIR/sweep-B/ (the search at budget B) and DIR/stereo_search_vs_uniform.txt.
# About 29 minutes for stereo-cpu on the 2-core machine.
set -eu
BUILD=${BUILD:-build}
DIR=${1:-runs/demo-stereo}
RECAL=${RECAL:-100}
TEST_PAIRS=${TEST_PAIRS:-100}
RERANK=${RERANK:-5}
RERANK_SEEDS=${RERANK_SEEDS:-3}
RERANK_PAIRS=${RERANK_PAIRS:-100}
GENERATIONS=${GENERATIONS:-200}
LAT_TRIES=${LAT_TRIES:-2}
FRACS=${FRACS:-0.25 0.5 0.75}
CLOCK=${CLOCK:-wall}
REUSE=${REUSE:-0}
M=$BUILD/bin/manta
P=$BUILD/bin/manta-profile
CKPT=$DIR/supernet/latest.ckpt
LUT=$DIR/latency_table.json
ACC=$DIR/epe_predictor.accp
num() { sed -n "s/.*\"$2\": *\(-\{0,1\}[0-9.eE+-]*\).*/\1/p" "$1" | head -n 1; }
all_epe() { tr -d ' \n' <"$1" | sed -n 's/.*"all":{"epe":\([0-9.eE+-]*\).*/\1/p'; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# the space and its uniform sub-networks (the space's spec from the checkpoint's eval)
"$M" eval --ckpt "$CKPT" --arch max --pairs 1 --recal-pairs 0 --json >"$DIR/max_eval.json"
SPACE=${SPACE:-$(sed -n 's/.*"space":"\([^"]*\)".*/\1/p' "$DIR/max_eval.json")}
H=$(num "$DIR/max_eval.json" height)
W=$(num "$DIR/max_eval.json" width)
MAXD=$(num "$DIR/max_eval.json" max_disp)
mkdir -p "$DIR/uniform"
# the test pairs as the run's are made: with the default photographs when they are installed
# (the default of manta train's procedural pairs), else procedural textures alone
TEXTURES=${TEXTURES:-$([ -d /usr/share/backgrounds/mate/nature ] && echo default || echo none)}
TEST=$DIR/test_pairs_2718_$TEXTURES
TEX=""
[ "$TEXTURES" != none ] && TEX="--textures $TEXTURES"
if [ ! -d "$TEST/image_2" ]; then
    # shellcheck disable=SC2086
    "$M" stereo-data "$TEST" --count "$TEST_PAIRS" --width "$W" --height "$H" \
        --max-disp "$MAXD" --seed 2718 $TEX --json >/dev/null
fi

# measure NAME ARCH_FILE: NAME.lat.json (the fastest of LAT_TRIES) and NAME.test.json
measure() {
    if [ "$REUSE" != 1 ] || [ ! -s "$1.lat.json" ]; then
        i=0
        rm -f "$1.lat.json"
        while [ "$i" -lt "$LAT_TRIES" ]; do
            "$P" --space "$SPACE" --lut "$LUT" --arch "$2" --clock "$CLOCK" --json --quiet \
                >"$1.lat.try"
            if [ ! -s "$1.lat.json" ] ||
                gt "$(num "$1.lat.json" measured_ms)" "$(num "$1.lat.try" measured_ms)"; then
                mv "$1.lat.try" "$1.lat.json"
            fi
            i=$((i + 1))
        done
        rm -f "$1.lat.try"
    fi
    if [ "$REUSE" != 1 ] || [ ! -s "$1.test.json" ]; then
        "$M" eval --ckpt "$CKPT" --arch "$2" --data "$TEST" --pairs "$TEST_PAIRS" \
            --recal-pairs "$RECAL" --json >"$1.test.json"
    fi
}

# every uniform sub-network (manta arch uniform: manta search's seeds), one file each
i=0
"$M" arch uniform --space "$SPACE" --json | sed 's/.*"arch":\({[^}]*}\).*/\1/' |
    while read -r a; do
        echo "$a" >"$DIR/uniform/u$(printf '%03d' "$i").arch.json"
        i=$((i + 1))
    done
n=0
for a in "$DIR"/uniform/*.arch.json; do
    name=${a%.arch.json}
    measure "$name" "$a"
    n=$((n + 1))
    echo "uniform $n: $(cat "$a")  $(num "$name.lat.json" measured_ms) ms  EPE $(all_epe "$name.test.json") px"
done

# the budgets: between the smallest and the largest sub-network's measured latency (both
# uniform: the first and the last of manta arch uniform)
LO=$(for f in "$DIR"/uniform/u*.lat.json; do num "$f" measured_ms; done | sort -g | head -n 1)
HI=$(for f in "$DIR"/uniform/u*.lat.json; do num "$f" measured_ms; done | sort -g | tail -n 1)
out=$DIR/stereo_search_vs_uniform.txt
{
    echo "space $SPACE, checkpoint $CKPT, table $LUT ($(sed -n 's/.*"device":[[:space:]]*"\([^"]*\)".*/\1/p' "$LUT" | head -n 1))"
    echo "test: $TEST_PAIRS pairs of seed 2718 (textures $TEXTURES), BN re-calibrated on $RECAL training pairs; latency: fastest of $LAT_TRIES ($CLOCK clock)"
    echo "uniform sub-networks: $n, measured latency $LO .. $HI ms"
    printf '%-9s | %-44s | %-9s | %-8s | %-28s | %-9s | %-8s | %s\n' "budget" "searched (arch)" \
        "latency" "test EPE" "best uniform within budget" "latency" "test EPE" "searched - uniform"
} >"$out"
for f in $FRACS; do
    B=$(awk -v a="$LO" -v b="$HI" -v f="$f" 'BEGIN { printf "%.3f", a + f * (b - a) }')
    S=$DIR/sweep-$B
    "$M" search --ckpt "$CKPT" --lut "$LUT" --acc-model "$ACC" --latency-ms "$B" \
        --generations "$GENERATIONS" --rerank "$RERANK" --rerank-spread 2 \
        --rerank-seeds "$RERANK_SEEDS" --rerank-pairs "$RERANK_PAIRS" --recal-pairs "$RECAL" \
        --quiet --out "$S" >"$S.log" 2>&1 || { cat "$S.log"; exit 1; }
    rm -f "$S/searched.lat.json" "$S/searched.test.json" # REUSE is for the uniform ones only
    measure "$S/searched" "$S/arch.json"
    SL=$(num "$S/searched.lat.json" measured_ms)
    SE=$(all_epe "$S/searched.test.json")
    best="" bl="" be=""
    for l in "$DIR"/uniform/u*.lat.json; do
        name=${l%.lat.json}
        ul=$(num "$l" measured_ms)
        ue=$(all_epe "$name.test.json")
        if ! gt "$ul" "$B" && { [ -z "$be" ] || gt "$be" "$ue"; }; then
            best=$(tr -d ' \n' <"$name.arch.json") bl=$ul be=$ue
        fi
    done
    ARCH=$(tr -d ' \n' <"$S/arch.json")
    printf '%-9s | %-44s | %-9s | %-8s | %-28s | %-9s | %-8s | %s\n' "$B ms" \
        "$ARCH" "$SL ms" "$SE" "${best:-none}" "${bl:--} ms" "${be:--}" \
        "$(awk -v a="$SE" -v b="$be" 'BEGIN { if (b == "") print "-"; else printf "%+.3f px", a - b }')" \
        >>"$out"
done
cat "$out"
