#!/usr/bin/env python3
"""An int8 stereo .tflite in LiteRT against manta's engine on the same int8 input tensors.

Input: DIR holding, per pair K, in_K.bin (the two int8 input tensors as the engine held
them, left then right: `manta-infer M left.png right.png --dump-input DIR/in_K.bin`) and
out_K.bin (the engine's raw int8 disparity tensor: `--dump-output DIR/out_K.bin`). Runs M in
LiteRT (ai-edge-litert) on every pair with TFLite's reference kernels (BUILTIN_REF) and with
the default resolver (XNNPACK, 1 thread), and prints one JSON line per resolver: how many
output values are equal, differ by 1 LSB, by more, the largest difference, and the mean

usage: litert_stereo_int8_compare.py MODEL.tflite DIR
"""
import argparse
import glob
import json
import os
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("dump")
    a = ap.parse_args()
    ks = sorted(int(os.path.basename(p)[3:-4]) for p in glob.glob(os.path.join(a.dump, "in_*.bin")))
    if not ks:
        sys.exit("litert_stereo_int8_compare: no in_K.bin in %s" % a.dump)
    for name, rt in (("reference kernels", OpResolverType.BUILTIN_REF),
                     ("default (XNNPACK)", OpResolverType.AUTO)):
        it = Interpreter(model_path=a.model, experimental_op_resolver_type=rt, num_threads=1)
        it.allocate_tensors()
        ins, o = it.get_input_details(), it.get_output_details()[0]
        if len(ins) != 2 or ins[0]["dtype"] != np.int8 or o["dtype"] != np.int8:
            sys.exit("litert_stereo_int8_compare: %s is not an int8 stereo model" % a.model)
        n_in = int(np.prod(ins[0]["shape"]))
        diffs = []
        for k in ks:
            x = np.fromfile(os.path.join(a.dump, "in_%d.bin" % k), dtype=np.int8)
            ours = np.fromfile(os.path.join(a.dump, "out_%d.bin" % k), dtype=np.int8)
            if x.size != 2 * n_in or ours.size != int(np.prod(o["shape"])):
                sys.exit("litert_stereo_int8_compare: pair %d: %d input and %d output values"
                         % (k, x.size, ours.size))
            for v in range(2):
                it.set_tensor(ins[v]["index"], x[v * n_in:(v + 1) * n_in].reshape(ins[v]["shape"]))
            it.invoke()
            theirs = it.get_tensor(o["index"]).reshape(-1)
            diffs.append(np.abs(theirs.astype(np.int64) - ours.astype(np.int64)))
        d = np.concatenate(diffs)
        scale = float(o["quantization"][0])
        r = {"resolver": name, "model": a.model, "pairs": len(ks), "values": int(d.size),
             "equal": int((d == 0).sum()), "off_by_1": int((d == 1).sum()),
             "off_by_more": int((d > 1).sum()), "max_diff": int(d.max()),
             "equal_pct": float(100.0 * (d == 0).mean()),
             "mean_abs_px": float(d.mean() * scale)}
        print(json.dumps(r))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
