#!/usr/bin/env python3
"""Real stereo pairs with ground truth, held out from manta, in the KITTI layout at the
scales a small network's disparity range reaches: the evaluation set of make bench-stereo
(tools/bench/stereo_vs_sgbm.sh, REAL=...).

Sources, each a scene of photographs with a measured disparity map:
  - a Middlebury 2014/2021 scene folder (im0.png, im1.png, disp0GT.pfm or disp0.pfm), or a
    folder of such scenes;
  - 'skimage': the Middlebury 2014 "Motorcycle" scene at quarter size (741 x 500,
    disparities 7-60 px) that scikit-image's wheel ships (skimage/data/motorcycle_*),
    fetched from PyPI with pip download into --cache (only the wheel is read, nothing is
    installed).

Each scene is shrunk (area average for the views, nearest for the disparity, divided by the
factor; pixels without ground truth stay without) by each factor that brings its largest
disparity within --max-disp, from that smallest factor up by 20% steps (--scales of them),
and written as pair NNNNNN_10.png of OUT/image_2, image_3 and disp_occ_0 (16-bit, d * 256,
0 = none). A listing of what was written on standard output. These pairs are evaluation
data: never train on them nor use their views as textures.

Usage: real_stereo_pairs.py OUT --max-disp D [--source skimage|DIR ...] [--scales 3]
                            [--cache DIR]
Needs numpy and cv2 (Debian's python3-opencv).
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

try:
    import cv2
    import numpy as np
except ImportError as e:  # a benchmark's tool, not a dependency of manta
    sys.exit("real_stereo_pairs.py: %s (apt-get install python3-opencv)" % e)


def read_pfm(path):
    with open(path, "rb") as f:
        kind = f.readline().strip()
        if kind not in (b"Pf", b"PF"):
            sys.exit("real_stereo_pairs.py: %s: not a PFM file" % path)
        w, h = map(int, f.readline().split())
        scale = float(f.readline())
        data = np.frombuffer(f.read(), dtype="<f4" if scale < 0 else ">f4")
    ch = 3 if kind == b"PF" else 1
    if data.size != w * h * ch or ch != 1:
        sys.exit("real_stereo_pairs.py: %s: not a one-channel %dx%d PFM" % (path, w, h))
    return np.flipud(data.reshape(h, w)).astype(np.float32)


def middlebury_scenes(root):
    """(name, left BGR, right BGR, disparity with NaN = none) of a scene folder or of the
    scene folders under root."""
    dirs = [root] if os.path.exists(os.path.join(root, "im0.png")) else sorted(
        d for d in glob.glob(os.path.join(root, "*")) if os.path.exists(os.path.join(d, "im0.png")))
    if not dirs:
        sys.exit("real_stereo_pairs.py: %s: no Middlebury scene (im0.png, im1.png, disp0GT.pfm)" % root)
    for d in dirs:
        gt = next((p for p in (os.path.join(d, "disp0GT.pfm"), os.path.join(d, "disp0.pfm"))
                   if os.path.exists(p)), None)
        if gt is None:
            sys.exit("real_stereo_pairs.py: %s: no disp0GT.pfm or disp0.pfm" % d)
        disp = read_pfm(gt)
        disp[~np.isfinite(disp) | (disp <= 0)] = np.nan
        yield (os.path.basename(os.path.normpath(d)), cv2.imread(os.path.join(d, "im0.png")),
               cv2.imread(os.path.join(d, "im1.png")), disp)


def skimage_scene(cache):
    """Middlebury 2014 Motorcycle at quarter size, from scikit-image's wheel on PyPI."""
    os.makedirs(cache, exist_ok=True)
    wheels = glob.glob(os.path.join(cache, "scikit_image-*.whl"))
    if not wheels:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                            ":all:", "-q", "-d", cache, "scikit-image"], capture_output=True, text=True)
        wheels = glob.glob(os.path.join(cache, "scikit_image-*.whl"))
        if r.returncode != 0 or not wheels:
            sys.exit("real_stereo_pairs.py: pip download scikit-image failed: %s" % r.stderr.strip()[-300:])
    with zipfile.ZipFile(sorted(wheels)[-1]) as z, tempfile.TemporaryDirectory() as t:
        names = ["skimage/data/motorcycle_%s" % n for n in ("left.png", "right.png", "disp.npz")]
        for n in names:
            z.extract(n, t)
        p = [os.path.join(t, n) for n in names]
        disp = np.load(p[2])["arr_0"].astype(np.float32)
        disp[~np.isfinite(disp) | (disp <= 0)] = np.nan
        yield "motorcycle", cv2.imread(p[0]), cv2.imread(p[1]), disp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--max-disp", type=float, required=True)
    ap.add_argument("--source", action="append", help="skimage or a Middlebury folder (repeatable)")
    ap.add_argument("--scales", type=int, default=3)
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/manta-bench"))
    a = ap.parse_args()
    if a.max_disp <= 0 or a.scales < 1:
        sys.exit("real_stereo_pairs.py: --max-disp must be > 0 and --scales >= 1")
    for d in ("image_2", "image_3", "disp_occ_0"):
        os.makedirs(os.path.join(a.out, d), exist_ok=True)
    n = 0
    for src in a.source or ["skimage"]:
        scenes = skimage_scene(a.cache) if src == "skimage" else middlebury_scenes(src)
        for name, left, right, disp in scenes:
            if left is None or right is None or left.shape != right.shape or disp.shape != left.shape[:2]:
                sys.exit("real_stereo_pairs.py: %s: views and disparity of different sizes" % name)
            top = float(np.nanmax(disp))
            for s in range(a.scales):
                f = max(1.0, top / (0.95 * a.max_disp)) * 1.2 ** s
                h, w = int(round(left.shape[0] / f)), int(round(left.shape[1] / f))
                views = [cv2.resize(v, (w, h), interpolation=cv2.INTER_AREA) for v in (left, right)]
                d = cv2.resize(np.nan_to_num(disp, nan=0.0), (w, h), interpolation=cv2.INTER_NEAREST) / f
                ok = cv2.resize(np.isfinite(disp).astype(np.uint8), (w, h),
                                interpolation=cv2.INTER_NEAREST) > 0
                gt = np.where(ok, np.round(d * 256.0), 0).astype(np.uint16)
                stem = "%06d_10.png" % n
                cv2.imwrite(os.path.join(a.out, "image_2", stem), views[0])
                cv2.imwrite(os.path.join(a.out, "image_3", stem), views[1])
                cv2.imwrite(os.path.join(a.out, "disp_occ_0", stem), gt)
                print("%s %s: %dx%d (1/%.2f), disparities %.1f-%.1f px, %.1f%% with ground truth"
                      % (stem, name, w, h, f, d[ok].min(), d[ok].max(), 100.0 * ok.mean()))
                n += 1


if __name__ == "__main__":
    main()
