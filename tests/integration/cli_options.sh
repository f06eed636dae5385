#!/bin/sh
# Every command's option table, read from the command itself (--options-json) and checked by
# tests/integration/cli_options.py: help for every option, unknown options refused, counts that
# say what 0 means, output paths checked before the work, --device 99 refused.
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$M" train --schedule smoke --stop-after 1 --log-every 1 --eval-images 0 --out "$out/cls" \
    >/dev/null 2>&1 || fail "classification training"
"$M" train --space stereo-cpu --schedule smoke --stop-after 1 --out "$out/st" >/dev/null 2>&1 ||
    fail "stereo training"
"$M" export --ckpt "$out/cls/latest.ckpt" --arch min --out "$out/min.tflite" --recal-images 64 \
    >/dev/null || fail "export"
"$M" image --out "$out/image.jpg" >/dev/null || fail "image"
mkdir "$out/scratch"
python3 tests/integration/cli_options.py "${BUILD:-build}" "$out/cls" "$out/st/latest.ckpt" \
    "$out/min.tflite" "$out/image.jpg" "$out/scratch"
# docs/cli.md's tables are the programs' own
python3 tools/cli_doc.py "${BUILD:-build}" "$out/st/latest.ckpt" --check docs/cli.md ||
    fail "docs/cli.md is out of date"
echo "docs/cli.md: the option tables match the programs'"
