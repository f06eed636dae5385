#!/bin/sh
# Training pairs/s of the largest and the smallest sub-network of a stereo space (default
# stereo-cpu, at its 64x128 crop), manta (`manta bench train --space ...`) against the PyTorch
# twin of the same sub-network (tools/bench/torch_stereo.py --train-speed: the same layers,
# batch, multi-scale L1 loss and SGD step with Nesterov momentum, float32) on the same machine
# and thread count, alternating A B A B, medians of ROUNDS rounds each; and each side's peak
# resident memory (the largest over the rounds).
#   tools/bench/stereo_train_vs_torch.sh [ROUNDS]
# SPACE (stereo-cpu), BATCH (8), STEPS (10 timed steps a round), THREADS (2: PyTorch's
# torch.set_num_threads; manta runs on the OpenCL device, PoCL's with all cores unless
# POCL_MAX_PTHREAD_COUNT says otherwise: the script sets it to THREADS), PYTHON (default
# /usr/bin/python3, Debian's python3-torch).
set -eu
ROUNDS=${1:-3}
M=${MANTA:-${BUILD:-build}/bin/manta}
PY=${PYTHON:-/usr/bin/python3}
SPACE=${SPACE:-stereo-cpu}
BATCH=${BATCH:-8}
STEPS=${STEPS:-10}
THREADS=${THREADS:-2}
"$PY" -c 'import torch' 2>/dev/null || { echo "no torch for $PY (apt-get install python3-torch)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
num() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }
printf '%-10s %-4s %-6s %12s %12s %7s %14s %14s\n' space arch batch "manta pr/s" "torch pr/s" \
    ratio "manta RSS MiB" "torch RSS MiB"
for arch in max min; do
    : >"$tmp/r"
    for i in $(seq "$ROUNDS"); do
        POCL_MAX_PTHREAD_COUNT=$THREADS "$M" bench train --space "$SPACE" --arch "$arch" \
            --batch "$BATCH" --steps "$STEPS" --twin-dir "$tmp" --json >"$tmp/m.json"
        echo "manta $(num pairs_per_s <"$tmp/m.json") $(num peak_rss_mib <"$tmp/m.json")" >>"$tmp/r"
        OMP_NUM_THREADS=$THREADS "$PY" tools/bench/torch_stereo.py "$tmp" --train-speed \
            --batch "$BATCH" --steps "$STEPS" --threads "$THREADS" --json >"$tmp/t.json"
        echo "torch $(num pairs_per_s <"$tmp/t.json") $(num peak_rss_mib <"$tmp/t.json")" >>"$tmp/r"
    done
    m=$(awk '$1=="manta"{print $2}' "$tmp/r" | median)
    t=$(awk '$1=="torch"{print $2}' "$tmp/r" | median)
    mr=$(awk '$1=="manta"{print $3}' "$tmp/r" | sort -n | tail -1)
    tr=$(awk '$1=="torch"{print $3}' "$tmp/r" | sort -n | tail -1)
    printf '%-10s %-4s %-6s %12.2f %12.2f %7.2f %14.0f %14.0f\n' "$SPACE" "$arch" "$BATCH" "$m" "$t" \
        "$(echo "$m $t" | awk '{print $1/$2}')" "$mr" "$tr"
done
echo "(medians of $ROUNDS rounds, $STEPS timed steps each after 2 warm-up steps, $THREADS threads;" \
    "$("$PY" -c 'import torch; print("torch", torch.__version__)'); $("$M" version 2>/dev/null | head -1))"
