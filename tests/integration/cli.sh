#!/bin/sh
# The manta program: help, device listing, clear one-line errors on bad input.
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect_error NAME PATTERN CMD...: non-zero exit, exactly one line on stderr matching PATTERN
expect_error() {
    name=$1 pattern=$2
    shift 2
    if "$@" >"$out/o" 2>"$out/e"; then fail "$name: exit status 0"; fi
    [ "$(wc -l <"$out/e")" -eq 1 ] || { cat "$out/e"; fail "$name: not one line"; }
    grep -q -e "$pattern" "$out/e" || { cat "$out/e"; fail "$name: no '$pattern'"; }
    echo "ok: $name: $(cat "$out/e")"
}

"$M" --help | grep -q "devices" || fail "--help"
for c in devices train train-tiny eval arch bench launch ckpt-diff kernels version; do
    "$M" $c --help >/dev/null || fail "$c --help"
done
"$M" --version >"$out/v" || fail "--version: exit status $?"
head -1 "$out/v" | grep -Eq '^manta [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]+|unknown|v?[0-9][^ )]*)' || fail "--version: $(cat "$out/v")"
"$M" version | cmp -s - "$out/v" || fail "'manta version' differs from 'manta --version'"
echo "ok: --version: $(head -1 "$out/v")"
"$M" devices | grep -q "compute units" || fail "devices"
"$M" devices --json >"$out/d.json"
grep -Eq '^\{"version":"[0-9]+\.[0-9]+\.[0-9]+","git":"[^"]+",' "$out/d.json" || fail "devices --json: no version and git"
if command -v python3 >/dev/null; then
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['devices'] and 'compute_units' in d['devices'][0]; assert d['version'] == open('VERSION').read().strip() and d['git']" "$out/d.json" || fail "devices --json"
fi

expect_error "unknown command" "unknown command" "$M" frobnicate
expect_error "bad --mode" "mode" "$M" train --mode model
expect_error "indivisible batch" "multiple of 2" env POCL_DEVICES="pthread pthread" "$M" train --devices all --batch 15 --schedule smoke --out "$out/odd"
expect_error "launch without a command" "needs -n N" "$M" launch -n 2
expect_error "unknown device" "no device matches" "$M" train-tiny --device no-such-gpu --steps 1
expect_error "device index" "out of range" "$M" train-tiny --device 99 --steps 1
expect_error "MANTA_DEVICE" "MANTA_DEVICE" env MANTA_DEVICE=nothing-like-this "$M" train-tiny --steps 1
expect_error "no OpenCL platform" "no OpenCL platform" env OCL_ICD_VENDORS=/nonexistent OCL_ICD_FILENAMES= "$M" devices
expect_error "missing data" "cannot open" "$M" train-tiny --data /nonexistent --steps 1
expect_error "bad option value" "--steps" "$M" train-tiny --steps zero

# corrupt data set: a truncated image file
mkdir "$out/data"
head -c 1000 /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz >"$out/data/train-images-idx3-ubyte.gz"
cp /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz "$out/data/"
expect_error "truncated data" "train-images-idx3-ubyte.gz" "$M" train-tiny --data "$out/data" --steps 1
# stereo-data --textures: a folder without photographs, one whose images are all smaller
# than the pairs, a folder that is not there: one line naming it, nothing written
mkdir "$out/nophotos" "$out/smallphotos"
echo "not an image" >"$out/nophotos/a.jpg"
expect_error "textures: no photograph" "nophotos: no readable JPEG or PNG image" \
    "$M" stereo-data "$out/sd" --count 2 --textures "$out/nophotos"
"$M" stereo-data "$out/tiny" --count 1 --width 16 --height 8 --max-disp 4 >/dev/null ||
    fail "stereo-data 16x8: exit status $?"
cp "$out/tiny/image_2/000000_10.png" "$out/smallphotos/a.png" # only its size matters here
expect_error "textures: too small" "smallphotos: no photograph of at least 128x64 px (the largest is 16x8)" \
    "$M" stereo-data "$out/sd" --count 2 --textures "$out/smallphotos"
expect_error "textures: no folder" "nowhere: cannot open folder" \
    "$M" stereo-data "$out/sd" --count 2 --textures "$out/nowhere"
[ ! -e "$out/sd" ] || fail "stereo-data --textures with a bad folder: the output folder was created"
echo "cli: all checks passed"
