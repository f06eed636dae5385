#!/bin/sh
# make demo TASK=stereo: the whole job for stereo depth on the built-in stereo-cpu space and
# procedural pairs, on the first OpenCL device (PoCL on a CPU):
#   1 train the stereo supernet (progressive shrinking, quick schedule)
#   2 profile this machine: the stereo latency table of the inference engine (+ a check)
#   3 EPE data set: sampled sub-networks measured on the run's held-out pairs
#   4 EPE predictor (OFA's MLP on the stereo encoding) with its held-out RMSE
#   5 evolutionary search for the lowest predicted EPE under a latency budget; its best
#     candidates measured on held-out pairs, the lowest measured EPE chosen
#   6 export the chosen sub-network (.tflite, two inputs), checked against the runtime
#   7 test pairs (a seed training never used): the disparity of one by manta-infer as a
#     16-bit PNG (KITTI's d * 256) and a colour map, all of them scored by manta eval
#     --model (the engine), and by OpenCV's SGBM when python3-opencv is installed
# then a summary (EPE against SGBM, latency predicted and measured, arena, flash) and the
# plots of the job by manta report (DEMO_OUT/report/index.html). Every stage can be re-run:
# finished stages are kept (training resumes, the data set resumes); DEMO_FRESH=1 starts
# over.
#
# Settings (environment): BUILD (build), DEMO_OUT (runs/demo-stereo), DEMO_SPACE (stereo-cpu;
# a stereo spec, e.g. tests/data/stereo_tiny.json), DEMO_SCHEDULE (quick; smoke for a test
# of the wiring), DEMO_TRAIN_ARGS (more options for manta train), DEMO_ACC_SAMPLES (30),
# DEMO_PAIRS (50 held-out pairs per sample), DEMO_RECAL_PAIRS (50), DEMO_LATENCY_MS (default:
# 40% of the way from the smallest to the largest sub-network's predicted latency),
# DEMO_GENERATIONS (200), DEMO_RERANK (5 candidates re-measured; 0: the predictor's best),
# DEMO_RERANK_SEEDS (2 uniform sub-networks within budget re-measured too), DEMO_RERANK_PAIRS
# (100), DEMO_TEST_PAIRS (50 test pairs), DEMO_VALIDATE (10 sub-networks timed to check the
# table; 0: skip), DEMO_PROFILE_ARGS (more options for manta-profile, e.g. shorter timings),
# DEMO_REPORT (1; 0: no plots), PYTHON (a python3 with cv2 and numpy for SGBM; default
# /usr/bin/python3, Debian's, where python3-opencv installs).
set -eu

BUILD=${BUILD:-build}
OUT=${DEMO_OUT:-runs/demo-stereo}
SPACE=${DEMO_SPACE:-stereo-cpu}
SCHEDULE=${DEMO_SCHEDULE:-quick}
TRAIN_ARGS=${DEMO_TRAIN_ARGS:-}
PYTHON=${PYTHON:-/usr/bin/python3}
ACC_SAMPLES=${DEMO_ACC_SAMPLES:-30}
PAIRS=${DEMO_PAIRS:-50}
RECAL=${DEMO_RECAL_PAIRS:-50}
BUDGET=${DEMO_LATENCY_MS:-}
GENERATIONS=${DEMO_GENERATIONS:-200}
RERANK=${DEMO_RERANK:-5}
RERANK_SEEDS=${DEMO_RERANK_SEEDS:-2}
RERANK_PAIRS=${DEMO_RERANK_PAIRS:-100}
TEST_PAIRS=${DEMO_TEST_PAIRS:-50}
VALIDATE=${DEMO_VALIDATE:-10}
PROFILE_ARGS=${DEMO_PROFILE_ARGS:-}
REPORT=${DEMO_REPORT:-1}
# shellcheck source=tools/demo_lib.sh
. "$(dirname "$0")/demo_lib.sh"
# The EPE of region "all" of a manta eval / sgbm_stereo.py document.
all_epe() { tr -d ' \n' <"$1" | sed -n 's/.*"all":{"epe":\([0-9.eE+-]*\).*/\1/p'; }

stage 1 "train the stereo supernet"
$M devices
# shellcheck disable=SC2086
if [ -f "$OUT/supernet/latest.ckpt" ]; then
    $M train --space "$SPACE" --schedule "$SCHEDULE" --out "$OUT/supernet" --resume $TRAIN_ARGS
else
    $M train --space "$SPACE" --schedule "$SCHEDULE" --out "$OUT/supernet" $TRAIN_ARGS
fi
CKPT=$OUT/supernet/latest.ckpt

stage 2 "profile this machine"
# shellcheck disable=SC2086
if [ ! -f "$OUT/latency_table.json" ]; then
    $P --space "$SPACE" --out "$OUT/latency_table.json" --quiet --json $PROFILE_ARGS \
        >"$OUT/profile.json"
    cat "$OUT/profile.json"
fi
# shellcheck disable=SC2086
if [ "$VALIDATE" -gt 1 ] && [ ! -f "$OUT/validate.json" ]; then
    $P --space "$SPACE" --lut "$OUT/latency_table.json" --validate "$VALIDATE" \
        --csv "$OUT/validate.csv" --quiet --json $PROFILE_ARGS >"$OUT/validate.json"
    cat "$OUT/validate.json"
fi

stage 3 "EPE data set"
$M acc-dataset --ckpt "$CKPT" --out "$OUT/epe_dataset.jsonl" --count "$ACC_SAMPLES" \
    --pairs "$PAIRS" --recal-pairs "$RECAL" --resume

