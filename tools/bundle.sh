#!/bin/sh
# A relocatable bundle of the manta programs for machines that have only the vendor's OpenCL
# driver: the programs, every shared library they need beyond the C library, wrappers that put
# those libraries first, a README and the build's provenance. Run by `make bundle` after `make`.
#
# usage: tools/bundle.sh [OUTDIR]
#   OUTDIR defaults to $BUNDLE_DIR, else $BUILD/bundle ($BUILD: build). Writes
#   OUTDIR/manta-<version>-linux-<arch>/ and OUTDIR/manta-<version>-linux-<arch>.tar.gz
#   (<version> from VERSION, <arch> from uname -m) and prints both with their sizes.
#   STRIP=... names the strip program (default strip; STRIP=: keeps the debug information).
#
# The bundle:
#   manta, manta-infer, manta-profile  wrappers: put the bundle's lib/ first in LD_LIBRARY_PATH
#                   (the bundle is found from the wrapper's own path, through symbolic links,
#                   from any folder) and exec bin/<name> with every argument
#   bin/            the programs, debug information stripped
#   lib/            the shared libraries the programs (and CLBlast's tuners) need, under their
#                   SONAMEs, collected with ldd: CLBlast, the OpenCL ICD loader libOpenCL.so.1,
#                   cJSON, libsodium, TurboJPEG, zlib, libstdc++, libgcc_s; not glibc (libc,
#                   libm, libpthread, libdl, librt, ld-linux), and not the OpenCL driver itself
#   libexec/clblast/  CLBlast's tuners for `manta tune`, when clblast-utils is installed here
#   tests/          with BUNDLE_TESTS=1 (after `make test`): the op checks (cmocka unit tests of
#                   the ops and the supernet), with libcmocka in lib/, run by
#                   tools/bench/gpu_session.sh on a GPU machine from the repository root
#   README.md (tools/bundle_readme.md), VERSION, BUILD-INFO (revision, date, compiler, ldd)
set -eu

BUILD=${BUILD:-build}
out=${1:-${BUNDLE_DIR:-$BUILD/bundle}}
version=$(tr -d ' \n' <VERSION)
arch=$(uname -m)
name=manta-$version-linux-$arch
progs="manta manta-infer manta-profile"

die() { echo "bundle: $*" >&2; exit 1; }

for p in $progs; do
    [ -x "$BUILD/bin/$p" ] || die "$BUILD/bin/$p is missing: run 'make' first (or 'make bundle')"
done
command -v ldd >/dev/null || die "ldd is missing (Debian package libc-bin)"
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
stage=$out/.$name.tmp.$$
trap 'rm -rf "$stage"' EXIT
trap 'exit 130' INT TERM
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"

# ---- the programs ----
strip_prog=${STRIP:-strip}
command -v "$strip_prog" >/dev/null || strip_prog=:
for p in $progs; do
    cp "$BUILD/bin/$p" "$stage/bin/$p"
    "$strip_prog" --strip-debug "$stage/bin/$p" 2>/dev/null || true
    chmod 755 "$stage/bin/$p"
done

# ---- with BUNDLE_TESTS=1, the op checks (cmocka unit tests) in tests/, to check a GPU's
# results where only the bundle runs (tools/bench/gpu_session.sh runs them) ----
if [ -n "${BUNDLE_TESTS:-}" ] && [ "$BUNDLE_TESTS" != 0 ]; then
    mkdir -p "$stage/tests"
    for t in $(grep -v '^#' tests/op_tests); do # the op checks, listed in tests/op_tests
        [ -x "$BUILD/tests/test_$t" ] || die "$BUILD/tests/test_$t is missing: run 'make test' first"
        cp "$BUILD/tests/test_$t" "$stage/tests/test_$t"
        "$strip_prog" --strip-debug "$stage/tests/test_$t" 2>/dev/null || true
    done
fi

# ---- CLBlast's tuners (the ones tools/manta/tune.c runs), for `manta tune` ----
tuners=$(grep -o '"clblast_tuner_[a-z_][a-z_]*"' tools/manta/tune.c | tr -d '"' | sort -u)
tuner_dir=${MANTA_CLBLAST_TUNERS:-}
if [ -z "$tuner_dir" ]; then
    first=$(echo "$tuners" | head -1)
    t=$(command -v "$first" 2>/dev/null || true)
    if [ -n "$t" ]; then tuner_dir=$(dirname "$t"); fi
fi
have_tuners=no
if [ -n "$tuner_dir" ]; then
    have_tuners=yes
    for t in $tuners; do [ -x "$tuner_dir/$t" ] || have_tuners=no; done
fi
if [ "$have_tuners" = yes ]; then
    mkdir -p "$stage/libexec/clblast"
    for t in $tuners; do
        cp "$tuner_dir/$t" "$stage/libexec/clblast/$t"
        chmod 755 "$stage/libexec/clblast/$t"
    done
else
    echo "bundle: CLBlast's tuners not found (Debian package clblast-utils): 'manta tune' in the" \
        "bundle will need them on the target" >&2
fi

