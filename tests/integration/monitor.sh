#!/bin/sh
# The training monitor (docs/monitor.md), with curl:
#  - a 2-rank training (manta launch on loopback) with --monitor 127.0.0.1:0 (a free port):
#    /healthz, /api/run's job fields and the sampled sub-networks' sizes, /api/metrics?since=
#    growing, /api/ranks, /api/events pushing records, /metrics parsed line by line with the
#    expected series, 400 / 404 / 405
#    for malformed requests; clients that connect and never read (an event stream, a request
#    cut in its headers, /metrics) do not stop the steps from advancing; after SIGTERM, both
#    ranks' figures in the progress records and in the event file (manta events);
#  - manta monitor on 0.0.0.0: refused without MANTA_MONITOR_TOKEN; with it, 401 without the
#    token and 200 with it (header or query);
#  - a 2-rank job whose rank 1 is killed: rank 0's error record names rank 1;
#  - manta monitor over the two folders: /api/ranks marks rank 1 dead, --on-alert's command gets
#    the alert as JSON; in headless Chromium the page is drawn (the screenshot is decoded and is
#    not blank; the sampled sub-networks' MACs charted) and rank 1's row is red (data-dead="1");
#    skipped with a message when chromium is not installed.
# About 15 s.
set -eu
M="$(pwd)/${BUILD:-build}/bin/manta"
dir=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    sleep 0.2
    for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    for f in "$dir"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
    exit 1
}
unset MANTA_MONITOR_TOKEN || true
command -v curl >/dev/null || fail "curl is not installed (make deps)"
# a number member of a JSON text, its first occurrence: json_num TEXT NAME
json_num() { printf '%s' "$1" | grep -o "\"$2\":[0-9.e+-]*" | head -1 | cut -d: -f2; }
code() { curl -s -o /dev/null -w '%{http_code}' -m 5 "$@"; }

# ---- a 2-rank training with the monitor on rank 0
export POCL_DEVICES="pthread"
"$M" launch -n 2 -- "$M" train --schedule quick --batch 16 --eval-images 0 --log-every 2 \
    --stop-after 1000 --timeout 30 --out "$dir/run" --monitor 127.0.0.1:0 >"$dir/train.log" 2>&1 &
tpid=$!
pids="$pids $tpid"
i=0
until grep -q 'monitor at http://127.0.0.1:[0-9]*/' "$dir/train.log" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "the monitor did not start"
    kill -0 $tpid 2>/dev/null || fail "the training stopped before its monitor started"
    sleep 0.1
done
port=$(sed -n 's/.*monitor at http:\/\/127.0.0.1:\([0-9]*\)\/.*/\1/p' "$dir/train.log" | head -1)
B="http://127.0.0.1:$port"
[ "$(curl -fsS -m 5 "$B/healthz")" = ok ] || fail "/healthz"
i=0
until [ "$(json_num "$(curl -fsS -m 5 "$B/api/run")" step)" -ge 4 ] 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "no step 4 within 30 s"
    sleep 0.1
done
run=$(curl -fsS -m 5 "$B/api/run")
for f in '"state":"running"' '"space":"cpu-default"' '"schedule":"quick"' '"world_size":2' \
         '"count":6' '"name":"full"' '"subnets":1' '"checkpoints":{' '"alerts":[' '"eta_s":' \
         '"subnets":{"n":2,"macs_mean":'; do
    printf '%s' "$run" | grep -qF "$f" || fail "/api/run lacks $f: $run"
done
n1=$(json_num "$(curl -fsS -m 5 "$B/api/metrics?since=0")" last)
curl -fsS -m 5 "$B/api/ranks" | grep -q '"rank":0,"device":"[^"]' || fail "/api/ranks has no rank 0"
# the event stream pushes the next records
curl -sN -m 4 "$B/api/events?since=$n1" >"$dir/events.txt" || true
grep -q '^event: records' "$dir/events.txt" || fail "no record pushed on /api/events within 4 s"
n2=$(json_num "$(curl -fsS -m 5 "$B/api/metrics?since=0")" last)
[ "$n2" -gt "$n1" ] || fail "/api/metrics did not grow ($n1 then $n2)"
echo "api: records $n1 -> $n2, events pushed"

