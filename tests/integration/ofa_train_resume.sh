#!/bin/sh
# Supernet training on the smoke schedule: checkpoints per phase, a run
# stopped and resumed ends bit for bit equal to an uninterrupted one, eval
# reads the checkpoint, and bad checkpoints / architectures fail clearly.
set -eu
M="${BUILD:-build}/bin/manta"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { "$M" train --schedule smoke --batch 16 --eval-images 0 --json "$@"; }

run --out "$dir/a" >"$dir/a.log"
for p in 1-full 2-kernel 3-depth-1 4-depth-2 5-expand-1 6-expand-2; do
    [ -s "$dir/a/phase-$p.ckpt" ] || fail "no checkpoint for phase $p"
done
[ "$(grep -c '"step":' "$dir/a/metrics.jsonl")" -ge 6 ] || fail "metrics.jsonl"
"$M" events "$dir/a"/events.out.tfevents.* >"$dir/ev.txt" || fail "TensorBoard event file"
grep -q '^train/loss  *step  *[0-9]' "$dir/ev.txt" || { cat "$dir/ev.txt"; fail "no train/loss scalars"; }
cp "$dir/a"/events.out.tfevents.* "$dir/damaged.ev"
printf 'X' | dd of="$dir/damaged.ev" bs=1 seek=60 conv=notrunc 2>/dev/null
if "$M" events "$dir/damaged.ev" >/dev/null 2>"$dir/ev.err"; then fail "a damaged event file was read"; fi
grep -q 'damaged.ev: record [0-9]* (byte [0-9]*): .*CRC mismatch' "$dir/ev.err" || { cat "$dir/ev.err"; fail "damaged event file: message"; }

run --out "$dir/b" --stop-after 7 >"$dir/b.log" 2>&1
grep -q '"step":7,' "$dir/b/metrics.jsonl" || grep -q '"step":6,' "$dir/b/metrics.jsonl" || fail "first part"
"$M" train --resume --out "$dir/b" --eval-images 0 --json >>"$dir/b.log"
cmp "$dir/a/latest.ckpt" "$dir/b/latest.ckpt" || fail "resumed run differs from the uninterrupted one"
[ "$(ls "$dir/b" | grep -c '^events\.out\.tfevents\.')" -eq 2 ] || fail "an event file per invocation"
echo "resume: identical final checkpoint"

"$M" eval --ckpt "$dir/a/latest.ckpt" --arch min --images 64 --recal-images 64 --json >"$dir/e.json"
grep -q '"top1":' "$dir/e.json" || fail "eval output"
cat "$dir/e.json"

# export: the .tflite file parses with flatc against our schema subset, and the
# inference engine agrees with the training runtime on 1000 test images
"$M" export --ckpt "$dir/a/latest.ckpt" --arch min --out "$dir/min.tflite" --recal-images 256 --json >"$dir/x.json"
cat "$dir/x.json"
if command -v flatc >/dev/null; then
    flatc --json --raw-binary -o "$dir" models/tflite_subset.fbs -- "$dir/min.tflite" || fail "flatc"
fi
"$M" eval --model "$dir/min.tflite" --ckpt "$dir/a/latest.ckpt" --arch min --split test \
    --images 1000 --recal-images 256 --predictions "$dir/pred.csv" --json >"$dir/m.json"
cat "$dir/m.json"
# one line per image, the labels the test set's, the share right the reported top-1
[ "$(sed -n 1p "$dir/pred.csv")" = "image,label,predicted" ] || fail "predictions header"
[ "$(wc -l <"$dir/pred.csv")" -eq 1001 ] || fail "predictions: not 1000 images"
share=$(awk -F, 'NR > 1 { n++; c += $2 == $3; if ($1 != n - 1 || $2 < 0 || $2 > 9 || $3 < 0 || $3 > 9) bad = 1 }
    END { if (bad) print "bad"; else printf "%.5f", c / n }' "$dir/pred.csv")
grep -q "\"top1\":$share" "$dir/m.json" || fail "predictions give top-1 $share: $(cat "$dir/m.json")"
agree() { # top-1 equal within 0.1 point, logits within 1e-4
    awk -v t="$1" -v s="$2" -v d="$3" 'BEGIN { e = t - s; if (e < 0) e = -e; exit !(e <= 0.001 && d <= 1e-4) }'
}
t=$(sed -n 's/.*"top1":\([0-9.]*\).*/\1/p' "$dir/m.json")
s=$(sed -n 's/.*"supernet_top1":\([0-9.]*\).*/\1/p' "$dir/m.json")
dl=$(sed -n 's/.*"max_logit_diff":\([0-9.e+-]*\).*/\1/p' "$dir/m.json")
agree "$t" "$s" "$dl" || fail "engine top-1 $t vs runtime $s, logit difference $dl"

# errors: one line, non-zero exit
expect_error() {
    name=$1 pattern=$2
    shift 2
    if "$@" >"$dir/o" 2>"$dir/e"; then fail "$name: exit status 0"; fi
    [ "$(wc -l <"$dir/e")" -eq 1 ] || { cat "$dir/e"; fail "$name: not one line"; }
    grep -q -e "$pattern" "$dir/e" || { cat "$dir/e"; fail "$name: no '$pattern'"; }
    echo "ok: $name: $(cat "$dir/e")"
}
cp "$dir/a/latest.ckpt" "$dir/bad.ckpt"
printf 'XXXX' | dd of="$dir/bad.ckpt" bs=1 seek=5000 conv=notrunc 2>/dev/null
expect_error "corrupt checkpoint" "corrupt\|CRC" "$M" eval --ckpt "$dir/bad.ckpt"
expect_error "missing checkpoint" "nothing.ckpt" "$M" eval --ckpt "$dir/nothing.ckpt"
echo '{"ks":[9,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7],"e":[6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6],"d":[4,4,4,4,4],"r":[32]}' >"$dir/arch.json"
expect_error "arch outside the space" "ks\[0\] = 9" "$M" eval --ckpt "$dir/a/latest.ckpt" --arch "$dir/arch.json"
expect_error "resume without checkpoint" "latest.ckpt" "$M" train --resume --out "$dir/none"
expect_error "unknown schedule" "unknown" "$M" train --schedule fastest --out "$dir/x"
expect_error "predictions unwritable" "p.csv: cannot write there: the folder $dir/no does not exist" "$M" eval --model "$dir/min.tflite" \
    --images 5 --predictions "$dir/no/p.csv"
[ ! -e "$dir/x/latest.ckpt" ] || fail "a checkpoint was left by a failed start"
echo "ofa train/resume/eval: all checks passed"
