#!/bin/sh
# The search pipeline on a smoke-trained supernet, with tiny settings:
# manta-profile (table, --list, --validate, --arch; no OpenCL linked),
# manta acc-dataset (and --resume), acc-fit, search (reproducible, files
# written, exact arena and file size, re-ranking on the validation split), an int8 search
# (manta-profile --int8's table; its arena and file those of manta export --int8, within
# budget; tables of the other kind and a stereo space refused), manta profile on the OpenCL device,
# manta image + export + manta-infer; and bad input: a table of another
# space, a budget no sub-network meets, a corrupt table or predictor, a table
# of another device, bad usage: one line naming the cause, non-zero exit.
set -u
BUILD=${BUILD:-build}
M="$BUILD/bin/manta"
P="$BUILD/bin/manta-profile"
I="$BUILD/bin/manta-infer"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# num KEY [FILE]: the number after the last "KEY": in FILE (default stdin)
num() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "${2:--}"; }
# candidates SEARCH_JSON: the re-ranked architectures, one per line, in order
candidates() { sed 's/"best":.*//' "$1" | grep -o '{"arch":{[^}]*}' | sed 's/^{"arch"://'; }
# an architecture with one kernel, one expand ratio and one depth everywhere
UNIFORM='"ks":\[\([0-9]\),\(\1,\)*\1\],"e":\[\([0-9]\),\(\3,\)*\3\],"d":\[\([0-9]\),\(\5,\)*\5\]'
# run CMD..., expect a non-zero exit and MSG in its stderr
refuse() {
    msg=$1
    shift
    if "$@" >"$tmp/out" 2>"$tmp/err"; then
        bad "accepted: $*"
    elif ! grep -q -- "$msg" "$tmp/err"; then
        bad "'$msg' not in the error of: $* -- $(cat "$tmp/err")"
    else
        echo "refused as expected: $(head -n 1 "$tmp/err")"
    fi
}

# the board program links no OpenCL
if command -v ldd >/dev/null 2>&1; then
    ldd "$P" | grep -qi opencl && bad "manta-profile links OpenCL: $(ldd "$P")"
fi
for c in "$P" "$M profile" "$M acc-dataset" "$M acc-fit" "$M search" "$M image"; do
    $c --help | grep -q usage || bad "$c --help"
done

"$M" train --schedule smoke --batch 16 --eval-images 0 --out "$tmp/run" >"$tmp/train.log" 2>&1 ||
    { cat "$tmp/train.log"; echo "FAIL: smoke training"; exit 1; }
ckpt="$tmp/run/latest.ckpt"

# ---- manta-profile
[ "$("$P" --list 2>/dev/null | wc -l)" -eq 207 ] || bad "--list: not 207 keys"
fast="--min-time-ms 1 --runs 2 --passes 1"
"$P" --out "$tmp/lut.json" $fast --calib 2 --json >"$tmp/profile.json" 2>"$tmp/profile.err" ||
    bad "profile: $(cat "$tmp/profile.err")"
grep -q '"keys":207' "$tmp/profile.json" || bad "profile json: $(cat "$tmp/profile.json")"
grep -q 'profiling' "$tmp/profile.err" || bad "no progress on stderr"
for f in '"format":[[:space:]]*"manta-latency-table"' '"version":[[:space:]]*2' '"p10_ms"' \
    '"median_ms"' '"variance_ms2"' '"count"' '"cpu"' '"compiler_flags"' '"date"' '"overhead_ms"'; do
    grep -q "$f" "$tmp/lut.json" || bad "table lacks $f"
done
"$P" --lut "$tmp/lut.json" --validate 4 $fast --csv "$tmp/val.csv" --json >"$tmp/val.json" ||
    bad "validate"
for f in mean_abs_pct max_abs_pct within_10pct kendall_tau rmse_ms; do
    grep -q "\"$f\"" "$tmp/val.json" || bad "validate json lacks $f: $(cat "$tmp/val.json")"
done
[ "$(wc -l <"$tmp/val.csv")" -eq 5 ] || bad "validate csv: $(cat "$tmp/val.csv")"
"$P" --lut "$tmp/lut.json" --arch min $fast --json | grep -q '"measured_ms"' || bad "--arch min"

# ---- accuracy data set and predictor
"$M" acc-dataset --ckpt "$ckpt" --out "$tmp/acc.jsonl" --count 4 --images 40 --recal-images 40 \
    2>"$tmp/acc.err" >/dev/null || bad "acc-dataset: $(cat "$tmp/acc.err")"
