#!/bin/sh
# make demo TASK=stereo's chain (tools/demo_stereo.sh) on the tiny stereo space and the smoke
# schedule with tiny settings: train -> stereo latency table (+ --validate) -> EPE data set ->
# EPE predictor -> search with --rerank -> export -> manta-infer's disparity PNG of a test pair
# -> manta eval --model on the test pairs -> summary -> manta report's plots. Then what the
# chain's files must hold: the data set's EPE samples with "dw", the predictor's RMSE in px,
# search.json's predicted and held-out EPE, the chosen sub-network's exact sizes (search,
# export and manta-profile agree), a 16-bit PNG of the pair's size; and bad input: a stereo
# data set for a classification fit and the reverse, a stereo table for another stereo space,
# --rerank without a checkpoint, a classification search's re-rank options, a budget no
# sub-network meets: one line, non-zero exit.
set -u
BUILD=${BUILD:-build}
M="$BUILD/bin/manta"
P="$BUILD/bin/manta-profile"
S=tests/data/stereo_tiny.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
num() { sed -n "s/.*\"$2\": *\(-\{0,1\}[0-9.eE+-]*\).*/\1/p" "$1" | head -n 1; }

DEMO_OUT="$tmp/demo" DEMO_SPACE=$S DEMO_SCHEDULE=smoke \
    DEMO_TRAIN_ARGS="--batch 2 --train-pairs 32 --eval-pairs 4 --recal-pairs 4" \
    DEMO_ACC_SAMPLES=12 DEMO_PAIRS=8 DEMO_RECAL_PAIRS=8 DEMO_GENERATIONS=20 DEMO_RERANK=2 \
    DEMO_RERANK_SEEDS=1 DEMO_RERANK_PAIRS=8 DEMO_TEST_PAIRS=4 DEMO_VALIDATE=3 \
    DEMO_PROFILE_ARGS="--min-time-ms 2 --runs 5 --passes 2" BUILD=$BUILD \
    sh tools/demo_stereo.sh >"$tmp/demo.log" 2>&1 || { cat "$tmp/demo.log"; fail "the demo"; }
d=$tmp/demo
for f in supernet/latest.ckpt latency_table.json validate.json epe_dataset.jsonl \
    epe_predictor.accp acc_fit.json search/arch.json search/front.csv search/front.svg \
    search/search.json model.tflite disparity.png disparity_color.png test.json \
    report/index.html report/search.png report/latency.png; do
    [ -s "$d/$f" ] || fail "the demo wrote no $f"
done
for l in "test EPE:" "latency:  *predicted" "memory:  *arena" "SGBM" "EPE predictor:"; do
    grep -q "$l" "$tmp/demo.log" || fail "the summary lacks '$l': $(tail -n 25 "$tmp/demo.log")"
done

# the data set and the predictor
[ "$(grep -c '"epe":' "$d/epe_dataset.jsonl")" = 12 ] || fail "data set: not 12 EPE samples"
grep -q '"task":"stereo"' "$d/epe_dataset.jsonl" || fail "data set header"
grep -q '"dw":\[' "$d/epe_dataset.jsonl" || fail "data set samples lack dw"
grep -q '"held_out_rmse_px"' "$d/acc_fit.json" || fail "acc-fit: $(cat "$d/acc_fit.json")"

# the search: EPE figures, the chosen one re-ranked, sizes as exported and as profiled
grep -q '"task":"stereo"' "$d/search/search.json" || fail "search.json lacks the task"
grep -q '"heldout_epe"' "$d/search/search.json" || fail "search.json lacks the re-rank's EPE"
head -n 1 "$d/search/front.csv" | grep -q '^rank,epe,' || fail "front.csv header"
best=$(sed 's/.*"best"://' "$d/search/search.json")
for k in arena_bytes file_bytes; do
    a=$(echo "$best" | sed -n "s/.*\"$k\":\([0-9]*\).*/\1/p")
    b=$(num "$d/export.json" $k)
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "$k: search $a, export $b"
done
"$P" --space $S --lut "$d/latency_table.json" --arch "$d/search/arch.json" --min-time-ms 1 \
    --runs 2 --json >"$tmp/arch.json" || fail "manta-profile --arch of the chosen one"
[ "$(num "$tmp/arch.json" file_bytes)" = "$(num "$d/export.json" file_bytes)" ] ||
    fail "manta-profile's file size $(num "$tmp/arch.json" file_bytes)"

# the disparity: a 16-bit gray PNG of the pair's size (32 x 16)
[ "$(od -An -tu1 -j16 -N8 "$d/disparity.png" | tr -s ' ')" = " 0 0 0 32 0 0 0 16" ] ||
    fail "disparity.png is not 32 x 16"
[ "$(od -An -tu1 -j24 -N2 "$d/disparity.png" | tr -s ' ')" = " 16 0" ] ||
    fail "disparity.png is not 16-bit gray"

# bad input: one line, non-zero exit
refuse() {
    msg=$1
    shift
    if "$@" >"$tmp/out" 2>"$tmp/err"; then
        fail "accepted: $*"
    fi
    [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "$msg" "$tmp/err" ||
        fail "'$msg' not the one line of: $* -- $(cat "$tmp/err")"
    echo "refused as expected: $(cat "$tmp/err")"
}
refuse "a stereo (EPE) data set" "$M" acc-fit --space cpu-default --samples \
    "$d/epe_dataset.jsonl" --out "$tmp/x.accp"
printf '{"format":"manta-acc-dataset","version":1,"space":{"name":"cpu-default","hash":"x"}}\n' \
    >"$tmp/cls.jsonl"
refuse "classification" "$M" acc-fit --ckpt "$d/supernet/latest.ckpt" --samples "$tmp/cls.jsonl" \
    --out "$tmp/x.accp"
refuse "made for space 'stereo-tiny'" "$M" search --space stereo-cpu \
    --lut "$d/latency_table.json" --acc-model "$d/epe_predictor.accp" --latency-ms 1
refuse "--rerank" "$M" search --space $S --lut "$d/latency_table.json" \
    --acc-model "$d/epe_predictor.accp" --latency-ms 1 --rerank 2
refuse "--rerank-pairs" "$M" search --ckpt "$d/supernet/latest.ckpt" --lut "$d/latency_table.json" \
    --acc-model "$d/epe_predictor.accp" --latency-ms 1 --rerank 2 --rerank-images 5
refuse "no sub-network of space 'stereo-tiny'" "$M" search --space $S \
    --lut "$d/latency_table.json" --acc-model "$d/epe_predictor.accp" --latency-ms 0.000001 \
    --quiet
[ ! -e "$tmp/x.accp" ] || fail "a refused fit wrote its model"
echo "stereo demo: ok"
