# Rules shared by the boards, included at the end of the Makefile when BOARD is set (after
# boards/$(BOARD).mk, with BUILD = build/$(BOARD) and CC, AR, SIZE, NM = $(CROSS)gcc, ...).
#
# A board file sets:
#   BOARD_DESC      one line: the board, its CPU and OS
#   BOARD_KIND      linux (engine, manta-infer, manta-profile, the engine's unit tests) or mcu
#                   (engine only, freestanding, the model linked in as a C array)
#   CROSS           toolchain prefix (empty: the build machine's cc)
#   DEB_ARCH        Debian architecture of its multi-arch libraries (empty: none needed)
#   BOARD_CFLAGS    CPU flags, added to every C compilation of the board
#   ENGINE_OPT      optimisation of the engine's arithmetic kernels (default -O3)
#   ENGINE_COLD_OPT / ENGINE_SMALL_OPT / ENGINE_CODE_FLAGS   engine code size (linux, optional):
#                   the optimisation of the code that runs once per model or per operator call
#                   (ENGINE_COLD: verifier, planner, op preparation and dispatch, messages), of the
#                   small kernels (all but ENGINE_HOT), and flags for every engine object
#   BOARD_PROGRAMS  linux: any of infer (manta-infer), profile (manta-profile), manta (host program)
#   BOARD_DEB_PKGS  Debian packages `make deps BOARD=...` installs (NAME:ARCH for multi-arch ones)
#   BOARD_DEB_SRC   Debian source packages fetched into build/src/ for libraries that the
#                   architecture lacks (built here into $(BUILD)/deps/)
#   BOARD_INFER_PNG_LIBS  linux: the libraries manta-infer reads and writes PNG files with (a stereo
#                   pair's views, the disparity); empty: built without (-DMANTA_INFER_NO_PNG)
#   BOARD_NEEDS_HOST  1 when building needs the host programs (and so the host's packages)
#   BOARD_LDLIBS    libraries of `manta` when they differ from the host's LDLIBS
#   BOARD_RUN       how test-boards runs its programs (qemu-user); empty: natively
#   BOARD_NO_TESTS  the tests it cannot run, and why
#   mcu boards: MCU_SRC (main and startup), MCU_LDSCRIPT (the part's memory map) and MCU_LDINCLUDE
#                   (linker-script files it INCLUDEs, found beside it), MCU_LDFLAGS, MCU_FLASH_BYTES
#                   and MCU_RAM_BYTES; optionally MCU_QEMU (a qemu-system command line ending where
#                   the image's path goes) and MCU_QEMU_LDSCRIPT (the same regions at that machine's
#                   addresses): make board-run runs the image there (tools/boards/test_boards.sh)

.PHONY: board-all board-tests board-info board-run

DEB_PKGS := $(if $(BOARD_NEEDS_HOST),$(DEB_PKGS)) $(BOARD_DEB_PKGS)
BOARD_DEPS_ARGS := $(if $(BOARD_DEB_SRC),--source build/src $(BOARD_DEB_SRC))

board-info:
	@echo "board $(BOARD): $(BOARD_DESC)"
	@echo "  toolchain: $(CC) $(BOARD_CFLAGS)"
	@echo "  builds into $(BUILD)/: $(BOARD_PROGRAMS) (kind $(BOARD_KIND))"
	@echo "  cannot run: $(BOARD_NO_TESTS)"

ifeq ($(BOARD_KIND),linux)
# ---------------------------------------------------------------- Linux boards
CFLAGS += $(BOARD_CFLAGS)
$(ENGINE_OBJ): CFLAGS += $(BOARD_CFLAGS)
$(INFER_OBJ): CPPFLAGS += $(BOARD_INFER_DEFS)
ifneq ($(BOARD_LDLIBS),)
LDLIBS := $(BOARD_LDLIBS)
endif

