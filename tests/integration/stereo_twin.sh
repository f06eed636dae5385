#!/bin/sh
# The PyTorch twin of stereo sub-networks (tools/bench/torch_stereo.py) against the runtime
# (tests/helpers/stereo_twin_dump): on tests/data/stereo_tiny.json the largest (loss round
# 0), the smallest and two sampled sub-networks (round 1) agree on the forward with running
# batch-norm statistics (finest prediction, relative L2 <= 1e-4), the multi-scale loss and
# every parameter group's gradient of one training step (relative L2 <= 1e-3); on the
# built-in stereo-cpu the smallest and a sampled sub-network agree on the forward and the
# gradients (the smallest within twice its gradients' own sensitivity to rounding); the
# weights and statistics of a `manta train` checkpoint of the tiny space, read by the twin's
# own reader of the container, give the same agreement.
# SKIPPED, not passed, where no python3 can import torch: the script then says so and
# exits 0.
set -eu
B="${BUILD:-build}"
DUMP="$B/tests/helpers/stereo_twin_dump"
TWIN=tools/bench/torch_stereo.py
fail() { echo "FAIL: $*"; exit 1; }

PY=
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch, numpy' 2>/dev/null; then
        PY=$p
        break
    fi
done
if [ -z "$PY" ]; then
    echo "stereo_twin: SKIPPED (not passed): no python3 here imports torch and numpy"
    echo "  (Debian: apt-get install python3-torch; then run this script again)"
    exit 0
fi
[ -x "$DUMP" ] || fail "$DUMP is not built (make $DUMP)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# space arch round pairs [twin options]; CKPT: a checkpoint to load (default: none)
run() {
    d="$out/$(echo "$1-$2" | tr -c 'a-zA-Z0-9\n-' '_')${CKPT:+-ckpt}"
    mkdir -p "$d"
    "$DUMP" "$1" "$2" "$d" "${CKPT:--}" "$3" "$4" >"$d/dump.txt" 2>&1 || {
        cat "$d/dump.txt"
        fail "$DUMP $1 $2"
    }
    shift 4
    "$PY" "$TWIN" "$d" "$@" || fail "the twin and the runtime differ ($(cat "$d/arch.json"))"
}

T=tests/data/stereo_tiny.json
run "$T" max 0 2
run "$T" min 1 2
run "$T" sample:3 1 2
run "$T" sample:5 0 1
# stereo-cpu's smallest: its shared part's gradients sit on ReLU kinks, where float32 rounding
# (as a relative 1e-6 change of the parameters) moves the exact gradient itself by about 1%;
# --perturb measures that and each group must agree within twice it (docs/stereo.md)
run stereo-cpu min 1 1 --perturb 1e-6
run stereo-cpu sample:3 0 1
"$B/bin/manta" train --space "$T" --schedule smoke --batch 2 --train-pairs 64 --eval-pairs 6 \
    --recal-pairs 4 --textures none --out "$out/run" --stop-after 4 >"$out/train.txt" 2>&1 || {
    cat "$out/train.txt"
    fail "manta train"
}
CKPT="$out/run/latest.ckpt" run "$T" sample:7 0 2 --ckpt "$out/run/latest.ckpt"
echo "stereo_twin: ok (torch $("$PY" -c 'import torch; print(torch.__version__)'))"
