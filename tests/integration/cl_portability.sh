#!/bin/sh
# Portability gate: every program of cl_kernels/, exactly as the runtime builds it (the
# preamble, the file, the runtime's build options: `manta kernels dump`), compiles under
# clang as strict OpenCL C 1.2 with every extension off (no cl_khr_fp64: double literals and
# types are errors, as on GPUs without it), warnings as errors, for a SPIR and an NVPTX
# target. PoCL accepts constructs that NVIDIA's and other vendors' compilers reject
# (variadic macros, doubles); this is the check that they do not creep back in. A canary
# with such constructs must fail, so the gate cannot pass by accident.
set -eu
M="${BUILD:-build}/bin/manta"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

compilers="" seen=""
for c in clang clang-14 clang-15 clang-16; do
    p=$(command -v "$c" 2>/dev/null) || continue
    real=$(readlink -f "$p")
    case " $seen " in *" $real "*) continue ;; esac
    seen="$seen $real"
    compilers="$compilers $c"
done
[ -n "$compilers" ] || fail "no clang found (make deps installs it)"

"$M" kernels dump "$dir/src" || fail "manta kernels dump"
opts=$(cat "$dir/src/options")
n=$(ls "$dir/src"/*.cl | wc -l)
[ "$n" -ge 10 ] || fail "only $n programs dumped"

# gate CC TARGET FILE [extra...]: strict compile of one program; output in $dir/log
gate() {
    cc=$1 target=$2 file=$3
    shift 3
    case $target in
    spir*) out="-emit-llvm -c" ;;
    *) out="-S" ;;
    esac
    # shellcheck disable=SC2086
    "$cc" -x cl $opts -Xclang -finclude-default-header -Xclang -cl-ext=-all -target "$target" \
        -Wall -Wextra -Wno-unused-parameter -pedantic-errors -Werror $out -o /dev/null \
        "$@" "$file" >"$dir/log" 2>&1
}

checked=0
for cc in $compilers; do
    for target in spir64-unknown-unknown nvptx64-nvidia-nvcl; do
        for f in "$dir/src"/*.cl; do
            if ! gate "$cc" "$target" "$f"; then
                head -20 "$dir/log"
                fail "$(basename "$f") is not strict OpenCL C 1.2 ($cc, $target)"
            fi
            checked=$((checked + 1))
        done
    done
done

# canaries: each construct alone must be refused
printf '#define F(...) __VA_ARGS__\n__kernel void k(__global float *p) { p[0] = F(1.0f); }\n' \
    >"$dir/variadic.cl"
printf '__kernel void k(__global float *p) { p[0] = p[0] * 0.5; }\n' >"$dir/double.cl"
printf '__kernel void k(__global float *p) { int a[get_global_id(0) + 1]; a[0] = 1; p[0] = a[0]; }\n' \
    >"$dir/vla.cl"
for canary in variadic double vla; do
    for cc in $compilers; do
        if gate "$cc" spir64-unknown-unknown "$dir/$canary.cl"; then
            fail "the gate accepted the $canary canary ($cc)"
        fi
    done
done
echo "ok: $checked strict compiles of $n programs with:$compilers; 3 canaries refused"

# and every program built on the test device from source, as `manta kernels build` does on a new GPU
"$M" kernels build >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; fail "manta kernels build"; }
grep -q "^0 of $n programs failed to build" "$dir/build.log" || { cat "$dir/build.log"; fail "kernels build report"; }
echo "ok: $(tail -1 "$dir/build.log") on the test device"
