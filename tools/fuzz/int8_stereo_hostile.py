#!/usr/bin/env python3
"""Hostile variants of an int8 stereo .tflite for the fuzz regression corpus (tests/data/fuzz/).

From SEED (build/fuzz/gen_seeds' seed-stereo-int8-0.tflite), each variant patches one
quantization parameter in place, found by its float value through LiteRT's tensor details:
  corpus-rejected-int8-stereo-concat-scale.bin  a CONCATENATION tensor's scale x 1.5 (its
      inputs and output must share one scale and zero point)
  corpus-rejected-int8-stereo-tconv-bias-scale.bin  the TRANSPOSE_CONV bias's first scale
      x 1.5 (not input_scale x weight_scale)
  corpus-rejected-int8-stereo-tconv-weight-scale.bin  the TRANSPOSE_CONV weights' first scale
      set to -1 (scales > 0)
and writes them to OUT_DIR. The engine's outcome on each is locked by
tests/unit/test_engine_fuzz_regress.c ("corpus-rejected-*").

usage: int8_stereo_hostile.py SEED OUT_DIR
"""
import os
import struct
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter


def patch(data, old, new, what):
    i = data.find(old)
    if i < 0:
        sys.exit("int8_stereo_hostile: %s not found" % what)
    return data[:i] + new + data[i + len(old):]


def main():
    seed, out = sys.argv[1], sys.argv[2]
    data = open(seed, "rb").read()
    it = Interpreter(model_path=seed)
    det = {d["name"]: d for d in it.get_tensor_details()}
    ops = it._get_ops_details()
    cat = [o for o in ops if o["op_name"] == "CONCATENATION"][-1]
    tconv = [o for o in ops if o["op_name"] == "TRANSPOSE_CONV"][0]
    by_index = {d["index"]: d for d in det.values()}
    f32 = lambda v: struct.pack("<f", float(v))
    s = by_index[int(cat["outputs"][0])]["quantization_parameters"]["scales"][0]
    variants = {
        "concat-scale": patch(data, struct.pack("<I", 1) + f32(s), struct.pack("<I", 1) + f32(s * 1.5),
                              "the concatenation's scale"),
    }
    w = by_index[int(tconv["inputs"][1])]["quantization_parameters"]["scales"]
    b = by_index[int(tconv["inputs"][3])]["quantization_parameters"]["scales"]
    vec = lambda v: struct.pack("<I", len(v)) + b"".join(f32(x) for x in v)
    bb = np.array(b, dtype=np.float32)
    bb2 = bb.copy()
    bb2[0] *= 1.5
    variants["tconv-bias-scale"] = patch(data, vec(bb), vec(bb2), "the bias scales")
    ww = np.array(w, dtype=np.float32)
    ww2 = ww.copy()
    ww2[0] = -1.0
    variants["tconv-weight-scale"] = patch(data, vec(ww), vec(ww2), "the weight scales")
    for k, v in variants.items():
        with open(os.path.join(out, "corpus-rejected-int8-stereo-%s.bin" % k), "wb") as f:
            f.write(v)


if __name__ == "__main__":
    main()
