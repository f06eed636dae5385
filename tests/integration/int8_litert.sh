#!/bin/sh
# int8 end to end: a smoke-trained supernet's largest and smallest sub-networks exported
# with --int8 (calibrated, auto-picked method), run in the engine on test images
# (manta eval --model --dump), manta-infer on an int8 model (--dump-input writes the int8
# tensor, --raw takes it back, --json --all prints output_q), and the same int8 input
# tensors run in LiteRT (tools/bench/litert_int8_compare.py): with TFLite's reference
# kernels >= 99% of the output values equal and the rest within 1 LSB; the default
# resolver's (XNNPACK, fp32 requantization) agreement is printed, not asserted.
# The LiteRT part is SKIPPED, not passed, without a python that imports ai_edge_litert
# (LITERT_PYTHON, else /tmp/litert-venv/bin/python, else python3): the script says so.
set -u
BUILD=${BUILD:-build}
M="$BUILD/bin/manta"
INFER="$BUILD/bin/manta-infer"
fail() { echo "FAIL: $*"; exit 1; }
for p in "$M" "$INFER"; do [ -x "$p" ] || fail "$p missing (make)"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$M" train --schedule smoke --out "$tmp/run" >"$tmp/train.log" 2>&1 || fail "train: $(tail -3 "$tmp/train.log")"
for a in max min; do
    "$M" export --ckpt "$tmp/run/latest.ckpt" --arch $a --int8 --calib 40 --calib-val 100 \
        --recal-images 200 --out "$tmp/$a.tflite" --json >"$tmp/export_$a.json" 2>"$tmp/export_$a.err" ||
        fail "export --int8 $a: $(cat "$tmp/export_$a.err")"
    grep -q '"int8":true' "$tmp/export_$a.json" || fail "export $a: no int8 in $(cat "$tmp/export_$a.json")"
    mkdir -p "$tmp/d_$a"
    "$M" eval --model "$tmp/$a.tflite" --split test --images 200 --dump "$tmp/d_$a" >"$tmp/eval_$a.log" ||
        fail "eval --dump $a"
    [ "$(wc -c <"$tmp/d_$a/labels.bin")" = 800 ] || fail "eval --dump $a: labels.bin"
    [ "$(wc -c <"$tmp/d_$a/outputs.bin")" = 2000 ] || fail "eval --dump $a: outputs.bin (int8, 10 classes)"
done
# manta-infer: a JPEG in, the int8 input tensor out (--dump-input), and back in (--raw)
fx="$BUILD/tests/helpers/export_fixtures"
mkdir -p "$tmp/fx"
if [ -x "$fx" ] && "$fx" "$tmp/fx" >/dev/null 2>&1 && [ -f "$tmp/fx/gray.jpg" ]; then
    out=$("$INFER" "$tmp/min.tflite" "$tmp/fx/gray.jpg" --json --all --dump-input "$tmp/in.bin") ||
        fail "manta-infer int8"
    echo "$out" | grep -q '"output_q": \[' || fail "manta-infer --json --all: no output_q: $out"
    out2=$("$INFER" "$tmp/min.tflite" "$tmp/in.bin" --raw --json --all) ||
        fail "manta-infer --raw on the dumped int8 input ($(wc -c <"$tmp/in.bin") bytes)"
    q1=$(echo "$out" | sed -n 's/.*"output_q": \(\[[^]]*\]\).*/\1/p')
    q2=$(echo "$out2" | sed -n 's/.*"output_q": \(\[[^]]*\]\).*/\1/p')
    [ -n "$q1" ] && [ "$q1" = "$q2" ] || fail "manta-infer: the dumped int8 input gives $q2, the JPEG $q1"
else
    echo "int8_litert: $fx missing (make test-run builds it): the manta-infer part did not run"
fi
PY=""
for p in "${LITERT_PYTHON:-}" /tmp/litert-venv/bin/python python3; do
    if [ -n "$p" ] && "$p" -c 'import ai_edge_litert, numpy' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
    echo "int8_litert: LiteRT part SKIPPED (not passed): no python imports ai_edge_litert and numpy"
    echo "  (python3 -m venv /tmp/litert-venv && /tmp/litert-venv/bin/pip install ai-edge-litert numpy)"
    exit 0
fi
for a in max min; do
    "$PY" tools/bench/litert_int8_compare.py "$tmp/$a.tflite" "$tmp/d_$a" >"$tmp/cmp_$a.json" 2>"$tmp/cmp_$a.err" ||
        fail "litert_int8_compare $a: $(tail -3 "$tmp/cmp_$a.err")"
    cat "$tmp/cmp_$a.json"
    "$PY" - "$tmp/cmp_$a.json" <<'PY2' || fail "$a: the engine and LiteRT's reference kernels disagree"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ref = [r for r in rows if r["resolver"] == "reference kernels"][0]
assert ref["equal_pct"] >= 99.0 and ref["max_diff"] <= 1, ref
PY2
done
# The engine's fp32 requantization (manta-infer --requant fp32) against LiteRT's default
# path (XNNPACK requantizes in fp32): the same >= 99% / 1 LSB, on the smallest's first 100 inputs.
mkdir -p "$tmp/f_min"
cp "$tmp/d_min/inputs.bin" "$tmp/d_min/labels.bin" "$tmp/f_min/"
"$PY" - "$INFER" "$tmp/min.tflite" "$tmp/f_min" 100 <<'PY3' || fail "manta-infer --requant fp32 on the dumped inputs"
import json, os, subprocess, sys
import numpy as np
infer, model, d, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
xs = np.fromfile(os.path.join(d, "inputs.bin"), dtype=np.int8)
per = xs.size // len(np.fromfile(os.path.join(d, "labels.bin"), dtype=np.int32))
outs = []
for k in range(n):
    f = os.path.join(d, "x.bin")
    xs[k * per:(k + 1) * per].tofile(f)
    r = subprocess.run([infer, model, f, "--raw", "--json", "--all", "--requant", "fp32"],
                       capture_output=True, text=True, check=True)
    outs.append(json.loads(r.stdout)["images"][0]["output_q"])
np.array(outs, dtype=np.int8).tofile(os.path.join(d, "outputs.bin"))
PY3
"$PY" tools/bench/litert_int8_compare.py "$tmp/min.tflite" "$tmp/f_min" --images 100 >"$tmp/cmp_f.json" \
    2>"$tmp/cmp_f.err" || fail "litert_int8_compare fp32: $(tail -3 "$tmp/cmp_f.err")"
cat "$tmp/cmp_f.json"
"$PY" - "$tmp/cmp_f.json" <<'PY4' || fail "min, --requant fp32: the engine and LiteRT's default (XNNPACK) path disagree"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
x = [r for r in rows if r["resolver"].startswith("default")][0]
assert x["equal_pct"] >= 99.0 and x["max_diff"] <= 1, x
PY4
echo "int8_litert: engine == LiteRT reference kernels (>= 99% equal, the rest within 1 LSB) on 200 test images, largest and smallest; --requant fp32 == XNNPACK on 100"