stage 4 "EPE predictor"
$M acc-fit --ckpt "$CKPT" --samples "$OUT/epe_dataset.jsonl" --out "$OUT/epe_predictor.accp" \
    --quiet --json >"$OUT/acc_fit.json"
tail -n 1 "$OUT/acc_fit.json"

stage 5 "search under a latency budget"
default_budget --space "$SPACE"
RR=""
[ "$RERANK" -gt 0 ] && RR="--rerank $RERANK --rerank-spread 2 --rerank-seeds $RERANK_SEEDS
    --rerank-pairs $RERANK_PAIRS --recal-pairs $RECAL"
# shellcheck disable=SC2086
$M search --ckpt "$CKPT" --lut "$OUT/latency_table.json" --acc-model "$OUT/epe_predictor.accp" \
    --latency-ms "$BUDGET" --generations "$GENERATIONS" $RR --out "$OUT/search"

stage 6 "export"
$M export --ckpt "$CKPT" --arch "$OUT/search/arch.json" --out "$OUT/model.tflite" \
    --recal-pairs "$RECAL" --json >"$OUT/export.json"
cat "$OUT/export.json"

stage 7 "disparity of test pairs"
H=$(json_num "$OUT/export.json" height)
W=$(json_num "$OUT/export.json" width)
MAXD=$($M eval --ckpt "$CKPT" --arch min --pairs 1 --recal-pairs 0 --json | sed -n 's/.*"max_disp":\([0-9]*\).*/\1/p')
if [ ! -d "$OUT/test_pairs/image_2" ]; then
    # seed 2718: pairs no training run of the demo saw (manta train uses the run's seed); with
    # the default photographs when installed, as manta train's procedural pairs are made
    TEX=""
    [ -d /usr/share/backgrounds/mate/nature ] && TEX="--textures default"
    # shellcheck disable=SC2086
    $M stereo-data "$OUT/test_pairs" --count "$TEST_PAIRS" --width "$W" --height "$H" \
        --max-disp "$MAXD" --seed 2718 $TEX --json >"$OUT/test_pairs.json"
fi
L0=$OUT/test_pairs/image_2/000000_10.png
R0=$OUT/test_pairs/image_3/000000_10.png
$I "$OUT/model.tflite" "$L0" "$R0" --out "$OUT/disparity.png" --color "$OUT/disparity_color.png" \
    --json >"$OUT/infer.json"
cat "$OUT/infer.json"
$I "$OUT/model.tflite" --bench 200 --json >"$OUT/bench.json"
$M eval --model "$OUT/model.tflite" --data "$OUT/test_pairs" --json >"$OUT/test.json"
cat "$OUT/test.json"
SGBM=""
if "$PYTHON" -c 'import cv2, numpy' 2>/dev/null; then
    "$PYTHON" tools/bench/sgbm_stereo.py "$OUT/test_pairs" --max-disp "$MAXD" >"$OUT/sgbm.json"
    SGBM=$(all_epe "$OUT/sgbm.json")
fi

stage_end
EPE=$(all_epe "$OUT/test.json")
PEPE=$(json_num "$OUT/search/search.json" predicted_epe)
PRED=$(sed 's/.*"best"://' "$OUT/search/search.json" | sed -n 's/.*"predicted_latency_ms":\([0-9.eE+-]*\).*/\1/p')
MEAS=$(json_num "$OUT/bench.json" p10_ms)
MED=$(json_num "$OUT/bench.json" median_ms)
ARENA=$(json_num "$OUT/export.json" arena_bytes)
FILE=$(json_num "$OUT/export.json" file_bytes)
RMSE=$(json_num "$OUT/acc_fit.json" held_out_rmse_px)
echo
echo "==== summary"
echo "space:               $SPACE ($W x $H, max disparity $MAXD px; schedule $SCHEDULE)"
echo "chosen sub-network:  $(cat "$OUT/search/arch.json")"
echo "latency budget:      $BUDGET ms (table: $(json_str "$OUT/search/search.json" device))"
echo "EPE predictor:       held-out RMSE $RMSE px ($ACC_SAMPLES sampled sub-networks)"
awk -v e="$EPE" -v p="$PEPE" -v n="$TEST_PAIRS" 'BEGIN { printf "test EPE:            %.3f px (%d test pairs, inference engine); predicted %.3f px (held-out pairs)\n", e, n, p }'
if [ -n "$SGBM" ]; then
    awk -v e="$EPE" -v s="$SGBM" 'BEGIN { printf "                     SGBM %.3f px on the same pairs: %.2f x SGBM\047s EPE\n", s, e / s }'
else
    echo "                     SGBM: skipped (python3-opencv is not installed)"
fi
awk -v p="$PRED" -v m="$MEAS" -v d="$MED" 'BEGIN { printf "latency:             predicted %.3f ms, measured %.3f ms (10th percentile of 200 runs, the table\047s statistic; median %.3f ms)\n", p, m, d }'
awk -v a="$ARENA" -v f="$FILE" 'BEGIN { printf "memory:              arena %.1f KiB, model file (flash) %.1f KiB\n", a / 1024, f / 1024 }'
echo "disparity:           $OUT/disparity.png (16-bit, d * 256), $OUT/disparity_color.png (left: $L0)"
echo "files:               $OUT/{latency_table.json,epe_dataset.jsonl,epe_predictor.accp,search/,model.tflite}"
print_times

if [ "$REPORT" = 1 ]; then report; fi
