#!/usr/bin/python3
"""Allreduce side by side: manta's ring, Gloo (torch.distributed) and Open MPI.

Runs, for each round and world size N, `manta bench allreduce -n N --json`, then the same
sizes with Gloo (N processes, TCP on 127.0.0.1) and, when mpicc and mpirun are
installed, with Open MPI over its TCP transport (a small C program compiled
here), and prints one nccl-tests style table: median time of the repetitions,
algbw = S/t and busbw = algbw * 2(N-1)/N, in GB/s (1e9 B/s). Every
implementation times one float32 sum allreduce of S bytes per rank, after a
one-element allreduce used as a barrier, with the same warm-up and repeats.

Usage: /usr/bin/python3 tools/bench/allreduce_peers.py [--manta build/bin/manta]
           [-n 2,4] [--sizes 1K,1M,64M] [--repeats R] [--json FILE] [--no-gloo] [--no-mpi]
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def parse_size(s):
    mul = 1
    s = s.strip().upper().rstrip("B")
    if s and s[-1] in "KMG":
        mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[s[-1]]
        s = s[:-1]
    return int(s) * mul


def repeats_for(nbytes, fixed):
    if fixed:
        return fixed
    return 10 if nbytes >= (16 << 20) else 20 if nbytes >= (1 << 20) else 100


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


# ---- manta ---------------------------------------------------------------------------------------------

def run_manta(binary, n, sizes, repeats, warmup, mac):
    cmd = [binary, "bench", "allreduce", "-n", str(n), "--sizes", ",".join(str(s) for s in sizes),
           "--warmup", str(warmup), "--json", "--mac", mac]
    if repeats:
        cmd += ["--repeats", str(repeats)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600).stdout
    doc = json.loads(out)
    return [{"bytes": r["bytes"], "time_us": r["time_us"]} for r in doc["results"]]


# ---- Gloo ----------------------------------------------------------------------------------------------

def gloo_worker(rank, world, port, sizes, repeats, warmup, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    res = []
    one = torch.ones(1)
    for nbytes in sizes:
        n = nbytes // 4
        x = torch.empty(n, dtype=torch.float32)
        reps = repeats_for(nbytes, repeats)
        t = []
        for r in range(-warmup, reps):
            x.fill_(0.5)
            dist.all_reduce(one)
            t0 = time.perf_counter()
            dist.all_reduce(x)
            if r >= 0:
                t.append(time.perf_counter() - t0)
        res.append({"bytes": nbytes, "time_us": median(t) * 1e6})
    if rank == 0:
        queue.put(res)
    dist.destroy_process_group()


def run_gloo(n, sizes, repeats, warmup):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=gloo_worker, args=(r, n, port, sizes, repeats, warmup, q)) for r in range(n)]
    for p in procs:
        p.start()
    res = q.get(timeout=900)
    for p in procs:
        p.join(60)
    return res


# ---- Open MPI ------------------------------------------------------------------------------------------

MPI_PROG = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int warmup = atoi(argv[1]);
    for (int a = 2; a + 1 < argc; a += 2) {
        long bytes = atol(argv[a]); int reps = atoi(argv[a + 1]);
        long n = bytes / 4;
        float *x = malloc((n ? n : 1) * sizeof *x), one = 1.0f;
        double *t = malloc(reps * sizeof *t);
        for (int r = -warmup; r < reps; r++) {
            for (long i = 0; i < n; i++) x[i] = 0.5f;
            MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (r >= 0) t[r] = MPI_Wtime() - t0;
        }
        qsort(t, reps, sizeof *t, cmp);
        double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
        if (rank == 0) printf("%ld %.3f\n", bytes, med * 1e6);
        fflush(stdout);
        free(x); free(t);
    }
    MPI_Finalize();
    return 0;
}
"""


