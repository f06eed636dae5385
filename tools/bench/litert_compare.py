#!/usr/bin/env python3
"""Compare manta-infer with LiteRT (ai-edge-litert) on the same .tflite file.

    tools/bench/litert_compare.py MODEL [IMAGE.jpg ...] [--random N] [--seed S]
                                  [--infer build/bin/manta-infer] [--python PY]
                                  [--venv build/litert-venv]

Inputs are either random tensors (uniform in [-2, 2), --random N, the default
when no image is given) or JPEG files: manta-infer decodes and preprocesses a
JPEG (--dump-input) and LiteRT is given exactly that tensor, so the figures
compare the two runtimes, not two JPEG decoders. For every input it prints the
largest absolute difference of the probabilities (the model output) and of the
logits (the tensor the "manta_preprocess" metadata names; LiteRT reads it with
experimental_preserve_all_tensors), then the overall maxima.

LiteRT comes from PyPI (ai-edge-litert): when the running interpreter cannot
import it, the script creates a virtual environment (--venv, default
build/litert-venv), installs ai-edge-litert and numpy there, and runs itself
again with that environment's python. --python PY uses that interpreter (for
the virtual environment, or directly if it already has ai-edge-litert).
Not a test: tests never depend on this script.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("images", nargs="*", help="JPEG files (preprocessed by manta-infer)")
    p.add_argument("--random", type=int, default=None, help="random inputs (default 5 without images)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--infer", default=os.path.join(ROOT, "build", "bin", "manta-infer"))
    p.add_argument("--python", default=None, help="interpreter for LiteRT / the virtual environment")
    p.add_argument("--venv", default=os.path.join(ROOT, "build", "litert-venv"))
    p.add_argument("--no-venv", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def ensure_litert(args):
    """Import LiteRT, or re-run this script in an environment that has it."""
    try:
        from ai_edge_litert.interpreter import Interpreter  # noqa: F401
        import numpy  # noqa: F401
        return
    except ImportError:
        if args.no_venv:
            sys.exit("litert_compare: ai-edge-litert is not importable even in the virtual environment")
    base = args.python or sys.executable
    venv_py = os.path.join(args.venv, "bin", "python")
    probe = [base, "-c", "import ai_edge_litert, numpy"]
    if args.python and subprocess.run(probe, capture_output=True).returncode == 0:
        py = args.python
    else:
        if not os.path.exists(venv_py):
            print(f"litert_compare: creating {args.venv} with {base}", file=sys.stderr)
            subprocess.run([base, "-m", "venv", args.venv], check=True)
        if subprocess.run([venv_py, "-c", "import ai_edge_litert, numpy"], capture_output=True).returncode:
            print("litert_compare: installing ai-edge-litert and numpy", file=sys.stderr)
            subprocess.run([venv_py, "-m", "pip", "install", "--quiet", "ai-edge-litert", "numpy"], check=True)
        py = venv_py
    argv = [py, os.path.abspath(__file__)] + [a for a in sys.argv[1:]] + ["--no-venv"]
    os.execv(py, argv)


# ---- a minimal FlatBuffers reader for the model's metadata ----

def _u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def _table_field(b, table, field_id):
    vt = table - struct.unpack_from("<i", b, table)[0]
    vt_size = struct.unpack_from("<H", b, vt)[0]
    slot = 4 + 2 * field_id
    if slot + 2 > vt_size:
        return None
    off = struct.unpack_from("<H", b, vt + slot)[0]
    return table + off if off else None


def _deref(b, at):
    return at + _u32(b, at)


def model_metadata(path):
    """{name: bytes} of the model's metadata entries."""
    b = open(path, "rb").read()
    root = _u32(b, 0)
    out = {}
    meta_f, bufs_f = _table_field(b, root, 6), _table_field(b, root, 4)
    if meta_f is None or bufs_f is None:
        return out
    meta, bufs = _deref(b, meta_f), _deref(b, bufs_f)
    for i in range(_u32(b, meta)):
        entry = _deref(b, meta + 4 + 4 * i)
        name_f, buf_f = _table_field(b, entry, 0), _table_field(b, entry, 1)
        if name_f is None:
            continue
        s = _deref(b, name_f)
        name = b[s + 4:s + 4 + _u32(b, s)].decode()
        index = _u32(b, buf_f) if buf_f is not None else 0
        buf = _deref(b, bufs + 4 + 4 * index)
        data_f = _table_field(b, buf, 0)
        if data_f is None:
            out[name] = b""
            continue
        v = _deref(b, data_f)
        out[name] = b[v + 4:v + 4 + _u32(b, v)]
    return out


def run_manta(args, raw_path):
    r = subprocess.run([args.infer, args.model, raw_path, "--raw", "--json", "--all", "--top", "1"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"litert_compare: manta-infer failed: {r.stderr.strip()}")
    img = json.loads(r.stdout)["images"][0]
    return img["probs"], img.get("logits")


def main():
    args = parse_args()
    ensure_litert(args)
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    meta = model_metadata(args.model)
    pre = json.loads(meta["manta_preprocess"]) if "manta_preprocess" in meta else {}
    logits_index = pre.get("logits_tensor", -1)
    interp = Interpreter(model_path=args.model, experimental_preserve_all_tensors=True)
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    shape = tuple(inp["shape"])
    rng = np.random.default_rng(args.seed)
    n_random = args.random if args.random is not None else (0 if args.images else 5)

    inputs = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(n_random):
            inputs.append((f"random {k}", rng.uniform(-2, 2, size=shape).astype(np.float32)))
        for path in args.images:
            dump = os.path.join(tmp, "in.f32")
            r = subprocess.run([args.infer, args.model, path, "--dump-input", dump, "--top", "1"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"litert_compare: manta-infer failed on {path}: {r.stderr.strip()}")
            inputs.append((path, np.fromfile(dump, dtype=np.float32).reshape(shape)))

        print(f"model {args.model}: input {[int(d) for d in shape]}, output {[int(d) for d in out['shape']]}, "
              f"logits tensor {logits_index}")
        print(f"{'input':<32} {'max |dprob|':>12} {'max |dlogit|':>12}  top-1 (manta / LiteRT)")
        worst_p = worst_l = 0.0
        for name, x in inputs:
            raw = os.path.join(tmp, "x.f32")
            x.astype("<f4").tofile(raw)
            m_probs, m_logits = run_manta(args, raw)
            interp.set_tensor(inp["index"], x)
            interp.invoke()
            l_probs = interp.get_tensor(out["index"]).reshape(-1)
            dp = float(np.max(np.abs(np.array(m_probs, dtype=np.float64) - l_probs)))
            worst_p = max(worst_p, dp)
            dl_text = "-"
            if logits_index >= 0 and m_logits is not None:
                l_logits = interp.get_tensor(logits_index).reshape(-1)
                dl = float(np.max(np.abs(np.array(m_logits, dtype=np.float64) - l_logits)))
                worst_l = max(worst_l, dl)
                dl_text = f"{dl:.3e}"
            print(f"{name[-32:]:<32} {dp:>12.3e} {dl_text:>12}  "
                  f"{int(np.argmax(m_probs))} / {int(np.argmax(l_probs))}")
        print(f"overall: max |dprob| {worst_p:.3e}, max |dlogit| {worst_l:.3e} over {len(inputs)} inputs")


if __name__ == "__main__":
    main()
