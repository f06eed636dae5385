#!/bin/sh
# manta train on a stereo space (tests/data/stereo_tiny.json), smoke schedule: every phase
# ends with an evaluation and a checkpoint; a run stopped and resumed writes the same
# figures as one that ran through; --val-data evaluates on a folder (as manta eval does);
# manta eval of the checkpoint prints EPE, bad-t and D1 and writes the colour-mapped images;
# fine-tuning (--init) on a folder with procedural pairs mixed in (--mix) starts from the
# checkpoint and resumes exactly; bad input gives one line and no files.
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
SPACE=tests/data/stereo_tiny.json
ARGS="--space $SPACE --schedule smoke --batch 2 --train-pairs 64 --eval-pairs 6 --recal-pairs 4 --log-every 1"

"$M" train $ARGS --out "$out/a" >"$out/a.txt" || fail "train: exit status $?"
cat "$out/a.txt"
[ "$(grep -c '"event":"phase_end"' "$out/a/metrics.jsonl")" = 6 ] || fail "not 6 phase ends"
for p in 1-full 2-kernel 3-depth-1 4-depth-2 5-expand-1 6-expand-2; do
    [ -s "$out/a/phase-$p.ckpt" ] || fail "no checkpoint phase-$p.ckpt"
done
grep -q 'held-out EPE largest [0-9.]* px' "$out/a.txt" || fail "no held-out EPE line"
grep -q '"event":"job".*"device_bytes":\[[1-9][0-9]*\]' "$out/a/metrics.jsonl" ||
    fail "the job record has no device bytes"

# stop after 4 steps (inside the second phase), resume: the same figures
"$M" train $ARGS --out "$out/b" --stop-after 4 >"$out/b1.txt" || fail "train --stop-after: $?"
grep -q 'stopped after 4 steps' "$out/b1.txt" || fail "no stop line"
"$M" train --space $SPACE --out "$out/b" --resume --log-every 1 --eval-pairs 6 \
    --recal-pairs 4 >"$out/b2.txt" || fail "train --resume: exit status $?"
grep '"event":"phase_end"' "$out/a/metrics.jsonl" >"$out/a.ends"
grep '"event":"phase_end"' "$out/b/metrics.jsonl" >"$out/b.ends"
cmp "$out/a.ends" "$out/b.ends" || fail "a resumed run's evaluations differ from the uninterrupted run's"

# evaluation of the checkpoint, with images
"$M" eval --ckpt "$out/a/latest.ckpt" --arch min --pairs 6 --recal-pairs 4 --out "$out/img" \
    --show 2 --json >"$out/eval.json" || fail "eval: exit status $?"
grep -q '"all":{"epe":[0-9.]*,"bad1"' "$out/eval.json" || fail "eval: no figures"
for k in left gt pred error; do
    [ -s "$out/img/0001_$k.png" ] || fail "eval: no image 0001_$k.png"
done
"$M" eval --ckpt "$out/a/latest.ckpt" --pairs 6 --recal-pairs 4 | grep -q '^all  EPE' ||
    fail "eval: no text line"

# a folder of pairs: evaluated on it; a damaged image is named in one line
"$M" stereo-data "$out/kitti" --count 4 --width 32 --height 16 --max-disp 8 --seed 3 >/dev/null ||
    fail "stereo-data: exit status $?"
"$M" eval --ckpt "$out/a/latest.ckpt" --data "$out/kitti" --pairs 4 --recal-pairs 2 --json \
    >"$out/folder.json" || fail "eval on a folder: exit status $?"
grep -q '"all":{"epe":' "$out/folder.json" || fail "eval on a folder: no figures"

# a run trained on a folder: manta eval re-calibrates batch norm on that folder by default
# (the same figures as --recal-data FOLDER, others than --recal-data synthetic); the folder
# gone, one line pointing at --recal-data
"$M" stereo-data "$out/tk" --count 6 --width 40 --height 24 --max-disp 8 --seed 4 >/dev/null ||
    fail "stereo-data: exit status $?"
"$M" train --space $SPACE --schedule smoke --batch 2 --data "$out/tk" --eval-pairs 4 \
    --recal-pairs 4 --stop-after 6 --out "$out/f" >/dev/null || fail "train on a folder: $?"