# Engine code size: the kernels that carry the arithmetic stay at ENGINE_OPT (-O3, vectorised);
# the rest is built smaller when the board says so (docs/boards.md, "Engine code size").
ENGINE_HOT  ?= kernels_conv kernels_dw kernels_elem
ENGINE_COLD ?= builtins diag engine fbread model ops plan verify
ENGINE_COLD_OBJ  := $(ENGINE_COLD:%=$(BUILD)/obj/runtime/engine/%.o)
ENGINE_SMALL_OBJ := $(filter-out $(ENGINE_HOT:%=$(BUILD)/obj/runtime/engine/%.o) $(ENGINE_COLD_OBJ),$(ENGINE_OBJ))
$(ENGINE_OBJ): CFLAGS += $(ENGINE_CODE_FLAGS)
$(ENGINE_COLD_OBJ): CFLAGS += $(ENGINE_COLD_OPT)
$(ENGINE_SMALL_OBJ): CFLAGS += $(ENGINE_SMALL_OPT)
ENGINE_TEST_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(sort $(wildcard tests/unit/test_engine_*.c)))
BOARD_TEST_OBJ  := $(patsubst tests/unit/%.c,$(BUILD)/obj/tests/unit/%.o,$(sort $(wildcard tests/unit/test_engine_*.c)))

BOARD_ALL := $(ENGINE_LIB) $(if $(filter infer,$(BOARD_PROGRAMS)),$(INFER)) \
             $(if $(filter profile,$(BOARD_PROGRAMS)),$(PROFILE)) \
             $(if $(filter manta,$(BOARD_PROGRAMS)),$(LIB) $(MANTA))
board-all: $(BOARD_ALL)
	@echo "$(BOARD): built $(BOARD_ALL)"

# Libraries from Debian source packages (riscv64: bookworm has no riscv64 architecture), compiled
# with the board's compiler into $(BUILD)/deps/{include,lib}. Sources: build/src/, `make deps`.
DEPS_DIR := $(BUILD)/deps
ifneq ($(BOARD_DEB_SRC),)
CPPFLAGS += -I$(DEPS_DIR)/include
LDFLAGS  += -L$(DEPS_DIR)/lib
DEPS_LIBS := $(BOARD_DEB_SRC:%=$(DEPS_DIR)/lib/lib%.a)
$(PROFILE_OBJ) $(PROFILE_HOST_OBJ) $(TEST_HOST_LIB_OBJ) $(BOARD_TEST_OBJ): | $(DEPS_LIBS)
$(PROFILE) $(MANTA) $(INFER): $(DEPS_LIBS)
endif
DEPS_SRC_MISSING = { echo "$(BOARD): no Debian source of $(1) in build/src/ (run: make deps BOARD=$(BOARD))" >&2; exit 1; }

# cmocka 1.1.5: one file; the HAVE_ macros its CMake configure step finds on glibc.
CMOCKA_DEFS := -DHAVE_SIGNAL_H=1 -DHAVE_STRUCT_TIMESPEC=1 -DHAVE_CLOCK_REALTIME=1 -DHAVE_STRSIGNAL=1 \
               -DHAVE_SIGLONGJMP=1 -DHAVE_INTTYPES_H=1 -DHAVE_MALLOC_H=1 -DHAVE_STRINGS_H=1 \
               -DHAVE_GCC_THREAD_LOCAL_STORAGE=1
$(DEPS_DIR)/lib/libcmocka.a:
	@set -e; src=$$(ls build/src/cmocka_*.orig.tar.* 2>/dev/null | grep -v '\.asc$$' | head -1); \
	[ -n "$$src" ] || $(call DEPS_SRC_MISSING,cmocka); \
	rm -rf $(DEPS_DIR)/cmocka && mkdir -p $(DEPS_DIR)/cmocka $(DEPS_DIR)/include $(@D); \
	tar -xf "$$src" -C $(DEPS_DIR)/cmocka --strip-components=1; \
	echo "$(CC) cmocka ($$src)"; \
	$(CC) -std=gnu99 -O2 $(BOARD_CFLAGS) $(CMOCKA_DEFS) -I$(DEPS_DIR)/cmocka/include -c \
	    -o $(DEPS_DIR)/cmocka/cmocka.o $(DEPS_DIR)/cmocka/src/cmocka.c; \
	cp $(DEPS_DIR)/cmocka/include/cmocka.h $(DEPS_DIR)/include/; \
	rm -f $@ && $(AR) rcs $@ $(DEPS_DIR)/cmocka/cmocka.o

