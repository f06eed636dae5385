# Rockchip RK3588 boards (Rock 5B, Orange Pi 5): 4x Cortex-A76 + 4x Cortex-A55, Mali-G610 GPU, Linux arm64.
BOARD_DESC     := RK3588: aarch64, Cortex-A76/A55, Mali-G610 OpenCL, Linux
BOARD_KIND     := linux
CROSS          := aarch64-linux-gnu-
DEB_ARCH       := arm64
# Tuned for the big cores, runs on the little ones (both are ARMv8.2-A).
BOARD_CFLAGS   := -mcpu=cortex-a76.cortex-a55
# What it builds: the engine, manta-infer, manta-profile (CPU tables), the engine's unit tests, and the host
# program `manta` linked with the OpenCL ICD loader and CLBlast for its GPU mode, `manta profile --device
# SPEC`, which times sub-networks on the Mali GPU through the vendor's OpenCL driver (libmali, registered
# in /etc/OpenCL/vendors on the board; Debian's ocl-icd loader finds it).
# Engine code size (docs/boards.md): convolution, depthwise and element-wise kernels at -O3; the
# small kernels (fully connected, pad, pool) at -O2; verifier, planner, op preparation and messages at
# -Os; no unwind tables (plain C, nothing unwinds through it; -g keeps .debug_frame for debuggers).
ENGINE_COLD_OPT   := -Os
ENGINE_SMALL_OPT  := -O2
ENGINE_CODE_FLAGS := -fno-asynchronous-unwind-tables -fno-unwind-tables
BOARD_PROGRAMS := infer profile manta
# opencl-c-headers: for `manta` only (the engine, manta-infer and manta-profile include no OpenCL header).
BOARD_DEB_PKGS := gcc-aarch64-linux-gnu qemu-user opencl-c-headers \
                  libturbojpeg0-dev:arm64 libcjson-dev:arm64 libcmocka-dev:arm64 \
                  ocl-icd-opencl-dev:arm64 libclblast-dev:arm64 libsodium-dev:arm64 zlib1g:arm64
# zlib: the runtime library zlib1g:arm64 and the (architecture-independent) zlib.h of the host's
# zlib1g-dev, linked by file name: zlib1g-dev:arm64 pulls in libc6-dev:arm64, whose dependencies
# (linux-libc-dev, libssl3, Multi-Arch: same) must have exactly the host's versions, which the mirror did
# not offer for arm64 on 2026-11-21 (amd64 libssl3 3.0.22 against arm64 3.0.20): apt refuses it.
# libpng: built from Debian's source into build/rk3588/deps/ (boards/common.mk), linked statically;
# manta-infer (PNG views and disparities) links it with zlib built from Debian's source too.
BOARD_DEB_SRC  := libpng1.6 zlib
BOARD_INFER_PNG_LIBS := -l:liblibpng1.6.a -l:libzlib.a
BOARD_LDLIBS   := -lclblast -lOpenCL -lcjson -lsodium -lturbojpeg -l:liblibpng1.6.a -l:libz.so.1 \
                  -lpthread -lm
BOARD_RUN      := qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu
# Tests it cannot run:
#  - the OpenCL unit tests and `manta profile --device`: qemu-user has no Mali GPU (the `manta` binary is
#    built and linked, not run); the OpenCL tests run on the host under PoCL (`make test`).
#  - timings: qemu-user is not the Cortex-A76; profile on the board (docs/boards.md).
BOARD_NO_TESTS := OpenCL unit tests and manta profile --device (no Mali GPU under qemu-user); timings
