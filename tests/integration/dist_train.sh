#!/bin/sh
# Data-parallel supernet training (runtime/train/dp.h) on loopback and the two
# PoCL CPU devices:
#  - 2 devices x B/2 and 2 ranks x 1 device equal 1 device x B within float
#    tolerance (synchronised batch norm, sharded dropout, summed gradients),
#    while the same run without batch-norm sync would not;
#  - subnet mode trains with 2 ranks x 2 devices and the replica checks pass;
#  - a distributed run stopped and resumed ends bit for bit equal to an
#    uninterrupted one;
#  - gradient buckets allreduced during the backward equal those allreduced after it, bit
#    for bit;
#  - manta launch reports a failing rank; a killed rank makes the others exit
#    non-zero within the deadline, naming it.
set -eu
M="$(pwd)/${BUILD:-build}/bin/manta"
export POCL_DEVICES="pthread pthread"
dir=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Low learning rate: the smoke network's gradients carry float noise that a full-size step
# amplifies from step to step (a 1e-6 change of one update grows to percent after 5 steps),
# which would hide what this test checks.
run() { "$M" train --schedule smoke --batch 16 --lr-scale 0.01 --eval-images 0 --json "$@"; }
. tests/common/ckpt_close.sh

# 1 device x 16 images, 3 steps (the first phase, whole network) then 5 (into the
# elastic-kernel phase with distillation from the teacher)
run --stop-after 3 --out "$dir/one3" >/dev/null 2>&1
run --stop-after 5 --out "$dir/one5" >/dev/null 2>&1
run --stop-after 5 --devices all --out "$dir/dev2" >"$dir/dev2.log" 2>&1 || { cat "$dir/dev2.log"; fail "2 devices"; }
grep -q '"sync_check":5,"replicas":2' "$dir/dev2.log" || fail "no replica check with 2 devices"
s1=$(sed -n 's/.*"step":1,.*"loss":\([0-9.]*\).*/\1/p' "$dir/one5/metrics.jsonl")
s2=$(sed -n 's/.*"step":1,.*"loss":\([0-9.]*\).*/\1/p' "$dir/dev2/metrics.jsonl")
[ "$s1" = "$s2" ] || fail "step 1 loss: 1 device $s1, 2 devices $s2"
# the teacher is the network after the 3 steps of the first phase; without batch-norm
# sync it differs by about 8e-4, with it by about 5e-6
close "$dir/one5/latest.ckpt" "$dir/dev2/latest.ckpt" teacher 5e-5 || fail "2 devices x 8 differ from 1 x 16 after 3 steps"
close "$dir/one5/latest.ckpt" "$dir/dev2/latest.ckpt" params 4e-4 || fail "2 devices x 8 differ from 1 x 16 after 5 steps"

"$M" launch -n 2 -- "$M" train --schedule smoke --batch 16 --lr-scale 0.01 --eval-images 0 --json \
    --stop-after 3 --timeout 20 --out "$dir/rank2" >"$dir/rank2.log" 2>&1 || { cat "$dir/rank2.log"; fail "2 ranks"; }
grep -q '"sync_check":3,"replicas":2' "$dir/rank2.log" || fail "no replica check with 2 ranks"
close "$dir/one3/latest.ckpt" "$dir/rank2/latest.ckpt" params 5e-5 || fail "2 ranks x 8 differ from 1 x 16"

# subnet mode: 2 ranks x 2 devices, replica check every 2 steps
"$M" launch -n 2 -- "$M" train --schedule smoke --batch 16 --eval-images 0 --json --mode subnet \
    --devices all --sync-check 2 --stop-after 6 --timeout 20 --out "$dir/sub" >"$dir/sub.log" 2>&1 ||
    { cat "$dir/sub.log"; fail "subnet mode"; }
[ "$(grep -c '"sync_check":[246],"replicas":4' "$dir/sub.log")" -eq 3 ] || { cat "$dir/sub.log"; fail "subnet mode replica checks"; }
grep -q '"step":6,' "$dir/sub/metrics.jsonl" || fail "subnet mode metrics"
echo "subnet mode: 6 steps, replicas in sync"