grep -q 'sample 4/4' "$tmp/acc.err" || bad "acc-dataset progress: $(cat "$tmp/acc.err")"
cp "$tmp/acc.jsonl" "$tmp/acc4.jsonl"
"$M" acc-dataset --ckpt "$ckpt" --out "$tmp/acc.jsonl" --count 6 --images 40 --recal-images 40 \
    --resume --json >"$tmp/acc.json" 2>/dev/null || bad "acc-dataset --resume"
[ "$(grep -c '"top1"' "$tmp/acc.jsonl")" -eq 6 ] || bad "data set: not 6 samples"
grep -q '"measured":2' "$tmp/acc.json" || bad "resume measured more than 2: $(cat "$tmp/acc.json")"
head -n 5 "$tmp/acc.jsonl" | cmp -s - "$tmp/acc4.jsonl" || bad "resume changed earlier samples"
refuse "seed" "$M" acc-dataset --ckpt "$ckpt" --out "$tmp/acc.jsonl" --count 7 --images 40 \
    --recal-images 40 --resume --seed 9
refuse "sampling" "$M" acc-dataset --ckpt "$ckpt" --out "$tmp/acc.jsonl" --count 7 --images 40 \
    --recal-images 40 --resume --sampling uniform
"$M" acc-fit --ckpt "$ckpt" --samples "$tmp/acc.jsonl" --out "$tmp/acc.accp" --epochs 20 --json \
    >"$tmp/fit.json" 2>/dev/null || bad "acc-fit"
grep -q '"held_out_rmse_points"' "$tmp/fit.json" || bad "acc-fit json: $(cat "$tmp/fit.json")"

# ---- search
s="--ckpt $ckpt --lut $tmp/lut.json --acc-model $tmp/acc.accp --generations 15 --quiet"
"$P" --lut "$tmp/lut.json" --arch max $fast --json >"$tmp/max.json" || bad "manta-profile --arch max"
grep -Eq '"version":"[0-9]+\.[0-9]+\.[0-9]+","git":"[^"]+"' "$tmp/max.json" ||
    bad "manta-profile --json: no version and git: $(cat "$tmp/max.json")"
