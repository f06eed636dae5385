#!/usr/bin/env python3
"""An int8 .tflite in LiteRT against manta's engine on the same int8 input tensors.

Input: DIR from `manta eval --model MODEL.tflite --split test --dump DIR`: inputs.bin (each
image's input tensor as the engine held it), outputs.bin (the engine's raw output tensor per
image), labels.bin (int32 labels). Runs MODEL in LiteRT (ai-edge-litert) on every input with
the default resolver (XNNPACK, 1 thread) and with TFLite's reference kernels
(BUILTIN_REF), and prints one JSON line per resolver: top-1 of LiteRT and of the engine
(argmax of the output), how many output values are equal, differ by 1 LSB, by more, and the
largest difference. Works for float32 files too (differences then in output units).

usage: litert_int8_compare.py MODEL.tflite DIR [--images N]
"""
import argparse
import json
import os
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("dump")
    ap.add_argument("--images", type=int, default=0)
    a = ap.parse_args()
    labels = np.fromfile(os.path.join(a.dump, "labels.bin"), dtype=np.int32)
    n = len(labels) if a.images <= 0 else min(a.images, len(labels))
    for name, rt in (("default (XNNPACK)", OpResolverType.AUTO),
                     ("reference kernels", OpResolverType.BUILTIN_REF)):
        it = Interpreter(model_path=a.model, experimental_op_resolver_type=rt, num_threads=1)
        it.allocate_tensors()
        i, o = it.get_input_details()[0], it.get_output_details()[0]
        xs = np.fromfile(os.path.join(a.dump, "inputs.bin"), dtype=i["dtype"])
        ours = np.fromfile(os.path.join(a.dump, "outputs.bin"), dtype=o["dtype"])
        xs = xs.reshape((-1,) + tuple(i["shape"][1:]))[:n]
        ours = ours.reshape((-1,) + tuple(o["shape"][1:]))[:n]
        theirs = np.empty_like(ours)
        for k in range(n):
            it.set_tensor(i["index"], xs[k:k + 1])
            it.invoke()
            theirs[k] = it.get_tensor(o["index"])[0]
        d = np.abs(theirs.astype(np.float64) - ours.astype(np.float64))
        r = {"resolver": name, "model": a.model, "images": int(n), "values": int(d.size),
             "dtype": str(np.dtype(o["dtype"])),
             "top1_litert": float((theirs.argmax(1) == labels[:n]).mean()),
             "top1_engine": float((ours.argmax(1) == labels[:n]).mean()),
             "equal": int((d == 0).sum()), "off_by_1": int((d == 1).sum()),
             "off_by_more": int((d > 1).sum()), "max_diff": float(d.max()),
             "equal_pct": float(100.0 * (d == 0).mean())}
        print(json.dumps(r))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
