# 64-bit RISC-V Linux boards (rv64gc: VisionFive 2, Milk-V Pioneer, HiFive Unmatched), Debian riscv64.
BOARD_DESC     := riscv64: rv64gc, lp64d, Linux
BOARD_KIND     := linux
CROSS          := riscv64-linux-gnu-
BOARD_CFLAGS   := -march=rv64gc -mabi=lp64d
# Debian 12 (bookworm) ships the riscv64 cross toolchain but has no riscv64 architecture in its
# archive (it became official with Debian 13, trixie): `apt-cache policy libturbojpeg0-dev:riscv64`
# (likewise libcmocka-dev, libcjson-dev) has no candidate after adding the architecture. So no
# multi-arch packages here (DEB_ARCH empty, the architecture is not added), and:
#  - cmocka (engine unit tests) and cJSON (manta-profile) are built from Debian's source packages
#    (apt-get source, fetched into build/src/ by `make deps BOARD=riscv64`), one file each;
#  - manta-infer is built without libjpeg-turbo (-DMANTA_INFER_NO_JPEG): it takes --raw float32 input
#    tensors (write them with `manta-infer MODEL IMAGE.jpg --dump-input FILE` on any other machine);
#    a JPEG argument is refused with a message saying so. test-boards checks the raw-input results
#    against the host's JPEG run;
#  - libpng and zlib are built from Debian's sources too (boards/common.mk): manta-infer reads a
#    stereo pair's PNG views and writes the disparity PNGs.
DEB_ARCH       :=
# Engine code size (docs/boards.md): convolution, depthwise and element-wise kernels at -O3; the
# small kernels (fully connected, pad, pool) at -O2; verifier, planner, op preparation and messages at
# -Os; no unwind tables (plain C, nothing unwinds through it; -g keeps .debug_frame for debuggers).
ENGINE_COLD_OPT   := -Os
ENGINE_SMALL_OPT  := -O2
ENGINE_CODE_FLAGS := -fno-asynchronous-unwind-tables -fno-unwind-tables
BOARD_PROGRAMS := infer profile
BOARD_DEB_PKGS := gcc-riscv64-linux-gnu qemu-user
BOARD_DEB_SRC  := cmocka cjson libpng1.6 zlib
BOARD_INFER_DEFS := -DMANTA_INFER_NO_JPEG
INFER_LIBS     := -lm
BOARD_INFER_PNG_LIBS := -l:liblibpng1.6.a -l:libzlib.a
BOARD_RUN      := qemu-riscv64 -L /usr/riscv64-linux-gnu
# Tests it cannot run: the OpenCL unit tests and training scripts (no OpenCL in the board build);
# manta-infer on JPEG files (no libjpeg-turbo for riscv64 in bookworm: --raw input instead); timings.
BOARD_NO_TESTS := OpenCL unit tests and training scripts (no OpenCL); JPEG input (no libjpeg-turbo:riscv64 in bookworm, --raw instead); timings