def build_mpi(tmp):
    if not shutil.which("mpicc") or not shutil.which("mpirun"):
        return None
    src = os.path.join(tmp, "mpi_allreduce.c")
    exe = os.path.join(tmp, "mpi_allreduce")
    with open(src, "w") as f:
        f.write(MPI_PROG)
    r = subprocess.run(["mpicc", "-O2", "-o", exe, src], capture_output=True, text=True)
    if r.returncode != 0:
        print("# Open MPI skipped: mpicc failed (the headers come with libopenmpi-dev): "
              + (r.stderr.strip().splitlines() or ["?"])[-1], file=sys.stderr)
        return None
    return exe


def run_mpi(exe, n, sizes, repeats, warmup):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), "--mca", "pml", "ob1",
           "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
           exe, str(warmup)]
    for s in sizes:
        cmd += [str(s), str(repeats_for(s, repeats))]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900).stdout
    res = []
    for line in out.splitlines():
        b, t = line.split()
        res.append({"bytes": int(b), "time_us": float(t)})
    return res


# ---- main ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manta", default="build/bin/manta")
    ap.add_argument("-n", default="2,4", help="world sizes, comma-separated")
    ap.add_argument("--sizes", default="1K,1M,64M")
    ap.add_argument("--repeats", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--mac", default="header", choices=["header", "full"])
    ap.add_argument("--rounds", type=int, default=3,
                    help="run every implementation this many times, interleaved; report the median round")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--no-gloo", action="store_true")
    ap.add_argument("--no-mpi", action="store_true")
    a = ap.parse_args()
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    worlds = [int(x) for x in a.n.split(",")]
    rows = []
    times = {}
    with tempfile.TemporaryDirectory(prefix="manta-ar-") as tmp:
        mpi = None if a.no_mpi else build_mpi(tmp)
        if not a.no_mpi and not mpi:
            print("# Open MPI: mpicc/mpirun not found (apt-get install openmpi-bin libopenmpi-dev); skipped",
                  file=sys.stderr)
        order = []
        for rnd in range(a.rounds):
            for n in worlds:
                impls = [("manta", lambda: run_manta(a.manta, n, sizes, a.repeats, a.warmup, a.mac))]
                if not a.no_gloo:
                    impls.append(("gloo", lambda: run_gloo(n, sizes, a.repeats, a.warmup)))
                if mpi:
                    impls.append(("openmpi", lambda: run_mpi(mpi, n, sizes, a.repeats, a.warmup)))
                for name, fn in impls:
                    print(f"# round {rnd + 1}/{a.rounds}: {name} with N={n} ...", file=sys.stderr, flush=True)
                    for r in fn():
                        key = (name, n, r["bytes"])
                        if key not in times:
                            times[key] = []
                            order.append(key)
                        times[key].append(r["time_us"])
        for key in order:
            name, n, nbytes = key
            tus = median(times[key])
            alg = nbytes / (tus * 1e-6) / 1e9
            rows.append({"impl": name, "ranks": n, "bytes": nbytes, "time_us": round(tus, 2),
                         "rounds_us": [round(x, 1) for x in times[key]],
                         "algbw_gbps": round(alg, 4), "busbw_gbps": round(alg * 2 * (n - 1) / n, 4)})
    print(f"# allreduce float32 sum, processes on 127.0.0.1; time = median over {a.rounds} interleaved rounds of "
          f"the median of repeats; manta frame tags: {a.mac}")
    print(f"# {'impl':8} {'N':>3} {'size(B)':>12} {'time(us)':>12} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}")
    for r in rows:
        print(f"  {r['impl']:8} {r['ranks']:>3} {r['bytes']:>12} {r['time_us']:>12.1f} {r['algbw_gbps']:>12.3f} "
              f"{r['busbw_gbps']:>12.3f}")
    for n in worlds:
        for s in sizes:
            m = [r for r in rows if r["impl"] == "manta" and r["ranks"] == n and r["bytes"] == s]
            g = [r for r in rows if r["impl"] == "gloo" and r["ranks"] == n and r["bytes"] == s]
            if m and g and g[0]["busbw_gbps"] > 0:
                print(f"# N={n} {s} B: manta busbw / gloo busbw = {m[0]['busbw_gbps'] / g[0]['busbw_gbps']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"benchmark": "allreduce", "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
