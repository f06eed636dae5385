#!/bin/sh
# manta export of a stereo checkpoint (a tiny smoke run): the largest and the smallest
# sub-network written and checked in the engine against the device network (relative L2
# below 1e-4, the correlation fused); manta-infer on a pair writes a 16-bit PNG of the left
# image size and a colour map, --json carries its fields; bad inputs (one or three images to a
# stereo model) are refused with one line, exit 2, nothing written.
set -eu
M="${BUILD:-build}/bin/manta"
I="${BUILD:-build}/bin/manta-infer"
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

# refused: one image to a stereo model, --out with a classification model; nothing written
set +e
"$I" "$out/max.tflite" "$L" --out "$out/x.png" 2>"$out/err1"
rc1=$?
"$M" image --out "$out/img.jpg" >/dev/null
"$I" "$out/max.tflite" "$out/img.jpg" "$out/img.jpg" "$out/img.jpg" 2>"$out/err3"
rc3=$?
set -e
[ $rc1 = 2 ] && [ "$(wc -l <"$out/err1")" = 1 ] || fail "one image: exit $rc1, $(cat "$out/err1")"
[ $rc3 = 2 ] && [ "$(wc -l <"$out/err3")" = 1 ] || fail "three images: exit $rc3"
[ ! -e "$out/x.png" ] || fail "a refused run wrote its output"
echo "stereo export: ok"