ev() { "$M" eval --ckpt "$out/f/latest.ckpt" --pairs 4 --recal-pairs 4 --json "$@" |
    sed -n 's/.*"all":{"epe":\([0-9.]*\).*/\1/p'; }
e_def=$(ev) e_dir=$(ev --recal-data "$out/tk") e_syn=$(ev --recal-data synthetic)
echo "folder-trained run: EPE $e_def (default), $e_dir (--recal-data the folder), $e_syn (synthetic)"
[ -n "$e_def" ] && [ "$e_def" = "$e_dir" ] || fail "default re-calibration is not on the run's folder"
[ "$e_def" != "$e_syn" ] || fail "re-calibration on synthetic pairs gives the same figures"
# --val-data: the phase-end evaluations on a folder's pairs (kitti's are the crop's size, so
# whole): the largest's figures are manta eval's on that folder; the training is the same;
# a resumed run keeps the folder
"$M" train --space $SPACE --schedule smoke --batch 2 --data "$out/tk" --val-data "$out/kitti" \
    --eval-pairs 4 --recal-pairs 4 --stop-after 3 --out "$out/v" >/dev/null || fail "train --val-data: $?"
"$M" train --space $SPACE --out "$out/v" --resume --eval-pairs 4 --recal-pairs 4 --stop-after 3 \
    >/dev/null || fail "train --val-data, resumed: $?"
losses() { sed -n 's/.*"event":"step".*"loss":\([0-9.]*\).*/\1/p' "$1"; }
[ "$(losses "$out/v/metrics.jsonl")" = "$(losses "$out/f/metrics.jsonl")" ] ||
    fail "--val-data changed the training losses"
v_end=$(grep '"event":"phase_end",.*"phase_index":1,' "$out/v/metrics.jsonl" |
    sed -n 's/.*"largest":{"epe":\([0-9.]*\).*/\1/p')
f_end=$(grep '"event":"phase_end",.*"phase_index":1,' "$out/f/metrics.jsonl" |
    sed -n 's/.*"largest":{"epe":\([0-9.]*\).*/\1/p')
e_val=$("$M" eval --ckpt "$out/v/phase-2-kernel.ckpt" --data "$out/kitti" --pairs 4 --recal-pairs 4 \
    --json | sed -n 's/.*"all":{"epe":\([0-9.]*\).*/\1/p')
echo "phase 2, largest: EPE $v_end (--val-data the folder), $f_end (synthetic), manta eval $e_val"
[ -n "$v_end" ] && [ "$v_end" != "$f_end" ] || fail "--val-data: the same figures as synthetic pairs"
awk -v a="$v_end" -v b="$e_val" 'BEGIN { d = a - b; exit !(d < 1e-3 && d > -1e-3) }' ||
    fail "--val-data: phase-end EPE $v_end, manta eval on the folder $e_val"
mkdir "$out/nogt" && cp -r "$out/kitti/image_2" "$out/kitti/image_3" "$out/nogt/"
if "$M" train --space $SPACE --schedule smoke --val-data "$out/nogt" --out "$out/g" \
    2>"$out/nogt.txt"; then
    fail "a validation folder without disparity maps was accepted"
fi
cat "$out/nogt.txt"
[ "$(wc -l <"$out/nogt.txt")" = 1 ] && grep -q 'no disparity' "$out/nogt.txt" ||
    fail "validation folder without disparity maps: not one line saying so"
[ ! -e "$out/g" ] || fail "validation folder without disparity maps: the output folder was created"
# pairs smaller than the crop: the run stops at the first evaluation, naming the file, with
# the phase's checkpoint written
"$M" stereo-data "$out/small" --count 2 --width 16 --height 8 --max-disp 4 >/dev/null ||
    fail "stereo-data: exit status $?"
if "$M" train $ARGS --val-data "$out/small" --out "$out/s" >/dev/null 2>"$out/small.txt"; then
    fail "validation pairs smaller than the crop were accepted"
