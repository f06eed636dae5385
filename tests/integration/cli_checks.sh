#!/bin/sh
# Commands check their inputs and outputs before the work and give no figure without data:
# each refusal is one line naming the option, the file or the field, exit status 2 for a
# usage error (1 for what only the work finds), and nothing is written.
set -eu
M="${BUILD:-build}/bin/manta"
P="${BUILD:-build}/bin/manta-profile"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# refused RC NAME PATTERN CMD...: exit status RC, one line on stderr matching PATTERN
refused() {
    want=$1 name=$2 pattern=$3
    shift 3
    set +e
    "$@" >"$out/o" 2>"$out/e"
    rc=$?
    set -e
    [ "$rc" -eq "$want" ] || { cat "$out/e"; fail "$name: exit status $rc, not $want"; }
    [ "$(wc -l <"$out/e")" -eq 1 ] || { cat "$out/e"; fail "$name: not one line"; }
    grep -q -e "$pattern" "$out/e" || { cat "$out/e"; fail "$name: no '$pattern'"; }
    echo "ok: $name: $(cat "$out/e")"
}

"$M" train --schedule smoke --stop-after 1 --eval-images 0 --out "$out/cls" >/dev/null 2>&1 ||
    fail "classification training"
"$M" train --space stereo-cpu --schedule smoke --stop-after 1 --out "$out/st" >/dev/null 2>&1 ||
    fail "stereo training"
C=$out/cls/latest.ckpt S=$out/st/latest.ckpt
mkdir "$out/folder"
touch "$out/file"

# provenance: --version on every program, "version" and "git" in every --json
I="${BUILD:-build}/bin/manta-infer"
for prog in "$M" "$I" "$P"; do
    "$prog" --version >"$out/v" || fail "$prog --version: exit status $?"
    grep -Eq "^$(basename "$prog") [0-9]+\.[0-9]+\.[0-9]+ \(git [^)]+\)$" "$out/v" ||
        fail "$prog --version: $(cat "$out/v")"
done
"$M" export --ckpt "$C" --arch min --out "$out/min.tflite" --recal-images 64 >/dev/null ||
    fail "export: exit status $?"
"$I" "$out/min.tflite" --check --json >"$out/check.json" || fail "manta-infer --check: exit status $?"
grep -Eq '^\{"version":"[0-9]+\.[0-9]+\.[0-9]+","git":"[^"]+", "model": ' "$out/check.json" ||
    fail "manta-infer --json: no version and git: $(cat "$out/check.json")"
rm "$out/min.tflite"
# a device variable that matches nothing is said, after the list
set +e
MANTA_DEVICE=99 "$M" devices >"$out/devs" 2>"$out/devs.err"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q "MANTA_DEVICE '99': device index out of range" "$out/devs.err" &&
    grep -q "compute units" "$out/devs" || fail "MANTA_DEVICE=99 manta devices: exit status $rc"
# a long option goes by its whole name
refused 2 "option prefix" "unknown option '--arc' (did you mean --arch?)" "$M" eval --ckpt "$C" --arc max
# counts: no figure over zero images, re-calibration needs a batch
refused 2 "--images 0" "--images needs an integer in \[1," "$M" eval --ckpt "$C" --images 0
refused 2 "--recal-images under a batch" "--recal-images 50 is fewer than one batch of 64" \
    "$M" eval --ckpt "$C" --recal-images 50
refused 2 "export --recal-images under a batch" "--recal-images 10 is fewer than one batch" \
    "$M" export --ckpt "$C" --out "$out/m.tflite" --recal-images 10
[ ! -e "$out/m.tflite" ] || fail "export refused, yet wrote its model"
# options that do nothing in the combination given
refused 2 "eval --model --device" "--device goes with --ckpt" \
    "$M" eval --model "$out/none.tflite" --device 99
