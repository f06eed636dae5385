#!/bin/sh
# Elastic training across emulated links: the rendezvous service and 4 ranks of
# `manta train --elastic`, one network namespace each, joined to a bridge by veth pairs
# whose egress is shaped to RATE (tc netem with DELAY and LOSS where the kernel has it, else
# tbf: rate only). Rank 1 is killed (SIG: KILL, or STOP for a rank that hangs: the deadline
# finds it), a fifth rank joins once the ring re-formed, then rank 0 is killed. Prints, for
# each kill, the seconds from the kill to the first completed step without the rank, and for
# the join the seconds from its start to its first step and the bytes of state it received.
#
# Addresses from 198.18.0.0/15 only; every namespace and process created here and the secret
# are removed on exit, also on error or interrupt. Needs root (ip netns).
#
# usage: tools/bench/netns_elastic.sh [-m MANTA] [-r 100mbit] [-d 20ms] [-l 0.5%] [-t 5]
#                                     [-k KILL|STOP] [-S STEPS] [-- extra manta train options]
set -eu
MANTA=build/bin/manta
RATE=100mbit
DELAY=20ms
LOSS=0.5%
TIMEOUT=5
SIG=KILL
STEPS=14
while getopts m:r:d:l:t:k:S: opt; do
    case $opt in
    m) MANTA=$OPTARG ;;
    r) RATE=$OPTARG ;;
    d) DELAY=$OPTARG ;;
    l) LOSS=$OPTARG ;;
    t) TIMEOUT=$OPTARG ;;
    k) SIG=$OPTARG ;;
    S) STEPS=$OPTARG ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
EXTRA="$*"
[ "$(id -u)" = 0 ] || { echo "netns_elastic.sh: needs root (ip netns)" >&2; exit 1; }
[ -x "$MANTA" ] || { echo "netns_elastic.sh: $MANTA not found (make first, or -m PATH)" >&2; exit 1; }
MANTA=$(cd "$(dirname "$MANTA")" && pwd)/$(basename "$MANTA")

TAG="mel$$"
BR="${TAG}br"
CREATED=""
PIDS=""
TMP=$(mktemp -d)
cleanup() {
    for p in $PIDS; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
    for p in $PIDS; do wait "$p" 2>/dev/null || true; done
    for ns in $CREATED; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

umask 077
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/secret"
umask 022

shape() { # shape DEV NS
    if tc -n "$2" qdisc add dev "$1" root netem delay "$DELAY" loss "$LOSS" rate "$RATE" \
        limit 100000 2>/dev/null; then
        echo "netem delay $DELAY loss $LOSS rate $RATE"
    else
        tc -n "$2" qdisc add dev "$1" root tbf rate "$RATE" burst 256kb latency 20ms
        echo "tbf rate $RATE (no netem in this kernel: delay $DELAY and loss $LOSS not emulated)"
    fi
}

ip netns add "$BR"
CREATED="$CREATED $BR"
ip -n "$BR" link add br0 type bridge
ip -n "$BR" link set br0 up
# namespaces: s (the rendezvous service, 198.18.0.100), r0..r4 (ranks, 198.18.0.1-5)
for i in s 0 1 2 3 4; do
    ns="${TAG}$i"
    ip netns add "$ns"
    CREATED="$CREATED $ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add eth0 type veth peer name "p$i" netns "$BR"
    ip -n "$BR" link set "p$i" master br0
    ip -n "$BR" link set "p$i" up
    addr=$([ "$i" = s ] && echo 100 || echo $((i + 1)))
    ip -n "$ns" addr add "198.18.0.$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    how=$(shape eth0 "$ns")
done
echo "# rendezvous 198.18.0.100, ranks 198.18.0.1-5, bridge; link: $how, MTU 1500; deadline $TIMEOUT s"

export MASTER_ADDR=198.18.0.100 MASTER_PORT=29500 MANTA_JOB_ID=$TAG
export MANTA_SECRET_FILE="$TMP/secret"
ip netns exec "${TAG}s" "$MANTA" rendezvous --nnodes 2:4 --timeout "$TIMEOUT" \
    --state "$TMP/rdzv.state" >"$TMP/rdzv.log" 2>&1 &
PIDS="$PIDS $!"
rank() { # rank I [RANK]: start rank process I in its namespace
    ip netns exec "${TAG}$1" env ${2:+RANK=$2 WORLD_SIZE=4} "$MANTA" train --elastic --iface eth0 \
        --schedule smoke --batch 12 --eval-images 0 --json --log-every 1 --ckpt-every 0 \
        --timeout "$TIMEOUT" --stop-after "$STEPS" --out "$TMP/run" $EXTRA \
        >"$TMP/rank$1.log" 2>"$TMP/rank$1.err" &
    eval "pid$1=\$!"
    PIDS="$PIDS $!"
}
for i in 0 1 2 3; do rank $i $i; done
wait_for() { # wait_for FILE PATTERN [SECONDS]
    n=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        n=$((n + 1))
        [ $n -le $((${3:-120} * 10)) ] || { cat "$TMP"/*.err "$TMP/rdzv.log" >&2; echo "netns_elastic.sh: waited for '$2'" >&2; exit 1; }
        sleep 0.1
    done
}
first_step_after() { # seconds from T to the first progress record after it
    awk -v t="$1" -F'"time":' '/^\{"step":/ { split($2, a, /[,}]/); if (a[1] > t) { printf "%.2f", a[1] - t; exit } }' \
        "$TMP/run/metrics.jsonl"
}
wait_for "$TMP/run/metrics.jsonl" '"step":3,'
kill "-$SIG" "$pid1"
t1=$(date +%s.%N)
wait_for "$TMP/rdzv.log" 'generation 2:'
tj=$(date +%s.%N)
rank 4
wait_for "$TMP/rdzv.log" 'generation 3:'
wait_for "$TMP/rank4.err" 'received the state'
g3=$(sed -n 's/.*generation 3: .*continuing after step \([0-9]*\).*/\1/p' "$TMP/rdzv.log")
wait_for "$TMP/run/metrics.jsonl" "\"step\":$((g3 + 1)),"
s_join=$(awk -v t="$tj" -v s="\"step\":$((g3 + 1))," -F'"time":' 'index($0, s) == 2 { split($2, a, /[,}]/); printf "%.2f", a[1] - t; exit }' "$TMP/run/metrics.jsonl")
kill "-$SIG" "$pid0"
t2=$(date +%s.%N)
wait_for "$TMP/rdzv.log" 'generation 4:'
for p in $pid2 $pid3 $pid4; do wait "$p" || { cat "$TMP"/*.err >&2; echo "netns_elastic.sh: a rank failed" >&2; exit 1; }; done
d1=$(first_step_after "$t1")
d2=$(first_step_after "$t2")
bytes=$(sed -n 's/.*received the state after step [0-9]* from rank [0-9]*: \([0-9]*\) bytes in \([0-9.]*\) s.*/\1 \2/p' "$TMP/rank4.err")
grep 'rendezvous: generation' "$TMP/rdzv.log" | sed 's/^/# /'
echo "kill of rank 1 (SIG$SIG) -> first step without it: $d1 s"
echo "new rank started -> its first completed step: ${s_join:-?} s; state received: ${bytes% *} bytes in ${bytes#* } s"
echo "kill of rank 0 (SIG$SIG) -> first step without it: $d2 s"
grep '"step_ms"' "$TMP/run/metrics.jsonl" | tail -1 | sed 's/.*"step":\([0-9]*\),.*"step_ms":\([0-9.]*\).*/last step \1: step_ms \2/'