fi
cat "$out/small.txt"
grep -q 'small/image_2/000000_10.png: 16x8 is smaller' "$out/small.txt" ||
    fail "validation pairs smaller than the crop: the file is not named"
[ -s "$out/s/phase-1-full.ckpt" ] || fail "the phase's checkpoint was not written before its evaluation"

# fine-tuning: --init of the smoke run's checkpoint on a folder, one pair of each batch of 2
# procedural (--mix 0.5), on the finetune schedule (--init's default): one phase and its
# checkpoints, the init path kept; the teacher is the initial network's parameters exactly,
# the parameters after 3 steps within 1% of them (the same run 15 steps earlier is 70% off);
# stopped and resumed, the same checkpoint as a run that did not stop; manta eval reads it
FT="--space $SPACE --init $out/a/latest.ckpt --data $out/tk --mix 0.5 --batch 2 --eval-pairs 4 --recal-pairs 4"
"$M" train $FT --log-every 50 --out "$out/ft" >"$out/ft.txt" 2>/dev/null || fail "train --init: exit status $?"
cat "$out/ft.txt"
grep -q "^fine-tuning $out/a/latest.ckpt (space stereo-tiny, trained 18 steps .* schedule finetune" "$out/ft.txt" ||
    fail "--init: no line saying it fine-tunes on the finetune schedule"
grep -q '^each batch: 1 generated pair(s), then 1 of' "$out/ft.txt" || fail "--mix 0.5: not 1 generated pair of 2"
[ "$(grep -c '"event":"phase_end"' "$out/ft/metrics.jsonl")" = 1 ] || fail "finetune: not one phase end"
grep -q '"event":"step","step":200,' "$out/ft/metrics.jsonl" || fail "finetune: not 200 steps"
[ -s "$out/ft/phase-1-finetune.ckpt" ] && [ -s "$out/ft/latest.ckpt" ] || fail "finetune: no checkpoints"
grep -a -q "\"init\":\"$out/a/latest.ckpt\"" "$out/ft/latest.ckpt" || fail "the checkpoint does not keep --init"
"$M" ckpt-diff "$out/a/latest.ckpt" "$out/ft/latest.ckpt" --section params:teacher --tol 0 ||
    fail "the fine-tuning run's teacher is not the initial network"
"$M" eval --ckpt "$out/ft/latest.ckpt" --arch min --pairs 4 --recal-pairs 4 --json >"$out/ft.json" ||
    fail "eval of a fine-tuned run: exit status $?"
grep -q '"all":{"epe":[0-9.]*,"bad1"' "$out/ft.json" || fail "eval of a fine-tuned run: no figures"
"$M" train $FT --log-every 1 --stop-after 6 --out "$out/f6" >/dev/null 2>&1 || fail "train --init --stop-after 6: $?"
"$M" train $FT --log-every 1 --stop-after 3 --out "$out/f3" >/dev/null 2>&1 || fail "train --init --stop-after 3: $?"
cp "$out/f3/latest.ckpt" "$out/f3-step3.ckpt"
"$M" train --space $SPACE --out "$out/f3" --resume --stop-after 3 --eval-pairs 4 --recal-pairs 4 \
    >/dev/null 2>&1 || fail "train --init, resumed: exit status $?"
"$M" ckpt-diff "$out/f6/latest.ckpt" "$out/f3/latest.ckpt" --tol 0 >/dev/null ||
    fail "a resumed fine-tuning run differs from the uninterrupted one"
"$M" ckpt-diff "$out/a/latest.ckpt" "$out/f3-step3.ckpt" --section params --tol 0.01 ||
    fail "the fine-tuning run's parameters do not start from the initial network's"
if "$M" ckpt-diff "$out/a/latest.ckpt" "$out/a/phase-1-full.ckpt" --section params --tol 0.01 >/dev/null; then
    fail "ckpt-diff --tol 0.01 does not tell networks 15 steps apart"
fi
"$M" train $FT --mix 0 --log-every 1 --stop-after 3 --out "$out/f0" >/dev/null 2>&1 || fail "train --mix 0: $?"
[ "$(losses "$out/f0/metrics.jsonl")" != "$(losses "$out/f6/metrics.jsonl" | head -3)" ] ||
    fail "--mix 0.5: the same losses as the folder's pairs alone"
