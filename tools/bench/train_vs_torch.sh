#!/bin/sh
# Training images/s of the largest (32x32) and smallest (24x24) sub-networks of
# the CPU-default space, manta against PyTorch on the same machine and thread
# count, alternating A B A B, medians of ROUNDS rounds each.
#   tools/bench/train_vs_torch.sh [ROUNDS]
# PYTHON (default /usr/bin/python3, Debian's python3-torch) picks the peer's
# interpreter, e.g. a virtual environment with a current torch from PyPI.
set -eu
ROUNDS=${1:-3}
M=${BUILD:-build}/bin/manta
PY=${PYTHON:-/usr/bin/python3}
THREADS=${THREADS:-$(nproc)}
STEPS=${STEPS:-10}
"$PY" -c 'import torch' 2>/dev/null || { echo "no torch for $PY (apt-get install python3-torch)"; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
printf '%-12s %-4s %14s %14s %8s\n' arch res "manta img/s" "torch img/s" ratio
for case in "max 32" "min 24"; do
    set -- $case
    : >"$tmp"
    for i in $(seq "$ROUNDS"); do
        "$M" bench train --arch "$1" --res "$2" --steps "$STEPS" --json |
            sed -n 's/.*"images_per_s":\([0-9.]*\).*/manta \1/p' >>"$tmp"
        OMP_NUM_THREADS=$THREADS "$PY" tools/bench/torch_ofa_train.py --arch "$1" --res "$2" \
            --steps "$STEPS" --threads "$THREADS" --json |
            sed -n 's/.*"images_per_s": \([0-9.]*\).*/torch \1/p' >>"$tmp"
    done
    m=$(awk '$1=="manta"{print $2}' "$tmp" | median)
    t=$(awk '$1=="torch"{print $2}' "$tmp" | median)
    printf '%-12s %-4s %14.1f %14.1f %8.2f\n' "$1" "$2" "$m" "$t" "$(echo "$m $t" | awk '{print $1/$2}')"
done
echo "(medians of $ROUNDS rounds, $STEPS timed steps each, batch 64, $THREADS threads; $("$PY" -c 'import torch; print("torch", torch.__version__)'))"