hi=$(num predicted_ms "$tmp/max.json")
lo=$("$P" --lut "$tmp/lut.json" --arch min $fast --json | num predicted_ms)
budget=$(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.4f", (a + b) / 2 }')
"$M" search $s --latency-ms "$budget" --out "$tmp/s1" --seed 3 >"$tmp/s1.log" || bad "search"
"$M" search $s --latency-ms "$budget" --out "$tmp/s2" --seed 3 >/dev/null || bad "search again"
for f in arch.json front.csv front.svg search.json; do
    [ -s "$tmp/s1/$f" ] || bad "search did not write $f"
done
cmp -s "$tmp/s1/arch.json" "$tmp/s2/arch.json" && cmp -s "$tmp/s1/front.csv" "$tmp/s2/front.csv" ||
    bad "same seed, different result"
grep -q '<svg' "$tmp/s1/front.svg" || bad "front.svg is not SVG"
lat=$(num predicted_latency_ms "$tmp/s1/search.json")
awk -v l="$lat" -v b="$budget" 'BEGIN { exit !(l <= b) }' || bad "best $lat ms over budget $budget"
grep -q '"rerank":null' "$tmp/s1/search.json" || bad "search without --rerank: rerank not null"

# re-ranking on the validation split: three candidates 2+ genes apart and the uniform ones
# the predictor rates highest (--rerank-seeds 2) that are not among them, the best measured is
# chosen, and manta eval measures the same top-1 for it
rr="--rerank 3 --rerank-spread 2 --rerank-seeds 2 --rerank-images 40 --recal-images 40"
"$M" search ${s%--quiet} --latency-ms "$budget" --out "$tmp/s4" --seed 3 $rr >"$tmp/s4.log" \
    2>"$tmp/s4.err" ||
    bad "search --rerank: $(cat "$tmp/s4.err")"
ua=$(num uniform_added "$tmp/s4/search.json")
[ "$ua" = 2 ] || bad "rerank: $ua uniform sub-networks added, not 2: $(cat "$tmp/s4/search.json")"
grep -q 're-rank 5/5' "$tmp/s4.err" || bad "no re-rank progress: $(cat "$tmp/s4.err")"
grep -q 'validation top-1.* and 2 uniform ones' "$tmp/s4.log" ||
    bad "search --rerank summary: $(cat "$tmp/s4.log")"
grep -o '"validation_top1":[0-9.]*' "$tmp/s4/search.json" | sed 's/.*://' >"$tmp/val.txt"
candidates "$tmp/s4/search.json" >"$tmp/cands.txt"
chosen=$(num chosen "$tmp/s4/search.json")
[ "$(wc -l <"$tmp/val.txt")" -eq 5 ] && [ "$(wc -l <"$tmp/cands.txt")" -eq 5 ] ||
    bad "rerank: not 5 candidates: $(cat "$tmp/s4/search.json")"
# the last two are uniform: one kernel, expand ratio and depth everywhere
[ "$(tail -n 2 "$tmp/cands.txt" | grep -c "$UNIFORM")" = 2 ] ||
    bad "rerank: the last two are not uniform: $(tail -n 2 "$tmp/cands.txt")"
best_val=$(sort -g "$tmp/val.txt" | tail -n 1)
[ -n "$chosen" ] && [ "$(sed -n "${chosen}p" "$tmp/val.txt")" = "$best_val" ] ||
    bad "rerank chose $chosen, not the best measured $best_val"
sed -n "${chosen}p" "$tmp/cands.txt" | cmp -s - "$tmp/s4/arch.json" || bad "arch.json is not the chosen"
[ "$(sort -u "$tmp/cands.txt" | wc -l)" -eq 5 ] || bad "rerank candidates repeat"
"$M" eval --ckpt "$ckpt" --arch "$tmp/s4/arch.json" --images 40 --recal-images 40 --json \
    >"$tmp/s4_eval.json" 2>/dev/null || bad "eval of the chosen"
got=$(num top1 "$tmp/s4_eval.json")
awk -v a="$got" -v b="$best_val" 'BEGIN { d = a - b; exit !(d < 1e-5 && d > -1e-5) }' ||
    bad "manta eval measures $got for the chosen, search $best_val"
# --rerank-seeds all: every uniform sub-network within budget is measured, among the K or added
"$M" search ${s%--quiet} --latency-ms "$budget" --out "$tmp/s5" --seed 3 --rerank 3 \
    --rerank-spread 2 --rerank-seeds all --rerank-images 40 --recal-images 40 >/dev/null \
    2>"$tmp/s5.err" ||
    bad "search --rerank-seeds all: $(cat "$tmp/s5.err")"
ua=$(num uniform_added "$tmp/s5/search.json")
ub=$(num uniform_within_budget "$tmp/s5/search.json")
nu=$(candidates "$tmp/s5/search.json" | sort -u | grep -c "$UNIFORM")
[ -n "$ua" ] && [ -n "$ub" ] && [ "$ub" -gt 2 ] && [ "$nu" = "$ub" ] && [ "$ua" -le "$nu" ] &&
    [ "$ua" -ge $((nu - 3)) ] ||
    bad "--rerank-seeds all: $nu uniform candidates ($ua added), $ub within budget"
# arena and flash budgets are exact: the exported file has the size the search computed
"$M" search $s --latency-ms "$budget" --max-arena-kb 400 --max-flash-kb 2500 --out "$tmp/s3" \
    >/dev/null || bad "search with arena and flash budgets"
"$M" export --ckpt "$ckpt" --arch "$tmp/s3/arch.json" --out "$tmp/m.tflite" --recal-images 32 \
    --json >"$tmp/export.json" || bad "export"
want=$(num file_bytes "$tmp/s3/search.json")
got=$(num file_bytes "$tmp/export.json")
[ -n "$want" ] && [ "$want" = "$got" ] || bad "file size: search $want, export $got"
want=$(sed -n 's/.*"best".*"arena_bytes":\([0-9]*\).*/\1/p' "$tmp/s3/search.json")
got=$(num arena_bytes "$tmp/export.json")
[ -n "$want" ] && [ "$want" = "$got" ] || bad "arena: search $want, export $got"
awk -v f="$got" 'BEGIN { exit !(f <= 400 * 1024) }' || bad "arena $got over 400 KiB"

# ---- an int8 search: manta-profile --int8's table, arena and file of the int8 export (each
# candidate's int8 model written and planned), within budget and as manta export --int8 writes
"$P" --int8 --out "$tmp/lut8.json" $fast --calib 2 --quiet >/dev/null || bad "profile --int8"
s8="--ckpt $ckpt --lut $tmp/lut8.json --acc-model $tmp/acc.accp --int8 --quiet"
hi8=$("$P" --int8 --lut "$tmp/lut8.json" --arch max $fast --json | num predicted_ms)
lo8=$("$P" --int8 --lut "$tmp/lut8.json" --arch min $fast --json | num predicted_ms)
budget8=$(awk -v a="$lo8" -v b="$hi8" 'BEGIN { printf "%.4f", (a + b) / 2 }')
"$M" search $s8 --latency-ms "$budget8" --max-arena-kb 150 --max-flash-kb 700 --generations 4 \
    --population 40 --out "$tmp/s8" >"$tmp/s8.log" || bad "search --int8"
grep -q '"dtype":"int8"' "$tmp/s8/search.json" || bad "search --int8: search.json lacks the dtype"
grep -q '(int8)' "$tmp/s8.log" || bad "search --int8 summary: $(cat "$tmp/s8.log")"
"$M" export --ckpt "$ckpt" --arch "$tmp/s8/arch.json" --out "$tmp/m8.tflite" --int8 --calib 16 \
    --calib-method minmax --recal-images 32 --json >"$tmp/export8.json" || bad "export --int8"
for k in file_bytes arena_bytes; do
    want=$(sed -n "s/.*\"best\".*\"$k\":\([0-9]*\).*/\1/p" "$tmp/s8/search.json")
    got=$(num $k "$tmp/export8.json")
    [ -n "$want" ] && [ "$want" = "$got" ] || bad "int8 $k: search $want, export --int8 $got"
done
awk -v a="$(num arena_bytes "$tmp/export8.json")" -v f="$(num file_bytes "$tmp/export8.json")" \
    'BEGIN { exit !(a <= 150 * 1024 && f <= 700 * 1024) }' || bad "int8 export over budget"
refuse 'a float32 one is needed' "$M" search $s --latency-ms 1 --lut "$tmp/lut8.json"
refuse 'an int8 one is needed' "$M" search $s8 --latency-ms 1 --lut "$tmp/lut.json"
refuse 'no int8 stereo export' "$M" search --space tests/data/stereo_tiny.json \
    --lut "$tmp/lut8.json" --acc-model "$tmp/acc.accp" --latency-ms 1 --int8

# ---- a JPEG of the test set, classified on the board program
"$M" image --out "$tmp/img.jpg" --index 1 >/dev/null || bad "image"
"$I" "$tmp/m.tflite" "$tmp/img.jpg" --top 1 >/dev/null || bad "manta-infer on the exported model"

# ---- the OpenCL device through the training runtime
"$M" profile --device 0 --count 2 --runs 1 --min-time-ms 1 --lut "$tmp/lut.json" >/dev/null \
    2>&1 || bad "manta profile --device 0"

# ---- bad input
sed 's/"expand": 384/"expand": 256/; s/"cpu-default"/"cpu-small"/' models/ofa_cpu_default.json \
    >"$tmp/small.json"
"$P" --space "$tmp/small.json" --out "$tmp/lut_small.json" $fast --calib 0 --quiet >/dev/null ||
    bad "profile of another space"
refuse "made for space 'cpu-small'" "$M" search $s --latency-ms 1 --lut "$tmp/lut_small.json"
refuse "smallest seen: latency" "$M" search $s --latency-ms 0.0001
head -c 400 "$tmp/lut.json" >"$tmp/corrupt.json"
refuse "not valid JSON" "$M" search $s --latency-ms 1 --lut "$tmp/corrupt.json"
refuse "not valid JSON" "$P" --lut "$tmp/corrupt.json" --validate 2
head -c 2000 "$tmp/acc.accp" >"$tmp/corrupt.accp"
refuse "truncated" "$M" search $s --latency-ms 1 --acc-model "$tmp/corrupt.accp"
printf 'garbage' >"$tmp/garbage.accp"
refuse "garbage.accp" "$M" search $s --latency-ms 1 --acc-model "$tmp/garbage.accp"
sed 's/"cpu":[[:space:]]*"[^"]*"/"cpu": "Cortex-A72"/' "$tmp/lut.json" >"$tmp/other_cpu.json"
refuse "another device" "$P" --lut "$tmp/other_cpu.json" --validate 2
refuse "not on board 'rpi4'" "$M" search $s --latency-ms 1 --board rpi4
refuse '"ks"' "$P" --lut "$tmp/lut.json" --arch '{"ks":[4]}'
refuse "OpenCL" "$P" --device opencl
refuse "required" "$M" search --ckpt "$ckpt"
refuse "out of range" "$M" search $s --latency-ms "$budget" --rerank 2 --device 9
refuse "--rerank" "$M" search $s --latency-ms "$budget" --rerank -1
refuse "--rerank-seeds" "$M" search $s --latency-ms "$budget" --rerank 2 --rerank-seeds -1
refuse "--rerank-seeds" "$M" search $s --latency-ms "$budget" --rerank 2 --rerank-seeds most
refuse "lut.json:" "$M" acc-fit --samples "$tmp/lut.json" --out "$tmp/x.accp"

[ "$fail" -eq 0 ] && echo "pipeline search: ok"
exit "$fail"
