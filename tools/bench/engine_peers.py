#!/usr/bin/env python3
"""Latency and arena of one .tflite file in a peer runtime (LiteRT or TFLM).

    tools/bench/engine_peers.py litert MODEL [--runs N] [--warmup W] [--seed S]
    tools/bench/engine_peers.py tflm   MODEL [--runs N] [--warmup W] [--seed S]
    tools/bench/engine_peers.py tflm-arena MODEL
    tools/bench/engine_peers.py input MODEL --out FILE [--seed S]
    tools/bench/engine_peers.py report RESULTS.jsonl

Prints one JSON line. For latency: {"runtime", "model", "runs", "min_ms",
"median_ms", "p90_ms"}, the time of invoke() alone (set_input once before the
warm-up, as manta-infer --bench does), measured with time.perf_counter_ns
around each call. The input is uniform random in [-2, 2) (--seed).

- litert: ai_edge_litert Interpreter(num_threads=1); the XNNPACK delegate is
  applied by default to float models.
- tflm: tflite_micro's Python interpreter (reference kernels), arena given
  generously (model size x 10, the package's default).
- tflm-arena: TFLM's arena needs for the file: "used" is what its recording
  allocator reports after an invocation (head = planned activations and
  scratch, tail = persistent: tensor and node structures, op data), and
  "min_arena" the smallest arena_size the interpreter accepts (bisection over
  Interpreter construction, which allocates the tensors); also whether the
  file's OfflineMemoryAllocation metadata was used (TFLM prints a message
  when the offline plan is refused).

- input: writes the same random input tensor as raw float32 (manta-infer --raw).
- report: the tables of tools/bench/engine_vs_peers.sh from its JSON lines.

Used by tools/bench/engine_vs_peers.sh; not a test, not a product dependency.
"""
import argparse
import json
import os
import sys
import tempfile
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runtime", choices=["litert", "tflm", "tflm-arena", "input", "report"])
    p.add_argument("model", help="the .tflite file (report: the results file)")
    p.add_argument("--out", help="input: where to write the tensor")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def stats(times_ns):
    t = sorted(x / 1e6 for x in times_ns)
    n = len(t)
    med = t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])
    k = min(max(int(0.9 * n + 0.999999) - 1, 0), n - 1)  # nearest rank, as manta-infer
    return {"min_ms": round(t[0], 4), "median_ms": round(med, 4), "p90_ms": round(t[k], 4)}


def time_invoke(invoke, runs, warmup):
    for _ in range(warmup):
        invoke()
    times = []
    clock = time.perf_counter_ns
    for _ in range(runs):
        t0 = clock()
        invoke()
        times.append(clock() - t0)
    return times


def litert(args, x_for):
    from ai_edge_litert.interpreter import Interpreter
    interp = Interpreter(model_path=args.model, num_threads=1)
    interp.allocate_tensors()
    inp = interp.get_input_details()[0]
    interp.set_tensor(inp["index"], x_for(tuple(inp["shape"]), inp["dtype"]))
    return time_invoke(interp.invoke, args.runs, args.warmup)


def tflm_interpreter(model, arena_size=None):
    from tflite_micro.python.tflite_micro import runtime
    return runtime.Interpreter.from_file(model, arena_size=arena_size)


def tflm(args, x_for):
    interp = tflm_interpreter(args.model)
    d = interp.get_input_details(0)
    interp.set_input(x_for(tuple(d["shape"]), d["dtype"]), 0)
    return time_invoke(interp.invoke, args.runs, args.warmup)


