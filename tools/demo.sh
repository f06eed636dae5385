#!/bin/sh
# make demo: the whole job on the built-in default space (cpu-default) and
# Fashion-MNIST, on the first OpenCL device (PoCL on a CPU):
#   1 train the supernet (progressive shrinking, quick schedule)
#   2 profile this machine: latency table of the inference engine (+ a check)
#   3 accuracy data set: sampled sub-networks measured on validation images
#   4 accuracy predictor (OFA's MLP) with its held-out RMSE
#   5 evolutionary search under a latency budget; its best candidates
#     measured on validation images, the best measured chosen
#   6 export the chosen sub-network (.tflite), its test top-1 in the engine;
#     the same in int8 (manta export --int8: calibrated, fully int8 file)
#   7 a test image as JPEG, classified by manta-infer; measured latency
# then a summary, and the plots of the whole job by manta report (training,
# sampled sub-networks, search, latency table: DEMO_OUT/report/index.html,
# docs/report.md). Every stage can be re-run: finished stages are kept
# (training resumes, the data set resumes); DEMO_FRESH=1 starts over.
#
# Settings (environment): BUILD (build), DEMO_OUT (runs/demo), DEMO_SCHEDULE
# (quick), DEMO_ACC_SAMPLES (45), DEMO_ACC_IMAGES (1000), DEMO_RECAL_IMAGES
# (500), DEMO_LATENCY_MS (default: 40% of the way from the smallest to the
# largest sub-network's predicted latency), DEMO_GENERATIONS (500),
# DEMO_RERANK (10 candidates re-measured; 0: the predictor's best),
# DEMO_RERANK_SEEDS (3 uniform sub-networks within budget re-measured too, the
# ones the predictor rates highest; all: every one), DEMO_RERANK_IMAGES (5000
# validation images each),
# DEMO_VALIDATE (20 sub-networks timed to check the table; 0: skip).
set -eu

BUILD=${BUILD:-build}
OUT=${DEMO_OUT:-runs/demo}
SCHEDULE=${DEMO_SCHEDULE:-quick}
ACC_SAMPLES=${DEMO_ACC_SAMPLES:-45}
ACC_IMAGES=${DEMO_ACC_IMAGES:-1000}
RECAL=${DEMO_RECAL_IMAGES:-500}
BUDGET=${DEMO_LATENCY_MS:-}
GENERATIONS=${DEMO_GENERATIONS:-500}
RERANK=${DEMO_RERANK:-10}
RERANK_SEEDS=${DEMO_RERANK_SEEDS:-3}
RERANK_IMAGES=${DEMO_RERANK_IMAGES:-5000}
VALIDATE=${DEMO_VALIDATE:-20}
# shellcheck source=tools/demo_lib.sh
. "$(dirname "$0")/demo_lib.sh"

stage 1 "train the supernet"
$M devices
if [ -f "$OUT/supernet/latest.ckpt" ]; then
    $M train --schedule "$SCHEDULE" --out "$OUT/supernet" --resume --log-every 50
else
    $M train --schedule "$SCHEDULE" --out "$OUT/supernet" --log-every 50
fi
CKPT=$OUT/supernet/latest.ckpt

stage 2 "profile this machine"
if [ ! -f "$OUT/latency_table.json" ]; then
    $P --out "$OUT/latency_table.json" --json > "$OUT/profile.json"
    cat "$OUT/profile.json"
fi
if [ "$VALIDATE" -gt 1 ] && [ ! -f "$OUT/validate.json" ]; then
    $P --lut "$OUT/latency_table.json" --validate "$VALIDATE" --csv "$OUT/validate.csv" \
        --json > "$OUT/validate.json"
    cat "$OUT/validate.json"
fi

stage 3 "accuracy data set"
$M acc-dataset --ckpt "$CKPT" --out "$OUT/acc_dataset.jsonl" --count "$ACC_SAMPLES" \
    --images "$ACC_IMAGES" --recal-images "$RECAL" --resume

stage 4 "accuracy predictor"
$M acc-fit --ckpt "$CKPT" --samples "$OUT/acc_dataset.jsonl" --out "$OUT/acc_predictor.accp" \
    --json > "$OUT/acc_fit.json"
tail -n 1 "$OUT/acc_fit.json"

stage 5 "search under a latency budget"
default_budget
$M search --ckpt "$CKPT" --lut "$OUT/latency_table.json" --acc-model "$OUT/acc_predictor.accp" \
    --latency-ms "$BUDGET" --generations "$GENERATIONS" --rerank "$RERANK" --rerank-spread 2 \
    --rerank-seeds "$RERANK_SEEDS" --rerank-images "$RERANK_IMAGES" --recal-images "$RECAL" \
    --out "$OUT/search"

