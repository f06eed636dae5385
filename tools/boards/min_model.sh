#!/bin/sh
# The smallest sub-network of the CPU-default space (models/ofa_cpu_default.json, `--arch min`) as a
# .tflite and a C array, from a smoke-trained checkpoint (a few seconds on PoCL; the weights do not
# matter for sizes or for comparing one model across machines), and a test image as JPEG.
# usage: min_model.sh HOST_BUILD OUTDIR   (HOST_BUILD: where bin/manta is, e.g. build/host)
# writes OUTDIR/min.tflite, OUTDIR/model.c, OUTDIR/model.h, OUTDIR/image.jpg
set -eu
[ $# -eq 2 ] || { echo "usage: min_model.sh HOST_BUILD OUTDIR" >&2; exit 2; }
M="$1/bin/manta"
out=$2
[ -x "$M" ] || { echo "min_model: $M missing (make BOARD=host)" >&2; exit 1; }
mkdir -p "$out"
export MANTA_CACHE_DIR="${MANTA_CACHE_DIR:-$PWD/$1/cache}"
run="$out/run"
if [ ! -f "$run/latest.ckpt" ]; then
    echo "min_model: smoke training (models/ofa_cpu_default.json) into $run"
    "$M" train --space models/ofa_cpu_default.json --schedule smoke --batch 16 --eval-images 0 \
        --out "$run" >"$out/train.log" 2>&1 || { cat "$out/train.log" >&2; exit 1; }
fi
"$M" export --ckpt "$run/latest.ckpt" --arch min --out "$out/min.tflite" --c-array "$out" \
    --recal-images 64
"$M" image --out "$out/image.jpg" --index 0 >/dev/null
