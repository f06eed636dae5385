#!/bin/sh
# The tree is formatted by its .clang-format: every C file under runtime/, tools/, tests/ and
# boards/ is what clang-format makes of it (clang-format -i FILE formats one).
set -eu
command -v clang-format >/dev/null || { echo "FAIL: clang-format is not installed (make deps)"; exit 1; }
files=$(find runtime tools tests boards -name '*.[ch]' | sort)
n=$(echo "$files" | wc -l)
[ "$n" -gt 300 ] || { echo "FAIL: only $n C files found"; exit 1; }
# shellcheck disable=SC2086
if ! clang-format --dry-run --Werror $files 2>"${TMPDIR:-/tmp}/format.$$"; then
    grep -m 10 'error:' "${TMPDIR:-/tmp}/format.$$"
    rm -f "${TMPDIR:-/tmp}/format.$$"
    echo "FAIL: files not formatted by .clang-format (clang-format -i FILE)"
    exit 1
fi
rm -f "${TMPDIR:-/tmp}/format.$$"
echo "format: $n C files as .clang-format has them"
