#!/bin/sh
# manta-infer on exported models: the colour classifier gives the known top-1
# on generated JPEGs (wide, tall, enlarged), gray and RGB models take either
# kind of JPEG, --json / --check / --stats / --bench / --raw work, and every
# bad input (not a JPEG, empty, truncated, CMYK, missing file, corrupted or
# truncated model, wrong raw size, bad usage) exits non-zero with one line.
set -u
BUILD=${BUILD:-build}
infer="$BUILD/bin/manta-infer"
fixtures="$BUILD/tests/helpers/export_fixtures"
for p in "$infer" "$fixtures"; do
    [ -x "$p" ] || { echo "export_infer: $p missing (make test-run builds it)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fixtures" "$tmp" || { echo "export_infer: fixtures failed"; exit 1; }
fail=0
bad() { printf 'FAIL: %s\n' "$*"; fail=1; }

# top-1 of IMAGE with the colour model must be LABEL
top1() {
    out=$("$infer" "$tmp/color.tflite" "$tmp/$1" --top 1) || { bad "$1: exit $?"; return; }
    echo "$out" | sed -n 2p | grep -q "1\. $2 " || bad "$1: expected top-1 $2, got: $out"
}
top1 red.jpg red
top1 green.jpg green
top1 blue.jpg blue

# several images, JSON
out=$("$infer" "$tmp/color.tflite" "$tmp/red.jpg" "$tmp/blue.jpg" --json --top 2 --all) ||
    bad "json: exit $?"
echo "$out" | grep -q '"label": "red", "prob": 0.99' || bad "json: red not first: $out"
echo "$out" | grep -q '"logits": \[' || bad "json: no logits with --all: $out"
if command -v python3 >/dev/null 2>&1; then
    echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["images"]) == 2' ||
        bad "json: not valid JSON: $out"
fi

# labels with escapes survive the metadata JSON: text as written, JSON re-escaped
out=$("$infer" "$tmp/escaped.tflite" "$tmp/red.jpg" --top 1) || bad "escaped: exit $?"
printf '%s\n' "$out" | grep -qF "$(printf '1. r\303\251d "q" \\ \t/')" || bad "escaped labels: $out"
out=$("$infer" "$tmp/escaped.tflite" "$tmp/red.jpg" --top 1 --json) || bad "escaped json: exit $?"
if command -v python3 >/dev/null 2>&1; then
    printf '%s\n' "$out" | python3 -c 'import json,sys
assert json.load(sys.stdin)["images"][0]["top"][0]["label"] == "r\u00e9d \"q\" \\ \t/"' ||
        bad "escaped labels in JSON: $out"
fi

# gray and RGB models take both kinds of JPEG
"$infer" "$tmp/random_gray.tflite" "$tmp/red.jpg" "$tmp/gray.jpg" >/dev/null || bad "gray model: exit $?"
"$infer" "$tmp/random_rgb.tflite" "$tmp/gray.jpg" "$tmp/green.jpg" >/dev/null || bad "rgb model: exit $?"

# --check, --stats, --bench
out=$("$infer" "$tmp/random_rgb.tflite" --check) || bad "check: exit $?"
echo "$out" | grep -q ": ok: .* arena [0-9]* bytes" || bad "check: $out"
out=$("$infer" "$tmp/random_rgb.tflite" "$tmp/red.jpg" --stats) || bad "stats: exit $?"
echo "$out" | grep -q "arena [0-9]* bytes .*weights [0-9]* bytes, engine code [0-9]* bytes" ||
    bad "stats: $out"
out=$("$infer" "$tmp/random_rgb.tflite" --bench 7) || bad "bench: exit $?"
echo "$out" | grep -q "latency over 7 runs .*min .* ms, p10 .* ms, median .* ms, p90 .* ms" || bad "bench: $out"
out=$("$infer" "$tmp/random_rgb.tflite" --bench 9 --json) || bad "bench json: exit $?"
if command -v python3 >/dev/null 2>&1; then
    echo "$out" | python3 -c 'import json,sys; b=json.load(sys.stdin)["bench"]
