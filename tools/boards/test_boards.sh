#!/bin/sh
# make test-boards: builds every board given as an argument (boards/*.mk) and checks what can be
# checked without the boards:
#  - host: the reference programs (build/host), the models: the smallest sub-network of the CPU-default
#    space from a smoke-trained checkpoint (tools/boards/min_model.sh), float32 and fully int8 (the
#    int8 kernels' vector paths, such as armv7's DSP one and the aarch64 boards' NEON one, against
#    the host's portable kernels), and the test suite's export fixtures (colour classifier, random
#    RGB model, JPEGs);
#  - each Linux board: its engine, manta-infer, manta-profile and engine tests compile with no OpenCL
#    header (make check-no-opencl with the board's compiler);
#  - each Linux board with a BOARD_RUN (qemu-user): the engine's unit tests, the engine library's
#    external symbols (tests/integration/engine_noalloc.sh with the board's nm), manta-profile --list,
#    manta arch min where the board has the OpenCL program (rk3588: links and starts, no GPU here),
#    and manta-infer --json --all on the models and JPEGs (--raw input tensors where the board has no
#    JPEG decoder): every probability and logit within 1e-5 of the host's; an int8 file of the min
#    sub-network in both requantization modes: its int8 output tensor the host's byte for byte;
#    manta-infer on a stereo pair of PNG views (a tiny stereo model: a smoke run of
#    tests/data/stereo_tiny.json exported on the host, the pair 37x21 against the model's 32x16)
#    where the board has libpng: the 16-bit
#    disparity PNG byte for byte the host's, the disparity's min, max and mean the host's;
#  - microcontroller boards: the image links within the board's flash and RAM (sizes printed) with
#    the float32 and the int8 smallest sub-network; where the board has a QEMU machine (MCU_QEMU:
#    cortex-m7 in mps2-an500), both images run there and their outputs on a zero input are the
#    host's (int8 bit for bit, float32 within 1e-5), with the arena and stack they used printed.
# Prints one closing line "test-boards: N passed, N failed"; exit status 0 when none failed.
set -u
MAKE=${MAKE:-make}
JOBS=${JOBS:--j2}
TOL=1e-5
out=build/test-boards
pass=0
fail=0
failed=""
ok() { pass=$((pass + 1)); echo "ok - $*"; }
bad() { fail=$((fail + 1)); failed="$failed [$*]"; echo "not ok - $*"; }
var() { $MAKE -s --no-print-directory BOARD="$1" "print-$2"; }

