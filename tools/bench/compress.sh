#!/bin/sh
# Gradient encodings of the ring (manta train --compress / --aggregate, docs/distributed.md):
#  1. ring bus bandwidth per encoding on loopback (manta bench allreduce --compress; sizes and
#     bandwidths counted in float32 bytes of the data, so a faster encoding shows a higher busbw);
#  2. the step time of `manta train --schedule smoke` per encoding, RANKS ranks on loopback
#     (median of the steps after the first two);
#  3. with root and ip netns: the same two across emulated links, one network namespace per rank
#     joined by veth pairs shaped to RATE with netem (tools/bench/netns_allreduce.sh and
#     netns_train.sh: addresses from 198.18.0.0/15, every namespace removed on exit).
# Prints markdown tables (medians) for docs/benchmarks.md.
#
# usage: tools/bench/compress.sh [-m MANTA] [-n RANKS] [-s SIZE] [-R REPEATS] [-S STEPS]
#                                [-r RATE] [-N]    (-N: loopback only)
set -eu
MANTA=build/bin/manta
N=2
SIZE=16M
REPEATS=5
STEPS=10
RATE=100mbit
NETNS=1
while getopts m:n:s:R:S:r:N opt; do
    case $opt in
    m) MANTA=$OPTARG ;;
    n) N=$OPTARG ;;
    s) SIZE=$OPTARG ;;
    R) REPEATS=$OPTARG ;;
    S) STEPS=$OPTARG ;;
    r) RATE=$OPTARG ;;
    N) NETNS= ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
    esac
done
[ -x "$MANTA" ] || { echo "compress.sh: $MANTA not found (make first, or -m PATH)" >&2; exit 1; }
MANTA=$(cd "$(dirname "$MANTA")" && pwd)/$(basename "$MANTA")
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export POCL_DEVICES="${POCL_DEVICES:-pthread}"
WIRES="none fp16 bf16 int8 fixed"
flag() { if [ "$1" = fixed ]; then echo "--aggregate fixed"; else echo "--compress $1"; fi; }

# busbw_table FILE...: one JSON document of manta bench allreduce per encoding
busbw_table() {
    python3 - "$@" <<'PY'
import json, sys
rows = [json.load(open(p)) for p in sys.argv[1:]]
base = rows[0]["results"][0]["time_us"]
print("| encoding | bytes (float32) | median time | busbw (float32 MB/s) | time vs none |")
print("|---|---|---|---|---|")
for d in rows:
    r = d["results"][0]
    print("| %s | %d | %.1f ms | %.1f | %.2fx |" % (d["compress"], r["bytes"], r["time_us"] / 1e3,
                                                1e3 * r["busbw_gbps"], r["time_us"] / base))
PY
}

# step_table FILE...: the progress lines of rank 0 of one run per encoding (name = file's)
step_table() {
    python3 - "$@" <<'PY'
import json, os, statistics, sys
out = []
for p in sys.argv[1:]:
    ms = [json.loads(l)["step_ms"] for l in open(p) if l.startswith('{"step":')]
    ms = ms[2:] if len(ms) > 4 else ms
    out.append((os.path.basename(p).split(".")[0], statistics.median(ms), len(ms)))
base = out[0][1]
print("| encoding | median step | steps | vs none |")
print("|---|---|---|---|")
for name, m, k in out:
    print("| %s | %.1f ms | %d | %.2fx |" % (name, m, k, m / base))
PY
}

echo "## loopback, $N ranks: ring-allreduce of $SIZE (manta bench allreduce)"
files=""
for w in $WIRES; do
    "$MANTA" bench allreduce -n "$N" --sizes "$SIZE" --repeats "$REPEATS" --compress "$w" --json \
        >"$TMP/ar-$w.json"
    files="$files $TMP/ar-$w.json"
done
busbw_table $files
echo
echo "## loopback, $N ranks: manta train --schedule smoke --batch 16, $STEPS steps"
files=""
for w in $WIRES; do
    # shellcheck disable=SC2046
    "$MANTA" launch -n "$N" -- "$MANTA" train --schedule smoke --batch 16 --eval-images 0 --json \
        --stop-after "$STEPS" --log-every 1 --ckpt-every 0 --timeout 60 --out "$TMP/run-$w" \
        $(flag "$w") >"$TMP/$w.log" 2>"$TMP/$w.err" || { cat "$TMP/$w.err"; exit 1; }
    files="$files $TMP/$w.log"
done
step_table $files

[ -n "$NETNS" ] || exit 0
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
    echo
    echo "(emulated links skipped: root and ip netns are needed)"
    exit 0
fi
echo
echo "## emulated $RATE links, $N ranks in network namespaces: ring-allreduce of $SIZE"
sh "$HERE/netns_allreduce.sh" -m "$MANTA" -n "$N" -r "$RATE" -d 1ms -s "$SIZE" -R 3 -c "$WIRES" -j \
    >"$TMP/netns-ar.txt"
grep '^#' "$TMP/netns-ar.txt" | head -2
i=0
files=""
grep '^{' "$TMP/netns-ar.txt" | while IFS= read -r line; do
    i=$((i + 1))
    printf '%s\n' "$line" >"$TMP/nar-$i.json"
done
busbw_table $(ls "$TMP"/nar-*.json | sort -t- -k2 -n)
echo
echo "## emulated $RATE links, $N ranks in network namespaces: manta train --schedule smoke, $STEPS steps"
files=""
for w in $WIRES; do
    # shellcheck disable=SC2046
    sh "$HERE/netns_train.sh" -m "$MANTA" -n "$N" -r "$RATE" -d 1ms -S "$STEPS" -L 1 -- \
        --schedule smoke --batch 16 $(flag "$w") >"$TMP/n-$w.log" 2>"$TMP/n-$w.err" ||
        { cat "$TMP/n-$w.err"; exit 1; }
    grep '^{"step":' "$TMP/n-$w.log" >"$TMP/$w.nlog" || true
    files="$files $TMP/$w.nlog"
done
grep '^#' "$TMP/n-none.log" | head -1
step_table $files
