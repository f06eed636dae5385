# manta: one entry point for building, testing, the demo and the benchmarks.
#   make            libraries (build/lib/: libmanta.a, the engine, the monitor's HTTP server,
#                   manta report's figures) and programs (build/bin/)
#   make test       unit tests (cmocka) and integration scripts, on PoCL, JOBS at a time (default 2;
#                   make test JOBS=1 runs them one by one; logs in $(BUILD)/test-logs/, tests/run.sh)
#   make demo       the main job on the built-in default; make demo TASK=stereo: stereo depth
#                   (stereo-cpu, procedural pairs: tools/demo_stereo.sh)
#   make deps       install missing Debian packages (as root) or print the command
#   make check-no-opencl  the board side (engine, manta-infer, manta-profile, engine tests) compiles
#                   with no OpenCL header (part of make test; with BOARD=<name>, the board's compiler)
#   make bench-ops  op throughput table (not a test)
#   make bench-train  training images/s against PyTorch (not a test)
#   make bench-stereo-train  stereo training pairs/s and peak memory of stereo-cpu's largest and
#                   smallest sub-network against their PyTorch twin, 2 threads (not a test)
#   make bench-gpu  training images/s on a GPU against PyTorch (CUDA) on the same GPU (not a test)
#   make bench-engine inference latency and arena against LiteRT and TFLM (not a test;
#                   INT8=1: the same sub-networks in int8)
#   make bench-search  after make demo: searched against uniform sub-networks at six budgets (not a test)
#   make bench-elastic  elastic training on emulated links: time from a rank's death to the next
#                   step, a join's state transfer (root; tools/bench/netns_elastic.sh)
#   make bench-monitor  step time of manta train --monitor with and without clients that never
#                   read (not a test)
#   make bench-synth  milliseconds per procedural stereo pair, one thread (not a test)
#   make bench-compress  ring bus bandwidth and training step time per gradient encoding
#                   (--compress, --aggregate) on loopback and, as root, 100 Mbit/s netem links
#                   between network namespaces (not a test)
#   make bench-stereo CKPT=...  a stereo checkpoint's largest / smallest sub-network against
#                   OpenCV's SGBM on held-out pairs (not a test)
#   make tune       tune CLBlast for the device (MANTA_DEVICE), kept for later runs
#   make bundle     relocatable programs + shared libraries for GPU servers with only the vendor
#                   driver: build/bundle/manta-<version>-linux-<arch>/ and .tar.gz (tools/bundle.sh)
#   make SANITIZE=1 ...   the same under ASan + UBSan, in build/san/
#   make fuzz       libFuzzer target over the engine (clang); run: tools/fuzz/run.sh SECONDS
#   make BOARD=<name>   a board's programs in build/<name>/ (boards/<name>.mk, docs/boards.md)
#   make deps-boards / test-boards   every board's packages; build every board, run the engine
#                   tests and manta-infer under qemu-user against the host (not part of make test)
# CI (CI=true) adds -Werror.

