#!/bin/sh
# Disparity quality and time per pair: OpenCV's StereoSGBM (tools/bench/sgbm_stereo.py,
# Debian's python3-opencv) against the largest and the smallest sub-network of a trained
# stereo supernet (manta eval), on the same held-out procedural pairs (written once by
# manta stereo-data at generator indices from 2^40: never training pairs) and, when given,
# on a folder of the user's pairs. Both methods take whole pairs one at a time: manta eval
# pads each pair to its network's granularity (2^levels), runs it alone at that size and
# crops the prediction back (the held-out pairs, of the network's size, need no padding);
# its time per pair is the median forward at that size. A Markdown table on standard output.
#
# Then the size sweep: held-out scenes of the crop's scale (shapes sized against the crop's
# height, --shape-side) at the crop and at other sizes (SIZES: twice the crop's height, a
# size no multiple of 32, KITTI's 1242 x 375), SGBM and manta's largest, smallest and one
# sampled sub-network on each, with every sub-network's EPE as a multiple of its EPE at the
# crop; "within 1.2x" marks the target (docs/stereo.md, "Sizes"). With TEXTURES, also the
# held-out pairs made with those photographs (photo-textured layers and single-photograph
# pairs, manta stereo-data --textures). With REAL, real photographs with measured ground
# truth held out from manta (tools/bench/real_stereo_pairs.py: by default the Middlebury 2014
# Motorcycle scene that scikit-image's wheel ships, shrunk to three scales within the
# network's disparity range).
#
#   CKPT=runs/stereo/latest.ckpt tools/bench/stereo_vs_sgbm.sh      # or: make bench-stereo
#
# Variables:
#   CKPT      the stereo checkpoint (required)
#   MANTA     the manta program (default build/bin/manta)
#   PYTHON    a python3 with cv2 and numpy (default /usr/bin/python3)
#   PAIRS     held-out pairs (default 200)
#   SEED      seed of the held-out set (default 4242)
#   FOLDER    a KITTI / Middlebury folder evaluated too (manta and SGBM on its whole pairs),
#             or empty
#   DEVICE    manta's --device SPEC (default: MANTA_DEVICE, else 0)
#   SIZES     sizes of the sweep, WxH each (default: the crop at twice its height, 160x139,
#             1242x375); empty: no sweep
#   SIZE_PAIRS  pairs per size of the sweep (default 20)
#   TEXTURES  a folder of photographs or 'default' for a photo-made held-out set, or empty
#   REAL      real pairs: 'skimage' (default; fetched from PyPI with pip download into
#             ~/.cache/manta-bench once), Middlebury scene folders (space-separated), or empty
#   OUTDIR    where the held-out pairs and the JSON of every run go (default: a temporary
#             folder, removed at the end)
set -eu
MANTA=${MANTA:-build/bin/manta}
PYTHON=${PYTHON:-/usr/bin/python3}
PAIRS=${PAIRS:-200}
SEED=${SEED:-4242}
FOLDER=${FOLDER:-}
HERE=$(dirname "$0")
[ -n "${CKPT:-}" ] || { echo "stereo_vs_sgbm.sh: set CKPT to a stereo checkpoint (manta train --space stereo-cpu)" >&2; exit 2; }
"$PYTHON" -c 'import cv2, numpy' 2>/dev/null ||
    { echo "stereo_vs_sgbm.sh: $PYTHON lacks cv2 (apt-get install python3-opencv)" >&2; exit 2; }
TMP=
if [ -z "${OUTDIR:-}" ]; then
    TMP=$(mktemp -d)
    OUTDIR=$TMP
fi
trap '[ -z "$TMP" ] || rm -rf "$TMP"' EXIT
DEV=${DEVICE:+--device $DEVICE}

