#!/usr/bin/env python3
"""Single-thread latency of .tflite files in one or more manta-infer builds and in LiteRT
(ai-edge-litert, XNNPACK, one thread), side by side in alternating rounds: wall and CPU time.

    tools/bench/engine_latency.py MODEL... --infer NAME=PATH [--infer NAME=PATH ...]
        [--pair LEFT RIGHT] [--rounds R] [--runs N] [--jsonl FILE]

Inputs: a stereo model (two inputs) gets the pair --pair as manta-infer decodes it (its
--dump-input tensors go to LiteRT); a model with one input gets MODEL with .tflite replaced by
.in.f32 (tools/bench/engine_peers.py input writes one) as a raw tensor (manta-infer --raw; for
an int8 model its int8 bytes).
Every round runs every model in every runtime, the order of the runtimes rotating from round
to round. manta: `manta-infer ... --bench N --json` (median of N invocations after 3 warm-up
runs, wall clock) in its own process; its CPU time per invocation is the process's user + system
time with --bench N less that with --bench 1, over N - 1 (the load and the warm-up cancel).
LiteRT: N invoke() calls in this process after 3 warm-up calls, the median of time.perf_counter
(wall) and of time.thread_time (CPU) around each; its Python call overhead is the same median
on a one-operator model (RELU of 4 values, written here with LiteRT's own schema module),
reported beside. Prints one JSON line per measurement (also to --jsonl) and, at the end, the
medians over the rounds as a Markdown table. Run with a Python that has ai-edge-litert and
numpy. Not a test: tests never depend on this script.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from ai_edge_litert.interpreter import Interpreter


def one_op_model(path):
    """A .tflite with one RELU over a float32 [1, 4] tensor (LiteRT's schema object API)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as s

    m = s.ModelT()
    m.version = 3
    oc = s.OperatorCodeT()
    oc.builtinCode = s.BuiltinOperator.RELU
    oc.deprecatedBuiltinCode = s.BuiltinOperator.RELU
    oc.version = 1
    m.operatorCodes = [oc]
    m.buffers = [s.BufferT(), s.BufferT(), s.BufferT()]
    tensors = []
    for i, name in enumerate(["x", "y"]):
        t = s.TensorT()
        t.shape = [1, 4]
        t.type = s.TensorType.FLOAT32
        t.buffer = i + 1
        t.name = name
        tensors.append(t)
    op = s.OperatorT()
    op.opcodeIndex = 0
    op.inputs = [0]
    op.outputs = [1]
    g = s.SubGraphT()
    g.tensors = tensors
    g.inputs = [0]
    g.outputs = [1]
    g.operators = [op]
    m.subgraphs = [g]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    with open(path, "wb") as f:
        f.write(b.Output())


def time_litert(model, inputs, runs):
    it = Interpreter(model_path=model, num_threads=1)
    it.allocate_tensors()
    ins = sorted(it.get_input_details(), key=lambda d: d["index"])
    for d, x in zip(ins, inputs):
        it.set_tensor(d["index"], x.reshape(d["shape"]))
    for _ in range(3):
        it.invoke()
    wall, cpu = [], []
    for _ in range(runs):
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        it.invoke()
        w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        wall.append((w1 - w0) / 1e6)
        cpu.append((c1 - c0) / 1e6)
    return statistics.median(wall), statistics.median(cpu)


def child_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_infer(path, args, n):
    c0 = child_cpu_s()
    r = subprocess.run([path] + args + ["--bench", str(n), "--json"], capture_output=True,
                       text=True)
    c1 = child_cpu_s()
    if r.returncode != 0:
        sys.exit(f"engine_latency: {path}: {r.stderr.strip()}")
    return json.loads(r.stdout)["bench"]["median_ms"], c1 - c0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--infer", action="append", required=True, help="NAME=PATH of a manta-infer")
    p.add_argument("--pair", nargs=2, metavar=("LEFT", "RIGHT"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--jsonl")
    a = p.parse_args()
    infers = [tuple(s.split("=", 1)) for s in a.infer]
    out = open(a.jsonl, "w") if a.jsonl else None

    def emit(d):
        line = json.dumps(d)
        print(line, flush=True)
        if out:
            out.write(line + "\n")

    tmp = tempfile.mkdtemp()
    args, inputs = {}, {}
    for m in a.models:
        it = Interpreter(model_path=m, num_threads=1)
        ins = sorted(it.get_input_details(), key=lambda d: d["index"])
        if len(ins) == 2:
            f = os.path.join(tmp, os.path.basename(m) + ".in.f32")
            args[m] = [m, a.pair[0], a.pair[1]]
            subprocess.run([infers[0][1]] + args[m] + ["--dump-input", f], check=True,
                           capture_output=True)
            x = np.fromfile(f, dtype="<f4")
            n0 = int(np.prod(ins[0]["shape"]))
            inputs[m] = [x[:n0], x[n0:]]
        else:
            f = m[: -len(".tflite")] + ".in.f32"
            args[m] = [m, f, "--raw"]
            dt = np.int8 if ins[0]["dtype"] == np.int8 else "<f4"  # an int8 model's raw bytes
            inputs[m] = [np.fromfile(f, dtype=dt)]
    one = os.path.join(tmp, "one_op.tflite")
    one_op_model(one)
    order = [n for n, _ in infers] + ["litert"]
    paths = dict(infers)
    res = []
    for r in range(a.rounds):
        load = open("/proc/loadavg").read().split()[:3]
        for m in a.models:
            for rt in order:
                if rt == "litert":
                    wall, cpu = time_litert(m, inputs[m], a.runs)
                else:
                    wall, c_n = run_infer(paths[rt], args[m], a.runs)
                    _, c_1 = run_infer(paths[rt], args[m], 1)
                    cpu = max(c_n - c_1, 0.0) * 1e3 / (a.runs - 1)
                d = {"round": r + 1, "model": m, "runtime": rt, "wall_ms": wall, "cpu_ms": cpu,
                     "load": load}
                res.append(d)
                emit(d)
        ow, oc = time_litert(one, [np.zeros(4, dtype=np.float32)], a.runs)
        d = {"round": r + 1, "model": "one-op RELU", "runtime": "litert", "wall_ms": ow,
             "cpu_ms": oc, "load": load}
        res.append(d)
        emit(d)
        order = order[1:] + order[:1]
    names = [n for n, _ in infers] + ["litert"]
    print()
    print("| model | " + " | ".join(f"{n} wall / cpu ms" for n in names) + " | " +
          " | ".join(f"{n} / litert (wall, cpu)" for n, _ in infers) + " |")
    print("| --- |" + " ---: |" * (2 * len(names) - 1))
    for m in a.models + ["one-op RELU"]:
        med = {}
        for n in names:
            v = [d for d in res if d["model"] == m and d["runtime"] == n]
            if v:
                med[n] = (statistics.median(d["wall_ms"] for d in v),
                          statistics.median(d["cpu_ms"] for d in v))
        cells = [f"{med[n][0]:.4f} / {med[n][1]:.4f}" if n in med else "-" for n in names]
        ratios = [f"{med[n][0] / med['litert'][0]:.2f}, {med[n][1] / med['litert'][1]:.2f}"
                  if n in med and "litert" in med else "-" for n, _ in infers]
        print(f"| {os.path.basename(m)} | " + " | ".join(cells) + " | " + " | ".join(ratios) +
              " |")


if __name__ == "__main__":
    main()
