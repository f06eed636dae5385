#!/bin/sh
# A short real training run on Fashion-MNIST: progress lines, JSON lines, and
# a test accuracy clearly above chance (10%) after 60 steps.
set -eu
M="${BUILD:-build}/bin/manta"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$M" train-tiny --steps 60 --batch 32 --lr 0.1 --log-every 20 --eval-images 1000 --json >"$log"
cat "$log"
[ "$(grep -c '"step":' "$log")" -eq 3 ] || { echo "FAIL: expected 3 progress lines"; exit 1; }
acc=$(sed -n 's/.*"test_top1":\([0-9.]*\).*/\1/p' "$log")
[ -n "$acc" ] || { echo "FAIL: no test_top1"; exit 1; }
awk -v a="$acc" 'BEGIN { exit !(a >= 0.5) }' || { echo "FAIL: test top-1 $acc < 0.5"; exit 1; }
echo "train smoke: test top-1 $acc"
