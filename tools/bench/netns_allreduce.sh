#!/bin/sh
# Ring-allreduce across emulated links: one network namespace per rank, each
# joined to a bridge (in a namespace of its own) by a veth pair, the rank's
# egress shaped to RATE with DELAY (tc netem; where the kernel has no netem,
# tc tbf shapes the rate and the delay is not emulated, which the output says).
# MTU 1500: the shaper counts each frame with its Ethernet/IP/TCP headers, so
# the best possible TCP goodput is 1448/1514 = 95.6% of the rate.
#
# Addresses come from 198.18.0.0/15 (the benchmarking range) only. Everything
# created here (namespaces, their veths and bridge, the secret) is removed on
# exit, also on error or interrupt. Needs root (ip netns).
#
# usage: tools/bench/netns_allreduce.sh [-m MANTA] [-n "2 4"] [-r "1gbit 10gbit"] [-d 0.2ms]
#                                       [-s 1K,1M,64M] [-R REPEATS] [-c "none int8"] [-j]
# (-c: the wire encodings to measure, manta bench allreduce --compress; default none)
set -eu
MANTA=build/bin/manta
WORLDS="2 4"
RATES="1gbit 10gbit"
DELAY=0.2ms
SIZES=1K,1M,64M
REPEATS=5
JSON=
WIRES=none
while getopts m:n:r:d:s:R:c:j opt; do
    case $opt in
    m) MANTA=$OPTARG ;;
    n) WORLDS=$OPTARG ;;
    r) RATES=$OPTARG ;;
    d) DELAY=$OPTARG ;;
    s) SIZES=$OPTARG ;;
    R) REPEATS=$OPTARG ;;
    c) WIRES=$OPTARG ;;
    j) JSON=--json ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "netns_allreduce.sh: needs root (ip netns)" >&2; exit 1; }
[ -x "$MANTA" ] || { echo "netns_allreduce.sh: $MANTA not found (make first, or -m PATH)" >&2; exit 1; }
MANTA=$(cd "$(dirname "$MANTA")" && pwd)/$(basename "$MANTA")

TAG="mar$$"
BR="${TAG}br"
CREATED=""
TMP=$(mktemp -d)
cleanup() {
    for ns in $CREATED; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A fresh secret for this job, readable by root only.
umask 077
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/secret"

# shape DEV NS RATE: netem rate+delay if the kernel has it, else tbf (rate only).
shape() {
    if tc -n "$2" qdisc add dev "$1" root netem delay "$DELAY" rate "$3" limit 100000 2>/dev/null; then
        echo "netem delay $DELAY rate $3"
    else
        burst=$(case $3 in *10gbit) echo 1mb ;; *) echo 256kb ;; esac)
        tc -n "$2" qdisc add dev "$1" root tbf rate "$3" burst "$burst" latency 20ms
        echo "tbf rate $3 (no netem in this kernel: delay $DELAY not emulated)"
    fi
}

setup() { # setup N RATE
    n=$1
    ip netns add "$BR"
    CREATED="$CREATED $BR"
    ip -n "$BR" link add br0 type bridge
    ip -n "$BR" link set br0 up
    i=0
    while [ "$i" -lt "$n" ]; do
        ns="${TAG}r$i"
        ip netns add "$ns"
        CREATED="$CREATED $ns"
        ip -n "$ns" link set lo up
        ip -n "$ns" link add eth0 type veth peer name "p$i" netns "$BR"
        ip -n "$BR" link set "p$i" master br0
        ip -n "$BR" link set "p$i" up
        ip -n "$ns" addr add "198.18.0.$((i + 1))/24" dev eth0
        ip -n "$ns" link set eth0 up
        how=$(shape eth0 "$ns" "$2")
        i=$((i + 1))
    done
    echo "# link: $how, MTU 1500"
}

teardown() {
    for ns in $CREATED; do ip netns del "$ns" 2>/dev/null || true; done
    CREATED=""
}

for rate in $RATES; do
    for n in $WORLDS; do
        setup "$n" "$rate"
        echo "# $n ranks, one namespace each, bridge, 198.18.0.1-$n, rate $rate"
        for w in $WIRES; do
            i=$((n - 1))
            pids=""
            while [ "$i" -ge 1 ]; do
                ip netns exec "${TAG}r$i" "$MANTA" bench allreduce --world "$n" --rank "$i" \
                    --master 198.18.0.1:29500 --iface eth0 --secret-file "$TMP/secret" \
                    --job "$TAG-$n-$rate-$w" --sizes "$SIZES" --repeats "$REPEATS" --timeout 60 \
                    --compress "$w" >/dev/null &
                pids="$pids $!"
                i=$((i - 1))
            done
            rc=0
            ip netns exec "${TAG}r0" "$MANTA" bench allreduce --world "$n" --rank 0 \
                --master 198.18.0.1:29500 --iface eth0 --secret-file "$TMP/secret" \
                --job "$TAG-$n-$rate-$w" --sizes "$SIZES" --repeats "$REPEATS" --timeout 60 \
                --compress "$w" $JSON || rc=1
            for p in $pids; do wait "$p" || rc=1; done
            [ "$rc" = 0 ] || break
        done
        teardown
        [ "$rc" = 0 ] || { echo "netns_allreduce.sh: a rank failed (N=$n, $rate)" >&2; exit 1; }
    done
done