refused 2 "eval --ckpt --data" "--data goes with --model alone" "$M" eval --ckpt "$C" --data fashion-mnist
# outputs checked before the work: a folder where a file is meant, a file where a folder is
refused 2 "export --out FOLDER" "--out $out/folder is a folder; a file is meant" \
    "$M" export --ckpt "$C" --out "$out/folder"
refused 2 "export --c-array FILE" "--c-array $out/file is a file; a folder is meant" \
    "$M" export --ckpt "$C" --out "$out/m.tflite" --c-array "$out/file"
refused 2 "export --out under a file" "$out/file is not a folder" \
    "$M" export --ckpt "$C" --out "$out/file/m.tflite"
refused 2 "eval --predictions FOLDER" "--predictions $out/folder is a folder" \
    "$M" eval --model "$out/none.tflite" --predictions "$out/folder"
refused 2 "acc-dataset --out FOLDER" "--out $out/folder is a folder" \
    "$M" acc-dataset --ckpt "$C" --out "$out/folder"
refused 2 "search --out FILE" "--out $out/file is a file; a folder is meant" \
    "$M" search --ckpt "$C" --lut x --acc-model y --latency-ms 1 --out "$out/file"
refused 2 "search: a re-rank setting without --rerank" "--rerank-images is a setting of --rerank K" \
    "$M" search --ckpt "$C" --lut x --acc-model y --latency-ms 1 --rerank-images 5
refused 2 "search: --device without --rerank" "--device is a setting of --rerank K" \
    "$M" search --ckpt "$C" --lut x --acc-model y --latency-ms 1 --device 99
refused 2 "manta-profile --out FOLDER" "manta-profile: --out $out/folder is a folder" \
    "$P" --out "$out/folder"
refused 2 "manta-profile --csv FOLDER" "manta-profile: --csv $out/folder is a folder" \
    "$P" --validate 2 --csv "$out/folder"
refused 2 "stereo-data into a file" "--out $out/file is a file; a folder is meant" \
    "$M" stereo-data "$out/file" --count 1
refused 2 "stereo-data, two folders" "the folder is given twice" \
    "$M" stereo-data "$out/sd" --out "$out/sd2" --count 1
refused 2 "stereo eval --out FILE" "--out $out/file is a file; a folder is meant" \
    "$M" eval --ckpt "$S" --out "$out/file"
# a stereo checkpoint where a classification one is meant says what is true
refused 2 "acc-dataset of a stereo checkpoint, an image option" "unknown option '--images'" \
    "$M" acc-dataset --ckpt "$S" --out "$out/a.jsonl" --images 5
# a folder of pairs without ground truth: nothing to score, unless the predictions are asked for
"$M" stereo-data --out "$out/nogt" --count 2 >/dev/null || fail "stereo-data --out: exit status $?"
rm -r "$out/nogt/disp_occ_0" "$out/nogt/disp_noc_0"
refused 1 "stereo eval without ground truth" "no pixel of .*nogt has a ground-truth disparity: nothing to score" \
    "$M" eval --ckpt "$S" --data "$out/nogt" --recal-pairs 8
"$M" eval --ckpt "$S" --data "$out/nogt" --recal-pairs 8 --out "$out/pred" --json >"$out/pred.json" \
    2>"$out/pred.err" || fail "stereo eval --out without ground truth: exit status $?"
grep -q '"all":{"epe":null,.*"pixels":0}' "$out/pred.json" || fail "no ground truth: figures not null"
grep -q "predictions only" "$out/pred.err" || fail "no ground truth: no warning line"
[ -s "$out/pred/0000_pred.png" ] || { ls "$out/pred"; fail "no ground truth: predictions not written"; }
for f in "$out/sd" "$out/sd2" "$out/a.jsonl" "$out/m.tflite"; do
    [ ! -e "$f" ] || fail "$f written by a refused command"
done
[ -z "$(ls "$out/folder")" ] || fail "a refused command wrote into $out/folder"
echo "cli checks: all passed"
