#!/bin/sh
# make test-boards: builds every board given as an argument (boards/*.mk) and checks what can be
# checked without the boards:
#  - host: the reference programs (build/host), the models: the smallest sub-network of the CPU-default
#    space from a smoke-trained checkpoint (tools/boards/min_model.sh), float32 and fully int8 (the
#    int8 kernels' vector paths, such as armv7's DSP one, against the host's portable kernels), and
#    the test suite's export fixtures (colour classifier, random RGB model, JPEGs);
#  - each Linux board: its engine, manta-infer, manta-profile and engine tests compile with no OpenCL
#    header (make check-no-opencl with the board's compiler);
#  - each Linux board with a BOARD_RUN (qemu-user): the engine's unit tests, the engine library's
#    external symbols (tests/integration/engine_noalloc.sh with the board's nm), manta-profile --list,
#    manta arch min where the board has the OpenCL program (rk3588: links and starts, no GPU here),
#    and manta-infer --json --all on the models and JPEGs (--raw input tensors where the board has no
#    JPEG decoder): every probability and logit within 1e-5 of the host's; manta-infer on a stereo
#    pair of PNG views (a tiny stereo model: a smoke run of tests/data/stereo_tiny.json exported on
#    the host, the pair 37x21 against the model's 32x16) where the board has libpng: the 16-bit
#    disparity PNG byte for byte the host's, the disparity's min, max and mean the host's;
#  - microcontroller boards: the image links within the board's flash and RAM (sizes printed), with the
#    float32 and with the int8 min sub-network.
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
if sh tools/boards/min_model.sh build/host "$models" && build/host/tests/helpers/export_fixtures "$fix" >/dev/null &&
    mkdir -p "$models/int8" &&
    MANTA_CACHE_DIR="${MANTA_CACHE_DIR:-$PWD/build/host/cache}" build/host/bin/manta export \
        --ckpt "$models/run/latest.ckpt" --arch min --int8 --calib 32 --calib-method minmax \
        --recal-images 64 --out "$models/min_int8.tflite" --c-array "$models/int8" >"$out/log" 2>&1; then
    ok "host: models (min sub-network of the CPU-default space, float32 and int8; export fixtures)"
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

# the (model, image) pairs manta-infer runs on every board
pairs="$models/min.tflite:$models/image.jpg $models/min_int8.tflite:$models/image.jpg $fix/color.tflite:$fix/red.jpg $fix/random_rgb.tflite:$fix/green.jpg
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

for b in "$@"; do
    [ "$b" = host ] && continue
    kind=$(var "$b" BOARD_KIND)
    echo "# $b ($kind): build"
    if [ "$kind" = mcu ]; then
        for m in "$models:float32" "$models/int8:int8"; do # the min sub-network, float32 and int8
            if $MAKE --no-print-directory BOARD="$b" $JOBS MODEL_DIR="${m%:*}" all; then
                ok "$b: ${m#*:} image links and fits ($(grep -E '^ +(flash|RAM)' "build/$b/size.txt" | sed 's/^ *//; s/:.*//' | tr '\n' ';'))"
            else
                bad "$b: build or size (${m#*:} model)"
            fi
        done
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
