#!/bin/sh
# The inference engine library must not call the C allocator, nor anything
# beyond a small freestanding set: every symbol it leaves undefined must be
# memcpy/memmove/memset/memcmp, expf, or a sanitizer hook (SANITIZE builds).
# Compiler runtime helpers (libgcc: 64-bit division on 32-bit ARM, __aeabi_*) are part of
# every freestanding C implementation and allowed. NM=<prefix>nm checks a cross-built
# library (make test-boards).
set -eu
lib="${BUILD:-build}/lib/libmanta_engine.a"
if [ ! -f "$lib" ]; then
    echo "engine_noalloc: $lib missing (build with make first)"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${NM:-nm} -u "$lib" | awk 'NF >= 2 { print $2 }' | sort -u >"$tmp/undef"
${NM:-nm} -g --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sort -u >"$tmp/def"
comm -23 "$tmp/undef" "$tmp/def" >"$tmp/external"
if grep -Ex '(malloc|calloc|realloc|free|aligned_alloc|posix_memalign|memalign|valloc|reallocarray)' "$tmp/external"; then
    echo "engine_noalloc: $lib references the allocator (above)"
    exit 1
fi
# _GLOBAL_OFFSET_TABLE_: defined by the linker itself in position-independent builds (armhf
# and others compile PIE by default), where code taking the address of the engine's constant
# operator tables finds them through it; no library provides or needs it.
if grep -Evx '(memcpy|memmove|memset|memcmp|expf|__stack_chk_fail|__(asan|ubsan|sanitizer)_.*|__aeabi_[a-z0-9]+|__(u?(div|mod)|udivmod)[dt]i[34]|_GLOBAL_OFFSET_TABLE_)' "$tmp/external"; then
    echo "engine_noalloc: $lib references symbols outside the freestanding set (above)"
    exit 1
fi
echo "engine_noalloc: $(wc -l <"$tmp/external") external symbols, none an allocator"