# refusals: one line naming what is wrong, nothing written
refused() { # NAME PATTERN ARGS...
    name=$1 pattern=$2
    shift 2
    if "$M" train "$@" --out "$out/r" >/dev/null 2>"$out/r.txt"; then fail "$name: accepted"; fi
    cat "$out/r.txt"
    [ "$(wc -l <"$out/r.txt")" = 1 ] && grep -q -- "$pattern" "$out/r.txt" ||
        fail "$name: not one line saying '$pattern'"
    [ ! -e "$out/r" ] || fail "$name: the output folder was created"
}
"$M" train --schedule smoke --batch 2 --eval-images 0 --val 0 --stop-after 1 \
    --out "$out/cls" >/dev/null 2>&1 || fail "classification train: exit status $?"
refused "--init of a classification checkpoint" \
    "--init: $out/cls/latest.ckpt: a classification training checkpoint .*needs a stereo training checkpoint" \
    --space $SPACE --init "$out/cls/latest.ckpt" --data "$out/tk"
refused "--init of another space" "a checkpoint of space 'stereo-tiny'; the run's space is 'stereo-cpu'" \
    --space stereo-cpu --init "$out/a/latest.ckpt" --data "$out/tk"
refused "--init of a missing file" "--init: checkpoint $out/none.ckpt: cannot open" \
    --space $SPACE --init "$out/none.ckpt" --data "$out/tk"
head -c 3000 "$out/a/latest.ckpt" >"$out/cut.ckpt"
refused "--init of a damaged file" "--init: checkpoint $out/cut.ckpt is truncated" \
    --space $SPACE --init "$out/cut.ckpt" --data "$out/tk"
refused "--init with --resume" "--init starts a new run .* --resume continues one" \
    --space $SPACE --init "$out/a/latest.ckpt" --resume
refused "--mix above 1" "--mix needs a number in \[0, 1\], got '1.5'" \
    --space $SPACE --init "$out/a/latest.ckpt" --data "$out/tk" --mix 1.5
refused "--mix below 0" "--mix needs a number in \[0, 1\], got '-0.5'" \
    --space $SPACE --data "$out/tk" --mix -0.5
refused "--mix without --data" "--mix R mixes procedural pairs into a folder's, and the run has no folder" \
    --space $SPACE --schedule smoke --mix 0.5
refused "--schedule finetune without --init" "--schedule finetune continues a trained supernet: give --init" \
    --space $SPACE --schedule finetune --data "$out/tk"

mv "$out/tk" "$out/tk-moved"
if "$M" eval --ckpt "$out/f/latest.ckpt" --pairs 4 2>"$out/moved.txt" >/dev/null; then
    fail "eval without the run's training folder succeeded"
fi
cat "$out/moved.txt"
[ "$(wc -l <"$out/moved.txt")" = 1 ] && grep -q -- '--recal-data' "$out/moved.txt" ||
    fail "the missing training folder: not one line naming --recal-data"
[ "$(ev --recal-data synthetic)" = "$e_syn" ] || fail "--recal-data synthetic without the folder"

head -c 40 "$out/kitti/image_2/000001_10.png" >"$out/cut.png"
mv "$out/cut.png" "$out/kitti/image_2/000001_10.png"
if "$M" eval --ckpt "$out/a/latest.ckpt" --data "$out/kitti" --pairs 4 --recal-pairs 2 \
    2>"$out/damaged.txt" >/dev/null; then
    fail "a damaged image was accepted"
fi
cat "$out/damaged.txt"
grep -q '000001_10.png' "$out/damaged.txt" || fail "the damaged image is not named"

