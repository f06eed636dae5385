#!/bin/sh
# manta train on a stereo space (tests/data/stereo_tiny.json) over two PoCL CPU devices and
# two ranks (loopback):
#  - 2 devices x 2 pairs and 2 ranks x 2 pairs equal 1 device x 4 pairs within float
#    rounding after 5 steps (into the distilling kernel phase);
#  - subnet mode with 2 ranks x 2 devices runs the whole smoke schedule (every rank
#    evaluates at the phase ends, rank 0 writes checkpoints), the replica checks pass, and
#    its metrics.jsonl starts with the job record (task, replicas, mode), its step records
#    and event file carry both ranks' figures;
#  - a batch that does not split over the replicas is one clear error.
set -eu
M="${BUILD:-build}/bin/manta"
export POCL_DEVICES="pthread pthread"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ARGS="--space tests/data/stereo_tiny.json --schedule smoke --batch 4 --train-pairs 64 --eval-pairs 8 --recal-pairs 8 --log-every 1"
. tests/common/ckpt_close.sh

"$M" train $ARGS --stop-after 5 --out "$dir/one" >"$dir/one.log" 2>&1 || { cat "$dir/one.log"; fail "1 device"; }
"$M" train $ARGS --stop-after 5 --devices all --out "$dir/dev2" >"$dir/dev2.log" 2>&1 ||
    { cat "$dir/dev2.log"; fail "2 devices"; }
grep -q 'data parallel: 1 rank(s) x 2 device(s), data mode, 2 pairs per device' "$dir/dev2.log" ||
    { cat "$dir/dev2.log"; fail "no data-parallel line"; }
close "$dir/one/latest.ckpt" "$dir/dev2/latest.ckpt" params 1e-5 || fail "2 devices x 2 differ from 1 x 4"
close "$dir/one/latest.ckpt" "$dir/dev2/latest.ckpt" teacher 1e-5 || fail "2 devices: teacher"
"$M" launch -n 2 -- "$M" train $ARGS --stop-after 5 --timeout 20 --out "$dir/r2" >"$dir/r2.log" 2>&1 ||
    { cat "$dir/r2.log"; fail "2 ranks"; }
close "$dir/one/latest.ckpt" "$dir/r2/latest.ckpt" params 1e-5 || fail "2 ranks x 2 differ from 1 x 4"

# subnet mode, 2 ranks x 2 devices, the whole smoke schedule, a replica check every step
"$M" launch -n 2 -- "$M" train $ARGS --mode subnet --devices all --sync-check 1 --timeout 30 \
    --out "$dir/sub" >"$dir/sub.log" 2>&1 || { cat "$dir/sub.log"; fail "subnet mode"; }
grep -q 'data parallel: 2 rank(s) x 2 device(s), subnet mode, 1 pairs per device' "$dir/sub.log" ||
    fail "no subnet-mode line"
[ "$(grep -c '"event":"phase_end"' "$dir/sub/metrics.jsonl")" = 6 ] || fail "subnet: not 6 phase ends"
head -n 1 "$dir/sub/metrics.jsonl" | grep -q '"event":"job".*"task":"stereo".*"replicas":4,"mode":"subnet"' ||
    { head -n 1 "$dir/sub/metrics.jsonl"; fail "subnet: no job record"; }
grep -q '"event":"done"' "$dir/sub/metrics.jsonl" || fail "subnet: no done record"
# every rank's figures in the step records and in the TensorBoard event file
grep '"event":"step"' "$dir/sub/metrics.jsonl" | tail -n 1 |
    grep -q '"ranks":\[{"rank":0,"device":"[^"]*","host":"[^"]*","images_per_s":[0-9.]*,"compute_s":[0-9.]*,.*{"rank":1,"device":null,"host":null,"images_per_s":[0-9.]*[1-9]' ||
    { grep '"event":"step"' "$dir/sub/metrics.jsonl" | tail -n 1; fail "subnet: no figures of both ranks"; }
"$M" events "$dir"/sub/events.out.tfevents.* --tag rank >"$dir/ev.txt" || fail "subnet: event file"
for r in 0 1; do
    grep -q "^rank$r/allreduce_wait_s  *step  *18 .*(18 points)" "$dir/ev.txt" ||
        { cat "$dir/ev.txt"; fail "subnet: no scalars of rank $r"; }
done
[ -s "$dir/sub/phase-6-expand-2.ckpt" ] || fail "subnet: no last checkpoint"
"$M" eval --ckpt "$dir/sub/latest.ckpt" --pairs 4 --recal-pairs 4 | grep -q '^all  EPE' ||
    fail "subnet: eval of its checkpoint"

# a batch of 3 pairs over 2 devices
if "$M" train $ARGS --batch 3 --devices all --out "$dir/bad" >"$dir/bad.log" 2>&1; then fail "batch 3 on 2 devices accepted"; fi
grep -q 'does not split into 2 equal shards' "$dir/bad.log" || { cat "$dir/bad.log"; fail "batch 3: message"; }
echo "stereo dist: all checks passed"