# cJSON 1.7.15: one file, installed as <cjson/cJSON.h> as Debian does.
$(DEPS_DIR)/lib/libcjson.a:
	@set -e; src=$$(ls build/src/cjson_*.orig.tar.* 2>/dev/null | grep -v '\.asc$$' | head -1); \
	[ -n "$$src" ] || $(call DEPS_SRC_MISSING,cjson); \
	rm -rf $(DEPS_DIR)/cjson && mkdir -p $(DEPS_DIR)/cjson $(DEPS_DIR)/include/cjson $(@D); \
	tar -xf "$$src" -C $(DEPS_DIR)/cjson --strip-components=1; \
	echo "$(CC) cJSON ($$src)"; \
	$(CC) -std=c89 -O2 $(BOARD_CFLAGS) -c -o $(DEPS_DIR)/cjson/cJSON.o $(DEPS_DIR)/cjson/cJSON.c; \
	cp $(DEPS_DIR)/cjson/cJSON.h $(DEPS_DIR)/include/cjson/; \
	rm -f $@ && $(AR) rcs $@ $(DEPS_DIR)/cjson/cJSON.o

# libpng 1.6 (the stereo data's PNG files in `manta`, a pair's views and the disparity in
# manta-infer): its library files compiled with the board's
# compiler against the prebuilt configuration, NEON filters off (they need arch-specific files); the
# headers are the host's libpng-dev (the same release). The multi-arch libpng16-16:<arch> cannot be
# installed beside the host's when the mirror's versions differ (as zlib1g-dev: see rk3588.mk).
PNG_FILES := png pngerror pngget pngmem pngpread pngread pngrio pngrtran pngrutil pngset pngtrans \
             pngwio pngwrite pngwtran pngwutil
$(DEPS_DIR)/lib/liblibpng1.6.a:
	@set -e; src=$$(ls build/src/libpng1.6_*.orig.tar.* 2>/dev/null | grep -v '\.asc$$' | head -1); \
	[ -n "$$src" ] || $(call DEPS_SRC_MISSING,libpng1.6); \
	rm -rf $(DEPS_DIR)/libpng && mkdir -p $(DEPS_DIR)/libpng $(@D); \
	tar -xf "$$src" -C $(DEPS_DIR)/libpng --strip-components=1; \
	cp $(DEPS_DIR)/libpng/scripts/pnglibconf.h.prebuilt $(DEPS_DIR)/libpng/pnglibconf.h; \
	echo "$(CC) libpng ($$src)"; \
	for f in $(PNG_FILES); do \
	    $(CC) -std=gnu99 -O2 $(BOARD_CFLAGS) -DPNG_ARM_NEON_OPT=0 -I$(DEPS_DIR)/libpng -c \
	        -o $(DEPS_DIR)/libpng/$$f.o $(DEPS_DIR)/libpng/$$f.c; \
	done; \
	rm -f $@ && $(AR) rcs $@ $(PNG_FILES:%=$(DEPS_DIR)/libpng/%.o)

