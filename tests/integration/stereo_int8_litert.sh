#!/bin/sh
# int8 stereo end to end: a tiny smoke run's largest and smallest sub-networks exported with
# --int8 (calibrated on generated training pairs, method picked on held-out pairs), the
# correlation fused in int8 at prepare; manta-infer on pairs of PNG views writes the int8
# input tensors (--dump-input: 2 x H x W x 3 bytes) and the raw int8 disparity
# (--dump-output: H x W bytes); manta eval --model scores the int8 file on a folder of pairs;
# bad --calib-method / --calib-val refused (one line, exit 2, nothing written); and the same
# int8 input tensors run in LiteRT (tools/bench/litert_stereo_int8_compare.py):
# with TFLite's reference kernels >= 99% of the output values equal and the rest within
# 1 LSB; the default resolver's (XNNPACK: fp32 requantization) agreement is printed, not
# asserted. The LiteRT part is SKIPPED, not passed, without a python that imports
# ai_edge_litert (LITERT_PYTHON, else /tmp/litert-venv/bin/python, else python3).
set -u
BUILD=${BUILD:-build}
M="$BUILD/bin/manta"
I="$BUILD/bin/manta-infer"
fail() { echo "FAIL: $*"; exit 1; }
for p in "$M" "$I"; do [ -x "$p" ] || fail "$p missing (make)"; done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
top_num() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }

"$M" train --space tests/data/stereo_tiny.json --schedule smoke --batch 2 --train-pairs 32 \
    --eval-pairs 4 --recal-pairs 4 --seed 1 --out "$out/run" >/dev/null 2>&1 ||
    fail "train: exit status $?"
"$M" stereo-data "$out/pairs" --count 3 --width 32 --height 16 --max-disp 8 --seed 5 \
    --first 1099511627776 >/dev/null 2>&1 || fail "stereo-data"
# bad options: one line, exit 2, nothing written
for bad in "--calib-method mse" "--calib-val 0"; do
    # shellcheck disable=SC2086
    "$M" export --ckpt "$out/run/latest.ckpt" --int8 $bad --out "$out/bad.tflite" 2>"$out/bad.err"
    rc=$?
    [ "$rc" = 2 ] && [ ! -e "$out/bad.tflite" ] && [ "$(wc -l <"$out/bad.err")" = 1 ] ||
        fail "export --int8 $bad: exit $rc, $(cat "$out/bad.err")"
done
for a in max min; do
    "$M" export --ckpt "$out/run/latest.ckpt" --arch $a --recal-pairs 4 --int8 --calib 8 \
        --calib-val 3 --out "$out/$a.tflite" --json >"$out/$a.json" 2>"$out/$a.err" ||
        fail "export --int8 $a: $(cat "$out/$a.err")"
    cat "$out/$a.json"
    grep -q '"int8":true' "$out/$a.json" || fail "export $a: no int8"
    [ "$(top_num "$out/$a.json" fused_correlations)" = 1 ] || fail "$a: int8 correlation not fused"
    mkdir -p "$out/d_$a"
    for k in 0 1 2; do
        "$I" "$out/$a.tflite" "$out/pairs/image_2/00000${k}_10.png" \
            "$out/pairs/image_3/00000${k}_10.png" --dump-input "$out/d_$a/in_$k.bin" \
            --dump-output "$out/d_$a/out_$k.bin" --stats >"$out/infer.log" ||
            fail "manta-infer int8 $a pair $k"
        [ "$(wc -c <"$out/d_$a/in_$k.bin")" = 3072 ] || fail "--dump-input: not 2 x 16 x 32 x 3 int8"
        [ "$(wc -c <"$out/d_$a/out_$k.bin")" = 512 ] || fail "--dump-output: not 16 x 32 int8"
    done
    grep -q "correlation fused: yes" "$out/infer.log" || fail "manta-infer --stats: $(cat "$out/infer.log")"
    "$M" eval --model "$out/$a.tflite" --data "$out/pairs" >"$out/eval.log" 2>&1 ||
        fail "eval --model int8 $a: $(tail -2 "$out/eval.log")"
    grep -q "EPE" "$out/eval.log" || fail "eval --model int8 $a: $(cat "$out/eval.log")"
done
PY=""
for p in "${LITERT_PYTHON:-}" /tmp/litert-venv/bin/python python3; do
    if [ -n "$p" ] && "$p" -c 'import ai_edge_litert, numpy' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
    echo "stereo_int8_litert: LiteRT part SKIPPED (not passed): no python imports ai_edge_litert and numpy"
    exit 0
fi
for a in max min; do
    "$PY" tools/bench/litert_stereo_int8_compare.py "$out/$a.tflite" "$out/d_$a" >"$out/cmp_$a.json" \
        2>"$out/cmp_$a.err" || fail "litert_stereo_int8_compare $a: $(tail -3 "$out/cmp_$a.err")"
    cat "$out/cmp_$a.json"
    "$PY" - "$out/cmp_$a.json" <<'PY2' || fail "$a: the engine and LiteRT's reference kernels disagree"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ref = [r for r in rows if r["resolver"] == "reference kernels"][0]
assert ref["equal_pct"] >= 99.0 and ref["max_diff"] <= 1, ref
PY2
done
echo "stereo_int8_litert: engine == LiteRT reference kernels (>= 99% equal, the rest within 1 LSB) on 3 pairs, largest and smallest"
