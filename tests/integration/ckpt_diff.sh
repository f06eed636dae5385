#!/bin/sh
# manta ckpt-diff is a check that can fail: checkpoints of different kinds (classification,
# stereo) or search spaces, and float32 sections in one file only, are refused with one line
# and exit status 1 before anything is compared; equal checkpoints pass --tol 0.
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# refused NAME PATTERN A B: exit status 1, nothing on stdout, one line on stderr matching PATTERN
refused() {
    name=$1 pattern=$2
    set +e
    "$M" ckpt-diff "$3" "$4" --tol 0 >"$out/o" 2>"$out/e"
    rc=$?
    set -e
    [ "$rc" -eq 1 ] || { cat "$out/e"; fail "$name: exit status $rc, not 1"; }
    [ ! -s "$out/o" ] || { cat "$out/o"; fail "$name: compared sections anyway"; }
    [ "$(wc -l <"$out/e")" -eq 1 ] || { cat "$out/e"; fail "$name: not one line"; }
    grep -q -e "$pattern" "$out/e" || { cat "$out/e"; fail "$name: no '$pattern'"; }
    echo "ok: $name: $(cat "$out/e")"
}

train() {
    run=$1
    shift
    "$M" train --schedule smoke --out "$out/$run" "$@" >"$out/$run.log" 2>&1 ||
        { cat "$out/$run.log"; fail "training $run"; }
}
# Two spaces that differ in one width only (the name is the same).
sed 's/{"width": 64, "stride": 2/{"width": 56, "stride": 2/' models/ofa_cpu_default.json >"$out/narrow.json"
! cmp -s models/ofa_cpu_default.json "$out/narrow.json" || fail "the narrow space is not narrower"
train cls --stop-after 1 --eval-images 0
train cls2 --stop-after 1 --eval-images 0
train narrow --space "$out/narrow.json" --stop-after 1 --eval-images 0
train cls-done --eval-images 0
train stereo --space stereo-cpu --stop-after 1

"$M" ckpt-diff "$out/cls/latest.ckpt" "$out/cls2/latest.ckpt" --tol 0 >"$out/same" ||
    fail "two identical runs: exit status $?"
[ "$(grep -c 'floats' "$out/same")" -ge 3 ] || { cat "$out/same"; fail "identical runs: sections not listed"; }
refused "classification against stereo" \
    "cls/latest.ckpt is a 'manta-ofa-train' checkpoint, .*stereo/latest.ckpt is a 'manta-stereo-train' checkpoint" \
    "$out/cls/latest.ckpt" "$out/stereo/latest.ckpt"
refused "stereo against classification" "nothing to compare" "$out/stereo/latest.ckpt" "$out/cls/latest.ckpt"
refused "two spaces of one name" "different search spaces ('cpu-default' and 'cpu-default', whose specs differ)" \
    "$out/cls/latest.ckpt" "$out/narrow/latest.ckpt"
refused "a section in one file only" "float32 section 'teacher' is in .*cls-done/latest.ckpt, not in .*cls/latest.ckpt" \
    "$out/cls-done/latest.ckpt" "$out/cls/latest.ckpt"
refused "the same, the other way" "float32 section 'teacher' is in .*cls-done/latest.ckpt, not in" \
    "$out/cls/latest.ckpt" "$out/cls-done/latest.ckpt"
echo "ckpt-diff: all checks passed"