class CaptureFd:
    """Everything the C++ side writes to stdout and stderr (MicroPrintf)."""

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.tmp = tempfile.TemporaryFile(mode="w+b")
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.tmp.fileno(), 1)
        os.dup2(self.tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        self.tmp.seek(0)
        self.text = self.tmp.read().decode(errors="replace")
        self.tmp.close()
        return False


def tflm_fits(model, arena_size):
    try:
        with CaptureFd():
            tflm_interpreter(model, arena_size)
        return True
    except Exception:  # RuntimeError from AllocateTensors
        return False


def tflm_arena(args, x_for):
    import numpy as np
    with CaptureFd() as cap:
        interp = tflm_interpreter(args.model)
        d = interp.get_input_details(0)
        interp.set_input(x_for(tuple(d["shape"]), d["dtype"]), 0)
        interp.invoke()
        interp.print_allocations()
    text = cap.text
    rec = {}
    for key in ("total", "head", "tail"):
        tag = f"Arena allocation {key} "
        for line in text.splitlines():
            if tag in line:
                rec[key] = int(line.split(tag)[1].split()[0])
    lo, hi = 1, os.path.getsize(args.model) * 10
    if not tflm_fits(args.model, hi):
        sys.exit(f"engine_peers: TFLM does not fit {args.model} in {hi} bytes")
    while hi - lo > 16:  # the arena is 16-byte aligned inside: 16-byte resolution is enough
        mid = (lo + hi) // 2
        if tflm_fits(args.model, mid):
            hi = mid
        else:
            lo = mid
    offline_refused = "offline" in text.lower()
    del np
    return {"used_total": rec.get("total"), "used_head": rec.get("head"),
            "used_tail": rec.get("tail"), "min_arena": hi,
            "offline_plan_refused": offline_refused,
            "log": [l for l in text.splitlines() if "offline" in l.lower()][:3]}


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def report(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    models, lat, info = [], {}, {}
    for r in rows:
        m = r["name"]
        if m not in models:
            models.append(m)
        if r["kind"] == "latency":
            lat.setdefault((m, r["runtime"]), []).append(r["median_ms"])
        else:
            info.setdefault(m, {}).update(r)
    runtimes = [rt for rt in ("manta", "manta-generic", "litert", "tflm")
                if any((m, rt) in lat for m in models)]
    rounds = max(len(v) for v in lat.values())
    print(f"Latency, ms: median over {rounds} interleaved rounds of each round's median invoke time")
    print()
    head = "| model | MACs | " + " | ".join(runtimes) + " | manta / LiteRT | TFLM / manta |"
    print(head)
    print("| --- | ---: | " + " | ".join("---:" for _ in runtimes) + " | ---: | ---: |")
    for m in models:
        med = {rt: median(lat[(m, rt)]) for rt in runtimes if (m, rt) in lat}
        cells = [f"{med[rt]:.4f}" if rt in med else "-" for rt in runtimes]
        r1 = f"{med['manta'] / med['litert']:.2f}" if "manta" in med and "litert" in med else "-"
        r2 = f"{med['tflm'] / med['manta']:.1f}" if "manta" in med and "tflm" in med else "-"
        print(f"| {m} | {info.get(m, {}).get('macs', '-')} | " + " | ".join(cells) + f" | {r1} | {r2} |")
    print()
    print("Per-round medians (ms):")
    for m in models:
        parts = [f"{rt} " + ", ".join(f"{x:.4f}" for x in lat[(m, rt)]) for rt in runtimes if (m, rt) in lat]
        print(f"  {m}: " + "; ".join(parts))
    print()
    print("Arena, bytes: manta (activations + scratch, records) against TFLM (head = planned tensors and"
          " scratch, tail = persistent structures), with the file's offline plan and without it")
    print()
    print("| model | manta arena | manta activations | manta records | TFLM total | TFLM head | TFLM tail "
          "| TFLM min arena | TFLM total, no offline plan | manta / TFLM |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for m in models:
        i = info.get(m, {})
        if "arena_bytes" not in i:
            continue
        ratio = i["arena_bytes"] / i["tflm_used_total"] if i.get("tflm_used_total") else float("nan")
        print(f"| {m} | {i['arena_bytes']} | {i['activation_bytes']} | {i['records_bytes']} | "
              f"{i.get('tflm_used_total')} | {i.get('tflm_used_head')} | {i.get('tflm_used_tail')} | "
              f"{i.get('tflm_min_arena')} | {i.get('tflm_noplan_used_total')} | {ratio:.3f} |")


def main():
    args = parse_args()
    if args.runtime == "report":
        report(args.model)
        return
    import numpy as np
    rng = np.random.default_rng(args.seed)

    def x_for(shape, dtype=np.float32):  # an int8 model's input: uniform int8 values
        if np.dtype(dtype) == np.int8:
            return rng.integers(-128, 128, size=shape).astype(np.int8)
        return rng.uniform(-2, 2, size=shape).astype(np.float32)

    out = {"runtime": args.runtime, "model": args.model}
    if args.runtime == "input":
        from ai_edge_litert.interpreter import Interpreter
        interp = Interpreter(model_path=args.model)
        d = interp.get_input_details()[0]
        x = x_for(tuple(d["shape"]), d["dtype"])
        (x if x.dtype == np.int8 else x.astype("<f4")).tofile(args.out)
        return
    if args.runtime == "tflm-arena":
        out.update(tflm_arena(args, x_for))
    else:
        times = (litert if args.runtime == "litert" else tflm)(args, x_for)
        out["runs"] = len(times)
        out.update(stats(times))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
