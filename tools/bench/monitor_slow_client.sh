#!/bin/sh
# The training monitor and clients that never read (docs/monitor.md): the step time of
# `manta train --monitor 127.0.0.1:0` with no client, against the same training with
# CLIENTS clients that each open three connections and never read from them: an
# /api/events stream (records are pushed at every step), a /metrics request and a request
# cut in its headers (receive buffers of 1 KiB). After one run not counted (kernels built),
# the two conditions alternate, ROUNDS times each, in the order ABBA... (the same seed,
# schedule and steps: the same sub-networks and resolutions), so a change in the
# machine's load hits both; with the clients, the bytes the monitor could not send are
# reported. Each run's step time is the median of the step_ms of its progress records
# (one a step; the first left out); each condition's figure is the median over its
# rounds, and the ratio is with / without (also the median of the rounds' ratios). The CPU
# time of each training process (user + system, every thread: PoCL's, the monitor's) is
# given too: it depends less on what else the machine runs than the wall time does.
# Not a test (make bench-monitor).
#
#   tools/bench/monitor_slow_client.sh
# BUILD (build), ROUNDS (7), STEPS (30 steps of the quick schedule's first phase, the
# largest network at the sampled resolutions; batch BATCH, default 64), CLIENTS (5: 15
# connections, under the monitor's 16 per address), SCHEDULE (quick; smoke runs its 18
# steps over all six phases), KEEP=1 keeps the runs' folders (printed).
set -eu
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-7}
STEPS=${STEPS:-30}
CLIENTS=${CLIENTS:-5}
BATCH=${BATCH:-64}
SCHEDULE=${SCHEDULE:-quick}
M="$(pwd)/$BUILD/bin/manta"
[ -x "$M" ] || { echo "monitor_slow_client: $M is missing (run make first)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "monitor_slow_client: python3 is needed" >&2; exit 2; }
dir=$(mktemp -d)
tpid="" hpid=""
cleanup() {
    for p in $hpid $tpid; do kill "$p" 2>/dev/null || true; done
    if [ "${KEEP:-0}" = 1 ]; then echo "runs kept in $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# one training: run NAME CLIENTS -> $dir/NAME/metrics.jsonl; the held connections in NAME.hold
run() {
    name=$1 n=$2
    : >"$dir/$name.log"
    # under a small parent that forwards SIGTERM / SIGINT and writes the training's CPU time
    # (user, system: seconds) to NAME.cpu
    python3 - "$dir/$name.cpu" "$M" train --schedule "$SCHEDULE" --batch "$BATCH" --eval-images 0 \
        --log-every 1 --ckpt-every 0 --stop-after "$STEPS" --out "$dir/$name" \
        --monitor 127.0.0.1:0 >"$dir/$name.log" 2>&1 <<'EOF' &
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda s, _: os.kill(pid, s))
_, status, ru = os.wait4(pid, 0)  # retried by Python after a signal
open(sys.argv[1], "w").write("%.3f %.3f\n" % (ru.ru_utime, ru.ru_stime))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
EOF
    tpid=$!
    i=0
    until grep -q 'monitor at http://127.0.0.1:[0-9]*/' "$dir/$name.log"; do
        i=$((i + 1))
        if [ $i -ge 600 ] || ! kill -0 $tpid 2>/dev/null; then
            tail -5 "$dir/$name.log" >&2
            echo "monitor_slow_client: $name: the monitor did not start" >&2
            exit 1
        fi
        sleep 0.1
    done
    port=$(sed -n 's/.*monitor at http:\/\/127.0.0.1:\([0-9]*\)\/.*/\1/p' "$dir/$name.log" | head -1)
    hpid=""
    if [ "$n" -gt 0 ]; then
        # the monitor starts before the first step: the connections are held from step 1 on
        python3 - "$port" "$n" >"$dir/$name.hold" 2>&1 <<'EOF' &
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
reqs = (b"GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /api/run HTTP/1.1\r\nHo")
held = []
for _ in range(n):
    for req in reqs:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.connect(("127.0.0.1", port))
        s.sendall(req)
        held.append(s)
time.sleep(0.5)
# a connection the monitor refused (over its limits) is closed by it: count those still open
alive = 0
for s in held:
    s.setblocking(False)
    try:
        alive += s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print("holding", len(held), "open", alive, flush=True)
# until SIGTERM: the most bytes queued and not read on these connections (/proc/net/tcp:
# the monitor's send queues and these sockets' receive queues)
import signal
most = [0, 0]
def bye(*_):
    print("queued %d bytes unsent by the monitor, %d unread" % tuple(most), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
while True:
    tx = rx = 0
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            c = line.split()
            lport, rport = int(c[1].split(":")[1], 16), int(c[2].split(":")[1], 16)
            txq, rxq = (int(v, 16) for v in c[4].split(":"))
            if lport == port:
                tx += txq
            elif rport == port:
                rx += rxq
    most = [max(most[0], tx), max(most[1], rx)]
    time.sleep(0.2)
EOF
        hpid=$!
    fi
    wait $tpid || { tail -5 "$dir/$name.log" >&2; echo "monitor_slow_client: $name failed" >&2; exit 1; }
    tpid=""
    if [ -n "$hpid" ]; then
        kill "$hpid" 2>/dev/null || true
        wait "$hpid" 2>/dev/null || true
        hpid=""
    fi
}

echo "monitor_slow_client: $ROUNDS rounds of $STEPS steps ($SCHEDULE schedule, batch $BATCH),"
echo "  alternately without a client and with $CLIENTS clients x 3 connections never read"
run warmup 0 # the kernels built and cached, the data read once: not counted
r=1
while [ $r -le "$ROUNDS" ]; do
    if [ $((r % 2)) = 1 ]; then # ABBA: neither condition always runs first
        run "none-$r" 0
        run "slow-$r" "$CLIENTS"
    else
        run "slow-$r" "$CLIENTS"
        run "none-$r" 0
    fi
    echo "  round $r: $(tr '\n' ' ' <"$dir/slow-$r.hold" 2>/dev/null || echo 'no connection held')"
    r=$((r + 1))
done

python3 - "$dir" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def steps(name):
    out = []
    with open(os.path.join(d, name, "metrics.jsonl")) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "step_ms" in rec and rec.get("step", 0) > 1:
                out.append(rec["step_ms"])
    return out
def cpu(name):
    with open(os.path.join(d, name + ".cpu")) as f:
        return sum(float(x) for x in f.read().split())
med = {"none": [], "slow": []}
cpus = {"none": [], "slow": []}
for r in range(1, rounds + 1):
    row = []
    for c in ("none", "slow"):
        s = steps("%s-%d" % (c, r))
        med[c].append(statistics.median(s))
        cpus[c].append(cpu("%s-%d" % (c, r)))
        row.append("%s %.1f ms (%d steps, CPU %.1f s)" % (c, med[c][-1], len(s), cpus[c][-1]))
    print("  round %d: %s" % (r, ", ".join(row)))
a, b = statistics.median(med["none"]), statistics.median(med["slow"])
paired = statistics.median([y / x for x, y in zip(med["none"], med["slow"])])
ca, cb = statistics.median(cpus["none"]), statistics.median(cpus["slow"])
print("median step time: without a client %.1f ms, with the clients %.1f ms, ratio %.3f "
      "(median of the rounds' ratios %.3f)" % (a, b, b / a, paired))
print("median CPU time of a run (user + system, all threads): without %.2f s, with %.2f s, "
      "ratio %.3f" % (ca, cb, cb / ca))
print(json.dumps({"rounds": rounds, "none_ms": round(a, 2), "slow_ms": round(b, 2),
                  "ratio": round(b / a, 4), "paired_ratio": round(paired, 4),
                  "none_cpu_s": round(ca, 3), "slow_cpu_s": round(cb, 3),
                  "cpu_ratio": round(cb / ca, 4)}))
EOF
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
