# Raspberry Pi 4 (BCM2711, 4x Cortex-A72), 64-bit Raspberry Pi OS or Debian arm64.
BOARD_DESC     := Raspberry Pi 4: aarch64, Cortex-A72, Linux
BOARD_KIND     := linux
# Debian's cross toolchain (gcc-aarch64-linux-gnu) and multi-arch libraries (:arm64).
CROSS          := aarch64-linux-gnu-
DEB_ARCH       := arm64
BOARD_CFLAGS   := -mcpu=cortex-a72
# What it builds: the engine, manta-infer, manta-profile and the engine's unit tests.
# Engine code size (docs/boards.md): convolution, depthwise and element-wise kernels at -O3; the
# small kernels (fully connected, pad, pool) at -O2; verifier, planner, op preparation and messages at
# -Os; no unwind tables (plain C, nothing unwinds through it; -g keeps .debug_frame for debuggers).
ENGINE_COLD_OPT   := -Os
ENGINE_SMALL_OPT  := -O2
ENGINE_CODE_FLAGS := -fno-asynchronous-unwind-tables -fno-unwind-tables
BOARD_PROGRAMS := infer profile
BOARD_DEB_PKGS := gcc-aarch64-linux-gnu qemu-user \
                  libturbojpeg0-dev:arm64 libcjson-dev:arm64 libcmocka-dev:arm64
# How `make test-boards` runs its programs: qemu-user with Debian's cross libc.
# manta-infer reads and writes PNG files (a stereo pair's views, the disparity) with libpng and zlib
# built from Debian's sources into build/$(BOARD)/deps/ (boards/common.mk), linked statically: the
# multi-arch libpng16-16:<arch> must have exactly the host's version, which the mirror did not offer
# on 2026-11-29 (host 1.6.39-2+deb12u4, the other architectures +deb12u5).
BOARD_DEB_SRC  := libpng1.6 zlib
BOARD_INFER_PNG_LIBS := -l:liblibpng1.6.a -l:libzlib.a
BOARD_RUN      := qemu-aarch64 -cpu cortex-a72 -L /usr/aarch64-linux-gnu
# Tests it cannot run:
#  - the OpenCL unit tests (test_cl, test_conv, test_train, ...) and the integration scripts that train: the
#    board build links no OpenCL and qemu-user has no OpenCL device; they run on the host (`make test`).
#  - timings (manta-profile tables, --bench): qemu-user is not the Cortex-A72; profile on the board
#    itself (docs/boards.md).
BOARD_NO_TESTS := OpenCL unit tests and training scripts (no OpenCL in the board build); timings (qemu is not the CPU)
