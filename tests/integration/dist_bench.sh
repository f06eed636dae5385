#!/bin/sh
# manta bench allreduce on loopback: the local table and JSON, a two-process job
# started rank by rank (job mode with a secret file), and one-line errors.
set -eu
M="${BUILD:-build}/bin/manta"
out=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    rm -rf "$out"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect_error() {
    name=$1 pattern=$2
    shift 2
    if "$@" >"$out/o" 2>"$out/e"; then fail "$name: exit status 0"; fi
    [ "$(wc -l <"$out/e")" -eq 1 ] || { cat "$out/e"; fail "$name: not one line"; }
    grep -q -e "$pattern" "$out/e" || { cat "$out/e"; fail "$name: no '$pattern'"; }
    echo "ok: $name: $(cat "$out/e")"
}

"$M" bench allreduce --help | grep -q "busbw" || fail "--help"

# Local mode: 3 ranks, a table with one row per size.
timeout 60 "$M" bench allreduce -n 3 --sizes 4K,256K --repeats 3 >"$out/t"
cat "$out/t"
[ "$(grep -c '^ ' "$out/t")" -eq 2 ] || fail "table rows"
grep -q "3 ranks" "$out/t" || fail "table header"
timeout 60 "$M" bench allreduce -n 2 --sizes 1M --repeats 2 --mac full --json >"$out/j"
if command -v python3 >/dev/null; then
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
r = d['results'][0]
assert d['ranks'] == 2 and d['mac'] == 'full' and r['bytes'] == 1 << 20 and r['busbw_gbps'] > 0
assert abs(r['busbw_gbps'] - r['algbw_gbps']) < 1e-3  # 2(N-1)/N = 1 for N = 2
" "$out/j" || fail "--json"
fi

# Job mode: ranks started one by one, secret from a file.
umask 077
echo "integration-test-secret-$$" >"$out/secret"
# the rendezvous port: a free one the kernel chooses (tests run side by side, tests/run.sh)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
MANTA_SECRET_FILE="$out/secret" timeout 60 "$M" bench allreduce --world 2 --rank 1 --master "127.0.0.1:$port" \
    --sizes 64K --repeats 2 --timeout 20 >/dev/null 2>"$out/r1" &
pids="$!"
MANTA_SECRET_FILE="$out/secret" timeout 60 "$M" bench allreduce --world 2 --rank 0 --master "127.0.0.1:$port" \
    --sizes 64K --repeats 2 --timeout 20 >"$out/r0"
wait $pids || { cat "$out/r1"; fail "rank 1"; }
pids=""
grep -q "one process per rank" "$out/r0" || fail "job mode table"

expect_error "no secret" "MANTA_SECRET" env -u MANTA_SECRET -u MANTA_SECRET_FILE "$M" bench allreduce --world 2 --rank 1
expect_error "bad sizes" "--sizes" "$M" bench allreduce --sizes 3
expect_error "bad ranks" "-n" "$M" bench allreduce -n 0
expect_error "bad env" "WORLD_SIZE" env WORLD_SIZE=two "$M" bench allreduce
expect_error "secret file mode" "chmod 600" sh -c "chmod 644 '$out/secret'; exec '$M' bench allreduce --world 2 --rank 0 --secret-file '$out/secret'"
expect_error "bad iface" "no-such-if0" env MANTA_SECRET=0123456789abcdef "$M" bench allreduce --world 2 --rank 1 --iface no-such-if0 --master 127.0.0.1:9 --timeout 1
echo "dist_bench: all checks passed"
