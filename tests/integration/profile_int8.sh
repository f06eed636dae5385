#!/bin/sh
# manta-profile --int8 on a tiny classification space (short timings): the int8 table says
# "dtype": "int8" and holds every key; --validate 3 --int8 against whole int8 sub-networks;
# --arch max --int8 measures the int8 model (a smaller file than the float one); a float
# table with --int8, an int8 table without it, and --int8 on a stereo space are refused with
# one line naming both, nothing written.
set -eu
P="${BUILD:-build}/bin/manta-profile"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# num KEY FILE: the number after "KEY": in FILE
num() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }

cat >"$out/tiny.json" <<'EOF'
{"format": "manta-ofa-space", "version": 1, "name": "tiny8", "input_channels": 1,
 "classes": 4, "resolutions": [16, 20], "kernel_sizes": [3, 5], "expand_ratios": [2, 3],
 "depths": [1, 2], "stem": {"width": 8, "kernel": 3, "stride1_max_res": 64, "act": "h-swish"},
 "first_block": {"width": 8, "act": "relu"},
 "units": [{"width": 8, "stride": 2, "act": "relu", "se": false},
           {"width": 16, "stride": 2, "act": "h-swish", "se": true}],
 "head": {"expand": 32, "mix": 0, "dropout": 0.1}}
EOF
S="--space $out/tiny.json"
fast="--min-time-ms 2 --runs 5 --passes 2"
n=$("$P" $S --list 2>/dev/null | wc -l)
[ "$n" -gt 20 ] || fail "$n keys"

"$P" $S --int8 --out "$out/q8.json" $fast --calib 2 --quiet --json >"$out/prof.json" ||
    fail "profile --int8: exit $?"
grep -q '"dtype":[[:space:]]*"int8"' "$out/q8.json" || fail "the table does not say int8"
grep -q '"dtype":"int8"' "$out/prof.json" || fail "profile --json: $(cat "$out/prof.json")"
[ "$(grep -c '"p10_ms"' "$out/q8.json")" = "$n" ] || fail "the int8 table lacks keys"
"$P" $S --out "$out/f32.json" $fast --calib 2 --quiet >/dev/null || fail "profile: exit $?"
grep -q '"dtype":[[:space:]]*"float32"' "$out/f32.json" || fail "the float table does not say so"

"$P" $S --int8 --lut "$out/q8.json" --validate 3 $fast --quiet --json --csv "$out/v.csv" \
    >"$out/val.json" || fail "--validate 3 --int8: exit $?"
grep -q '"networks":3' "$out/val.json" || fail "--validate 3 --int8: $(cat "$out/val.json")"
grep -q '"kendall_tau"' "$out/val.json" || fail "no Kendall tau: $(cat "$out/val.json")"
[ "$(wc -l <"$out/v.csv")" = 4 ] || fail "validation CSV"

"$P" $S --int8 --lut "$out/q8.json" --arch max $fast --json >"$out/max8.json" ||
    fail "--arch max --int8: exit $?"
"$P" $S --lut "$out/f32.json" --arch max $fast --json >"$out/max.json" || fail "--arch max"
f8=$(num file_bytes "$out/max8.json")
f32=$(num file_bytes "$out/max.json")
[ -n "$f8" ] && [ -n "$f32" ] && [ "$f8" -lt "$f32" ] ||
    fail "int8 file $f8 bytes, float $f32: $(cat "$out/max8.json")"
a8=$(num arena_bytes "$out/max8.json")
a32=$(num arena_bytes "$out/max.json")
[ "$a8" -lt "$a32" ] || fail "int8 arena $a8 bytes, float $a32"
"$P" $S --int8 --lut "$out/q8.json" --arch min $fast | grep -q 'int8, weights synthetic' ||
    fail "--arch min --int8: the text does not say int8"

# refused: a table of the other kind, one line naming both; the CSV not written
refused() { # WANT_RC NEEDLE ARGS...
    want=$1 needle=$2
    shift 2
    set +e
    "$P" "$@" >/dev/null 2>"$out/err"
    rc=$?
    set -e
    [ "$rc" = "$want" ] || fail "$*: exit $rc, not $want"
    [ "$(wc -l <"$out/err")" = 1 ] || fail "$*: not one line: $(cat "$out/err")"
    grep -q -- "$needle" "$out/err" || fail "$*: '$needle' not in: $(cat "$out/err")"
    echo "refused as expected: $(cat "$out/err")"
}
refused 1 'q8.json: an int8 latency table ("dtype": "int8"), a float32 one is needed' \
    $S --lut "$out/q8.json" --validate 3 $fast --csv "$out/no.csv"
[ ! -e "$out/no.csv" ] || fail "a refused validation wrote its CSV"
refused 1 'f32.json: a float32 latency table ("dtype": "float32"), an int8 one is needed' \
    $S --int8 --lut "$out/f32.json" --validate 3 $fast
refused 1 'an int8 latency table' $S --lut "$out/q8.json" --arch max
refused 2 'stereo' --space tests/data/stereo_tiny.json --int8 --out "$out/st.json"
[ ! -e "$out/st.json" ] || fail "a refused profile wrote its table"
echo "ok: int8 table of $n keys; int8 --arch max $f8 bytes (float $f32), arena $a8 (float $a32)"
