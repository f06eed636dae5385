#!/bin/sh
# manta-profile on a stereo space: the tiny space's latency table profiled in the engine
# (short timings), its keys listed, one sub-network predicted and measured, --validate 3
# against whole sub-networks; a table of another space (classification, another stereo
# space) is refused with one line, exit 1.
set -eu
P="${BUILD:-build}/bin/manta-profile"
S=tests/data/stereo_tiny.json
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$P" --space $S --list >"$out/keys" 2>"$out/list.err" || fail "--list: exit $?"
n=$(wc -l <"$out/keys")
[ "$n" -gt 20 ] || fail "$n keys"
for k in Conv expanded_conv Correlation Redirect Concat TransposeConv ResizeBilinear DecConv Pred; do
    grep -q "^$k-input:" "$out/keys" || fail "no $k key"
done
[ "$(grep -c '^Correlation-' "$out/keys")" = 1 ] || fail "the correlation is not one key"

"$P" --space $S --out "$out/t.json" --min-time-ms 2 --runs 5 --passes 2 --calib 2 --quiet \
    --json >"$out/prof.json" || fail "profile: exit $?"
grep -q '"space":"stereo-tiny"' "$out/prof.json" || fail "profile --json: $(cat "$out/prof.json")"
grep -q '"name":[[:space:]]*"stereo-tiny"' "$out/t.json" || fail "the table does not name its space"
[ "$(grep -c '"p10_ms"' "$out/t.json")" = "$n" ] || fail "the table lacks keys"

"$P" --space $S --lut "$out/t.json" --arch max --min-time-ms 2 --json >"$out/max.json" ||
    fail "--arch max: exit $?"
grep -q '"dw":\[' "$out/max.json" || fail "--arch max: $(cat "$out/max.json")"
"$P" --space $S --lut "$out/t.json" --validate 3 --min-time-ms 2 --runs 5 --quiet --json \
    --csv "$out/v.csv" >"$out/val.json" || fail "--validate: exit $?"
cat "$out/val.json"
grep -q '"networks":3' "$out/val.json" || fail "--validate 3"
[ "$(wc -l <"$out/v.csv")" = 4 ] || fail "validation CSV"

# refused: the table for a classification space and for another stereo space
for sp in cpu-default stereo-cpu; do
    set +e
    "$P" --space $sp --lut "$out/t.json" --validate 3 2>"$out/err" >/dev/null
    rc=$?
    set -e
    [ $rc = 1 ] && [ "$(wc -l <"$out/err")" = 1 ] || fail "$sp: exit $rc, $(cat "$out/err")"
    grep -q "made for space 'stereo-tiny'" "$out/err" || fail "$sp: $(cat "$out/err")"
done
echo "stereo profile: ok"