# zlib 1.2.13 (libpng's compression, for manta-infer's PNG files): the files deflate and inflate
# need, compiled with the board's compiler (no gz* files: nothing reads .gz); the headers are the
# host's zlib1g-dev (the same release, architecture-independent).
ZLIB_FILES := adler32 compress crc32 deflate infback inffast inflate inftrees trees uncompr zutil
$(DEPS_DIR)/lib/libzlib.a:
	@set -e; src=$$(ls build/src/zlib_*.orig.tar.* 2>/dev/null | grep -v '\.asc$$' | head -1); \
	[ -n "$$src" ] || $(call DEPS_SRC_MISSING,zlib); \
	rm -rf $(DEPS_DIR)/zlib && mkdir -p $(DEPS_DIR)/zlib $(@D); \
	tar -xf "$$src" -C $(DEPS_DIR)/zlib --strip-components=1; \
	echo "$(CC) zlib ($$src)"; \
	for f in $(ZLIB_FILES); do \
	    $(CC) -std=gnu99 -O2 $(BOARD_CFLAGS) -DHAVE_UNISTD_H -DHAVE_STDARG_H -I$(DEPS_DIR)/zlib -c \
	        -o $(DEPS_DIR)/zlib/$$f.o $(DEPS_DIR)/zlib/$$f.c; \
	done; \
	rm -f $@ && $(AR) rcs $@ $(ZLIB_FILES:%=$(DEPS_DIR)/zlib/%.o)

