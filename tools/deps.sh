#!/bin/sh
# Installs the Debian packages given as arguments that are missing.
#   tools/deps.sh PKG... [--source DIR SRCPKG...]
# PKG may be NAME:ARCH (a multi-arch library of a board); its architecture is added with
# `dpkg --add-architecture` first, only when dpkg does not have it yet.
# --source DIR SRCPKG...: Debian source packages to fetch into DIR (apt-get source --download-only),
# for libraries a board's architecture lacks; a deb-src entry for the system's Debian release is
# added to /etc/apt/sources.list.d/ only when apt has none.
# As root: apt-get update, then apt-get install / apt-get source. Otherwise: print the commands and fail.
# Nothing is done when everything is there.
set -eu
missing=""
while [ $# -gt 0 ] && [ "$1" != "--source" ]; do
    if ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $1"
    fi
    shift
done
srcdir="" srcmissing=""
if [ $# -gt 0 ]; then
    shift
    [ $# -gt 0 ] || { echo "deps: --source needs a directory" >&2; exit 2; }
    srcdir=$1
    shift
    for s in "$@"; do
        ls "$srcdir/${s}_"*.dsc >/dev/null 2>&1 || srcmissing="$srcmissing $s"
    done
fi
[ -z "$missing" ] && [ -z "$srcmissing" ] && exit 0

# architectures the missing packages need that dpkg does not have
have_arch=" $(dpkg --print-architecture) $(dpkg --print-foreign-architectures | tr '\n' ' ') "
new_arch=""
for p in $missing; do
    case "$p" in
    *:*)
        a=${p##*:}
        case "$have_arch $new_arch " in *" $a "*) ;; *) new_arch="$new_arch $a" ;; esac
        ;;
    esac
done
need_src_entry=0
if [ -n "$srcmissing" ] &&
    ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    need_src_entry=1
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages:$missing${srcmissing:+; source packages:$srcmissing}" >&2
    for a in $new_arch; do
        echo "deps: run: sudo dpkg --add-architecture $a" >&2
    done
    [ "$need_src_entry" -eq 1 ] && echo "deps: add a deb-src line for your Debian release" >&2
    echo "deps: run: sudo apt-get update${missing:+ && sudo apt-get install -y$missing}" >&2
    [ -n "$srcmissing" ] && echo "deps: run: cd $srcdir && apt-get source --download-only$srcmissing" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
for a in $new_arch; do
    echo "deps: adding architecture $a"
    dpkg --add-architecture "$a"
done
if [ "$need_src_entry" -eq 1 ]; then
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    echo "deps: adding deb-src for $codename (/etc/apt/sources.list.d/manta-deb-src.sources)"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$codename" >/etc/apt/sources.list.d/manta-deb-src.sources
fi
# A failed index (a mirror in sync, an architecture a suite lacks) is reported by apt-get update;
# the install below fails by itself if a package it needs is really unavailable.
apt-get update || echo "deps: apt-get update reported errors (above); going on with the indexes it has" >&2
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    apt-get install -y $missing
fi
if [ -n "$srcmissing" ]; then
    echo "deps: fetching source packages$srcmissing into $srcdir"
    mkdir -p "$srcdir"
    (cd "$srcdir" && apt-get source --download-only $srcmissing)
fi
