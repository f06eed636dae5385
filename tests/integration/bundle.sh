#!/bin/sh
# The relocatable bundle (tools/bundle.sh, `make bundle`): written into a temporary folder and
# unpacked from its tarball into an empty one, its wrappers run manta --version, manta devices
# and short trainings from any folder and through a symbolic link, and every bundled library is
# loaded from the bundle's lib/, not from the system (LD_DEBUG). As root with unshare, the same
# runs again in a mount namespace where the system's copies of the bundled libraries are
# replaced by /dev/null. PoCL, the OpenCL driver here, stays the system's.
set -eu
BUILD=${BUILD:-build}
root=$PWD
export MANTA_CACHE_DIR="${MANTA_CACHE_DIR:-$PWD/$BUILD/cache}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

BUILD=$BUILD sh tools/bundle.sh "$tmp/out" >"$tmp/bundle.log" 2>&1 || { cat "$tmp/bundle.log"; fail "tools/bundle.sh"; }
cat "$tmp/bundle.log"
name=manta-$(tr -d ' \n' <VERSION)-linux-$(uname -m)
[ -f "$tmp/out/$name.tar.gz" ] || fail "no $tmp/out/$name.tar.gz"
[ -d "$tmp/out/$name" ] || fail "no folder $tmp/out/$name"
mkdir "$tmp/unpacked"
tar -C "$tmp/unpacked" -xzf "$tmp/out/$name.tar.gz"
rm -rf "$tmp/out"
B=$tmp/unpacked/$name
for f in manta manta-infer manta-profile bin/manta bin/manta-infer bin/manta-profile README.md VERSION \
    BUILD-INFO lib/libOpenCL.so.1 lib/libclblast.so.1 lib/libcjson.so.1 lib/libsodium.so.23 \
    lib/libturbojpeg.so.0 lib/libz.so.1; do
    [ -e "$B/$f" ] || fail "the bundle has no $f"
done
if ls "$B/lib" | grep -E '^(libc|libm|libpthread|libdl|librt)\.so|^ld-linux|^linux-vdso'; then
    fail "glibc in the bundle's lib/"
fi
libs=$(ls "$B/lib")
echo "bundle: $(du -sk "$B" | cut -f1) KiB; lib/: $(echo $libs)"

# the programs, the way a user runs them: from the bundle's folder, from elsewhere, through a link
cd "$B"
./manta --version >"$tmp/version" || fail "./manta --version"
cat "$tmp/version"
head -1 "$tmp/version" | grep -Eq '^manta [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]+|unknown|v?[0-9][^ )]*)' ||
    fail "--version: $(head -1 "$tmp/version")"
cd "$tmp"
ln -s "$B/manta" "$tmp/m"
"$tmp/m" version | grep -q "^manta " || fail "through a symbolic link"
"$B/manta-profile" --help >/dev/null || fail "manta-profile --help"
"$B/manta" image --out "$tmp/an image.jpg" >/dev/null || fail "manta image (an argument with a space)"
[ -s "$tmp/an image.jpg" ] || fail "manta image wrote nothing"
"$B/manta-infer" 2>&1 | grep -q "no model given" || fail "manta-infer"

# each bundled library is loaded from the bundle's lib/ and from nowhere else
LD_DEBUG=libs "$B/manta" devices >"$tmp/devices" 2>"$tmp/ld.log" || { cat "$tmp/devices"; fail "devices"; }
grep -q "compute units" "$tmp/devices" || fail "devices: $(cat "$tmp/devices")"
for l in $libs; do
    if grep "calling init: " "$tmp/ld.log" | grep -v -F "calling init: $B/lib/" | grep -q -F "/$l"; then
        grep "calling init: .*/$l" "$tmp/ld.log"
        fail "$l was loaded from the system"
    fi
    grep -q -F "calling init: $B/lib/$l" "$tmp/ld.log" || grep -q -F "trying file=$B/lib/$l" "$tmp/ld.log" ||
        fail "$l was not loaded from the bundle"
done
echo "LD_DEBUG: $(echo $libs | wc -w) libraries loaded from the bundle's lib/, none from the system"

# manta --version, devices and two short trainings (the fixed CNN, the supernet's smoke schedule)
cat >"$tmp/run.sh" <<'EOF'
set -e
rm -rf "$tmp/run"
"$B/manta" --version >/dev/null
"$B/manta" devices | grep -q "compute units"
"$B/manta" train-tiny --steps 4 --batch 32 --log-every 2 --eval-images 100 --json >"$tmp/tiny.json"
grep -q '"done":true' "$tmp/tiny.json"
"$B/manta" train --schedule smoke --batch 16 --eval-images 0 --stop-after 2 --json --out "$tmp/run" \
    >"$tmp/train.json" 2>"$tmp/train.err"
[ -s "$tmp/run/latest.ckpt" ]
EOF
export B tmp
sh "$tmp/run.sh" || { cat "$tmp/tiny.json" "$tmp/train.json" "$tmp/train.err" 2>/dev/null; fail "trainings"; }
echo "bundle: --version, devices, train-tiny and train --schedule smoke ran"

# the same with the system's copies hidden: every path of each bundled library that ldconfig
# knows, and the one the system build resolves, bound over by /dev/null in a mount namespace
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
    hide=""
    for l in $libs; do
        for p in $(ldconfig -p | awk -v n="$l" '$1 == n { print $NF }') \
            $(ldd "$root/$BUILD/bin/manta" 2>/dev/null | awk -v n="$l" '$1 == n && $3 ~ /^\// { print $3 }'); do
            r=$(readlink -f "$p") && [ -f "$r" ] && hide="$hide $r"
        done
    done
    hide=$(echo $hide | tr ' ' '\n' | sort -u | tr '\n' ' ')
    [ -n "$hide" ] || fail "no system copy of the bundled libraries found to hide"
    export hide
    SYS_MANTA=$root/$BUILD/bin/manta unshare -m sh -c '
        for f in $hide; do mount --bind /dev/null "$f" || exit 3; done
        # control: the system build (and the bundled program without its wrapper) no longer start
        if "$SYS_MANTA" --version >/dev/null 2>&1; then echo "the hidden libraries still load"; exit 4; fi
        if "$B/bin/manta" --version >/dev/null 2>&1; then echo "bin/manta starts without lib/"; exit 4; fi
        sh "$tmp/run.sh"' || {
        cat "$tmp/tiny.json" "$tmp/train.json" "$tmp/train.err" 2>/dev/null
        fail "with the system's libraries hidden"
    }
    echo "mount namespace: $(echo $hide | wc -w) system library files hidden; --version, devices," \
        "train-tiny and train --schedule smoke ran from the bundle"
else
    echo "SKIPPED: the mount-namespace check (needs root and a working 'unshare -m'); the LD_DEBUG check ran"
fi
echo "bundle: all checks passed"
