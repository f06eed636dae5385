#!/usr/bin/env python3
"""Check that TensorBoard reads the event files `manta train` writes (not a test).

    PYTHON tools/bench/tfevents_check.py RUN_DIR [--metrics FILE] [--json]

PYTHON needs the tensorboard package (pip install tensorboard; not a dependency of manta).
RUN_DIR is a `manta train --out` folder, or its `--tensorboard` folder with --metrics naming
the run's metrics.jsonl. The script:

1. walks every record of every events.out.tfevents.* file in RUN_DIR and checks both
   masked CRC-32Cs with TensorBoard's own implementation
   (tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c);
2. loads RUN_DIR with TensorBoard's EventAccumulator (what `tensorboard --logdir` uses) and
   prints, per scalar tag, the number of points, the step range and the last value;
3. compares every point with metrics.jsonl (RUN_DIR/metrics.jsonl unless --metrics): the
   progress lines for the train/ tags, the evaluation lines for the val/ tags, within the
   precision metrics.jsonl prints them with.

Exits 0 when the records, the tags and the values all agree, 1 otherwise.
"""
import argparse
import glob
import json
import os
import struct
import sys

try:
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
except ImportError:
    sys.exit("tfevents_check: this Python lacks the tensorboard package (pip install tensorboard)")

# tag -> (metrics.jsonl key, decimals it is printed with, line kind); phase is 1-based here.
TRAIN_TAGS = {
    "train/loss": ("loss", 5),
    "train/batch_top1": ("batch_top1", 4),
    "train/lr": ("lr", 6),
    "train/images_per_s": ("images_per_s", 1),
    "train/data_wait": ("data_wait", 4),
    "train/step_ms": ("step_ms", 1),
    "train/phase": ("phase_index", 0),
    "train/resolution": ("r", 0),
}
VAL_TAGS = {
    "val/top1_largest": ("max_top1", 4),
    "val/top1_smallest": ("min_top1", 4),
}


def walk_records(path):
    """Number of records of @path after checking both CRCs of each; raises on a fault."""
    with open(path, "rb") as f:
        data = f.read()
    off, n = 0, 0
    while off < len(data):
        if len(data) - off < 12:
            raise ValueError(f"{path}: record {n} (byte {off}): truncated header")
        (length,) = struct.unpack_from("<Q", data, off)
        (len_crc,) = struct.unpack_from("<I", data, off + 8)
        if len_crc != masked_crc32c(data[off:off + 8]):
            raise ValueError(f"{path}: record {n} (byte {off}): length CRC mismatch")
        end = off + 12 + length
        if end + 4 > len(data):
            raise ValueError(f"{path}: record {n} (byte {off}): truncated data")
        (data_crc,) = struct.unpack_from("<I", data, end)
        if data_crc != masked_crc32c(data[off + 12:end]):
            raise ValueError(f"{path}: record {n} (byte {off}): data CRC mismatch")
        off, n = end + 4, n + 1
    return n


def expected_values(metrics_path):
    """{tag: {step: value}} from metrics.jsonl (the last line of a step wins, as after a resume)."""
    want = {t: {} for t in list(TRAIN_TAGS) + list(VAL_TAGS)}
    with open(metrics_path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            m = json.loads(line)
            if "eval" in m:
                for tag, (key, _) in VAL_TAGS.items():
                    want[tag][m["step"]] = m[key]
            elif "loss" in m:
                for tag, (key, _) in TRAIN_TAGS.items():
                    want[tag][m["step"]] = m[key] + (1 if key == "phase_index" else 0)
    return want


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--metrics", help="metrics.jsonl (default RUN_DIR/metrics.jsonl)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    a = ap.parse_args()

    files = sorted(glob.glob(os.path.join(a.run_dir, "events.out.tfevents.*")))
    if not files:
        sys.exit(f"tfevents_check: {a.run_dir}: no events.out.tfevents.* file")
    problems = []
    records = {}
    for p in files:
        try:
            records[os.path.basename(p)] = walk_records(p)
        except ValueError as e:
            problems.append(str(e))

    acc = event_accumulator.EventAccumulator(a.run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    tags = sorted(acc.Tags()["scalars"])
    got = {t: {e.step: e.value for e in acc.Scalars(t)} for t in tags}

    metrics = a.metrics or os.path.join(a.run_dir, "metrics.jsonl")
    compared = 0
    if os.path.exists(metrics):
        want = expected_values(metrics)
        decimals = {**{t: d for t, (_, d) in TRAIN_TAGS.items()},
                    **{t: d for t, (_, d) in VAL_TAGS.items()}}
        for tag, steps in want.items():
            if steps and tag not in got:
                problems.append(f"{tag}: in {metrics}, not in the event files")
                continue
            for step, w in steps.items():
                g = got.get(tag, {}).get(step)
                tol = 0.5 * 10 ** -decimals[tag] + 1e-6 * abs(w) + 1e-12
                if g is None:
                    problems.append(f"{tag} step {step}: missing from the event files")
                elif abs(g - w) > tol:
                    problems.append(f"{tag} step {step}: event {g!r}, metrics.jsonl {w!r}")
                else:
                    compared += 1
    else:
        problems.append(f"{metrics}: missing, values not compared")

    if a.json:
        print(json.dumps({
            "run_dir": a.run_dir, "files": records,
            "tags": {t: {"points": len(got[t]), "first_step": min(got[t]),
                         "last_step": max(got[t]), "last": got[t][max(got[t])]} for t in tags},
            "compared": compared, "problems": problems}))
    else:
        for name, n in records.items():
            print(f"{name}: {n} records, every length and data CRC matches")
        print(f"EventAccumulator: {len(tags)} scalar tags")
        for t in tags:
            s = sorted(got[t])
            print(f"  {t:22s} {len(s):4d} points, steps {s[0]}..{s[-1]}, last {got[t][s[-1]]:.6g}")
        print(f"{compared} values equal to {metrics}")
        for p in problems:
            print(f"PROBLEM: {p}")
        print("OK" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