[ $# -gt 0 ] || { echo "usage: test_boards.sh BOARD..." >&2; exit 2; }
start=$(date +%s)
mkdir -p "$out"

# ---- host: reference programs and models
echo "# host: build"
if ! $MAKE --no-print-directory BOARD=host $JOBS all build/host/tests/helpers/export_fixtures; then
    echo "not ok - host build"
    echo "test-boards: $pass passed, 1 failed"
    exit 1
fi
ok "host: build"
models=$out/model
fix=$out/fixtures
mkdir -p "$fix"
if sh tools/boards/min_model.sh build/host "$models" && build/host/tests/helpers/export_fixtures "$fix" >/dev/null; then
    ok "host: models (min sub-network of the CPU-default space, export fixtures)"
else
    bad "host: models"
    echo "test-boards: $pass passed, $fail failed"
    exit 1
fi
# a stereo model and a pair of PNG views of another size than the model's
st=$out/stereo
rm -rf "$st"
if build/host/bin/manta train --space tests/data/stereo_tiny.json --schedule smoke --batch 2 \
        --train-pairs 32 --eval-pairs 4 --recal-pairs 4 --seed 1 --out "$st/run" >/dev/null &&
    build/host/bin/manta export --ckpt "$st/run/latest.ckpt" --arch max --recal-pairs 4 \
        --out "$st/max.tflite" >/dev/null &&
    build/host/bin/manta stereo-data "$st/pairs" --count 1 --width 37 --height 21 --max-disp 8 \
        --seed 3 >/dev/null &&
    build/host/bin/manta-infer "$st/max.tflite" "$st/pairs/image_2/000000_10.png" \
        "$st/pairs/image_3/000000_10.png" --json --out "$st/host.png" >"$st/host.json"; then
    ok "host: stereo model (tiny smoke run, exported) and a 37x21 pair"
else
    bad "host: stereo model and pair"
fi
# the disparity's min, max and mean of a manta-infer --json document of a stereo pair
disp_stats() { grep -o '"disparity": {[^}]*}' "$1"; }
# the int8 output tensor of a manta-infer --json --all document
output_q() { grep -o '"output_q": \[[^]]*\]' "$1"; }
# an int8 file of the min sub-network (the boards' int8 kernels, vector paths included, against the
# host's), run in both requantization modes; its input tensor dumped for boards without a JPEG
# decoder; its C array in $models8 for the microcontroller boards
models8=$out/model-int8
rm -rf "$models8"
mkdir -p "$models8"
if build/host/bin/manta export --ckpt "$models/run/latest.ckpt" --arch min --out "$models/min8.tflite" \
        --recal-images 64 --int8 --calib 32 --calib-method minmax --c-array "$models8" \
        >"$out/log" 2>&1 &&
    build/host/bin/manta-infer "$models/min8.tflite" "$models/image.jpg" --json --all --requant ref \
        --dump-input "$out/input8.i8" >"$out/host8ref.json" &&
    build/host/bin/manta-infer "$models/min8.tflite" "$models/image.jpg" --json --all --requant fp32 \
        >"$out/host8fp32.json" && [ -n "$(output_q "$out/host8ref.json")" ]; then
    ok "host: int8 min sub-network (--int8, 32 calibration images) and its outputs in both modes"
else
    cat "$out/log"
    bad "host: int8 min sub-network"
fi

# the (model, image) pairs manta-infer runs on every board
pairs="$models/min.tflite:$models/image.jpg $fix/color.tflite:$fix/red.jpg $fix/random_rgb.tflite:$fix/green.jpg
$fix/random_gray.tflite:$fix/gray.jpg"
i=0
for p in $pairs; do
    i=$((i + 1))
    build/host/bin/manta-infer "${p%%:*}" "${p#*:}" --json --all --dump-input "$out/input$i.f32" \
        >"$out/host$i.json" || bad "host: manta-infer ${p%%:*} ${p#*:}"
done

# numbers of the "probs" and "logits" arrays of a manta-infer --json --all document, one a line
numbers() { grep -o '"\(probs\|logits\)": \[[^]]*\]' "$1" | sed 's/.*\[//; s/\]//' | tr ',' '\n' | tr -d ' '; }
# compare two documents: same count, every |a - b| <= TOL; prints the largest difference
compare() {
    numbers "$1" >"$out/a.txt"
    numbers "$2" >"$out/b.txt"
    [ -s "$out/a.txt" ] || { echo "no numbers in $1"; return 1; }
    paste "$out/a.txt" "$out/b.txt" | awk -v tol="$TOL" '
        NF != 2 { bad = 1 } { d = $1 - $2; if (d < 0) d = -d; if (d > max) max = d; n++ }
        END { printf "%d values, max |difference| %.3g", n, max; exit (bad || max > tol) }'
}

# A zero input for model $1 (real 0: an int8 model's input zero point) as a --raw tensor into $2,
# the size of the input tensor manta-infer dumps for image $3
zero_input() {
    build/host/bin/manta-infer "$1" "$3" --dump-input "$2.tmp" --json --all >"$2.json" || return 1
    zp=$(grep -o '"input_zero_point": -*[0-9]*' "$2.json" | sed 's/.*: //')
    byte=$(( (${zp:-0} + 256) % 256 ))
    head -c "$(wc -c <"$2.tmp")" /dev/zero | tr '\0' "\\$(printf '%03o' "$byte")" >"$2"
    rm -f "$2.tmp"
}

# A microcontroller board: the image links and fits with the float32 and the int8 smallest
# sub-network; where the board has an MCU_QEMU machine, each image runs there and its output on a
# zero input must be the host's (int8: every raw value equal; float32: within TOL).
mcu_board() {
    mb=$1
    qemu=$(var "$mb" MCU_QEMU)
    for what in float32 int8; do
        dir=$models m=$models/min.tflite
        [ "$what" = int8 ] && dir=$models8 m=$models/min8.tflite
        [ -f "$dir/model.h" ] || continue
        if $MAKE --no-print-directory BOARD="$mb" $JOBS MODEL_DIR="$dir" all; then
            ok "$mb: $what image links and fits ($(grep -E '^ +(flash|RAM)' "build/$mb/size.txt" | sed 's/^ *//; s/:.*//' | tr '\n' ';'))"
        else
            bad "$mb: $what build or size"
            continue
        fi
        [ -n "$qemu" ] || continue
        line=$($MAKE -s --no-print-directory BOARD="$mb" MODEL_DIR="$dir" board-run 2>"$out/log" | grep '^manta-mcu:')
        zero_input "$m" "$out/zero-$what.raw" "$models/image.jpg"
        build/host/bin/manta-infer "$m" "$out/zero-$what.raw" --raw --json --all >"$out/zero-$what.json"
        if [ "$what" = int8 ]; then
            want=$(output_q "$out/zero-$what.json" | sed 's/.*\[//; s/\]//' | tr -d ',')
        else
            want=$(grep -o '"probs": \[[^]]*\]' "$out/zero-$what.json" | sed 's/.*\[//; s/\]//' | tr -d ',')
        fi
        got=${line#* out }
        # the deepest stack use within half of the stack the image reserves
        stack=$($(var "$mb" SIZE) -A "build/$mb/manta-$mb.elf" | awk '$1 == ".stack" { print $2 }')
        used=$(echo "$line" | sed -n 's/.* stack_used \([0-9]*\).*/\1/p')
        if [ -z "$used" ] || [ $((2 * used)) -gt "${stack:-0}" ]; then
            bad "$mb: $what image used ${used:-?} bytes of its ${stack:-?}-byte stack (at most half)"
        fi
        if echo "$line" | grep -q '^manta-mcu: status 0 ' && [ -n "$want" ] &&
            echo "$want|$got" | awk -F'|' -v q="$what" -v tol="$TOL" '{
                n = split($1, a, " "); m = split($2, b, " "); if (n != m || n == 0) exit 1
                for (i = 1; i <= n; i++) { d = q == "int8" ? a[i] - b[i] : a[i] - b[i] / 1e6
                    if (d < 0) d = -d; if (d > (q == "int8" ? 0 : tol)) exit 1 } }'; then
            ok "$mb: $what image in QEMU = host on a zero input (${line#manta-mcu: })"
        else
            cat "$out/log"
            bad "$mb: $what image in QEMU: ${line:-no result line} (host: $want)"
        fi
    done
}

for b in "$@"; do
    [ "$b" = host ] && continue
    kind=$(var "$b" BOARD_KIND)
    echo "# $b ($kind): build"
    if [ "$kind" = mcu ]; then
        mcu_board "$b"
        continue
    fi
    if ! $MAKE --no-print-directory BOARD="$b" $JOBS all board-tests; then
        bad "$b: build"
        continue
    fi
    ok "$b: build"
    # the engine, manta-infer, manta-profile and the engine tests with no OpenCL header (the board's compiler)
    if $MAKE -s --no-print-directory BOARD="$b" check-no-opencl >"$out/log" 2>&1; then
        ok "$b: check-no-opencl"
    else
        cat "$out/log"
        bad "$b: check-no-opencl"
    fi
    run=$(var "$b" BOARD_RUN)
    # engine unit tests under qemu-user
    for t in build/"$b"/tests/test_engine_*; do
        CMOCKA_MESSAGE_OUTPUT=TAP $run "$t" >"$out/log" 2>&1
        rc=$?
        p=$(grep -c '^ok ' "$out/log")
        f=$(grep -c '^not ok ' "$out/log")
        if [ "$rc" -eq 0 ] && [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
            ok "$b: $(basename "$t") ($p cases)"
        else
            cat "$out/log"
            bad "$b: $(basename "$t") (rc $rc, $f failed)"
        fi
    done
    if BUILD="build/$b" NM="$(var "$b" NM)" sh tests/integration/engine_noalloc.sh >"$out/log" 2>&1; then
        ok "$b: engine_noalloc ($(tail -1 "$out/log"))"
    else
        cat "$out/log"
        bad "$b: engine_noalloc"
    fi
    progs=$(var "$b" BOARD_PROGRAMS)
    case " $progs " in
    *" profile "*)
        n=$($run "build/$b/bin/manta-profile" --list 2>/dev/null | wc -l)
        [ "$n" -eq 207 ] && ok "$b: manta-profile --list (207 keys)" || bad "$b: manta-profile --list: $n keys"
        ;;
    esac
    case " $progs " in
    *" manta "*)
        # the OpenCL program starts (its libraries load) and agrees with the host without a device
        a=$($run "build/$b/bin/manta" arch min 2>&1)
        [ -n "$a" ] && [ "$a" = "$(build/host/bin/manta arch min 2>&1)" ] &&
            ok "$b: manta arch min = host" || bad "$b: manta arch min: $a"
        ;;
    esac
    # manta-infer against the host
    nojpeg=0
    case " $(var "$b" BOARD_INFER_DEFS) " in *" -DMANTA_INFER_NO_JPEG "*) nojpeg=1 ;; esac
    i=0
    for p in $pairs; do
        i=$((i + 1))
        m=${p%%:*} img=${p#*:} r=""
        if [ "$nojpeg" -eq 1 ]; then
            what="--raw $(basename "$img") input"
            $run "build/$b/bin/manta-infer" "$m" "$out/input$i.f32" --raw --json --all >"$out/$b$i.json"
        else
            what=$(basename "$img")
            $run "build/$b/bin/manta-infer" "$m" "$img" --json --all >"$out/$b$i.json"
        fi
        rc=$?
        if [ "$rc" -eq 0 ] && r=$(compare "$out/host$i.json" "$out/$b$i.json"); then
            ok "$b: manta-infer $(basename "$m") $what = host ($r)"
        else
            bad "$b: manta-infer $(basename "$m") $what (rc $rc; ${r:-})"
        fi
    done
    # the int8 file: its int8 output tensor byte for byte the host's, in both requantization modes
    for rq in ref fp32; do
        if [ "$nojpeg" -eq 1 ]; then
            $run "build/$b/bin/manta-infer" "$models/min8.tflite" "$out/input8.i8" --raw --json --all \
                --requant "$rq" >"$out/${b}8$rq.json"
        else
            $run "build/$b/bin/manta-infer" "$models/min8.tflite" "$models/image.jpg" --json --all \
                --requant "$rq" >"$out/${b}8$rq.json"
        fi
        rc=$?
        q=$(output_q "$out/host8$rq.json")
        if [ "$rc" -eq 0 ] && [ -n "$q" ] && [ "$q" = "$(output_q "$out/${b}8$rq.json")" ]; then
            ok "$b: manta-infer min8.tflite (int8, --requant $rq) = host (output_q identical)"
        else
            bad "$b: manta-infer min8.tflite (int8, --requant $rq; rc $rc): output_q differs from the host's"
        fi
    done
    # a stereo pair of PNG views, where the board has libpng
    if [ -n "$(var "$b" BOARD_INFER_PNG_LIBS)" ]; then
        rm -f "$st/$b.png"
        $run "build/$b/bin/manta-infer" "$st/max.tflite" "$st/pairs/image_2/000000_10.png" \
            "$st/pairs/image_3/000000_10.png" --json --out "$st/$b.png" >"$st/$b.json"
        rc=$?
        if [ "$rc" -eq 0 ] && cmp -s "$st/host.png" "$st/$b.png" &&
            [ "$(disp_stats "$st/host.json")" = "$(disp_stats "$st/$b.json")" ]; then
            ok "$b: manta-infer stereo pair (PNG views) = host (disparity PNG identical; $(disp_stats "$st/$b.json"))"
        else
            bad "$b: manta-infer stereo pair (rc $rc; host $(disp_stats "$st/host.json"), $b $(disp_stats "$st/$b.json"))"
        fi
    else
        echo "# $b: manta-infer without libpng (no BOARD_INFER_PNG_LIBS): no stereo pair of PNG views"
    fi
    if [ "$nojpeg" -eq 1 ]; then
        # a JPEG is refused with one line that says why
        if $run "build/$b/bin/manta-infer" "$models/min.tflite" "$models/image.jpg" >/dev/null 2>"$out/err"; then
            bad "$b: manta-infer accepted a JPEG without a decoder"
        elif grep -q "without libjpeg-turbo" "$out/err"; then
            ok "$b: manta-infer refuses JPEG input ($(head -c 80 "$out/err")...)"
        else
            bad "$b: manta-infer JPEG refusal: $(cat "$out/err")"
        fi
    fi
done
echo "# test-boards: $(( $(date +%s) - start )) s"
[ -n "$failed" ] && echo "# failed:$failed"
echo "test-boards: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