# /metrics: every line a comment or a sample; the expected series
curl -fsS -m 5 "$B/metrics" >"$dir/metrics.txt"
bad=$(grep -Evc '^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+|[a-zA-Z_:][a-zA-Z0-9_:]*\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\} (-?[0-9.]+(e[-+]?[0-9]+)?|NaN|[-+]Inf))$' \
      "$dir/metrics.txt" || true)
[ "$bad" -eq 0 ] || { grep -Ev '^# ' "$dir/metrics.txt" | head; fail "/metrics: $bad malformed lines"; }
for s in 'manta_train_step{run="run"}' 'manta_train_loss{run="run"}' 'manta_train_learning_rate{run="run"}' \
         'manta_train_images_per_second{run="run",rank="0",device="' 'manta_train_step_seconds{run="run"}' \
         'manta_train_data_wait_seconds{run="run",rank="0"' 'manta_train_heartbeat_timestamp_seconds{' \
         '# TYPE manta_monitor_records_total counter' 'manta_train_rank_up{run="run",rank="0"' \
         'manta_train_subnet_macs{run="run",stat="mean"}' 'manta_train_subnet_parameters{run="run",stat="max"}'; do
    grep -qF "$s" "$dir/metrics.txt" || fail "/metrics lacks $s"
done
echo "metrics: $(grep -vc '^#' "$dir/metrics.txt") samples, all lines well formed"

# malformed requests
[ "$(code "$B/api/metrics?since=abc")" = 400 ] || fail "since=abc not 400"
[ "$(code "$B/api/metrics?since=-1")" = 400 ] || fail "since=-1 not 400"
[ "$(code "$B/api/run?run=5")" = 400 ] || fail "run=5 not 400"
[ "$(code "$B/api/nothing")" = 404 ] || fail "unknown path not 404"
[ "$(code -X POST -d x "$B/api/run")" = 405 ] || fail "POST not 405"
long=$(head -c 3000 /dev/zero | tr '\0' a)
c=$(code "$B/$long"); [ "$c" -ge 400 ] && [ "$c" -lt 500 ] || fail "a long path gave $c"

# clients that never read: an event stream, a request cut in its headers, /metrics with a
# tiny receive buffer; the steps go on meanwhile, and other clients are answered
if command -v python3 >/dev/null; then
    python3 - "$port" >"$dir/hold.log" 2>&1 <<'EOF' &
