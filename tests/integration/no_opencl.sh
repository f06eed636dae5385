#!/bin/sh
# manta-profile, manta-infer, the engine and the engine tests compile without any OpenCL header
# (boards build them without one): make check-no-opencl compiles every source of theirs with
# tests/data/no_opencl/ first on the include path, whose <CL/cl.h> and <clblast_c.h> stop the
# compilation. And the stand-ins work: a source that does include OpenCL (runtime/cl/cl.c) fails.
set -eu
B=${BUILD:-build}
# a make of its own: not the jobserver or the sanitizer build of the make test that runs this
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE ${MAKE:-make} -s --no-print-directory BUILD="$B" "$@"; }
mk check-no-opencl
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if mk check-no-opencl NO_OPENCL_SRC=runtime/cl/cl.c >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: runtime/cl/cl.c compiled with the OpenCL stand-ins on the include path"
    exit 1
fi
grep -q 'an OpenCL header (<CL/cl.h>) reached' "$log" || { cat "$log"; echo "FAIL: no stand-in message"; exit 1; }
echo "no OpenCL header on the board side: checked"
