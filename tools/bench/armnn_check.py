#!/usr/bin/python3
"""An exported .tflite in Arm NN (TfLiteParser, pyarmnn) against manta-infer on the same input tensors.

    tools/bench/armnn_check.py MODEL IMAGE [RIGHT]      manta-infer decodes the image (a pair for a
                                                         stereo model) and dumps the input tensors
    tools/bench/armnn_check.py MODEL --dump DIR [--images N]
                                                         classification, float32 or int8: the input
                                                         and output tensors of `manta eval --model
                                                         MODEL --split test --dump DIR`
  options: --infer build/bin/manta-infer  --backend CpuRef  --rel-l2 1e-4
           --tconv-bias-as-add   run a rewritten copy in Arm NN: each TRANSPOSE_CONV with a bias
                                 (4 inputs, version 3) as TRANSPOSE_CONV without one (version 1)
                                 followed by ADD of the bias (flatc and models/tflite_subset.fbs)
           --perturb DELTA       add DELTA to one input value of Arm NN's copy (the centre value of
                                 the first input): the comparison must then fail

With an image, manta-infer writes the input tensors as its engine sees them (--dump-input; a
stereo model's left then right) and its output (stereo: --dump-output; classification: --json
--all, the probabilities, or output_q for an int8 model); Arm NN is given exactly those tensors.
Prints one JSON line: the largest absolute difference and the relative L2 of the output; for int8
outputs how many values are equal, 1 LSB apart, further apart, and equal_pct. Passes (exit 0) when
float outputs agree within --rel-l2 (relative L2, as the LiteRT checks) and int8 outputs have
>= 99 % of the values equal and the rest within 1 LSB; exit 1 when they disagree, 3 when Arm NN
refuses the file ("refused": its message), 2 on usage or manta-infer errors. When Arm NN 20.08
(library 22.0.0) disagrees, "known_faults" lists the operators of the file it is known to compute
differently from TFLite (int8 PAD with a zero point other than 0: padded with 0; RESIZE_BILINEAR
with half_pixel_centers: ignored); an empty list means the disagreement is not explained.
Arm NN is a peer for checks only: manta never depends on it.
"""
import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def die(msg, rc=2):
    print(f"armnn_check: {msg}", file=sys.stderr)
    sys.exit(rc)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd[:3])}...: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def model_json(model, tmp):
    """MODEL as a dict (flatc --json with models/tflite_subset.fbs) and the JSON file's path."""
    flatc = shutil.which("flatc") or die("flatc (flatbuffers-compiler) is needed to read the model")
    schema = os.path.join(ROOT, "models", "tflite_subset.fbs")
    run([flatc, "--json", "--strict-json", "--raw-binary", "-o", tmp, schema, "--", model])
    js = os.path.join(tmp, os.path.splitext(os.path.basename(model))[0] + ".json")
    return json.load(open(js)), js, flatc, schema


def armnn_2008_faults(model, tmp):
    """Operators of MODEL that Arm NN 20.08 (library 22.0.0) parses but computes differently
    from TFLite: int8 PAD whose zero point is not 0 (padded with 0, not the zero point) and
    RESIZE_BILINEAR with half_pixel_centers (ignored: asymmetric sampling)."""
    m = model_json(model, tmp)[0]
    codes, sg = m["operator_codes"], m["subgraphs"][0]
    faults = {}
    for k, op in enumerate(sg["operators"]):
        code = codes[op.get("opcode_index", 0)].get("builtin_code")
        t = sg["tensors"][op["inputs"][0]]
        if code == "PAD" and t.get("type") == "INT8" and \
                any(z != 0 for z in t.get("quantization", {}).get("zero_point", [])):
            faults.setdefault("PAD: int8 padded with 0, not the input's zero point", []).append(k)
        if code == "RESIZE_BILINEAR" and op.get("builtin_options", {}).get("half_pixel_centers"):
            faults.setdefault("RESIZE_BILINEAR: half_pixel_centers ignored", []).append(k)
    return [f"{what} (operators {', '.join(map(str, ks))})" for what, ks in faults.items()]