# Boards: boards/<name>.mk names the toolchain, CPU flags, what is built and which tests cannot run.
BOARDS := $(filter-out common,$(sort $(basename $(notdir $(wildcard boards/*.mk)))))
ifneq ($(BOARD),)
ifeq ($(filter $(BOARD),$(BOARDS)),)
$(error unknown BOARD '$(BOARD)'; known boards: $(BOARDS) (docs/boards.md explains how to add one))
endif
include boards/$(BOARD).mk
override BUILD := build/$(BOARD)
CC   := $(CROSS)gcc
HOSTCC := cc
AR   := $(CROSS)ar
SIZE := $(CROSS)size
NM   := $(CROSS)nm
endif

CC      ?= cc
HOSTCC  ?= $(CC)
BUILD   ?= build
OPT     ?= -O2

ifeq ($(SANITIZE),1)
override BUILD := $(BUILD)/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif

WARN := -Wall -Wextra -Wpedantic
ifeq ($(CI),true)
WARN += -Werror
endif

# _FILE_OFFSET_BITS=64: 32-bit boards (armv7) read folders and files past 2 GiB and with 64-bit
# inode numbers (without it readdir() fails with EOVERFLOW there).
CPPFLAGS := -Iruntime -I$(BUILD)/gen -DCL_TARGET_OPENCL_VERSION=120 -D_POSIX_C_SOURCE=200809L \
            -D_FILE_OFFSET_BITS=64
CFLAGS   := -std=c11 $(OPT) -g $(WARN) $(SANFLAGS) -MMD -MP
LDFLAGS  := $(SANFLAGS)
LDLIBS   := -lclblast -lOpenCL -lcjson -lsodium -lturbojpeg -lpng -lz -lpthread -lm

# Debian packages the build, the tests and the demo need. python3-pyarmnn and its CpuRef backend
# (Arm NN 20.08, about 1.5 MB): a peer for tests/integration/armnn_agree.sh only, which skips
# without them; nothing built links them.
DEB_PKGS := ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev libturbojpeg0-dev \
            libpng-dev libcmocka-dev libcjson-dev zlib1g-dev libsodium-dev flatbuffers-compiler \
            dataset-fashion-mnist clblast-utils clang libcairo2-dev fonts-dejavu-core \
            libmicrohttpd-dev chromium curl mate-backgrounds clang-format \
            python3-pyarmnn libarmnn-cpuref-backend22

LIB_DIRS := core space cl nn elastic train classify data stereo export search profile dist monitor \
            report
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard runtime/$(d)/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/cl_sources.o
CL_SRC   := $(wildcard cl_kernels/*.cl)
LIB      := $(BUILD)/lib/libmanta.a

# The training monitor's HTTP server (runtime/monitor_http/): libmicrohttpd and the embedded page,
# a library of its own so that libmanta.a (the monitor's model, answers and alerts among it) needs
# no libmicrohttpd; only the programs that serve (manta) and the server's test link it and
# -lmicrohttpd. Board builds of manta get server_none.c instead (mon_server_start() says so).
ifeq ($(BOARD),)
HTTP_SRC := $(filter-out runtime/monitor_http/server_none.c,$(wildcard runtime/monitor_http/*.c))
HTTP_OBJ := $(HTTP_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/monitor_page.o
HTTP_LDLIBS := -lmicrohttpd
else
HTTP_SRC := runtime/monitor_http/server_none.c runtime/monitor_http/options.c
HTTP_OBJ := $(HTTP_SRC:%.c=$(BUILD)/obj/%.o)
HTTP_LDLIBS :=
endif
HTTP_LIB := $(BUILD)/lib/libmanta_monitor_http.a

# Inference engine (runtime/engine): freestanding C99, no allocation, its own library so
# that boards link it alone. ENGINE_OPT defaults to -O3: the kernels rely on the unrolling of
# their register tiles (explicit vectors, see runtime/engine/kernels_simd_impl.h).
ENGINE_SRC := $(wildcard runtime/engine/*.c)
ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/obj/%.o)
ENGINE_LIB := $(BUILD)/lib/libmanta_engine.a
ENGINE_OPT ?= -O3

# manta-infer: the board program, linked with the engine, TurboJPEG and libc/libm only.
# Shared by the programs (tools/common/): option tables (opts.h, getopt_long), JSON strings.
TOOLS_COMMON_SRC := $(wildcard tools/common/*.c)

# The runtime's plain-C files manta-infer compiles in (C library only): the error record and the
# reader of the models' preprocessing metadata (runtime/export/tflite_meta.h), the median.
INFER_RUNTIME_SRC := runtime/core/status.c runtime/core/stats.c runtime/export/tflite_meta.c \
                     runtime/data/disp_color.c
# PNG (a stereo pair's views, the 16-bit disparity): host builds with libpng; a board build
# with the libraries its .mk file names in BOARD_INFER_PNG_LIBS (libpng and zlib built from
# Debian's sources: boards/common.mk); a board naming none: -DMANTA_INFER_NO_PNG
ifeq ($(BOARD),)
INFER_PNG ?= 1
INFER_PNG_LIBS := -lpng -lz
else
INFER_PNG ?= $(if $(BOARD_INFER_PNG_LIBS),1,0)
INFER_PNG_LIBS := $(BOARD_INFER_PNG_LIBS)
endif
ifeq ($(INFER_PNG),1)
INFER_RUNTIME_SRC += runtime/data/png_io.c runtime/core/fileio.c
else
INFER_PNG_LIBS :=
INFER_PNG_DEFS := -DMANTA_INFER_NO_PNG
endif
INFER_SRC := $(wildcard tools/manta-infer/*.c) $(TOOLS_COMMON_SRC) $(INFER_RUNTIME_SRC)
INFER_OBJ := $(INFER_SRC:%.c=$(BUILD)/obj/%.o)
INFER     := $(BUILD)/bin/manta-infer
INFER_LIBS ?= -lturbojpeg -lm
INFER_LIBS += $(INFER_PNG_LIBS)

# manta-profile: the board's latency profiler. Engine, exporter, space and profile code,
# cJSON and libm: no OpenCL, and no checkpoint container (it reads no checkpoints; zlib).
PROFILE_SRC := $(wildcard tools/manta-profile/*.c) $(TOOLS_COMMON_SRC)
PROFILE_OBJ := $(PROFILE_SRC:%.c=$(BUILD)/obj/%.o)
PROFILE_HOST_SRC := $(filter-out runtime/core/container.c,$(wildcard runtime/core/*.c)) \
                    $(wildcard runtime/profile/*.c) runtime/space/ofa_space.c \
                    runtime/space/stereo_space.c runtime/space/act.c \
                    runtime/export/flatbuf.c runtime/export/tflite.c runtime/export/xgraph.c \
                    runtime/export/xgraph_ref.c runtime/export/mbv3_graph.c \
                    runtime/export/stereo_graph.c runtime/export/quant.c
PROFILE_HOST_OBJ := $(PROFILE_HOST_SRC:%.c=$(BUILD)/obj/%.o)
PROFILE   := $(BUILD)/bin/manta-profile
PROFILE_LIBS ?= -lcjson -lm

# The test helpers that need no OpenCL (the engine tests use only these; boards build them).
TEST_HOST_LIB_SRC := tests/common/testutil.c tests/common/tflbuild.c tests/common/xgrand.c \
                     tests/common/graphcmp.c tests/common/fbwalk.c tests/common/fuzz_body.c \
                     tests/ref/ref_engine.c
TEST_HOST_LIB_OBJ := $(TEST_HOST_LIB_SRC:%.c=$(BUILD)/obj/%.o)

# What boards build compiles without any OpenCL header: manta-profile, manta-infer, the engine and
# the engine tests with their helpers. check-no-opencl compiles each (syntax only) with
# tests/data/no_opencl/ first on the include path, whose <CL/cl.h> and <clblast_c.h> stop the
# compilation (tests/integration/no_opencl.sh runs it in make test; make BOARD=... check-no-opencl
# with a board's compiler).
NO_OPENCL_SRC := $(sort $(PROFILE_SRC) $(PROFILE_HOST_SRC) $(INFER_SRC) $(ENGINE_SRC) \
                   $(TEST_HOST_LIB_SRC) $(wildcard tests/unit/test_engine_*.c))

MANTA_SRC := $(wildcard tools/manta/*.c) $(TOOLS_COMMON_SRC)
# manta report: its inputs are read by the library (runtime/report/, in libmanta.a); its
# figures (cairo, libcairo2-dev) and HTML page are the report's part of the program,
# tools/manta-report/, built into build/lib/libmanta_report.a, which only manta and the plots'
# test link (with -lcairo). Board builds of manta leave the report out.
REPORT_SRC := $(wildcard tools/manta-report/*.c)
REPORT_OBJ := $(REPORT_SRC:%.c=$(BUILD)/obj/%.o)
REPORT_LIB := $(BUILD)/lib/libmanta_report.a
ifeq ($(BOARD),)
MANTA_REPORT_LIB := $(REPORT_LIB)
REPORT_LDLIBS := -lcairo
else
MANTA_SRC := $(filter-out tools/manta/report.c,$(MANTA_SRC))
MANTA_REPORT_LIB :=
REPORT_LDLIBS :=
$(BUILD)/obj/tools/manta/main.o: CPPFLAGS += -DMANTA_NO_REPORT
endif
MANTA_OBJ := $(MANTA_SRC:%.c=$(BUILD)/obj/%.o)
MANTA     := $(BUILD)/bin/manta

TEST_SRC  := $(wildcard tests/unit/test_*.c)
TEST_BIN  := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_LIB_SRC := $(wildcard tests/ref/*.c tests/common/*.c)
TEST_LIB_OBJ := $(TEST_LIB_SRC:%.c=$(BUILD)/obj/%.o)

# Keep objects of test programs between runs.
.SECONDARY:

.PHONY: all lib test test-run demo deps bench-ops bench-train bench-stereo-train bench-gpu bench-stereo bench-synth bench-engine bench-search bench-monitor bench-elastic bench-compress tune clean help fuzz bundle
ifeq ($(BOARD),)
all: $(LIB) $(MANTA) $(INFER) $(PROFILE)
else
all: board-all
endif
lib: $(LIB)

help:
	@sed -n '1,/^$$/p' Makefile

$(BUILD)/gen/embed: tools/gen/embed.c
	@mkdir -p $(@D)
	$(HOSTCC) -std=c11 -O1 -Wall -Wextra -o $@ $<

$(BUILD)/gen/cl_sources.c: $(CL_SRC) $(BUILD)/gen/embed
	$(BUILD)/gen/embed cl $@ $(CL_SRC)

$(BUILD)/obj/gen/cl_sources.o: $(BUILD)/gen/cl_sources.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The training monitor's page (runtime/monitor_http/page/), embedded as
# runtime/monitor_http/assets.h's table.
MONITOR_PAGE := $(wildcard runtime/monitor_http/page/*.html runtime/monitor_http/page/*.js \
                  runtime/monitor_http/page/*.css)
$(BUILD)/gen/monitor_page.c: $(MONITOR_PAGE) $(BUILD)/gen/embed
	$(BUILD)/gen/embed page $@ $(MONITOR_PAGE)

$(BUILD)/obj/gen/monitor_page.o: $(BUILD)/gen/monitor_page.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(HTTP_LIB): $(HTTP_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(REPORT_LIB): $(REPORT_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(MANTA): $(MANTA_OBJ) $(MANTA_REPORT_LIB) $(HTTP_LIB) $(LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(MANTA_OBJ) $(MANTA_REPORT_LIB) $(HTTP_LIB) $(LIB) $(ENGINE_LIB) $(LDLIBS) \
	    $(HTTP_LDLIBS) $(REPORT_LDLIBS)

# Engine code size for `manta-infer --stats`: text + data of the engine objects.
SIZE ?= size
$(BUILD)/gen/engine_size.h: $(ENGINE_OBJ)
	@mkdir -p $(@D)
	@echo "#define MANTA_ENGINE_CODE_BYTES $$($(SIZE) -t $(ENGINE_OBJ) | tail -1 | awk '{print $$1 + $$2}')u" > $@

# Version (VERSION) and git revision for `manta --version` and the --json outputs
# (tools/common/provenance.c, tools/manta/version.c). Written to a temporary file on every make and moved only when it
# differs, so that nothing rebuilds unless the version or the revision changed.
.PHONY: FORCE
$(BUILD)/gen/version.h: FORCE
	@mkdir -p $(@D)
	@rev=unknown; if [ -e .git ]; then rev=$$(git describe --always --dirty --abbrev=12 2>/dev/null) || rev=unknown; fi; \
	printf '#define MANTA_VERSION "%s"\n#define MANTA_GIT_REVISION "%s"\n' \
		"$$(tr -d ' \n' <VERSION)" "$${rev:-unknown}" >$@.$$$$.tmp; \
	if cmp -s $@.$$$$.tmp $@; then rm -f $@.$$$$.tmp; else mv $@.$$$$.tmp $@; fi
$(BUILD)/obj/tools/manta/version.o $(BUILD)/obj/tools/common/provenance.o: $(BUILD)/gen/version.h

# (_FILE_OFFSET_BITS=64 as above: runtime/core's objects are shared with the board tests)
$(INFER_OBJ): CPPFLAGS := -Iruntime -Itools -I$(BUILD)/gen -D_POSIX_C_SOURCE=200809L \
    -D_FILE_OFFSET_BITS=64 $(INFER_PNG_DEFS)
$(MANTA_OBJ) $(PROFILE_OBJ) $(REPORT_OBJ): CPPFLAGS += -Itools
$(BUILD)/obj/tools/manta-infer/main.o: $(BUILD)/gen/engine_size.h
$(INFER): $(INFER_OBJ) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(INFER_OBJ) $(ENGINE_LIB) $(INFER_LIBS)

$(PROFILE_OBJ): CPPFLAGS += -DMANTA_ENGINE_FLAGS='"$(strip -std=c99 $(ENGINE_OPT) $(SANFLAGS) $(BOARD_CFLAGS)); kernels $(strip $(ENGINE_KERNEL_OPT)), rest $(strip $(ENGINE_COLD_OPT))"'
$(PROFILE): $(PROFILE_OBJ) $(PROFILE_HOST_OBJ) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(PROFILE_OBJ) $(PROFILE_HOST_OBJ) $(ENGINE_LIB) $(PROFILE_LIBS)

$(ENGINE_OBJ): CPPFLAGS := -Iruntime
$(ENGINE_OBJ): CFLAGS = -std=c99 $(ENGINE_OPT) $(ENGINE_FILE_OPT) -g $(WARN) $(SANFLAGS) -MMD -MP

# ---- engine flags per file (code size: AArch64 text <= 64 KiB, see docs/benchmarks.md) ----
# The cold parts (model verifier, planner, diagnostics, set-up, operator checks) are built
# for size; the kernels with ENGINE_OPT but without the auto-vectoriser, whose run-time
# alias checks and scalar fallbacks only duplicate code there (their hot loops are written
# in explicit vectors). Set either variable empty to build those files with ENGINE_OPT alone.
ENGINE_COLD_OPT ?= -Os
ENGINE_KERNEL_OPT ?= -fno-tree-vectorize
ENGINE_KERNEL_OBJ := $(filter $(BUILD)/obj/runtime/engine/kernels_%.o,$(ENGINE_OBJ))
$(filter-out $(ENGINE_KERNEL_OBJ),$(ENGINE_OBJ)): ENGINE_FILE_OPT = $(ENGINE_COLD_OPT)
$(ENGINE_KERNEL_OBJ): ENGINE_FILE_OPT = $(ENGINE_KERNEL_OPT)
# The int8 kernels are portable C whose loops the auto-vectoriser turns into integer vectors
# (exact: the results are the same bytes); they keep it until they have explicit SIMD paths.
$(BUILD)/obj/runtime/engine/kernels_q8.o: ENGINE_FILE_OPT =
# ---- end of engine flags per file ----
all lib: $(ENGINE_LIB)
$(ENGINE_LIB): $(ENGINE_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/obj/tests/%.o: CPPFLAGS += -Itests
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_LIB_OBJ) $(LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_EXTRA_OBJ) $(TEST_LIB_OBJ) $(LIB) $(ENGINE_LIB) -lcmocka $(LDLIBS) \
	    $(TEST_EXTRA_LIBS)

# The programs' option tables (tools/common/) are not in the library.
$(BUILD)/tests/test_opts: TEST_EXTRA_OBJ := $(BUILD)/obj/tools/common/opts.o $(BUILD)/obj/tools/common/json.o
$(BUILD)/tests/test_opts: $(BUILD)/obj/tools/common/opts.o $(BUILD)/obj/tools/common/json.o
$(BUILD)/tests/test_outpath: TEST_EXTRA_OBJ := $(BUILD)/obj/tools/common/outpath.o
$(BUILD)/tests/test_outpath: $(BUILD)/obj/tools/common/outpath.o
# The monitor's HTTP server (its own library, with libmicrohttpd).
$(BUILD)/tests/test_monitor_server: TEST_EXTRA_OBJ := $(HTTP_LIB)
$(BUILD)/tests/test_monitor_server: TEST_EXTRA_LIBS := $(HTTP_LDLIBS)
$(BUILD)/tests/test_monitor_server: $(HTTP_LIB)
# manta report's figures and page (tools/manta-report/: libmanta_report.a, with cairo); its
# readers (runtime/report/) are test_report's, in libmanta.a.
$(BUILD)/obj/tests/unit/test_plot.o: CPPFLAGS += -Itools
$(BUILD)/tests/test_plot: TEST_EXTRA_OBJ := $(REPORT_LIB)
$(BUILD)/tests/test_plot: TEST_EXTRA_LIBS := $(REPORT_LDLIBS)
$(BUILD)/tests/test_plot: $(REPORT_LIB)
# manta-infer's image input, compared with the data pipeline's resize.
$(BUILD)/tests/test_infer_image: TEST_EXTRA_OBJ := $(BUILD)/obj/tools/manta-infer/image.o
$(BUILD)/tests/test_infer_image: $(BUILD)/obj/tools/manta-infer/image.o

.PHONY: check-no-opencl
check-no-opencl: $(BUILD)/gen/engine_size.h
	@for f in $(NO_OPENCL_SRC); do \
	    $(CC) -Itests/data/no_opencl $(CPPFLAGS) -Itools -Itests -std=c11 $(WARN) $(BOARD_CFLAGS) \
	        -fsyntax-only $$f || { echo "check-no-opencl: $$f does not compile without OpenCL headers"; exit 1; }; \
	done
	@echo "check-no-opencl: $(words $(NO_OPENCL_SRC)) sources of manta-profile, manta-infer, the engine and its tests compile without OpenCL headers"

# Fixture writer for tests/integration/export_infer.sh (models and JPEGs).
HELPER := $(BUILD)/tests/helpers/export_fixtures
# The benchmark program of make bench-synth (tools/bench/synth_speed.c).
SYNTH_SPEED := $(BUILD)/bench/synth_speed
$(HELPER): $(BUILD)/obj/tests/helpers/export_fixtures.o $(TEST_LIB_OBJ) $(LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_LIB_OBJ) $(LIB) $(ENGINE_LIB) -lcmocka $(LDLIBS)
# The runtime's side of tests/integration/stereo_twin.sh (tools/bench/torch_stereo.py): one
# stereo sub-network's forward and gradients as float32 files.
TWIN_DUMP := $(BUILD)/tests/helpers/stereo_twin_dump
$(TWIN_DUMP): $(BUILD)/obj/tests/helpers/stereo_twin_dump.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# This test wraps the allocator so that a call made while the engine runs aborts.
$(BUILD)/tests/test_engine_noalloc: LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free

deps:
	@tools/deps.sh $(DEB_PKGS) $(BOARD_DEPS_ARGS)

# Every board's toolchain, qemu-user and multi-arch libraries (boards/*.mk), then build them all and
# run what qemu-user can run (tools/boards/test_boards.sh).
.PHONY: deps-boards test-boards test-boards-run
deps-boards:
	@for b in $(BOARDS); do $(MAKE) --no-print-directory BOARD=$$b deps || exit 1; done
test-boards: deps-boards
	@$(MAKE) --no-print-directory test-boards-run
test-boards-run:
	@MAKE="$(MAKE)" sh tools/boards/test_boards.sh $(BOARDS)

# Tests use their own program cache so that runs do not touch the user's. JOBS: how many tests
# run at a time (tests/run.sh; each test's output is kept in its own file and printed whole).
JOBS ?= 2
test: deps
	@$(MAKE) --no-print-directory test-run

# (the benchmark program $(SYNTH_SPEED) is built, not run, so that it keeps compiling)
test-run: all $(TEST_BIN) $(HELPER) $(TWIN_DUMP) $(SYNTH_SPEED)
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) JOBS=$(JOBS) tests/run.sh $(TEST_BIN)

# The whole job on the built-in default (tools/demo.sh: train, profile, accuracy data set and
# predictor, search, export, classify a JPEG, summary); TASK=stereo: the same for stereo depth
# (tools/demo_stereo.sh: EPE data set and predictor, disparity PNG of a test pair, SGBM).
TASK ?= classification
demo: deps
	@case "$(TASK)" in classification|stereo) ;; \
	*) echo "make demo: TASK=$(TASK): classification (the default) or stereo" >&2; exit 2;; esac
	@$(MAKE) --no-print-directory all
	@if [ "$(TASK)" = stereo ]; then BUILD=$(BUILD) sh tools/demo_stereo.sh; \
	else BUILD=$(BUILD) sh tools/demo.sh; fi

bench-ops: deps
	@$(MAKE) --no-print-directory all
	$(MANTA) bench ops

# Training images/s of the largest and smallest sub-networks against PyTorch
# (Debian's python3-torch; PYTHON=... for another interpreter).
bench-train: deps
	@$(MAKE) --no-print-directory all
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || apt-get install -y python3-torch
	tools/bench/train_vs_torch.sh

# Stereo training pairs/s of stereo-cpu's largest and smallest sub-network against the PyTorch
# twin (tools/bench/torch_stereo.py --train-speed), 2 threads, alternating rounds, medians, peak
# RSS (tools/bench/stereo_train_vs_torch.sh; ROUNDS=N, default 3; SPACE, BATCH, STEPS, THREADS).
bench-stereo-train: deps
	@$(MAKE) --no-print-directory all
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || apt-get install -y python3-torch
	MANTA=$(MANTA) tools/bench/stereo_train_vs_torch.sh $(ROUNDS)

# Training images/s on a GPU (DEVICE, default gpu) against PyTorch (CUDA) on the same GPU, in
# float32 and with TF32 (tools/bench/gpu_vs_torch.sh; PYTHON, ROWS, ROUNDS, STEPS: see there).
# On a GPU machine that has only the bundle and the driver: tools/bench/gpu_session.sh.
bench-stereo: deps
	@$(MAKE) --no-print-directory all
	@/usr/bin/python3 -c 'import cv2' 2>/dev/null || apt-get install -y python3-opencv
	MANTA=$(MANTA) CKPT=$(CKPT) sh tools/bench/stereo_vs_sgbm.sh

# Milliseconds per procedural stereo pair on one thread: the plain scenes at 128x64 and 768x384,
# photo-textured and single-photograph pairs at 128x64 (tools/bench/synth_speed.c; SCALE=N
# repeats each N times more).
$(SYNTH_SPEED): $(BUILD)/obj/tools/bench/synth_speed.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)
bench-synth: deps
	@$(MAKE) --no-print-directory $(SYNTH_SPEED)
	$(SYNTH_SPEED) $(SCALE)

bench-gpu: deps
	@$(MAKE) --no-print-directory all
	MANTA=$(MANTA) sh tools/bench/gpu_vs_torch.sh

# Single-thread inference latency of five exported sub-networks against LiteRT (XNNPACK)
# and TFLM (reference kernels), same .tflite files, and the arenas; the engine is also
# built for this CPU in $(BUILD)/bench-native (as a board build would be for its CPU).
# PyPI packages go to $(BUILD)/bench-venv (VENV=... for another); ROUNDS=N (default 5);
# INT8=1: the same sub-networks exported fully int8 (manta export --int8).
bench-engine: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/bench-native ENGINE_OPT="-O3 -march=native" \
		$(BUILD)/bench-native/bin/manta-infer
	BUILD=$(BUILD) INFER_NATIVE=$(BUILD)/bench-native/bin/manta-infer INT8=$(INT8) \
		tools/bench/engine_vs_peers.sh $(ROUNDS)

# libFuzzer over verify + plan + invoke (tests/common/fuzz_body.c), over the FlatBuffers
# reader alone (tests/common/fbwalk.c), and the seed writer.
FUZZ_CC    ?= clang
FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1
fuzz: $(BUILD)/fuzz/fuzz_engine $(BUILD)/fuzz/fuzz_fbread $(BUILD)/fuzz/gen_seeds
$(BUILD)/fuzz/fuzz_engine: tools/fuzz/fuzz_engine.c tests/common/fuzz_body.c $(ENGINE_SRC) \
		$(wildcard runtime/engine/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c11 $(FUZZ_FLAGS) -Iruntime -Itests -o $@ tools/fuzz/fuzz_engine.c \
		tests/common/fuzz_body.c $(ENGINE_SRC) -lm
FBREAD_SRC := runtime/engine/fbread.c runtime/engine/diag.c runtime/engine/builtins.c
$(BUILD)/fuzz/fuzz_fbread: tools/fuzz/fuzz_fbread.c tests/common/fbwalk.c $(FBREAD_SRC) \
		$(wildcard runtime/engine/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c11 $(FUZZ_FLAGS) -Iruntime -Itests -o $@ tools/fuzz/fuzz_fbread.c \
		tests/common/fbwalk.c $(FBREAD_SRC)
$(BUILD)/fuzz/gen_seeds: tools/fuzz/gen_seeds.c tests/common/xgrand.c $(LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -o $@ tools/fuzz/gen_seeds.c tests/common/xgrand.c \
		$(LIB) $(ENGINE_LIB) $(LDLIBS)

# The search against the best uniform sub-network at several latency budgets, all measured
# (tools/bench/search_sweep.sh); needs make demo's outputs (DEMO_DIR, default runs/demo).
DEMO_DIR ?= runs/demo
bench-search: deps
	@$(MAKE) --no-print-directory all
	BUILD=$(BUILD) sh tools/bench/search_sweep.sh $(DEMO_DIR)

# Step time of manta train --monitor without a client and with clients that connect and never
# read, alternating (tools/bench/monitor_slow_client.sh; ROUNDS, STEPS, CLIENTS: see there).
bench-monitor: deps
	@$(MAKE) --no-print-directory all
	BUILD=$(BUILD) sh tools/bench/monitor_slow_client.sh

# Elastic training on emulated links (root: network namespaces, 198.18.0.0/15): 4 ranks, one
# killed, one joins, rank 0 killed; seconds from each kill to the first step without the rank
# (tools/bench/netns_elastic.sh; SIG=KILL or STOP, RATE=100mbit, DEADLINE=5).
bench-elastic: deps
	@$(MAKE) --no-print-directory all
	sh tools/bench/netns_elastic.sh -m $(MANTA) -k $(or $(SIG),KILL) -r $(or $(RATE),100mbit) \
		-t $(or $(DEADLINE),5)

# Gradient encodings of the ring: busbw and smoke-schedule step time per encoding
# (tools/bench/compress.sh; -N there: loopback only).
bench-compress: deps
	@$(MAKE) --no-print-directory all
	sh tools/bench/compress.sh -m $(MANTA)

# CLBlast's tuners (clblast-utils) for the device; see docs/tuning.md
tune: deps
	@$(MAKE) --no-print-directory all
	$(MANTA) tune

# Relocatable bundle (tools/bundle.sh): the programs, wrappers that put the bundle's lib/ first,
# every shared library beyond the C library (ldd), README, BUILD-INFO; folder and tarball.
# BUNDLE_TESTS=1 (after make test) adds the op checks, for a GPU machine (docs/gpu.md).
bundle: all
	@BUILD=$(BUILD) BUNDLE_TESTS=$(BUNDLE_TESTS) sh tools/bundle.sh $(BUILD)/bundle

clean:
	rm -rf build

ifneq ($(BOARD),)
include boards/common.mk
endif

-include $(BUILD)/obj/tools/bench/synth_speed.d $(BUILD)/obj/tests/helpers/export_fixtures.d $(BUILD)/obj/tests/helpers/stereo_twin_dump.d $(LIB_OBJ:.o=.d) $(HTTP_OBJ:.o=.d) $(REPORT_OBJ:.o=.d) $(ENGINE_OBJ:.o=.d) $(MANTA_OBJ:.o=.d) $(INFER_OBJ:.o=.d) $(PROFILE_OBJ:.o=.d) $(TEST_LIB_OBJ:.o=.d) $(TEST_SRC:tests/unit/%.c=$(BUILD)/obj/tests/unit/%.d)
