#!/bin/sh
# Installs the Debian packages given as arguments that are missing.
# As root: apt-get update, then apt-get install. Otherwise: print the command and fail.
set -eu
missing=""
for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y $missing
else
    echo "deps: missing Debian packages:$missing" >&2
    echo "deps: run: sudo apt-get update && sudo apt-get install -y$missing" >&2
    exit 1
fi