def tconv_bias_as_add(model, tmp):
    """A copy of MODEL with every biased TRANSPOSE_CONV split into TRANSPOSE_CONV + ADD."""
    m, js, flatc, schema = model_json(model, tmp)
    codes, sg = m["operator_codes"], m["subgraphs"][0]
    tconv = {i for i, c in enumerate(codes) if c.get("builtin_code") == "TRANSPOSE_CONV"}
    add = [i for i, c in enumerate(codes) if c.get("builtin_code") == "ADD"]
    if not add:
        codes.append({"deprecated_builtin_code": 0, "version": 1, "builtin_code": "ADD"})
        add = [len(codes) - 1]
    ops, split = [], 0
    for op in sg["operators"]:
        if op.get("opcode_index", 0) in tconv and len(op["inputs"]) == 4 and op["inputs"][3] >= 0:
            out = op["outputs"][0]
            t = dict(sg["tensors"][out])
            t["name"] = t.get("name", "") + ".nobias"
            t.pop("buffer", None)
            sg["tensors"].append(t)
            mid = len(sg["tensors"]) - 1
            act = op.get("builtin_options", {}).pop("fused_activation_function", "NONE")
            ops.append(dict(op, inputs=op["inputs"][:3], outputs=[mid]))
            ops.append({"opcode_index": add[0], "inputs": [mid, op["inputs"][3]], "outputs": [out],
                        "builtin_options_type": "AddOptions",
                        "builtin_options": {"fused_activation_function": act}})
            split += 1
        else:
            ops.append(op)
    for i in tconv:
        codes[i]["version"] = 1
    sg["operators"] = ops
    # the offline arena plan names every tensor: the new ones are not in it
    m["metadata"] = [e for e in m.get("metadata", []) if e.get("name") != "OfflineMemoryAllocation"]
    json.dump(m, open(js, "w"))
    run([flatc, "-b", "-o", tmp, schema, js])
    out = os.path.join(tmp, os.path.splitext(os.path.basename(model))[0] + ".tflite")
    if not os.path.exists(out):
        die(f"flatc wrote no {out}")
    return out, split


class ArmNN:
    def __init__(self, path, backend):
        import pyarmnn as ann
        self.ann = ann
        self.parser = ann.ITfLiteParser()
        self.net = self.parser.CreateNetworkFromBinaryFile(path)
        self.in_names = list(self.parser.GetSubgraphInputTensorNames(0))
        if sorted(self.in_names) == ["left", "right"]:  # manta-infer dumps left, then right
            self.in_names = ["left", "right"]
        self.out_names = list(self.parser.GetSubgraphOutputTensorNames(0))
        self.ins = [self.parser.GetNetworkInputBindingInfo(0, n) for n in self.in_names]
        self.outs = [self.parser.GetNetworkOutputBindingInfo(0, n) for n in self.out_names[:1]]
        self.rt = ann.IRuntime(ann.CreationOptions())
        opt, _ = ann.Optimize(self.net, [ann.BackendId(backend)], self.rt.GetDeviceSpec(),
                              ann.OptimizerOptions())
        self.nid, _ = self.rt.LoadNetwork(opt)

    def shapes(self):
        return [tuple(b[1].GetShape()) for b in self.ins]

    def __call__(self, arrays):
        ann = self.ann
        it = ann.make_input_tensors(self.ins, [np.ascontiguousarray(a) for a in arrays])
        ot = ann.make_output_tensors(self.outs)
        self.rt.EnqueueWorkload(self.nid, it, ot)
        return ann.workload_tensors_to_ndarray(ot)[0].reshape(-1)


