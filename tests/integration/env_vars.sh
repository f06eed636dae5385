#!/bin/sh
# The MANTA_* environment variables are declared once (runtime/core/env.c) and read there only:
#  - no getenv() of a MANTA_* name anywhere else in runtime/, tools/ or tests/;
#  - `manta --help-env` lists the table, and README.md's "Environment variables" section names
#    exactly the same variables;
#  - every MANTA_* name README.md and docs/*.md mention is in the table, or is a name of the code
#    (a macro, an enum value, a -D flag), not a variable.
set -eu
M="${BUILD:-build}/bin/manta"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. getenv (or secure_getenv) of a MANTA_* name outside the table's file
if grep -rnE '(secure_)?getenv[[:space:]]*\([[:space:]]*"MANTA_' runtime tools tests \
    --include='*.c' --include='*.h' | grep -v '^runtime/core/env\.c:'; then
    fail "MANTA_* variables read with getenv() above: use manta_env_get() (runtime/core/env.h)"
fi
echo "ok: no getenv(\"MANTA_...\") outside runtime/core/env.c"

# 2. the table (manta --help-env) and README.md's list
"$M" --help-env >"$tmp/help" || fail "manta --help-env: exit status $?"
sed -n 's/^  \(MANTA_[A-Z0-9_]*\)$/\1/p' "$tmp/help" | sort >"$tmp/table"
n=$(wc -l <"$tmp/table")
[ "$n" -ge 10 ] || { cat "$tmp/help"; fail "manta --help-env lists $n variables"; }
[ "$(sort -u "$tmp/table" | wc -l)" -eq "$n" ] || fail "a variable twice in the table"
"$M" --help | grep -q -- "--help-env" || fail "manta --help does not mention --help-env"
sed -n '/^## Environment variables/,/^## /p' README.md | sed -n 's/^| `\(MANTA_[A-Z0-9_]*\)` |.*/\1/p' |
    sort >"$tmp/readme"
if ! cmp -s "$tmp/table" "$tmp/readme"; then
    diff "$tmp/table" "$tmp/readme" || true
    fail "manta --help-env (<) and README.md's Environment variables (>) differ"
fi
echo "ok: manta --help-env and README.md list the same $n variables"

# 3. every MANTA_* name of the docs: a variable of the table, or a name of the code
grep -ohE 'MANTA_[A-Z0-9_]+' README.md docs/*.md | sort -u >"$tmp/docs"
bad=""
for v in $(comm -23 "$tmp/docs" "$tmp/table"); do
    grep -rqE "#[[:space:]]*(define|ifdef|ifndef|undef)[[:space:]]+$v\\b|-D$v\\b|^[[:space:]]*$v[[:space:]]*(=|,)" \
        runtime tools Makefile boards 2>/dev/null || bad="$bad $v"
done
[ -z "$bad" ] || fail "documented but neither in the table nor a name of the code:$bad"
echo "ok: the $(wc -l <"$tmp/docs") MANTA_* names of README.md and docs/ are variables of the table or names of the code"