# ---- shared libraries: what ldd resolves for the programs and the tuners, and for every
# library so found (ldd lists the whole closure already; this makes sure of it). glibc stays
# the system's: it is tied to the system's dynamic loader. ----
is_system() {
    case $1 in
    linux-vdso.so* | linux-gate.so* | ld-linux* | ld64.so* | libc.so.* | libm.so.* | \
        libpthread.so.* | libdl.so.* | librt.so.* | libmvec.so.* | libresolv.so.* | \
        libutil.so.* | libanl.so.*) return 0 ;;
    esac
    return 1
}
# prints "soname path" for every library ldd resolves for $1; fails on a missing one
deps() {
    ldd "$1" >"$stage/.ldd" 2>&1 || die "ldd $1 failed: $(head -1 "$stage/.ldd")"
    if grep -q "not found" "$stage/.ldd"; then
        die "$1: $(grep "not found" "$stage/.ldd" | head -1 | sed 's/^[[:space:]]*//')"
    fi
    awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' "$stage/.ldd"
}
: >"$stage/.libs"
for f in "$stage"/bin/* "$stage"/libexec/clblast/* "$stage"/tests/*; do
    if [ -f "$f" ]; then deps "$f" >>"$stage/.libs"; fi
done
# a work list: the dependencies of each library copied are appended and read in turn
while read -r soname path; do
    is_system "$soname" && continue
    [ -e "$stage/lib/$soname" ] && continue
    cp -L "$path" "$stage/lib/$soname"
    chmod 644 "$stage/lib/$soname"
    deps "$path" >>"$stage/.libs"
done <"$stage/.libs"
rm -f "$stage/.libs" "$stage/.ldd"

# ---- the wrappers ----
for p in $progs; do
    cat >"$stage/$p" <<EOF
#!/bin/sh
# Runs bin/$p of this bundle with the bundle's libraries (lib/) ahead of the system's.
# The bundle is found from this file's own path: it works from any folder and through
# symbolic links to this file.
self=\$0
while [ -h "\$self" ]; do
    link=\$(readlink "\$self")
    case \$link in
    /*) self=\$link ;;
    *) self=\$(dirname "\$self")/\$link ;;
    esac
done
here=\$(CDPATH= cd -P "\$(dirname "\$self")" && pwd) || exit 1
LD_LIBRARY_PATH=\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
if [ -z "\${MANTA_CLBLAST_TUNERS:-}" ] && [ -d "\$here/libexec/clblast" ]; then
    MANTA_CLBLAST_TUNERS=\$here/libexec/clblast
    export MANTA_CLBLAST_TUNERS
fi
exec "\$here/bin/$p" "\$@"
EOF
    chmod 755 "$stage/$p"
done

# ---- README, VERSION, BUILD-INFO ----
sed -e "s/@VERSION@/$version/g" -e "s/@NAME@/$name/g" -e "s/@ARCH@/$arch/g" \
    tools/bundle_readme.md >"$stage/README.md"
echo "$version" >"$stage/VERSION"
# the newest glibc symbol version anything in the bundle needs: the oldest glibc it runs on
glibc=$(for f in "$stage"/bin/* "$stage"/lib/* "$stage"/libexec/clblast/*; do
    if [ -f "$f" ]; then objdump -T "$f" 2>/dev/null || true; fi
done | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n | tail -1)
{
    echo "$name"
    "$BUILD/bin/manta" --version | sed 's/^/program: /'
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
    echo "compiler: $(${CC:-cc} --version 2>/dev/null | head -1)"
    echo "build folder: $BUILD"
    echo "needs: glibc ${glibc:-?} or newer, an OpenCL ICD (the vendor's driver) for manta"
    echo
    echo "bundled libraries (lib/):"
    for l in "$stage"/lib/*; do
        l=${l##*/}
        src=$(ldconfig -p 2>/dev/null | awk -v n="$l" '$1 == n { print $NF; exit }')
        pkg=""
        if [ -n "$src" ] && command -v dpkg-query >/dev/null; then
            # the file the link names, in the link's folder (/lib, /usr/lib: as the package has it)
            real=$(readlink -f "$src")
            pkg=$(dpkg-query -S "$(dirname "$src")/${real##*/}" "$real" 2>/dev/null | head -1 | cut -d: -f1)
            [ -n "$pkg" ] && pkg="$pkg $(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null | head -1)"
        fi
        printf '  %-22s %9s bytes  %s%s\n' "$l" "$(wc -c <"$stage/lib/$l" | tr -d ' ')" \
            "${src:-?}" "${pkg:+ ($pkg)}"
    done
    if [ -d "$stage/libexec/clblast" ]; then
        echo "CLBlast tuners (libexec/clblast/): $(echo $tuners)"
    fi
    for p in $progs; do
        echo
        echo "ldd $BUILD/bin/$p (on the build machine):"
        ldd "$BUILD/bin/$p"
    done
} >"$stage/BUILD-INFO"

# ---- into place: the folder, then the tarball ----
rm -rf "${out:?}/$name" "$out/$name.tar.gz"
mv "$stage" "$out/$name"
tar -C "$out" --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz.tmp" "$name"
mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
echo "bundle: $out/$name ($(du -sk "$out/$name" | cut -f1) KiB, $(ls "$out/$name/lib" | wc -l) libraries)"
echo "bundle: $out/$name.tar.gz ($(($(wc -c <"$out/$name.tar.gz") / 1024)) KiB)"
