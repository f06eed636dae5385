#!/bin/sh
# Parallelism of a training step's kernel launches, as `manta bench train --launches FILE`
# records them: every launch must use at least MIN work-items (default 16384) unless the
# values it writes are fewer than that. CLBlast's GEMMs are listed apart (CLBlast picks
# their work-items). Prints the launches that fall short and exits 1 when there are any.
#   tools/bench/launch_check.sh FILE [MIN]
set -eu
file=$1
min=${2:-16384}
[ -s "$file" ] || { echo "launch_check: $file: no launches recorded"; exit 1; }
awk -v min="$min" '
function num(key,   v) {
    if (!match($0, "\"" key "\":[0-9]+")) return -1
    v = substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
    return v + 0
}
{
    n++
    k = $0; sub(/^\{"kernel":"/, "", k); sub(/".*/, "", k)
    if ($0 ~ /"gemm":/) { gemms++; next }
    items = num("items"); out = num("outputs")
    if (items < 0) { print "launch_check: line " n " unreadable: " $0; bad++; next }
    if (items >= min) { ok++; next }
    if (out > 0 && out < min) { small[k]++; ok++; next }
    print "short: " $0
    bad++
}
END {
    printf "launch_check: %d launches: %d kernels with enough work-items or a small output, %d GEMMs (CLBlast), %d short of %d work-items\n", n, ok, gemms, bad, min
    for (k in small) printf "  small output: %s (%d launches)\n", k, small[k]
    exit bad > 0
}' "$file"
