#!/bin/sh
# The search against the best uniform sub-network at several latency budgets:
# for each budget, manta search (OFA's evolution, its fittest candidates
# re-ranked on the validation split), then tools/bench/search_vs_uniform.sh
# (everything measured: latency end to end, validation, exported test top-1,
# the image-by-image comparison). One budget favours whichever side the
# uniform grid happens to favour there (the uniform networks are a staircase
# in latency), so the summary counts budgets where the searched network is
# ahead (paired 95% interval above 0), level (the interval holds 0) or behind
# (below 0), and gives the mean difference over all budgets.
#
#   tools/bench/search_sweep.sh [DEMO_DIR] [ACC_MODEL]
# DEMO_DIR (default runs/demo, after make demo) gives supernet/latest.ckpt and
# latency_table.json; ACC_MODEL the predictor (default DEMO_DIR/acc_predictor.accp).
# BUDGETS="X1 X2 ..." (ms); by default FRACTIONS of the way from the smallest to
# the largest sub-network's predicted latency (default 0.02 0.05 0.1 0.2 0.3 0.4;
# the demo's budget is 0.4). RERANK (default 20) candidates and RERANK_SEEDS
# (default all: every one within budget; or a count) uniform ones re-ranked on
# RERANK_IMAGES (default 10000) validation images, BN re-calibrated on RECAL
# (default 2000) training images. Writes DEMO_DIR/sweep/bX/ per budget and
# DEMO_DIR/sweep/table.md; the uniform networks' figures are measured once and
# kept in DEMO_DIR/uniform-rRECAL/ (see search_vs_uniform.sh). TABLE_ONLY=1
# only makes the table again from the budgets' directories.
set -eu
BUILD=${BUILD:-build}
DIR=${1:-runs/demo}
ACC=${2:-$DIR/acc_predictor.accp}
RECAL=${RECAL:-2000}
RERANK=${RERANK:-20}
RERANK_SEEDS=${RERANK_SEEDS:-all}
RERANK_IMAGES=${RERANK_IMAGES:-10000}
FRACTIONS=${FRACTIONS:-0.02 0.05 0.1 0.2 0.3 0.4}
M=$BUILD/bin/manta
P=$BUILD/bin/manta-profile
CKPT=$DIR/supernet/latest.ckpt
LUT=$DIR/latency_table.json
for f in "$CKPT" "$LUT" "$ACC"; do
    [ -s "$f" ] || { echo "search_sweep: $f is missing (run make demo first)" >&2; exit 2; }
done
num() { sed -n "s/.*\"$2\": *\(-\{0,1\}[0-9.eE+-]*\).*/\1/p" "$1" | head -n 1; }
mkdir -p "$DIR/sweep"
if [ -z "${BUDGETS:-}" ]; then
    $P --lut "$LUT" --arch min --runs 1 --min-time-ms 1 --passes 1 --json >"$DIR/sweep/min.json"
    $P --lut "$LUT" --arch max --runs 1 --min-time-ms 1 --passes 1 --json >"$DIR/sweep/max.json"
    LO=$(num "$DIR/sweep/min.json" predicted_ms)
    HI=$(num "$DIR/sweep/max.json" predicted_ms)
    BUDGETS=$(for f in $FRACTIONS; do
        awk -v a="$LO" -v b="$HI" -v f="$f" 'BEGIN { printf "%.3f ", a + f * (b - a) }'
    done)
    echo "predicted latency: smallest $LO ms, largest $HI ms; budgets $BUDGETS"
fi
n=0
[ "${TABLE_ONLY:-0}" = 1 ] && BUDGETS_RUN="" || BUDGETS_RUN=$BUDGETS
for b in $BUDGETS_RUN; do
    n=$((n + 1))
    out=$DIR/sweep/b$b
    echo "=== budget $b ms ($(date -u +%H:%M:%S) UTC)"
    $M search --ckpt "$CKPT" --lut "$LUT" --acc-model "$ACC" --latency-ms "$b" --rerank "$RERANK" \
        --rerank-seeds "$RERANK_SEEDS" --rerank-spread 2 --rerank-images "$RERANK_IMAGES" \
        --recal-images "$RECAL" --out "$out" --quiet
    # the uniform networks are measured at the first budget and reused after
    if [ "$n" = 1 ]; then reuse=${REUSE:-0}; else reuse=1; fi
    REUSE=$reuse RECAL=$RECAL BUILD=$BUILD sh tools/bench/search_vs_uniform.sh "$DIR" "$out" |
        grep -v '^uniform '
done

# the table: one row per budget, from each search_vs_uniform.txt
{
    echo "| budget | searched: res, latency, val, test | best uniform by val (latency): val, test | searched - uniform (test) | test images right for searched only / uniform only, 95% CI | best uniform by test: test; searched - it |"
    echo "| ---: | --- | --- | ---: | --- | --- |"
    for b in $BUDGETS; do
        awk -v b="$b" '
        /^searched: \{/ {
            match($0, /"r":\[[0-9]+\]/); r = substr($0, RSTART + 5, RLENGTH - 6)
            for (i = 1; i <= NF; i++) {
                if ($i == "measured") lat = $(i + 1)
                if ($i == "top-1" && $(i - 1) == "validation") v = $(i + 1)
                if ($i == "top-1" && $(i - 1) == "test") t = $(i + 1)
            }
        }
        /^best uniform by validation/ { un = $5; ul = $6; uv = $10; ut = $13 }
        /^best uniform by test/ { tn = $5; tt = $13 }
        /^paired, against the best by test/ {
            dt = $0; sub(/ points.*/, "", dt); sub(/.*: /, "", dt); vt = $NF; gsub(/[()]/, "", vt)
        }
        /^paired, against the best by validation/ {
            s = $7; u = $14; lo = $(NF - 3); hi = $(NF - 1); verdict = $NF; gsub(/[()]/, "", verdict)
            d = $0; sub(/ points.*/, "", d); sub(/.*: /, "", d)
        }
        END {
            gsub(/[(,]/, "", lat); gsub(/[(,]/, "", v); gsub(/[(,]/, "", ul); gsub(/,/, "", uv)
            if (un == "") { printf "| %s ms | no uniform sub-network within the budget | | | | |\n", b; exit }
            printf "| %s ms | %s px, %.3f ms, %.2f, %.2f | %s (%.3f ms): %.2f, %.2f | %s | %s / %s, %s to %s: %s | %s: %.2f; %s, %s |\n",
                b, r, lat, 100 * v, 100 * t, un, ul, 100 * uv, 100 * ut, d, s, u, lo, hi, verdict,
                tn, 100 * tt, dt, vt
        }' "$DIR/sweep/b$b/search_vs_uniform.txt"
    done
} >"$DIR/sweep/table.md"
awk -F'|' 'NR > 2 && $5 != " " {
        n++; d = $5 + 0; sum += d
        if ($6 ~ /: ahead/) ahead++; else if ($6 ~ /: behind/) behind++; else level++
        split($7, w, "; "); sumt += w[2] + 0
        if ($7 ~ /, ahead/) ahead_t++; else if ($7 ~ /, behind/) behind_t++; else level_t++
    }
    END { printf "%d budgets: against the best uniform by validation the searched one is ahead at %d, level at %d, behind at %d (paired 95%% interval), %+.2f points of test top-1 on average; against the best uniform by test, ahead at %d, level at %d, behind at %d, %+.2f on average\n",
          n, ahead, level, behind, n ? sum / n : 0, ahead_t, level_t, behind_t, n ? sumt / n : 0 }' "$DIR/sweep/table.md" >>"$DIR/sweep/table.md"
cat "$DIR/sweep/table.md"
