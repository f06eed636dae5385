#!/bin/sh
# manta export of a stereo checkpoint (a tiny smoke run): the largest and the smallest
# sub-network written and checked in the engine against the device network (relative L2
# below 1e-4, the correlation fused); manta-infer on a pair writes a 16-bit PNG of the left
# image size and a colour map, --json carries its fields; bad inputs (one or three images to a
# stereo model, --out or --color with a classification model) are refused with one line,
# exit 2, nothing written. manta eval --model: the engine on the run's held-out pairs (at the
# crop and at another --size) within 0.01 px of the runtime's EPE and disparities, on a
# folder of pairs of another size (resized); a stereo model without --data or --ckpt, a
# classification model given stereo data: one line, exit 2.
set -eu
M="${BUILD:-build}/bin/manta"
I="${BUILD:-build}/bin/manta-infer"
FIX="${BUILD:-build}/tests/helpers/export_fixtures"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
top_num() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
png_size() {
    od -An -tu1 -j16 -N8 "$1" |
        awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4,
                     $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'
}
png_depth() { od -An -tu1 -j24 -N1 "$1" | tr -d ' '; }

"$M" train --space tests/data/stereo_tiny.json --schedule smoke --batch 2 --train-pairs 32 \
    --eval-pairs 4 --recal-pairs 4 --seed 1 --out "$out/run" >/dev/null ||
    fail "train: exit status $?"
CKPT=$out/run/latest.ckpt
"$M" export --ckpt "$CKPT" --arch min --recal-pairs 4 --size 64x32 --out "$out/min64.tflite" \
    >/dev/null || fail "export min at 64x32: exit status $?"
for a in max min; do
    "$M" export --ckpt "$CKPT" --arch $a --recal-pairs 4 --out "$out/$a.tflite" --json \
        >"$out/$a.json" || fail "export $a: exit status $?"
    cat "$out/$a.json"
    [ "$(top_num "$out/$a.json" fused_correlations)" = 1 ] || fail "$a: correlation not fused"
    rel=$(top_num "$out/$a.json" rel_l2)
    awk -v r="$rel" 'BEGIN { exit !(r != "" && r < 1e-4) }' || fail "$a: relative L2 $rel"
done
[ "$(wc -c <"$out/min.tflite")" -lt "$(wc -c <"$out/max.tflite")" ] || fail "min not smaller"

# a pair of 37x21 (not the model's 32x16): the disparity at 37x21
"$M" stereo-data "$out/pairs" --count 1 --width 37 --height 21 --max-disp 8 --seed 3 \
    >/dev/null || fail "stereo-data"
L=$out/pairs/image_2/000000_10.png R=$out/pairs/image_3/000000_10.png
"$I" "$out/max.tflite" "$L" "$R" --out "$out/d.png" --color "$out/c.png" --json --stats \
    >"$out/infer.json" || fail "manta-infer: exit status $?"
cat "$out/infer.json"
[ "$(png_size "$out/d.png")" = "37 21" ] || fail "disparity PNG $(png_size "$out/d.png")"
[ "$(png_depth "$out/d.png")" = 16 ] || fail "disparity PNG not 16-bit"
[ "$(png_size "$out/c.png")" = "37 21" ] || fail "colour PNG $(png_size "$out/c.png")"
for k in version git min max mean invoke fused_correlations; do
    grep -q "\"$k\"" "$out/infer.json" || fail "manta-infer --json has no $k"
done

# manta eval --model: engine and runtime on the same held-out pairs (crop and 64x32)
for m in max min64; do
    "$M" eval --model "$out/$m.tflite" --ckpt "$CKPT" --recal-pairs 4 --pairs 8 --json \
        >"$out/eval_$m.json" || fail "eval --model $m: exit status $?"
    cat "$out/eval_$m.json"
    for k in epe bad1 bad2 bad3 d1 runtime version git; do
        grep -q "\"$k\"" "$out/eval_$m.json" || fail "eval --model $m --json has no $k"
    done
    e=$(sed 's/.*"epe_diff":\([0-9.e+-]*\).*/\1/' "$out/eval_$m.json")
    d=$(sed 's/.*"max_disparity_diff":\([0-9.e+-]*\).*/\1/' "$out/eval_$m.json")
    awk -v e="$e" -v d="$d" 'BEGIN { exit !(e != "" && e < 0.01 && d != "" && d < 0.01) }' ||
        fail "eval --model $m: EPE difference $e, largest disparity difference $d"
done
# on a folder of 37x21 pairs, resized to the model's 32x16 and back
"$M" eval --model "$out/max.tflite" --data "$out/pairs" --json >"$out/eval_dir.json" ||
    fail "eval --model --data: exit status $?"
grep -q '"resized":true' "$out/eval_dir.json" || fail "eval --data: not resized"
grep -q '"pixels":777' "$out/eval_dir.json" || fail "eval --data: not scored at 37x21"

# refused: one image to a stereo model, --out / --color with a classification model, a stereo
# model without data, a classification model given stereo data; nothing written
mkdir "$out/fix" && "$FIX" "$out/fix" >/dev/null || fail "export fixtures"
set +e
"$I" "$out/max.tflite" "$L" --out "$out/x.png" 2>"$out/err1"
rc1=$?
"$M" image --out "$out/img.jpg" >/dev/null
"$I" "$out/max.tflite" "$out/img.jpg" "$out/img.jpg" "$out/img.jpg" 2>"$out/err3"
rc3=$?
"$I" "$out/fix/color.tflite" "$out/fix/red.jpg" --out "$out/x.png" 2>"$out/err4"
rc4=$?
"$I" "$out/fix/color.tflite" "$out/fix/red.jpg" --color "$out/x.png" 2>"$out/err5"
rc5=$?
"$M" eval --model "$out/max.tflite" 2>"$out/err6"
rc6=$?
"$M" eval --model "$out/fix/color.tflite" --data "$out/pairs" 2>"$out/err7"
rc7=$?
"$M" eval --model "$out/fix/color.tflite" --ckpt "$CKPT" 2>"$out/err8"
rc8=$?
set -e
[ $rc1 = 2 ] && [ "$(wc -l <"$out/err1")" = 1 ] || fail "one image: exit $rc1, $(cat "$out/err1")"
[ $rc3 = 2 ] && [ "$(wc -l <"$out/err3")" = 1 ] || fail "three images: exit $rc3"
for k in 4 5 6 7 8; do
    eval "rc=\$rc$k"
    [ "$rc" = 2 ] && [ "$(wc -l <"$out/err$k")" = 1 ] ||
        fail "refusal $k: exit $rc, $(cat "$out/err$k")"
done
grep -q "classification model" "$out/err4" || fail "--out: $(cat "$out/err4")"
grep -q "classification model" "$out/err7" || fail "eval --data: $(cat "$out/err7")"
[ ! -e "$out/x.png" ] || fail "a refused run wrote its output"
echo "stereo export: ok"