# the network's crop and disparity range, from the checkpoint's space
"$MANTA" eval --ckpt "$CKPT" --pairs 1 --recal-pairs 0 --json $DEV >"$OUTDIR/probe.json"
set -- $("$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["height"], d["width"], d["max_disp"], d["space"])' "$OUTDIR/probe.json")
H=$1 W=$2 D=$3 SPACE=$4
HELD=$OUTDIR/held-out
"$MANTA" stereo-data "$HELD" --count "$PAIRS" --width "$W" --height "$H" --max-disp "$D" \
    --seed "$SEED" --first 1099511627776 --json >"$OUTDIR/held-out.json"

run_set() { # NAME DIR: one row per method
    name=$1 dir=$2
    "$PYTHON" "$HERE/sgbm_stereo.py" "$dir" --max-disp "$D" --pairs "$PAIRS" >"$OUTDIR/sgbm-$name.json"
    for arch in max min; do
        "$MANTA" eval --ckpt "$CKPT" --arch $arch --data "$dir" --pairs "$PAIRS" --json $DEV \
            >"$OUTDIR/manta-$arch-$name.json"
    done
    "$PYTHON" - "$OUTDIR" "$name" <<'EOF'
import json, sys
out, name = sys.argv[1], sys.argv[2]
rows = [("OpenCV SGBM", json.load(open("%s/sgbm-%s.json" % (out, name))))]
for arch, label in (("max", "manta largest"), ("min", "manta smallest")):
    rows.append((label, json.load(open("%s/manta-%s-%s.json" % (out, arch, name)))))
sgbm = rows[0][1]["all"]["epe"]
for label, r in rows:
    a, n = r["all"], r.get("noc") or {}
    ms = r.get("ms_per_pair_median", r.get("ms_per_pair"))
    print("| %s | %s | %.3f | %.2f | %.2f | %s | %.2f | %.3f |" % (
        name, label, a["epe"], a["bad3"], a["d1"],
        "%.3f" % n["epe"] if n.get("epe") is not None else "-", a["epe"] / sgbm, ms))
EOF
}

echo "Machine: $(uname -n), $(nproc) cores; $("$MANTA" --version | head -n 1); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "Checkpoint $CKPT (space $SPACE, ${W}x${H}, disparities up to $D px); $PAIRS held-out pairs (seed $SEED)."
echo
echo "| pairs | method | EPE px | bad-3 % | D1 % | EPE noc px | EPE / SGBM | ms per pair |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
run_set held-out "$HELD"
[ -z "$FOLDER" ] || run_set "$(basename "$FOLDER")" "$FOLDER"
if [ -n "${TEXTURES:-}" ]; then
    "$MANTA" stereo-data "$OUTDIR/photo" --count "$PAIRS" --width "$W" --height "$H" \
        --max-disp "$D" --seed "$SEED" --first 1099511627776 --textures "$TEXTURES" \
        --textured-share 0.5 --single-share 0.5 --json >"$OUTDIR/photo.json"
    run_set photo "$OUTDIR/photo"
fi
REAL=${REAL-skimage}
if [ -n "$REAL" ]; then
    srcs=
    for r in $REAL; do srcs="$srcs --source $r"; done
    if "$PYTHON" "$HERE/real_stereo_pairs.py" "$OUTDIR/real" --max-disp "$D" $srcs >"$OUTDIR/real.txt"; then
        run_set real "$OUTDIR/real"
    else
        echo "stereo_vs_sgbm.sh: no real pairs (REAL=$REAL), their row left out" >&2
    fi
fi

# ---- the size sweep --------------------------------------------------------------------------
SIZES=${SIZES-${W}x$((2 * H)) 160x139 1242x375}
SIZE_PAIRS=${SIZE_PAIRS:-20}
[ -n "$SIZES" ] || exit 0
"$MANTA" arch sample --space "$SPACE" --seed 3 --json |
    "$PYTHON" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["arch"]))' >"$OUTDIR/sampled.json"
sweep() { # NAME DIR: SGBM and the three sub-networks on the first SIZE_PAIRS pairs of DIR
    name=$1 dir=$2
    "$PYTHON" "$HERE/sgbm_stereo.py" "$dir" --max-disp "$D" --pairs "$SIZE_PAIRS" >"$OUTDIR/size-sgbm-$name.json"
    for arch in max min sampled; do
        a=$arch
        [ "$arch" = sampled ] && a=$OUTDIR/sampled.json
        "$MANTA" eval --ckpt "$CKPT" --arch "$a" --data "$dir" --pairs "$SIZE_PAIRS" --json $DEV \
            >"$OUTDIR/size-$arch-$name.json"
    done
}
for size in "${W}x$H" $SIZES; do
    "$MANTA" stereo-data "$OUTDIR/size-$size" --count "$SIZE_PAIRS" --width "${size%x*}" \
        --height "${size#*x}" --max-disp "$D" --seed "$SEED" --first 1099511627776 \
        --shape-side "$H" --json >"$OUTDIR/size-$size.json"
    sweep "$size" "$OUTDIR/size-$size"
done
echo
echo "Sizes: $SIZE_PAIRS held-out scenes of the crop's scale at each size (sampled: manta arch sample --seed 3)."
echo
echo "| size | SGBM EPE px | largest EPE px (x crop's) | smallest | sampled | within 1.2x |"
echo "|---|---:|---:|---:|---:|---|"
"$PYTHON" - "$OUTDIR" "${W}x$H" $SIZES <<'EOF'
import json, sys
out, sizes = sys.argv[1], sys.argv[2:]
epe = lambda a, s: json.load(open("%s/size-%s-%s.json" % (out, a, s)))["all"]["epe"]
crop = {a: epe(a, sizes[0]) for a in ("max", "min", "sampled")}
met = total = 0
for s in sizes:
    cells, ok = [], True
    for a in ("max", "min", "sampled"):
        e = epe(a, s)
        cells.append("%.3f (%.2f)" % (e, e / crop[a]))
        ok = ok and e <= 1.2 * crop[a]
    if s != sizes[0]:
        met, total = met + ok, total + 1
    print("| %s | %.3f | %s | %s |" % (s, epe("sgbm", s), " | ".join(cells),
                                       "crop" if s == sizes[0] else ("yes" if ok else "no")))
print()
print("%d of %d sizes within 1.2x of the crop's EPE for every sub-network" % (met, total))
EOF