# --textures: photographs for the procedural pairs (Debian's mate-backgrounds, make deps),
# kept in the checkpoint: a run stopped and resumed trains as one that did not stop; the
# folder gone, a resume and manta eval say so in one line
PH=/usr/share/backgrounds/mate/nature
if [ -d "$PH" ]; then
    mkdir "$out/ph" && cp "$PH/Aqua.jpg" "$PH/Dune.jpg" "$PH/Garden.jpg" "$out/ph/"
    TX="--space $SPACE --batch 2 --train-pairs 64 --eval-pairs 4 --recal-pairs 2 --log-every 1"
    "$M" train $TX --textures "$out/ph" --stop-after 4 --out "$out/t1" >/dev/null ||
        fail "train --textures: exit status $?"
    "$M" train $TX --textures "$out/ph" --stop-after 2 --out "$out/t2" >/dev/null ||
        fail "train --textures --stop-after 2: exit status $?"
    "$M" train --space $SPACE --out "$out/t2" --resume --log-every 1 --eval-pairs 4 \
        --recal-pairs 2 --stop-after 2 >/dev/null || fail "train --textures, resumed: $?"
    steps() { grep -E '"event":"(step|phase_end)"' "$1" | sed 's/"time":[0-9.]*//; s/"pairs_per_s":[0-9.]*//; s/"ranks":.*//'; }
    [ "$(steps "$out/t1/metrics.jsonl")" = "$(steps "$out/t2/metrics.jsonl")" ] ||
        fail "--textures: the resumed run differs from the uninterrupted one"
    "$M" train $TX --stop-after 4 --out "$out/t0" >/dev/null || fail "train: exit status $?"
    [ "$(losses "$out/t1/metrics.jsonl")" != "$(losses "$out/t0/metrics.jsonl")" ] ||
        fail "--textures: the same losses as without photographs"
    "$M" eval --ckpt "$out/t1/latest.ckpt" --pairs 4 --recal-pairs 2 >/dev/null ||
        fail "eval of a --textures run: exit status $?"
    # with --mix, a folder's run takes photographs for its procedural pairs
    "$M" train $TX --data "$out/tk-moved" --mix 0.5 --textures "$out/ph" --stop-after 2 \
        --out "$out/tm1" >/dev/null 2>&1 || fail "train --textures --mix: exit status $?"
    "$M" train $TX --data "$out/tk-moved" --mix 0.5 --stop-after 2 --out "$out/tm0" >/dev/null 2>&1 ||
        fail "train --mix: exit status $?"
    [ "$(losses "$out/tm1/metrics.jsonl")" != "$(losses "$out/tm0/metrics.jsonl")" ] ||
        fail "--textures --mix: the same losses as without photographs"
    mv "$out/ph" "$out/ph-moved"
    for c in "eval --ckpt $out/t1/latest.ckpt --pairs 4" "train --space $SPACE --out $out/t2 --resume"; do
        if "$M" $c >/dev/null 2>"$out/noph.txt"; then fail "$c without the run's photographs succeeded"; fi
        cat "$out/noph.txt"
        [ "$(wc -l <"$out/noph.txt")" = 1 ] && grep -q -- "--textures folder $out/ph: cannot open" "$out/noph.txt" ||
            fail "$c without the run's photographs: not one line naming the folder"
    done
    if "$M" train --space $SPACE --data "$out/tk-moved" --textures "$out/ph-moved" --out "$out/tf" \
        2>"$out/tf.txt"; then
        fail "--textures with a folder of pairs was accepted"
    fi
    cat "$out/tf.txt"
    [ "$(wc -l <"$out/tf.txt")" = 1 ] && [ ! -e "$out/tf" ] || fail "--textures with --data DIR: not one line"
else
    echo "skip: --textures checks ($PH missing: make deps installs mate-backgrounds)"
fi

# bad input: one line naming what is wrong, non-zero, nothing written
sed 's/"crop": {"height": 16, "width": 32}/"crop": {"height": 12, "width": 32}/' $SPACE >"$out/bad.json"
if "$M" train --space "$out/bad.json" --schedule smoke --out "$out/c" 2>"$out/bad.txt"; then
    fail "a crop not divisible by the stride-2 stages was accepted"
fi
cat "$out/bad.txt"
[ "$(wc -l <"$out/bad.txt")" = 1 ] || fail "bad space: not one line"
grep -q 'crop' "$out/bad.txt" || fail "bad space: the message does not name the crop"
[ ! -e "$out/c" ] || fail "bad space: the output folder was created"
echo "ok: stereo training, resume, evaluation and refusals"