import socket, sys, time
port = int(sys.argv[1])
held = []
for req in (b"GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /api/run HTTP/1.1\r\nHo",
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.connect(("127.0.0.1", port))
    s.sendall(req)
    held.append(s)
print("holding", len(held), flush=True)
time.sleep(60)
EOF
    hpid=$!
    pids="$pids $hpid"
    i=0
    until grep -q holding "$dir/hold.log" 2>/dev/null; do i=$((i + 1)); [ $i -lt 50 ] || fail "slow clients"; sleep 0.1; done
    s1=$(json_num "$(curl -fsS -m 5 "$B/api/run")" step)
    sleep 3
    s2=$(json_num "$(curl -fsS -m 5 "$B/api/run")" step)
    [ "$s2" -gt "$s1" ] || fail "steps stalled while clients held connections ($s1 then $s2)"
    [ "$(curl -fsS -m 2 "$B/healthz")" = ok ] || fail "/healthz while clients held connections"
    kill "$hpid" 2>/dev/null || true
    echo "slow clients: steps $s1 -> $s2 while 3 connections were never read"
else
    echo "skipped: python3 not installed (slow-client check)"
fi

# SIGTERM: the ranks checkpoint and stop at the next step
kill -TERM $tpid
i=0
while kill -0 $tpid 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "the training did not stop within 30 s of SIGTERM"
    sleep 0.1
done
wait $tpid || true
tail -1 "$dir/run/metrics.jsonl" | grep -q '"event":"stopped"' || fail "no stopped record"
grep -q '"event":"checkpoint"' "$dir/run/metrics.jsonl" || fail "no checkpoint record"
# both ranks' figures: in the progress records and, read back with every CRC checked, in the
# event file
grep '"ranks":\[{"rank":0,' "$dir/run/metrics.jsonl" | tail -n 1 |
    grep -q '{"rank":1,"device":null,"host":null,"images_per_s":[0-9.]*,"compute_s":[0-9.]*,"data_wait_s":[0-9.]*,"allreduce_wait_s":[0-9.]*,"ring_bytes_per_s":[0-9]' ||
    fail "no figures of rank 1 in the progress records"
"$M" events "$dir"/run/events.out.tfevents.* >"$dir/events.txt" || fail "the event file does not read back"
for t in train/loss rank0/compute_s rank1/images_per_s rank1/allreduce_wait_s; do
    grep -q "^$t  *step  *[0-9]" "$dir/events.txt" || { cat "$dir/events.txt"; fail "no $t in the event file"; }
done

# ---- manta monitor beyond loopback: a token is required
if "$M" monitor "$dir/run" --listen 0.0.0.0:0 >"$dir/notoken.log" 2>&1; then fail "0.0.0.0 without a token"; fi
grep -q MANTA_MONITOR_TOKEN "$dir/notoken.log" || fail "the refusal does not name MANTA_MONITOR_TOKEN"
tok=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
MANTA_MONITOR_TOKEN=$tok "$M" monitor "$dir/run" --listen 0.0.0.0:0 --json >"$dir/tok.log" 2>&1 &
mpid=$!
pids="$pids $mpid"
i=0
until grep -q '"port"' "$dir/tok.log"; do i=$((i + 1)); [ $i -lt 50 ] || fail "monitor with a token"; sleep 0.1; done
tport=$(json_num "$(cat "$dir/tok.log")" port)
T="http://127.0.0.1:$tport"
[ "$(code "$T/api/run")" = 401 ] || fail "no token: not 401"
[ "$(code "$T/metrics")" = 401 ] || fail "/metrics without a token: not 401"
[ "$(code -H "Authorization: Bearer x$tok" "$T/api/run")" = 401 ] || fail "a wrong token: not 401"
[ "$(code -H "Authorization: Bearer $tok" "$T/api/run")" = 200 ] || fail "bearer token refused"
[ "$(code "$T/api/run?token=$tok")" = 200 ] || fail "?token= refused"
curl -fsS -m 5 -H "Authorization: Bearer $tok" "$T/api/run" | grep -q '"state":"stopped"' || fail "finished run not stopped"
kill "$mpid"
wait "$mpid" || fail "manta monitor did not exit 0 on SIGTERM"
echo "token: 401 without it, 200 with it"

# ---- a run stopped by the death of rank 1 (killed): rank 0's error record names it
# the rendezvous port: a free one the kernel chooses (tests run side by side, tests/run.sh)
port0=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
for r in 0 1; do
    RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port0 MANTA_SECRET=$secret \
        "$M" train --schedule quick --batch 16 --eval-images 0 --log-every 1 --timeout 5 \
        --out "$dir/dead" >"$dir/kill$r.log" 2>&1 &
    eval "kpid$r=$!"
    pids="$pids $!"
done
i=0
until grep -q '"step":3,' "$dir/dead/metrics.jsonl" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "the 2-rank job did not start"
    sleep 0.1
done
kill -9 "$kpid1"
i=0
while kill -0 "$kpid0" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 150 ] || fail "rank 0 did not stop within 15 s of rank 1's death"
    sleep 0.1
done
if wait "$kpid0"; then fail "rank 0 exited 0 after rank 1 died"; fi
tail -1 "$dir/dead/metrics.jsonl" | grep -q '"event":"error",.*"rank":1,' || fail "no error record naming rank 1"
"$M" monitor "$dir/run" "$dir/dead" --listen 127.0.0.1:0 --json \
    --on-alert "cat >>'$dir/alerts.jsonl'" >"$dir/two.log" 2>&1 &
