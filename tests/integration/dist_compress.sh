#!/bin/sh
# Compressed and fixed-point gradient aggregation (--compress, --aggregate; runtime/dist/wire.h)
# on loopback with the smoke schedule:
#  - every encoding trains with 2 ranks and ends near the float32 run (fp16 closest, then bf16
#    and int8), each different from it (the encoding is really used);
#  - --aggregate fixed gives the same bits for two orders of 3 ranks around the ring
#    (MANTA_RING_ORDER), where float32 does not, and ends within 1e-6 of float32;
#  - int8 with its error feedback: a run stopped and resumed equals an uninterrupted one, bit for
#    bit (the checkpoint holds every rank's residual);
#  - bad input, one line each: an unknown --compress, --aggregate fixed with --compress, ranks
#    with different encodings (refused at the rendezvous, naming both);
#  - the stereo task the same way (int8 resume, fixed point over two ring orders of 3 ranks);
#  - the ring over IPv6 loopback (--master [::1]), skipped with a line when the host has none.
set -eu
M="$(pwd)/${BUILD:-build}/bin/manta"
export POCL_DEVICES="pthread"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# params_close A B LIMIT: relative L2 difference of the parameters (int8's checkpoints also hold
# "ef_residual", which float32's do not: one section is compared)
params_close() {
    rel=$("$M" ckpt-diff "$1" "$2" --section params --json | sed -n 's/.*"l2_rel":\([0-9.e+-]*\).*/\1/p')
    [ -n "$rel" ] || fail "ckpt-diff $1 $2"
    echo "params |a-b|/|a| = $rel (limit $3)"
    awk -v r="$rel" -v t="$3" 'BEGIN { exit !(r <= t) }'
}
train2() { # OUT ARGS...: 2 ranks, 2 steps of 8 images
    out=$1; shift
    "$M" launch -n 2 -- "$M" train --schedule smoke --batch 8 --lr-scale 0.01 --eval-images 0 \
        --json --log-every 1 --stop-after 2 --timeout 20 --out "$dir/$out" "$@" >"$dir/$out.log" 2>&1 ||
        { cat "$dir/$out.log"; fail "2 ranks $*"; }
}

