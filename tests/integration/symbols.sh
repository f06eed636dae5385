#!/bin/sh
# Names: every global symbol of a runtime/ folder carries one of its prefixes
# (tools/check_symbols.py, docs/architecture.md "Names"), and an _impl.h header is included
# only by its own folder (tools/check_layers.py). Both checks are also shown to fail.
set -eu
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 tools/check_symbols.py "$BUILD" .
# a prefix taken from its folder's row: the symbols that carry it are named
mkdir -p "$tmp/root/docs"
ln -s "$PWD/runtime" "$tmp/root/runtime"
sed 's/| `profile\/` | `lat_`, `prof_`, `pt_` |/| `profile\/` | `lat_`, `prof_` |/' docs/architecture.md \
    >"$tmp/root/docs/architecture.md"
! cmp -s docs/architecture.md "$tmp/root/docs/architecture.md" || fail "the profile row was not changed"
if python3 tools/check_symbols.py "$BUILD" "$tmp/root" >"$tmp/out"; then
    fail "check_symbols.py passed without the pt_ prefix"
fi
grep -q "runtime/profile/timing.c: pt_now: no folder's prefix" "$tmp/out" ||
    { cat "$tmp/out"; fail "check_symbols.py did not name pt_now"; }
# another folder's _impl.h included: refused
mkdir -p "$tmp/lroot/docs"
ln -s "$PWD/runtime" "$tmp/lroot/runtime"
ln -s "$PWD/tests" "$tmp/lroot/tests"
cp docs/architecture.md "$tmp/lroot/docs/"
cp -r tools "$tmp/lroot/tools"
printf '#include "engine/plan_impl.h"\n' >>"$tmp/lroot/tools/manta/main.c"
if python3 tools/check_layers.py "$tmp/lroot" >"$tmp/lout"; then
    fail "check_layers.py passed with tools/manta including engine/plan_impl.h"
fi
grep -q 'plan_impl.h": an _impl.h header is internal to engine/' "$tmp/lout" ||
    { cat "$tmp/lout"; fail "check_layers.py did not name the _impl.h include"; }
echo "symbols: both checks pass here and fail where they should"