stage 6 "export and test top-1"
$M export --ckpt "$CKPT" --arch "$OUT/search/arch.json" --out "$OUT/model.tflite" \
    --recal-images "$RECAL" --json \
    > "$OUT/export.json"
cat "$OUT/export.json"
$M eval --model "$OUT/model.tflite" --split test --json > "$OUT/test.json"
cat "$OUT/test.json"
$M export --ckpt "$CKPT" --arch "$OUT/search/arch.json" --out "$OUT/model_int8.tflite" \
    --recal-images "$RECAL" --int8 --json > "$OUT/export_int8.json"
cat "$OUT/export_int8.json"
$M eval --model "$OUT/model_int8.tflite" --split test --json > "$OUT/test_int8.json"
cat "$OUT/test_int8.json"

stage 7 "classify a JPEG with manta-infer"
$M image --out "$OUT/test_image.jpg" --index 0 --json > "$OUT/image.json"
cat "$OUT/image.json"
$I "$OUT/model.tflite" "$OUT/test_image.jpg" --top 3
$I "$OUT/model.tflite" --bench 300 --stats --json > "$OUT/bench.json"

stage_end
TOP1=$(json_num "$OUT/test.json" top1)
PRED=$(json_num "$OUT/search/search.json" predicted_latency_ms)
PTOP=$(json_num "$OUT/search/search.json" predicted_top1)
MEAS=$(json_num "$OUT/bench.json" p10_ms)
MED=$(json_num "$OUT/bench.json" median_ms)
ARENA=$(json_num "$OUT/bench.json" arena_bytes)
FILE=$(json_num "$OUT/bench.json" model_bytes)
LABEL=$(json_str "$OUT/image.json" class)
TOP1_Q8=$(json_num "$OUT/test_int8.json" top1)
FILE_Q8=$(json_num "$OUT/export_int8.json" file_bytes)
ARENA_Q8=$(json_num "$OUT/export_int8.json" arena_bytes)
CALIB_Q8=$(json_str "$OUT/export_int8.json" calib_method)
echo
echo "==== summary"
echo "chosen sub-network:  $(cat "$OUT/search/arch.json")"
echo "latency budget:      $BUDGET ms (table: $(json_str "$OUT/search/search.json" device))"
CHOSEN=$(json_num "$OUT/search/search.json" chosen)
VTOP=""
[ -n "$CHOSEN" ] && VTOP=$(grep -o '"validation_top1":[0-9.]*' "$OUT/search/search.json" |
    sed -n "${CHOSEN}p" | sed 's/.*://')
awk -v t="$TOP1" -v p="$PTOP" 'BEGIN { printf "test top-1:          %.2f%% (10,000 test images, inference engine); predicted %.2f%%\n", 100 * t, 100 * p }'
UADD=$(json_num "$OUT/search/search.json" uniform_added)
NCAND=$(grep -o '"validation_top1":' "$OUT/search/search.json" | wc -l)
[ -n "$VTOP" ] && awk -v v="$VTOP" -v c="$CHOSEN" -v k="$NCAND" -v u="${UADD:-0}" -v n="$RERANK_IMAGES" 'BEGIN { printf "                     validation %.2f%%: the best measured of the search\047s %d best candidates and %d more uniform sub-networks within budget (%d images; predicted rank %d%s)\n", 100 * v, k - u, u, n, c, (c > k - u ? ", a uniform one" : "") }'
awk -v p="$PRED" -v m="$MEAS" -v d="$MED" 'BEGIN { printf "latency:             predicted %.3f ms, measured %.3f ms (10th percentile of 300 runs, the table\047s statistic; median %.3f ms)\n", p, m, d }'
awk -v a="$ARENA" -v f="$FILE" 'BEGIN { printf "memory:              arena %.1f KiB, model file %.1f KiB\n", a / 1024, f / 1024 }'
awk -v t="$TOP1_Q8" -v f32="$TOP1" -v f="$FILE_Q8" -v ff="$FILE" -v a="$ARENA_Q8" -v c="$CALIB_Q8" 'BEGIN { printf "int8:                test top-1 %.2f%% (float32 %.2f%%, %+.2f points); model file %.1f KiB (%.2fx smaller), arena %.1f KiB; calibration: %s\n", 100 * t, 100 * f32, 100 * (t - f32), f / 1024, ff / f, a / 1024, c }'
echo "test image:          $OUT/test_image.jpg (label: $LABEL)"
echo "files:               $OUT/{latency_table.json,acc_dataset.jsonl,acc_predictor.accp,search/,model.tflite,model_int8.tflite}"
print_times

report
