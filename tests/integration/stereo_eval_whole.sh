#!/bin/sh
# manta eval of a stereo checkpoint on a folder evaluates whole pairs (stereo/infer.h): pairs
# of exactly the network's size (the run's held-out pairs written by manta stereo-data) score
# as --data synthetic does on the same pairs, up to the 8-bit PNG views and 1/256 px
# disparities of the folder; pairs of other sizes, not multiples of 2^levels, are scored at
# every valid pixel with --out PNGs of their whole size; a pair whose buffers the device
# cannot hold is named in one line, exit status 1, nothing written.
# (tests/unit/test_stereo_infer.c compares the whole-pair path with the crop path it
# replaces, in the library.)
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# member NAME of the object member OBJ of a JSON file: json_num FILE OBJ NAME
json_num() { sed -n "s/.*\"$2\":{[^}]*\"$3\":\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
# a number member of a JSON file: top_num FILE NAME
top_num() { sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
# width and height of a PNG (its IHDR, big-endian): png_size FILE -> "W H"
png_size() {
    od -An -tu1 -j16 -N8 "$1" |
        awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4,
                     $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'
}
# copy pair 0 of KITTI folder FROM into folder TO as pair NNNNNN: add_pair FROM TO NNNNNN
add_pair() {
    for d in image_2 image_3 disp_occ_0 disp_noc_0; do
        mkdir -p "$2/$d"
        cp "$1/$d/000000_10.png" "$2/$d/$3_10.png"
    done
}

"$M" train --space tests/data/stereo_tiny.json --schedule smoke --batch 2 --train-pairs 64 --textures none \
    --eval-pairs 6 --recal-pairs 4 --seed 1 --out "$out/run" >/dev/null ||
    fail "train: exit status $?"
CKPT=$out/run/latest.ckpt
ev() { "$M" eval --ckpt "$CKPT" --recal-pairs 4 --json "$@"; }

# (a) the run's held-out pairs (seed 1 xor 26725), at the network's size 32x16
"$M" stereo-data "$out/held" --count 6 --width 32 --height 16 --max-disp 8 --seed 26724 \
    --first 1099511627776 >/dev/null || fail "stereo-data: exit status $?"
ev --pairs 6 >"$out/syn.json" || fail "eval synthetic: exit status $?"
ev --pairs 6 --data "$out/held" >"$out/held.json" || fail "eval folder: exit status $?"
cat "$out/syn.json" "$out/held.json"
grep -q '"whole":true' "$out/held.json" || fail "a folder is not evaluated whole"
grep -q '"whole":false' "$out/syn.json" || fail "synthetic pairs are not the network's batches"
for r in all noc; do
    a=$(json_num "$out/syn.json" $r pixels) b=$(json_num "$out/held.json" $r pixels)
    if [ -z "$a" ] || [ "$a" != "$b" ]; then
        fail "$r: $b pixels on the folder, $a on the same pairs generated"
    fi
    a=$(json_num "$out/syn.json" $r epe) b=$(json_num "$out/held.json" $r epe)
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(a > 0 && d < 0.01 && d > -0.01) }' ||
        fail "$r: EPE $b on the folder, $a on the same pairs generated"
done
[ "$(json_num "$out/held.json" timed max_width)" = 32 ] || fail "timed: not at 32x16"
[ "$(json_num "$out/held.json" timed forwards)" = 5 ] ||
    fail "timed: not 5 forwards (6 pairs, the first left out)"

# (b) pairs of 37x21 (run at 40x24) and one of 32x16 after them: every pixel of a generated
# pair is valid, so the pixels are the whole images'
"$M" stereo-data "$out/odd" --count 3 --width 37 --height 21 --max-disp 8 --seed 5 >/dev/null ||
    fail "stereo-data 37x21: exit status $?"
"$M" stereo-data "$out/small" --count 1 --width 32 --height 16 --max-disp 8 --seed 6 >/dev/null ||
    fail "stereo-data 32x16: exit status $?"
add_pair "$out/small" "$out/odd" 000003
ev --pairs 10 --data "$out/odd" --out "$out/img" --show 4 >"$out/odd.json" ||
    fail "eval 37x21: exit status $?"
cat "$out/odd.json"
[ "$(json_num "$out/odd.json" all pixels)" = $((3 * 37 * 21 + 32 * 16)) ] ||
    fail "not every pixel of the whole pairs was scored"
[ "$(top_num "$out/odd.json" pairs)" = 4 ] || fail "not 4 pairs"
[ "$(json_num "$out/odd.json" timed forwards)" = 2 ] ||
    fail "timed: not the 2 forwards after the first at 40x24"
[ "$(json_num "$out/odd.json" timed max_width)" = 40 ] || fail "timed: not at 40x24"
for k in left gt pred error; do
    [ "$(png_size "$out/img/0000_$k.png")" = "37 21" ] || fail "0000_$k.png is not 37x21"
    [ "$(png_size "$out/img/0003_$k.png")" = "32 16" ] || fail "0003_$k.png is not 32x16"
done
[ ! -e "$out/img/0004_left.png" ] || fail "images of more pairs than the folder has"
"$M" eval --ckpt "$CKPT" --recal-pairs 4 --data "$out/odd" --pairs 2 >"$out/odd.txt" ||
    fail "eval 37x21, text: exit status $?"
cat "$out/odd.txt"
grep -q '^all  EPE .*(1554 pixels)' "$out/odd.txt" ||
    fail "text: not the pixels of 2 pairs of 37x21"
grep -q 'padded size, 40x24' "$out/odd.txt" || fail "text: the timed size is not named"

# every pair of its own size: the last one's forward once more; without non-occlusion maps
# the noc figures are null (no pixel counted)
add_pair "$out/odd" "$out/two" 000000
add_pair "$out/small" "$out/two" 000001
rm -r "$out/two/disp_noc_0"
ev --data "$out/two" >"$out/two.json" || fail "eval of two sizes: exit status $?"
grep -q '"last_again":true' "$out/two.json" || fail "two sizes: the last pair not timed again"
grep -q '"noc":{"epe":null,"bad1":null,"bad2":null,"bad3":null,"d1":null,"pixels":0}' \
    "$out/two.json" || fail "no non-occluded pixel: the figures are not null"

# a pair too large for the device (allocations clamped to 512 KiB: the buffers are split at
# their tensors, and one region of 128x64 needs 1.5 MB; 32x16 and 37x21 fit, 128x64
# does not): one line naming the pair and its size, exit status 1, nothing written
"$M" stereo-data "$out/big" --count 1 --width 128 --height 64 --max-disp 8 --seed 7 >/dev/null
add_pair "$out/big" "$out/odd" 000004
rc=0
MANTA_DEVICE_LIMITS=alloc=512k "$M" eval --ckpt "$CKPT" --recal-pairs 4 --json --pairs 10 \
    --data "$out/odd" --out "$out/img2" >"$out/big.out" 2>"$out/big.err" || rc=$?
cat "$out/big.err"
[ "$rc" = 1 ] || fail "a pair too large for the device: exit status $rc, not 1"
[ "$(wc -l <"$out/big.err")" = 1 ] || fail "a pair too large for the device: not one line"
grep -q '000004_10.png (128x64, padded to 128x64): ' "$out/big.err" ||
    fail "a pair too large for the device: the pair and its size are not named"
[ ! -s "$out/big.out" ] || fail "a pair too large for the device: output written"
[ ! -e "$out/img2" ] || fail "a pair too large for the device: images written"
echo "ok: whole-pair evaluation of stereo folders"