# every encoding trains; its parameters after 2 steps against float32's
train2 none
for c in fp16:1e-5 bf16:1e-4 int8:1e-4 fixed:1e-6; do
    e=${c%%:*}; lim=${c#*:}
    if [ "$e" = fixed ]; then train2 "$e" --aggregate fixed; else train2 "$e" --compress "$e"; fi
    grep -q '"step":2,.*"loss":[0-9]' "$dir/$e/metrics.jsonl" || fail "$e: no finite loss at step 2"
    ! cmp -s "$dir/none/latest.ckpt" "$dir/$e/latest.ckpt" || fail "$e: the same bits as float32"
    printf '%s vs float32, ' "$e"
    params_close "$dir/none/latest.ckpt" "$dir/$e/latest.ckpt" "$lim" || fail "$e too far from float32"
done

# fixed point: two orders of the ranks around the ring give the same bits; float32 does not
for agg in fixed float; do
    for ord in 0,1,2 2,1,0; do
        MANTA_RING_ORDER=$ord "$M" launch -n 3 -- "$M" train --schedule smoke --batch 12 \
            --lr-scale 0.01 --eval-images 0 --json --stop-after 2 --timeout 20 --aggregate $agg \
            --out "$dir/$agg-$ord" >"$dir/$agg-$ord.log" 2>&1 || { cat "$dir/$agg-$ord.log"; fail "$agg $ord"; }
    done
done
cmp "$dir/fixed-0,1,2/latest.ckpt" "$dir/fixed-2,1,0/latest.ckpt" || fail "--aggregate fixed depends on the ring order"
! cmp -s "$dir/float-0,1,2/latest.ckpt" "$dir/float-2,1,0/latest.ckpt" || fail "float32 did not depend on the ring order (the check above proves nothing)"
echo "fixed point: ring orders 0,1,2 and 2,1,0 of 3 ranks give identical checkpoints; float32 differs"
# 3 ranks: fixed point as near float32 as float32 in another ring order (both 3.1e-8 measured)
printf 'fixed vs float32, 3 ranks, '
params_close "$dir/float-0,1,2/latest.ckpt" "$dir/fixed-0,1,2/latest.ckpt" 1e-6 || fail "fixed too far from float32 (3 ranks)"

# int8: stopped after 2 steps and resumed for 1 equals 3 steps at once
train() { "$M" launch -n 2 -- "$M" train --eval-images 0 --json --timeout 20 "$@"; }
train --schedule smoke --batch 8 --compress int8 --stop-after 3 --out "$dir/i8full" >"$dir/i8.log" 2>&1 ||
    { cat "$dir/i8.log"; fail "int8 uninterrupted"; }
train --schedule smoke --batch 8 --compress int8 --stop-after 2 --out "$dir/i8part" >>"$dir/i8.log" 2>&1 ||
    { cat "$dir/i8.log"; fail "int8 first part"; }
grep -q ef_residual "$dir/i8part/latest.ckpt" || fail "the int8 checkpoint has no error feedback"
train --resume --compress int8 --stop-after 1 --out "$dir/i8part" >>"$dir/i8.log" 2>&1 ||
    { cat "$dir/i8.log"; fail "int8 resumed"; }
cmp "$dir/i8full/latest.ckpt" "$dir/i8part/latest.ckpt" || fail "int8: the resumed run differs"
echo "int8 resume: identical checkpoints after 3 steps (error feedback of both ranks restored)"

# the stereo task: int8 resumed exactly, fixed point independent of the order of 3 ranks
S="--space tests/data/stereo_tiny.json --eval-pairs 8 --recal-pairs 8 --timeout 20"
SA="$S --schedule smoke --batch 6 --train-pairs 64"
"$M" launch -n 2 -- "$M" train $SA --compress int8 --stop-after 3 --out "$dir/s8full" >"$dir/s.log" 2>&1 &&
    "$M" launch -n 2 -- "$M" train $SA --compress int8 --stop-after 2 --out "$dir/s8part" >>"$dir/s.log" 2>&1 &&
    "$M" launch -n 2 -- "$M" train $S --resume --compress int8 --stop-after 1 --out "$dir/s8part" >>"$dir/s.log" 2>&1 ||
    { cat "$dir/s.log"; fail "stereo int8 runs"; }
cmp "$dir/s8full/latest.ckpt" "$dir/s8part/latest.ckpt" || fail "stereo int8: the resumed run differs"
for ord in 0,1,2 1,2,0; do
    MANTA_RING_ORDER=$ord "$M" launch -n 3 -- "$M" train $SA --aggregate fixed --stop-after 2 \
        --out "$dir/sfixed-$ord" >>"$dir/s.log" 2>&1 || { cat "$dir/s.log"; fail "stereo fixed $ord"; }
done
cmp "$dir/sfixed-0,1,2/latest.ckpt" "$dir/sfixed-1,2,0/latest.ckpt" || fail "stereo fixed point depends on the ring order"
echo "stereo: int8 resumed equals uninterrupted; fixed point the same bits for ring orders 0,1,2 and 1,2,0"

# bad input
"$M" train --schedule smoke --compress zstd >"$dir/bad1" 2>&1 && fail "--compress zstd accepted"
grep -q "compress" "$dir/bad1" || { cat "$dir/bad1"; fail "--compress zstd: no message"; }
echo "unknown encoding: $(head -1 "$dir/bad1")"
"$M" train --schedule smoke --aggregate fixed --compress fp16 >"$dir/bad2" 2>&1 &&
    fail "--aggregate fixed --compress fp16 accepted"
grep -q "cannot be combined with --compress fp16" "$dir/bad2" || { cat "$dir/bad2"; fail "--aggregate fixed with --compress: no message"; }
echo "fixed with compress: $(head -1 "$dir/bad2")"
cat >"$dir/mixed.sh" <<EOS
#!/bin/sh
c=fp16; [ "\$RANK" = 1 ] && c=int8
exec "$M" train --schedule smoke --batch 8 --eval-images 0 --stop-after 1 --timeout 3 --compress \$c --out "$dir/mixed"
EOS
"$M" launch -n 2 -- sh "$dir/mixed.sh" >"$dir/mixed.log" 2>&1 && fail "ranks with fp16 and int8 trained together"
grep "rejected rank 1" "$dir/mixed.log" | grep -q "'int8', rank 0 'fp16'" || { cat "$dir/mixed.log"; fail "different encodings: no message naming both"; }
echo "different encodings: $(grep -m1 "rejected rank 1" "$dir/mixed.log" | cut -c1-200)"

# IPv6 loopback
if ip -6 addr show dev lo 2>/dev/null | grep -q '::1/128'; then
    train2 v6 --master '[::1]' --compress bf16
    grep -q '"step":2,' "$dir/v6/metrics.jsonl" || fail "no step 2 over ::1"
    echo "IPv6: 2 ranks over [::1] trained 2 steps"
else
    echo "skipped: this host has no IPv6 loopback (::1), the IPv6 run is not made"
fi