# a distributed run stopped after 4 steps and resumed equals an uninterrupted one
"$M" launch -n 2 -- "$M" train --schedule smoke --batch 16 --eval-images 0 --json --stop-after 8 \
    --timeout 20 --out "$dir/full" >"$dir/full.log" 2>&1 || { cat "$dir/full.log"; fail "uninterrupted"; }
"$M" launch -n 2 -- "$M" train --schedule smoke --batch 16 --eval-images 0 --json --stop-after 4 \
    --timeout 20 --out "$dir/part" >"$dir/part.log" 2>&1 || { cat "$dir/part.log"; fail "first part"; }
"$M" launch -n 2 -- "$M" train --resume --eval-images 0 --json --stop-after 4 --timeout 20 \
    --out "$dir/part" >>"$dir/part.log" 2>&1 || { cat "$dir/part.log"; fail "resumed part"; }
cmp "$dir/full/latest.ckpt" "$dir/part/latest.ckpt" || fail "resumed distributed run differs"
echo "resume: identical checkpoints after 8 steps"

# gradient buckets allreduced during the backward (default) give the same bits as after it;
# 3 ranks, so that the reduction order of every element matters (a + b = b + a for 2)
for v in overlap no-overlap; do
    flag=""; [ "$v" = overlap ] || flag=--no-overlap
    "$M" launch -n 3 -- "$M" train --schedule smoke --batch 24 --lr-scale 0.01 --eval-images 0 \
        --json --stop-after 3 --timeout 20 --bucket-kib 256 $flag --out "$dir/$v" >"$dir/$v.log" 2>&1 ||
        { cat "$dir/$v.log"; fail "3 ranks, $v"; }
done
cmp "$dir/overlap/latest.ckpt" "$dir/no-overlap/latest.ckpt" || fail "overlapped buckets differ from buckets after the backward"
echo "buckets: overlapped and non-overlapped allreduces give identical checkpoints (3 ranks)"

# manta launch: a failing rank is named with its status, the others are stopped
start=$(date +%s)
if "$M" launch -n 3 --grace 1 -- sh -c '[ "$RANK" = 1 ] && exit 3; sleep 30' 2>"$dir/launch.err"; then
    fail "launch: exit status 0 with a failing rank"
else
    rc=$?
fi
cat "$dir/launch.err"
[ "$rc" -eq 3 ] || fail "launch: exit status $rc, expected 3"
grep -q "rank 1 (pid [0-9]*) exited with status 3" "$dir/launch.err" || fail "launch: failing rank not named"
[ $(( $(date +%s) - start )) -lt 10 ] || fail "launch: the other ranks were not stopped"
"$M" launch --help | grep -q "usage: manta launch" || fail "launch --help"

# a rank killed during training: the other exits non-zero within the deadline, naming it
# the rendezvous port: a free one the kernel chooses (tests run side by side, tests/run.sh)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
for r in 0 1; do
    RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port MANTA_SECRET=$secret \
        "$M" train --schedule quick --batch 16 --eval-images 0 --json --log-every 1 --timeout 5 \
        --out "$dir/kill" >"$dir/kill$r.log" 2>"$dir/kill$r.err" &
    eval "pid$r=$!"
    pids="$pids $!"
done
i=0
until grep -q '"step":2,' "$dir/kill0.log" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 300 ] || { cat "$dir/kill0.err" "$dir/kill1.err"; fail "the job did not start"; }
    sleep 0.1
done
kill -9 "$pid1"
start=$(date +%s)
if wait "$pid0"; then fail "rank 0 exited 0 after rank 1 died"; fi
took=$(( $(date +%s) - start ))
cat "$dir/kill0.err"
[ "$took" -le 8 ] || fail "rank 0 took $took s to notice (deadline 5 s)"
grep -q "rank 0.*step [0-9]*.*rank 1" "$dir/kill0.err" || fail "rank 0's error does not name the step and rank 1"
echo "killed rank: rank 0 exited in $took s"
echo "dist train: all checks passed"