mpid=$!
pids="$pids $mpid"
i=0
until grep -q '"port"' "$dir/two.log"; do i=$((i + 1)); [ $i -lt 50 ] || fail "monitor of two runs"; sleep 0.1; done
P="http://127.0.0.1:$(json_num "$(cat "$dir/two.log")" port)"
curl -fsS -m 5 "$P/api/ranks?run=1" | grep -q '"rank":1,[^}]*"dead":true' || fail "rank 1 not dead in /api/ranks"
curl -fsS -m 5 "$P/api/run?run=1" | grep -q '"kind":"error","rank":1' || fail "no error alert for rank 1"
i=0
until grep -q '"run":"dead",.*"alert":{"kind":"error","rank":1' "$dir/alerts.jsonl" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 50 ] || fail "--on-alert did not get the error alert"
    sleep 0.1
done
[ "$(curl -fsS -m 5 "$P/api/runs" | grep -o '"name":"[a-z]*","state"' | tr '\n' ' ')" = \
  '"name":"run","state" "name":"dead","state" ' ] || fail "/api/runs does not hold the two runs"
CHROME=""
for c in chromium chromium-browser google-chrome; do command -v $c >/dev/null && { CHROME=$c; break; }; done
# no sanitizer report (SANITIZE=1 builds) in what ran so far
sanitizer_clean() {
    ! grep -l 'Sanitizer\|runtime error:' "$dir"/*.log 2>/dev/null || fail "a sanitizer report above"
}
if [ -z "$CHROME" ]; then
    echo "skipped: chromium not installed (page checks)"
    kill "$mpid"; wait "$mpid" || fail "manta monitor did not exit 0 on SIGTERM"
    sanitizer_clean
    exit 0
fi
chrome() {
    timeout 30 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --user-data-dir="$dir/chrome" --window-size=1280,900 --virtual-time-budget=5000 "$@" 2>>"$dir/chrome.log"
}
# ?poll=1: requests every 2 s instead of the event stream, whose open request would keep
# Chromium's virtual time from advancing
chrome --dump-dom "$P/?poll=1" >"$dir/dom.html" || fail "chromium --dump-dom"
grep -q 'data-ready="1"' "$dir/dom.html" || fail "the page did not finish loading"
grep -q 'data-rank="1" data-dead="1" class="dead"' "$dir/dom.html" || fail "rank 1 is not red on the page"
grep -q 'data-rank="0" data-dead="0"' "$dir/dom.html" || fail "rank 0 of the first run not on the page"
[ "$(grep -o '<section class="run"' "$dir/dom.html" | wc -l)" -eq 2 ] || fail "not two runs side by side"
grep -q '<path d="M' "$dir/dom.html" || fail "no chart drawn"
grep -q 'data-chart="macs"><svg[^>]*><text[^>]*>sampled sub-networks: MACs' "$dir/dom.html" ||
    fail "no chart of the sampled sub-networks' MACs"
chrome --screenshot="$dir/page.png" "$P/?poll=1" >/dev/null || fail "chromium --screenshot"
python3 - "$dir/page.png" <<'EOF' || fail "the screenshot is blank"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(d):
    n, t = struct.unpack(">I4s", d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    if t == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif t == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
counts = {}
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + ((a + b) >> 1)) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp * 4):  # every 4th pixel
        k = bytes(line[x:x + 3])
        counts[k] = counts.get(k, 0) + 1
    prev = line
total = sum(counts.values())
top = max(counts.values())
other = 1 - top / total
reddish = sum(v for k, v in counts.items() if k[0] > 200 and k[1] < 180 and k[2] < 180)
print("screenshot: %dx%d, %d colours, %.1f%% not background, %d reddish samples" % (w, h, len(counts), 100 * other, reddish))
assert len(counts) > 20 and other > 0.05
EOF
echo "page: drawn in Chromium, rank 1 red"
kill "$mpid"
wait "$mpid" || fail "manta monitor did not exit 0 on SIGTERM"
sanitizer_clean
