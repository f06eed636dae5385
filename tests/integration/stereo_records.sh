#!/bin/sh
# The stereo trainer's run records (core/records.h, docs/monitor.md): a run ended by
# --stop-after writes the stopped record after its checkpoint, as classification does, so that
# manta monitor shows it stopped, without a rank_dead alert; its resume writes a new job record
# and ends with done. The records carry the schema version and the phase as name and 0-based
# index.
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
mpid=""
cleanup() {
    [ -n "$mpid" ] && kill "$mpid" 2>/dev/null && wait "$mpid" 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ARGS="--space tests/data/stereo_tiny.json --schedule smoke --batch 2 --train-pairs 32 --eval-pairs 4 --recal-pairs 2 --log-every 1"
m="$out/run/metrics.jsonl"

"$M" train $ARGS --out "$out/run" --stop-after 4 >"$out/a.txt" || fail "train --stop-after: $?"
tail -2 "$m" | head -1 | grep -q '^{"event":"checkpoint","time":[0-9.]*,"step":4,"path":"latest.ckpt"}$' ||
    fail "the checkpoint is not the last but one record"
tail -1 "$m" | grep -q '^{"event":"stopped","time":[0-9.]*,"step":4,"signal":false}$' ||
    fail "no stopped record after --stop-after: $(tail -1 "$m")"
head -1 "$m" | grep -q '^{"event":"job","schema":1,"time":' || fail "no schema in the job record"
grep -q '^{"event":"step","step":4,"phase":"kernel","phase_index":1,"loss":' "$m" ||
    fail "step 4 is not of phase kernel, index 1"
grep -q '^{"event":"phase_end","phase":"full","phase_index":0,"name":"full","step":3,' "$m" ||
    fail "no phase end of phase full, index 0"

# the monitor: stopped, and no rank is dead (its heartbeat is old, the run is over)
"$M" monitor "$out/run" --listen 127.0.0.1:0 --json --rank-timeout 1 >"$out/mon.log" 2>&1 &
mpid=$!
i=0
until grep -q '"port"' "$out/mon.log"; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "manta monitor did not start: $(cat "$out/mon.log")"
    sleep 0.1
done
port=$(grep -o '"port":[0-9]*' "$out/mon.log" | cut -d: -f2)
sleep 2 # past --rank-timeout
run=$(curl -fsS -m 5 "http://127.0.0.1:$port/api/run")
echo "$run" | grep -q '"state":"stopped"' || fail "the monitor does not show the run stopped: $run"
echo "$run" | grep -q '"finished":true' || fail "the monitor does not show the run finished"
echo "$run" | grep -q 'rank_dead' && fail "a rank_dead alert for a stopped run: $run"
echo "$run" | grep -q '"phase":{"index":1,"count":6,"name":"kernel"' ||
    fail "the monitor's phase is not kernel (index 1 of 6): $run"
kill "$mpid"
wait "$mpid" || fail "manta monitor did not exit 0 on SIGTERM"
mpid=""

# the resume: a new job record, then the rest of the schedule and done
"$M" train --space tests/data/stereo_tiny.json --out "$out/run" --resume --log-every 1 \
    --eval-pairs 4 --recal-pairs 2 >"$out/b.txt" || fail "train --resume: $?"
[ "$(grep -c '^{"event":"job",' "$m")" = 2 ] || fail "not two job records"
grep -q '^{"event":"job","schema":1,"time":[0-9.]*,"task":"stereo",.*"start_step":4,' "$m" ||
    fail "the resumed job record does not start at step 4"
tail -1 "$m" | grep -q '^{"event":"done","time":[0-9.]*,"step":18,"seconds":' ||
    fail "the resumed run does not end with done"
[ "$(grep -c '"event":"stopped"' "$m")" = 1 ] || fail "not one stopped record"
echo "stereo records: stopped after 4 steps, shown stopped, resumed to done"
