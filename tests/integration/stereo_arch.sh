#!/bin/sh
# manta arch on the stereo spaces: the layer table and totals of the built-in
# stereo-cpu, the JSON of models/stereo_gpu.json (layer MACs and parameters sum
# to the totals), sample / max / min, the decoder's elastic width, and one-line errors for
# what does not fit.
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$M" arch --space stereo-cpu >"$out/cpu.txt" || fail "arch --space stereo-cpu: exit status $?"
cat "$out/cpu.txt"
grep -Eq '^[0-9.]+ M MACs, [0-9.]+ M parameters, input 64x128x3 left and right, 6 predictions$' \
    "$out/cpu.txt" || fail "stereo-cpu: no totals line"
grep -Eq '^total +[0-9]+ +[0-9]+$' "$out/cpu.txt" || fail "stereo-cpu: no total row"
for l in stem u1.b1.expand corr redir corr.concat d5.pred d0.deconv d0.concat d0.pred; do
    grep -q "^$l " "$out/cpu.txt" || fail "stereo-cpu: no layer $l"
done
grep -q '^d0.pred .* 64x128x1 ' "$out/cpu.txt" || fail "stereo-cpu: finest prediction not 64x128"

"$M" arch --space models/stereo_gpu.json --json >"$out/gpu.json" || fail "--json: exit status $?"
grep -Eq '"task":"stereo".*"macs":[0-9]+,"params":[0-9]+' "$out/gpu.json" || fail "--json: no totals"
if command -v python3 >/dev/null; then
    python3 - "$out/gpu.json" <<'PY' || fail "--json: layers do not add up"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["space"] == "stereo-gpu" and d["input"] == [384, 768, 3] and d["predictions"] == 7
L = d["layers"]
assert sum(l["macs"] for l in L) == d["macs"] and sum(l["params"] for l in L) == d["params"]
assert [l["name"] for l in L if l["type"] == "corr"] == ["corr"]
assert L[-1]["out"] == [384, 768, 1] and L[0]["views"] == 2
print("stereo-gpu max: %.2f G MACs, %.3f M parameters" % (d["macs"] / 1e9, d["params"] / 1e6))
PY
fi

# min below max; sample; an architecture as JSON without "r"
hi=$("$M" arch max --space stereo-cpu --json | sed -n 's/.*"macs":\([0-9]*\).*/\1/p')
lo=$("$M" arch min --space stereo-cpu --json | sed -n 's/.*"macs":\([0-9]*\).*/\1/p')
[ -n "$hi" ] && [ -n "$lo" ] && [ "$lo" -lt "$hi" ] || fail "min ($lo) not below max ($hi)"
[ "$("$M" arch sample --space stereo-cpu --count 3 | grep -c 'M MACs')" -eq 3 ] || fail "sample"
"$M" arch min --space stereo-cpu | head -1 | sed 's/,"r":\[64\]//' >"$out/min.arch"
grep -q '"r"' "$out/min.arch" && fail "min.arch still holds r"
"$M" arch describe "$out/min.arch" --space stereo-cpu --json | grep -q "\"macs\":$lo," ||
    fail "describe FILE (without r) differs from min"
# the decoder's elastic width: min's levels at half width; min's encoder with the widest
# decoder lies between min and max
grep -q '"dw":\[32,24,16,12,8\]}' "$out/min.arch" || fail "min: decoder not at half width"
sed 's/"dw":\[[0-9,]*\]/"dw":[64,48,32,24,16]/' "$out/min.arch" >"$out/wide.arch"
mid=$("$M" arch describe "$out/wide.arch" --space stereo-cpu --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["macs"])')
[ -n "$mid" ] && [ "$mid" -gt "$lo" ] && [ "$mid" -lt "$hi" ] ||
    fail "widest decoder on min's encoder: $mid MACs, not between $lo and $hi"
echo "ok: stereo-cpu MACs: min $lo, min with the widest decoder $mid, max $hi"

# classification spaces are unchanged
"$M" arch max --space cpu-default | grep -q 'input 32x32x1' || fail "cpu-default max"

# one-line errors, exit status 1 (2 for usage)
expect_error() {
    name=$1 code=$2 pattern=$3
    shift 3
    rc=0
    "$@" >"$out/o" 2>"$out/e" || rc=$?
    [ "$rc" -eq "$code" ] || { cat "$out/e"; fail "$name: exit status $rc, not $code"; }
    [ "$(wc -l <"$out/e")" -eq 1 ] || { cat "$out/e"; fail "$name: not one line"; }
    grep -q -e "$pattern" "$out/e" || { cat "$out/e"; fail "$name: no '$pattern'"; }
    echo "ok: $name: $(cat "$out/e")"
}
sed 's/"height": 64/"height": 48/' models/stereo_cpu.json >"$out/bad.json"
expect_error "crop not divisible" 1 'space.crop: "height"' "$M" arch --space "$out/bad.json"
sed 's/"after_unit": 2/"after_unit": 5/' models/stereo_cpu.json >"$out/bad.json"
expect_error "correlation level" 1 '"after_unit"' "$M" arch --space "$out/bad.json"
expect_error "--res" 2 'crop' "$M" arch max --space stereo-cpu --res 32
expect_error "bad arch" 1 '"ks"' "$M" arch --space stereo-cpu --arch '{"ks":[3],"e":[3],"d":[2]}'
expect_error "r not the crop" 1 'crop height 64' "$M" arch --space stereo-cpu \
    --arch "$(sed 's/}$/,"r":[32]}/' "$out/min.arch")"
expect_error "bad decoder width" 1 'dw\[1\] = 25' "$M" arch --space stereo-cpu \
    --arch "$(sed 's/"dw":\[[0-9,]*\]/"dw":[32,25,16,12,8]/' "$out/min.arch")"
expect_error "no such space" 1 'stereo-cpu' "$M" arch --space /nonexistent.json
echo "stereo arch: all checks passed"
