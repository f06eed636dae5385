#!/usr/bin/env python3
"""OpenCV's StereoSGBM on a folder of stereo pairs in the KITTI layout (as `manta
stereo-data` writes them): disparity of every pair, then EPE, bad-1/2/3 and D1 over all
valid pixels and over the non-occluded ones, and the time per pair; one JSON document.

The classical baseline of make bench-stereo (tools/bench/stereo_vs_sgbm.sh), with the
usual settings (OpenCV's documentation and the KITTI submissions): P1 = 8 * cn * w^2,
P2 = 32 * cn * w^2, uniqueness 10, speckle window 100 / range 32, disp12MaxDiff 1,
numDisparities the smallest multiple of 16 above the data's largest disparity, mode
SGBM_3WAY. Pixels SGBM leaves without a disparity (negative) are filled from the left
neighbour along the row (KITTI's background interpolation, as its devkit does for
methods with holes), so every valid pixel counts.

Metrics as manta eval computes them (data/stereo_metrics.h): EPE = mean |d - gt|; bad-t =
% of pixels with error > t px; D1 = % with error > 3 px and > 5% of gt.

Usage: sgbm_stereo.py FOLDER --max-disp D [--block 5] [--pairs N]
Needs Debian's python3-opencv (apt-get install python3-opencv) and numpy.
"""
import argparse
import glob
import json
import os
import sys
import time

try:
    import cv2
    import numpy as np
except ImportError as e:  # a benchmark peer, not a dependency of manta
    sys.exit("sgbm_stereo.py: %s (apt-get install python3-opencv)" % e)


def read_disp(path):
    """KITTI disparity: 16-bit PNG of d * 256, 0 = no ground truth."""
    raw = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if raw is None or raw.dtype != np.uint16 or raw.ndim != 2:
        sys.exit("sgbm_stereo.py: %s: not a 16-bit gray PNG" % path)
    return raw.astype(np.float64) / 256.0, raw > 0


def fill_holes(d):
    """Invalid (negative) disparities take the last valid value to their left (or the
    first valid one of the row when none lies to the left)."""
    out = d.copy()
    for row in out:
        valid = np.where(row >= 0)[0]
        if valid.size == 0:
            row[:] = 0.0
            continue
        idx = np.maximum.accumulate(np.where(row >= 0, np.arange(row.size), -1))
        idx[idx < 0] = valid[0]
        row[:] = row[idx]
    return out


def sums(err, gt, mask):
    e, g = err[mask], gt[mask]
    return {
        "abs": float(e.sum()), "n": int(e.size), "bad1": int((e > 1).sum()),
        "bad2": int((e > 2).sum()), "bad3": int((e > 3).sum()),
        "d1": int(((e > 3) & (e > 0.05 * g)).sum()),
    }


def add(acc, s):
    for k, v in s.items():
        acc[k] = acc.get(k, 0) + v


def scores(acc):
    n = acc.get("n", 0)
    if n == 0:
        return None
    return {"epe": acc["abs"] / n, "bad1": 100.0 * acc["bad1"] / n,
            "bad2": 100.0 * acc["bad2"] / n, "bad3": 100.0 * acc["bad3"] / n,
            "d1": 100.0 * acc["d1"] / n, "pixels": n}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--max-disp", type=float, required=True,
                    help="largest disparity of the data in pixels")
    ap.add_argument("--block", type=int, default=5, help="SGBM block size (odd, default 5)")
    ap.add_argument("--pairs", type=int, default=0, help="use the first N pairs (0: all)")
    a = ap.parse_args()
    lefts = sorted(glob.glob(os.path.join(a.folder, "image_2", "*_10.png")))
    if a.pairs > 0:
        lefts = lefts[: a.pairs]
    if not lefts:
        sys.exit("sgbm_stereo.py: %s: no image_2/*_10.png (a KITTI-layout folder)" % a.folder)
    num = int(np.ceil((a.max_disp + 1) / 16.0)) * 16
    w, cn = a.block, 3
    sgbm = cv2.StereoSGBM_create(minDisparity=0, numDisparities=num, blockSize=w,
                                 P1=8 * cn * w * w, P2=32 * cn * w * w, disp12MaxDiff=1,
                                 uniquenessRatio=10, speckleWindowSize=100, speckleRange=32,
                                 mode=cv2.STEREO_SGBM_MODE_SGBM_3WAY)
    acc_all, acc_noc, times = {}, {}, []
    for lp in lefts:
        name = os.path.basename(lp)
        left = cv2.imread(lp, cv2.IMREAD_COLOR)
        right = cv2.imread(os.path.join(a.folder, "image_3", name), cv2.IMREAD_COLOR)
        if left is None or right is None or left.shape != right.shape:
            sys.exit("sgbm_stereo.py: %s: the views are missing or of different sizes" % name)
        t0 = time.perf_counter()
        d = sgbm.compute(left, right).astype(np.float64) / 16.0
        times.append(time.perf_counter() - t0)
        d = fill_holes(d)
        gt, valid = read_disp(os.path.join(a.folder, "disp_occ_0", name))
        err = np.abs(d - gt)
        add(acc_all, sums(err, gt, valid))
        noc_path = os.path.join(a.folder, "disp_noc_0", name)
        if os.path.exists(noc_path):
            gtn, noc = read_disp(noc_path)
            add(acc_noc, sums(err, gtn, noc))
    out = {"method": "opencv-sgbm", "opencv": cv2.__version__, "folder": a.folder,
           "pairs": len(lefts), "num_disparities": num, "block": w,
           "all": scores(acc_all), "noc": scores(acc_noc),
           "ms_per_pair_median": 1000.0 * float(np.median(times)),
           "threads": cv2.getNumThreads()}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