def main():
    # pyarmnn logs a warning per parser Debian does not build (Caffe, ONNX, TF): not ours
    logging.getLogger("pyarmnn").setLevel(logging.ERROR)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("images", nargs="*")
    p.add_argument("--dump", help="DIR of manta eval --model MODEL --dump DIR")
    p.add_argument("--images", dest="n", type=int, default=0, help="with --dump: the first N")
    p.add_argument("--infer", default=os.path.join(ROOT, "build", "bin", "manta-infer"))
    p.add_argument("--backend", default="CpuRef")
    p.add_argument("--rel-l2", type=float, default=1e-4)
    p.add_argument("--tconv-bias-as-add", action="store_true")
    p.add_argument("--perturb", type=float, default=0.0)
    a = p.parse_args()
    if bool(a.dump) == bool(a.images) or len(a.images) > 2:
        die("give either IMAGE [RIGHT] or --dump DIR")
    import pyarmnn as ann

    res = {"model": a.model, "backend": a.backend, "armnn": ann.ARMNN_VERSION}
    with tempfile.TemporaryDirectory() as tmp:
        model = a.model
        if a.tconv_bias_as_add:
            model, res["tconv_bias_split"] = tconv_bias_as_add(a.model, tmp)
        try:
            net = ArmNN(model, a.backend)
        except Exception as e:  # Arm NN raises RuntimeError for what it refuses
            res["refused"] = " ".join(str(e).split())
            print(json.dumps(res))
            sys.exit(3)
        shapes = net.shapes()
        dtype = np.int8 if net.ins[0][1].GetDataType() == ann.DataType_QAsymmS8 else np.float32
        if a.dump:
            if len(shapes) != 1:
                die("--dump is for one-input (classification) models; give a stereo model LEFT RIGHT")
            xs = np.fromfile(os.path.join(a.dump, "inputs.bin"), dtype=dtype)
            ours = np.fromfile(os.path.join(a.dump, "outputs.bin"), dtype=dtype)
            total = xs.size // int(np.prod(shapes[0]))
            if total == 0 or xs.size != total * int(np.prod(shapes[0])) or ours.size % total:
                die(f"{a.dump}: inputs.bin / outputs.bin do not hold whole {shapes[0]} inputs")
            n = total if a.n <= 0 else min(total, a.n)
            xs = xs.reshape((-1,) + shapes[0][1:])[:n]
            ours = ours.reshape(total, -1)[:n]
            inputs = [[xs[k:k + 1]] for k in range(n)]
        else:
            fin = os.path.join(tmp, "in.bin")
            cmd = [a.infer, a.model] + a.images + ["--dump-input", fin, "--json"]
            if len(shapes) == 2:
                fout = os.path.join(tmp, "out.f32")
                run(cmd + ["--dump-output", fout])
                ours = np.fromfile(fout, dtype="<f4")[None, :]
            else:
                img = json.loads(run(cmd + ["--all"]))["images"][0]
                ours = np.array(img["output_q"] if dtype == np.int8 else img["probs"], dtype=dtype)[None, :]
            x = np.fromfile(fin, dtype=dtype)
            sizes = [int(np.prod(s)) for s in shapes]
            if x.size != sum(sizes):
                die(f"manta-infer dumped {x.size} input values, Arm NN's inputs have {sum(sizes)}")
            inputs = [[x[:sizes[0]].reshape(shapes[0])] +
                      ([x[sizes[0]:].reshape(shapes[1])] if len(shapes) == 2 else [])]
        if a.perturb:
            x0 = inputs[0][0].copy()
            c = x0.reshape(-1)
            mid = c.size // 2
            c[mid] = np.clip(float(c[mid]) + a.perturb, -128, 127) if dtype == np.int8 else c[mid] + a.perturb
            inputs[0][0] = x0
            res["perturbed"] = {"input_value": mid, "delta": a.perturb}
        theirs = np.stack([net(x) for x in inputs])
    if theirs.shape != ours.shape:
        die(f"output shapes differ: Arm NN {theirs.shape}, manta-infer {ours.shape}", 1)
    t, o = theirs.astype(np.float64), ours.astype(np.float64)
    d = np.abs(t - o)
    res.update({"inputs": [list(s) for s in shapes], "dtype": np.dtype(dtype).name,
                "runs": len(inputs), "values": int(d.size), "max_abs": float(d.max()),
                "rel_l2": float(np.linalg.norm(t - o) / max(np.linalg.norm(o), 1e-30))})
    if dtype == np.int8:
        res.update({"equal": int((d == 0).sum()), "off_by_1": int((d == 1).sum()),
                    "off_by_more": int((d > 1).sum()), "equal_pct": float(100.0 * (d == 0).mean())})
        ok = res["equal_pct"] >= 99.0 and res["max_abs"] <= 1
    else:
        ok = res["rel_l2"] <= a.rel_l2
    res["agree"] = bool(ok)
    if not ok and ann.ARMNN_VERSION == "22.0.0":
        with tempfile.TemporaryDirectory() as tmp:
            res["known_faults"] = armnn_2008_faults(a.model, tmp)
    print(json.dumps(res))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