assert b["runs"] == 9 and 0 < b["min_ms"] <= b["p10_ms"] <= b["median_ms"] <= b["p90_ms"], b' ||
        bad "bench json: $out"
fi

# --raw and --dump-input: the dumped input fed back gives the same answer
"$infer" "$tmp/random_rgb.tflite" "$tmp/red.jpg" --dump-input "$tmp/in.f32" --json --all >"$tmp/a.json" ||
    bad "dump-input: exit $?"
"$infer" "$tmp/random_rgb.tflite" "$tmp/in.f32" --raw --json --all >"$tmp/b.json" || bad "raw: exit $?"
a=$(grep -o '"probs": \[[^]]*\]' "$tmp/a.json")
b=$(grep -o '"probs": \[[^]]*\]' "$tmp/b.json")
[ -n "$a" ] && [ "$a" = "$b" ] || bad "raw: probabilities differ: $a / $b"

# bad inputs: non-zero exit, exactly one line on stderr naming the file
expect_fail() { # WANT_RC NAME ARGS...
    want=$1 name=$2
    shift 2
    "$infer" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -ne "$want" ]; then
        bad "$name: exit $rc, expected $want"
    elif [ "$want" -eq 1 ] && [ "$lines" -ne 1 ]; then
        bad "$name: $lines lines on stderr: $(cat "$tmp/err")"
    else
        echo "ok: $name: $(head -1 "$tmp/err")"
    fi
}
expect_fail 1 "not a JPEG" "$tmp/color.tflite" "$tmp/notjpeg.jpg"
expect_fail 1 "empty file" "$tmp/color.tflite" "$tmp/empty.jpg"
expect_fail 1 "truncated JPEG" "$tmp/color.tflite" "$tmp/truncated.jpg"
expect_fail 1 "JPEG without scan" "$tmp/color.tflite" "$tmp/header_only.jpg"
expect_fail 1 "CMYK JPEG" "$tmp/color.tflite" "$tmp/cmyk.jpg"
expect_fail 1 "missing image" "$tmp/color.tflite" "$tmp/nothere.jpg"
expect_fail 1 "directory as image" "$tmp/color.tflite" "$tmp"
expect_fail 1 "missing model" "$tmp/nothere.tflite" "$tmp/red.jpg"
expect_fail 1 "a JPEG as model" "$tmp/red.jpg" "$tmp/red.jpg"
cp "$tmp/color.tflite" "$tmp/corrupt.tflite"
printf 'XXXX' | dd of="$tmp/corrupt.tflite" bs=1 seek=4 conv=notrunc 2>/dev/null
expect_fail 1 "model with a bad identifier" "$tmp/corrupt.tflite" "$tmp/red.jpg"
expect_fail 1 "model failing verification (shape)" "$tmp/badshape.tflite" "$tmp/red.jpg"
grep -q "invalid model (bad shape)" "$tmp/err" || bad "badshape: $(cat "$tmp/err")"
head -c 1000 "$tmp/color.tflite" >"$tmp/short.tflite"
expect_fail 1 "truncated model" "$tmp/short.tflite" --check
expect_fail 1 "raw input of the wrong size" "$tmp/color.tflite" "$tmp/red.jpg" --raw
expect_fail 2 "no arguments"
expect_fail 2 "unknown option" "$tmp/color.tflite" --frobnicate
expect_fail 2 "bad --top" "$tmp/color.tflite" "$tmp/red.jpg" --top zero
# one good and one bad image: the good one is still classified, exit 1
out=$("$infer" "$tmp/color.tflite" "$tmp/red.jpg" "$tmp/notjpeg.jpg" --top 1 2>/dev/null)
rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q "1\. red " || bad "mixed images: rc $rc, $out"
exit $fail
