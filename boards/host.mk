# The build machine itself: x86-64 Linux, Debian 12. The same programs as plain `make` (which builds into
# build/), built into build/host/ for generic x86-64 (no -march=native: the binaries run on any x86-64).
BOARD_DESC     := host: x86-64 Linux (the build machine)
BOARD_KIND     := linux
CROSS          :=
DEB_ARCH       :=
BOARD_CFLAGS   :=
# Everything: libmanta (OpenCL training runtime), manta, manta-infer, manta-profile, the engine's tests,
# and the export fixtures test-boards compares against.
BOARD_PROGRAMS := infer profile manta
BOARD_DEB_PKGS :=
BOARD_INFER_PNG_LIBS := -lpng -lz
BOARD_RUN      :=
# Tests: all of them, with `make test` (this board's packages are the host's, `make deps`).
BOARD_NO_TESTS := none (make test runs every test on the host)
