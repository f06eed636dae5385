# 32-bit ARM boards with a Cortex-A7 and NEON (Raspberry Pi 2, Allwinner H3), Debian armhf.
BOARD_DESC     := armv7: armhf, Cortex-A7 with NEON-VFPv4, Linux
BOARD_KIND     := linux
CROSS          := arm-linux-gnueabihf-
DEB_ARCH       := armhf
# GCC vectorises float loops for NEON only with -funsafe-math-optimizations (NEON flushes denormals);
# the engine is built without it, so results match the host's, scalar VFP code for floats.
BOARD_CFLAGS   := -mcpu=cortex-a7 -mfpu=neon-vfpv4 -mfloat-abi=hard
# Engine code size (docs/boards.md): convolution, depthwise and element-wise kernels at -O3; the
# small kernels (fully connected, pad, pool) at -O2; verifier, planner, op preparation and messages at
# -Os; no unwind tables (plain C, nothing unwinds through it; -g keeps .debug_frame for debuggers).
ENGINE_COLD_OPT   := -Os
ENGINE_SMALL_OPT  := -O2
ENGINE_CODE_FLAGS := -fno-asynchronous-unwind-tables -fno-unwind-tables
BOARD_PROGRAMS := infer profile
BOARD_DEB_PKGS := gcc-arm-linux-gnueabihf qemu-user \
                  libturbojpeg0-dev:armhf libcjson-dev:armhf libcmocka-dev:armhf
# manta-infer reads and writes PNG files (a stereo pair's views, the disparity) with libpng and zlib
# built from Debian's sources into build/$(BOARD)/deps/ (boards/common.mk), linked statically: the
# multi-arch libpng16-16:<arch> must have exactly the host's version, which the mirror did not offer
# on 2026-11-29 (host 1.6.39-2+deb12u4, the other architectures +deb12u5).
BOARD_DEB_SRC  := libpng1.6 zlib
BOARD_INFER_PNG_LIBS := -l:liblibpng1.6.a -l:libzlib.a
BOARD_RUN      := qemu-arm -cpu cortex-a7 -L /usr/arm-linux-gnueabihf
# Tests it cannot run: the OpenCL unit tests and training scripts (no OpenCL in the board build); timings
# (qemu-user is not the Cortex-A7).
BOARD_NO_TESTS := OpenCL unit tests and training scripts (no OpenCL in the board build); timings (qemu is not the CPU)
