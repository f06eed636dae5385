#!/bin/sh
# Distributed supernet training across emulated links: N ranks of `manta train`, one
# network namespace each, joined to a bridge by veth pairs whose egress is shaped to RATE
# (tc netem with DELAY where the kernel has it, else tbf: rate only), as
# tools/bench/netns_allreduce.sh does. Prints each rank-0 progress line (step_ms: mean
# wall time of a training step, allreduces included) for comparison with the scaling model
# of docs/distributed.md.
#
# Addresses from 198.18.0.0/15 only; every namespace created here and the secret are
# removed on exit, also on error or interrupt. Needs root (ip netns).
#
# usage: tools/bench/netns_train.sh [-m MANTA] [-n 2] [-r 1gbit] [-d 0.2ms] [-S STEPS]
#                                   [-L LOG_EVERY] [-- extra manta train options]
set -eu
MANTA=build/bin/manta
N=2
RATE=1gbit
DELAY=0.2ms
STEPS=20
LOGE=10
while getopts m:n:r:d:S:L: opt; do
    case $opt in
    m) MANTA=$OPTARG ;;
    n) N=$OPTARG ;;
    r) RATE=$OPTARG ;;
    d) DELAY=$OPTARG ;;
    S) STEPS=$OPTARG ;;
    L) LOGE=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ "$(id -u)" = 0 ] || { echo "netns_train.sh: needs root (ip netns)" >&2; exit 1; }
[ -x "$MANTA" ] || { echo "netns_train.sh: $MANTA not found (make first, or -m PATH)" >&2; exit 1; }
MANTA=$(cd "$(dirname "$MANTA")" && pwd)/$(basename "$MANTA")

TAG="mtr$$"
BR="${TAG}br"
CREATED=""
TMP=$(mktemp -d)
cleanup() {
    for ns in $CREATED; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

umask 077
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/secret"
umask 022

shape() { # shape DEV NS RATE
    if tc -n "$2" qdisc add dev "$1" root netem delay "$DELAY" rate "$3" limit 100000 2>/dev/null; then
        echo "netem delay $DELAY rate $3"
    else
        burst=$(case $3 in *10gbit) echo 1mb ;; *) echo 256kb ;; esac)
        tc -n "$2" qdisc add dev "$1" root tbf rate "$3" burst "$burst" latency 20ms
        echo "tbf rate $3 (no netem in this kernel: delay $DELAY not emulated)"
    fi
}

ip netns add "$BR"
CREATED="$CREATED $BR"
ip -n "$BR" link add br0 type bridge
ip -n "$BR" link set br0 up
i=0
while [ "$i" -lt "$N" ]; do
    ns="${TAG}r$i"
    ip netns add "$ns"
    CREATED="$CREATED $ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add eth0 type veth peer name "p$i" netns "$BR"
    ip -n "$BR" link set "p$i" master br0
    ip -n "$BR" link set "p$i" up
    ip -n "$ns" addr add "198.18.0.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    how=$(shape eth0 "$ns" "$RATE")
    i=$((i + 1))
done
echo "# $N ranks, one namespace each, bridge, 198.18.0.1-$N; link: $how, MTU 1500"

pids=""
i=$((N - 1))
while [ "$i" -ge 0 ]; do
    ip netns exec "${TAG}r$i" "$MANTA" train --world "$N" --rank "$i" --master 198.18.0.1:29500 \
        --iface eth0 --secret-file "$TMP/secret" --job "$TAG" --eval-images 0 --json \
        --stop-after "$STEPS" --log-every "$LOGE" --ckpt-every 0 --timeout 60 --out "$TMP/run" "$@" \
        >"$TMP/rank$i.log" 2>"$TMP/rank$i.err" &
    pids="$pids $!"
    i=$((i - 1))
done
rc=0
for p in $pids; do wait "$p" || rc=1; done
if [ "$rc" != 0 ]; then
    cat "$TMP"/rank*.err >&2
    echo "netns_train.sh: a rank failed" >&2
    exit 1
fi
grep '"step_ms"' "$TMP/rank0.log"