# The engine's unit tests (tests/unit/test_engine_*.c: no OpenCL), linked with the engine, the test
# helpers that need no OpenCL (TEST_HOST_LIB_SRC), and the plain-C part of the runtime they use (core,
# export, profile, the space): one archive, so that only what a test needs is pulled in.
# runtime/export/quant.c: test_engine_fuzz_regress calibrates its int8 seeds (xgraph_calibrate()).
BOARD_TEST_LIB  := $(BUILD)/lib/libmanta_boardtest.a
$(BOARD_TEST_LIB): $(TEST_HOST_LIB_OBJ) $(PROFILE_HOST_OBJ) $(BUILD)/obj/runtime/export/quant.o
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^
$(ENGINE_TEST_BIN): $(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(BOARD_TEST_LIB) $(ENGINE_LIB) \
		$(filter %/libcmocka.a %/libcjson.a,$(DEPS_LIBS))
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(BOARD_TEST_LIB) $(ENGINE_LIB) -lcmocka -lcjson -lm
board-tests: $(ENGINE_TEST_BIN)

else ifeq ($(BOARD_KIND),mcu)
# ---------------------------------------------------------------- microcontrollers
# The engine alone, freestanding, with the model as a C array (manta export --c-array DIR:
# model.c/model.h with MODEL_ARENA_SIZE), a startup file and a linker script from the board file.
# Without MODEL_DIR, the model is the smallest sub-network of the CPU-default space exported from a
# smoke-trained checkpoint by the host programs (tools/boards/min_model.sh; weights do not matter
# for size).
MCU_FLAGS   := $(BOARD_CFLAGS) -ffunction-sections -fdata-sections
MCU_ELF     := $(BUILD)/manta-$(BOARD).elf
MCU_MAP     := $(BUILD)/manta-$(BOARD).map
MCU_OBJ     := $(patsubst %.c,$(BUILD)/obj/%.o,$(MCU_SRC))
ifeq ($(MODEL_DIR),)
MODEL_DIR   := $(BUILD)/model
# one run writes both files: model.h follows model.c (two targets of one rule would run it twice
# at once under make -j)
$(MODEL_DIR)/model.c:
	@$(MAKE) --no-print-directory BOARD=host all
	sh tools/boards/min_model.sh build/host $(MODEL_DIR)
$(MODEL_DIR)/model.h: $(MODEL_DIR)/model.c
endif
MODEL_OBJ   := $(BUILD)/obj/model/model.o

$(ENGINE_OBJ): CFLAGS := -std=c99 $(ENGINE_OPT) -g $(WARN) $(MCU_ENGINE_WARN) $(MCU_FLAGS) -MMD -MP
$(MCU_OBJ): CPPFLAGS := -Iruntime -I$(MODEL_DIR)
$(MCU_OBJ): CFLAGS := -std=c99 -O2 -g $(WARN) $(MCU_FLAGS) -MMD -MP
$(MCU_OBJ): $(MODEL_DIR)/model.h
$(MODEL_OBJ): $(MODEL_DIR)/model.c $(MODEL_DIR)/model.h
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 $(WARN) $(MCU_FLAGS) -I$(MODEL_DIR) -c -o $@ $<
# The model directory those objects were compiled against, rewritten only when MODEL_DIR changes: a
# build with another model remakes them even where its files are older than the objects.
MODEL_STAMP := $(BUILD)/model_dir.txt
$(MODEL_STAMP): FORCE
	@mkdir -p $(@D); echo '$(abspath $(MODEL_DIR))' >$@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(MCU_OBJ) $(MODEL_OBJ): $(MODEL_STAMP)

# the linker scripts' INCLUDEs are found beside them
$(MCU_ELF): $(MCU_OBJ) $(MODEL_OBJ) $(ENGINE_LIB) $(MCU_LDSCRIPT) $(MCU_LDINCLUDE)
	@mkdir -p $(@D)
	$(CC) $(MCU_FLAGS) $(MCU_LDFLAGS) -L$(dir $(MCU_LDSCRIPT)) -T $(MCU_LDSCRIPT) -Wl,--gc-sections \
	    -Wl,-Map=$(MCU_MAP) -o $@ $(MCU_OBJ) $(MODEL_OBJ) $(ENGINE_LIB) -lm
	@sh tools/boards/mcu_size.sh $(SIZE) $@ $(MCU_FLASH_BYTES) $(MCU_RAM_BYTES) $(MODEL_DIR)/model.h \
	    | tee $(BUILD)/size.txt

board-all: $(MCU_ELF)
ifeq ($(MCU_QEMU),)
board-tests:
	@echo "$(BOARD): no tests run on the board itself ($(BOARD_NO_TESTS))"
else
# The same image for a QEMU machine of the same core (MCU_QEMU_LDSCRIPT: the board's flash and RAM
# at the machine's addresses), its main() built with MCU_SEMIHOSTING to print its result line;
# board-run runs it once (at most 120 s) and prints that line on standard output (QEMU writes
# semihosting's output to its standard error).
MCU_QEMU_ELF := $(BUILD)/manta-$(BOARD)-qemu.elf
MCU_QEMU_OBJ := $(patsubst %.c,$(BUILD)/obj/qemu/%.o,$(MCU_SRC))
$(MCU_QEMU_OBJ): $(BUILD)/obj/qemu/%.o: %.c $(MODEL_DIR)/model.h $(MODEL_STAMP)
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 -g $(WARN) $(MCU_FLAGS) -DMCU_SEMIHOSTING -Iruntime -I$(MODEL_DIR) -MMD -MP \
	    -c -o $@ $<
-include $(MCU_QEMU_OBJ:.o=.d)
$(MCU_QEMU_ELF): $(MCU_QEMU_OBJ) $(MODEL_OBJ) $(ENGINE_LIB) $(MCU_QEMU_LDSCRIPT) $(MCU_LDINCLUDE)
	$(CC) $(MCU_FLAGS) $(MCU_LDFLAGS) -L$(dir $(MCU_QEMU_LDSCRIPT)) -T $(MCU_QEMU_LDSCRIPT) \
	    -Wl,--gc-sections -o $@ $(MCU_QEMU_OBJ) $(MODEL_OBJ) $(ENGINE_LIB) -lm
board-tests: $(MCU_QEMU_ELF)
board-run: $(MCU_QEMU_ELF)
	@timeout 120 $(MCU_QEMU) $(MCU_QEMU_ELF) 2>&1
endif
else
$(error boards/$(BOARD).mk: BOARD_KIND must be linux or mcu)
endif

# The value of a variable for scripts: make -s BOARD=rpi4 print-BOARD_RUN
print-%:
	@echo '$($*)'
