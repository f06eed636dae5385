#!/bin/sh
# SIGINT stops a stereo training run (manta train --space stereo-cpu, smoke schedule) after
# the step under way: exit status 130, latest.ckpt and its checkpoint record, then the
# stopped record with "signal":true; --ckpt-every 2 checkpoints on its cadence; --resume
# finishes with a checkpoint equal, byte for byte, to an uninterrupted run's.
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
pid=""
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ARGS="--space stereo-cpu --schedule smoke --batch 2 --train-pairs 32 --eval-pairs 2 --recal-pairs 2 --log-every 1"
EVAL="--eval-pairs 2 --recal-pairs 2 --log-every 1"

"$M" train $ARGS --out "$out/a" >"$out/a.txt" || fail "uninterrupted run: exit status $?"
tail -1 "$out/a/metrics.jsonl" | grep -q '"event":"done","time":[0-9.]*,"step":18,' ||
    fail "the uninterrupted run does not end with done"

# the run to interrupt: SIGINT once it has done 4 steps (inside the second phase; at most
# 5 minutes)
"$M" train $ARGS --ckpt-every 2 --out "$out/b" >"$out/b.txt" 2>&1 &
pid=$!
i=0
until grep -Eq '"event":"step","step":([4-9]|1[0-7]),' "$out/b/metrics.jsonl" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 3000 ] || fail "no step 4 within 5 minutes: $(cat "$out/b.txt")"
    kill -0 "$pid" 2>/dev/null || fail "the run ended before the signal: $(cat "$out/b.txt")"
    sleep 0.1
done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" = 130 ] || fail "exit status $rc after SIGINT (130 expected): $(cat "$out/b.txt")"
m="$out/b/metrics.jsonl"
tail -1 "$m" | grep -q '^{"event":"stopped","time":[0-9.]*,"step":[0-9]*,"signal":true}$' ||
    fail "no stopped record with signal true: $(tail -1 "$m")"
at=$(tail -1 "$m" | sed 's/.*"step":\([0-9]*\).*/\1/')
[ "$at" -ge 4 ] && [ "$at" -lt 18 ] || fail "stopped at step $at"
# the last checkpoint record is latest.ckpt at that step (a phase's end adds its evaluation)
grep '"event":"checkpoint"' "$m" | tail -1 |
    grep -q "^{\"event\":\"checkpoint\",\"time\":[0-9.]*,\"step\":$at,\"path\":\"latest.ckpt\"}\$" ||
    fail "the last checkpoint is not latest.ckpt at step $at: $(grep '"event":"checkpoint"' "$m" | tail -1)"
grep -q '"event":"checkpoint","time":[0-9.]*,"step":2,"path":"latest.ckpt"' "$m" ||
    fail "--ckpt-every 2: no latest.ckpt at step 2"
grep -q "stopped after $at steps" "$out/b.txt" || fail "no stop line: $(cat "$out/b.txt")"
grep -q '"event":"error"' "$m" && fail "an error record after SIGINT"

"$M" train --space stereo-cpu --out "$out/b" --resume $EVAL >"$out/b2.txt" ||
    fail "train --resume: exit status $?"
grep -q "^{\"event\":\"job\",.*\"start_step\":$at," "$m" || fail "the resumed run does not start at step $at"
tail -1 "$m" | grep -q '"event":"done","time":[0-9.]*,"step":18,' || fail "the resumed run does not end with done"
cmp "$out/a/latest.ckpt" "$out/b/latest.ckpt" ||
    fail "the interrupted and resumed run's checkpoint differs from the uninterrupted run's"
grep '"event":"phase_end"' "$out/a/metrics.jsonl" | sed 's/"time":[0-9.]*//' >"$out/a.ends"
grep '"event":"phase_end"' "$m" | sed 's/"time":[0-9.]*//' >"$out/b.ends"
cmp "$out/a.ends" "$out/b.ends" || fail "the evaluations differ from the uninterrupted run's"
echo "stereo SIGINT: stopped after step $at with latest.ckpt, resumed to the uninterrupted run's checkpoint"
