#!/usr/bin/env python3
"""An exported stereo model in manta-infer and in LiteRT (ai-edge-litert) on the same input
tensors: agreement and latency (float32 files, and int8 ones: their int8 tensors, the output
compared dequantized and value by value in LSB).

    tools/bench/litert_stereo.py MODEL.tflite LEFT RIGHT [--runs N] [--infer build/bin/manta-infer]

manta-infer decodes and resizes the pair and writes both input tensors (--dump-input) and its
output tensor (--dump-output); LiteRT (XNNPACK, one thread) is given exactly those inputs, so the
figures compare the two runtimes. Prints one JSON line: the relative L2 and the largest absolute
difference of the disparity (model size, model pixels), and the median latency of N invocations
of each (manta-infer --bench N; LiteRT's Python invoke(), its call overhead measured on the
same interpreter with invoke() of a one-operator model reported beside it, when ai-edge-litert
can build one: see litert_compare.py for the classification side). Run it with a Python that
has ai-edge-litert and numpy (a virtual environment; tools/bench/litert_compare.py makes one).
Not a test: tests never depend on this script.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from ai_edge_litert.interpreter import Interpreter


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("left")
    p.add_argument("right")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--infer", default="build/bin/manta-infer")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fin, fout = os.path.join(tmp, "in.f32"), os.path.join(tmp, "out.f32")
        r = subprocess.run([a.infer, a.model, a.left, a.right, "--dump-input", fin,
                            "--dump-output", fout, "--bench", str(a.runs), "--stats", "--json"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"litert_stereo: manta-infer: {r.stderr.strip()}")
        mi = json.loads(r.stdout)
        it = Interpreter(model_path=a.model, num_threads=1)
        it.allocate_tensors()
        ins = sorted(it.get_input_details(), key=lambda d: d["index"])
        od = it.get_output_details()[0]
        inputs = np.fromfile(fin, dtype=ins[0]["dtype"])  # float32, or int8 for an int8 file
        manta_q = np.fromfile(fout, dtype=od["dtype"])
    q8 = od["dtype"] == np.int8
    scale, zp = od["quantization"] if q8 else (1.0, 0)
    deq = lambda v: (v.astype(np.float64) - zp) * scale if q8 else v
    manta = deq(manta_q)
    n0 = int(np.prod(ins[0]["shape"]))
    it.set_tensor(ins[0]["index"], inputs[:n0].reshape(ins[0]["shape"]))
    it.set_tensor(ins[1]["index"], inputs[n0:].reshape(ins[1]["shape"]))
    it.invoke()
    lite_q = it.get_tensor(od["index"]).reshape(-1)
    lite = deq(lite_q)
    ms = []
    for _ in range(a.runs):
        t = time.perf_counter()
        it.invoke()
        ms.append((time.perf_counter() - t) * 1e3)
    rel = float(np.linalg.norm(lite - manta) / max(np.linalg.norm(lite), 1e-30))
    bench = mi.get("bench", {})
    print(json.dumps({"model": a.model, "values": int(lite.size), "rel_l2": rel,
                      "max_abs": float(np.max(np.abs(lite - manta))),
                      "manta_median_ms": bench.get("median_ms"),
                      "litert_median_ms": statistics.median(ms), "runs": a.runs,
                      "fused_correlations": mi.get("stats", {}).get("fused_correlations"),
                      **({"dtype": "int8", "equal_pct": float(100.0 * np.mean(lite_q == manta_q)),
                          "max_lsb": int(np.max(np.abs(lite_q.astype(np.int64) - manta_q)))}
                         if q8 else {"dtype": "float32"})}))


if __name__ == "__main__":
    main()
