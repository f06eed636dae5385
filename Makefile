# manta: one entry point for building, testing, the demo and the benchmarks.
#   make            library (build/lib/libmanta.a) and programs (build/bin/)
#   make test       unit tests (cmocka) and integration scripts, on PoCL
#   make demo       the main job on the built-in default
#   make deps       install missing Debian packages (as root) or print the command
#   make bench-ops  op throughput table (not a test)
#   make tune       tune CLBlast for the device (MANTA_DEVICE), kept for later runs
#   make SANITIZE=1 ...   the same under ASan + UBSan, in build/san/
# CI (CI=true) adds -Werror.

CC      ?= cc
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

CPPFLAGS := -Iruntime -I$(BUILD)/gen -DCL_TARGET_OPENCL_VERSION=120 -D_POSIX_C_SOURCE=200809L
CFLAGS   := -std=c11 $(OPT) -g $(WARN) $(SANFLAGS) -MMD -MP
LDFLAGS  := $(SANFLAGS)
LDLIBS   := -lclblast -lOpenCL -lcjson -lsodium -lz -lpthread -lm

# Debian packages the build, the tests and the demo need.
DEB_PKGS := ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev libturbojpeg0-dev \
            libcmocka-dev libcjson-dev zlib1g-dev libsodium-dev flatbuffers-compiler \
            dataset-fashion-mnist clblast-utils

LIB_DIRS := core cl nn train data ofa
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard runtime/$(d)/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/cl_sources.o
CL_SRC   := $(wildcard cl_kernels/*.cl)
LIB      := $(BUILD)/lib/libmanta.a

MANTA_SRC := $(wildcard tools/manta/*.c)
MANTA_OBJ := $(MANTA_SRC:%.c=$(BUILD)/obj/%.o)
MANTA     := $(BUILD)/bin/manta

TEST_SRC  := $(wildcard tests/unit/test_*.c)
TEST_BIN  := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_LIB_SRC := $(wildcard tests/ref/*.c tests/common/*.c)
TEST_LIB_OBJ := $(TEST_LIB_SRC:%.c=$(BUILD)/obj/%.o)

# Keep objects of test programs between runs.
.SECONDARY:

.PHONY: all lib test test-run demo deps bench-ops tune clean help
all: $(LIB) $(MANTA)
lib: $(LIB)

help:
	@sed -n '1,10p' Makefile

$(BUILD)/gen/embed: tools/gen/embed.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O1 -Wall -Wextra -o $@ $<

$(BUILD)/gen/cl_sources.c: $(CL_SRC) $(BUILD)/gen/embed
	$(BUILD)/gen/embed $@ $(CL_SRC)

$(BUILD)/obj/gen/cl_sources.o: $(BUILD)/gen/cl_sources.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(MANTA): $(MANTA_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(MANTA_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/obj/tests/%.o: CPPFLAGS += -Itests
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_LIB_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_LIB_OBJ) $(LIB) -lcmocka $(LDLIBS)

deps:
	@tools/deps.sh $(DEB_PKGS)

# Tests use their own program cache so that runs do not touch the user's.
test: deps
	@$(MAKE) --no-print-directory test-run

test-run: all $(TEST_BIN)
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) tests/run.sh $(TEST_BIN)

demo: deps
	@$(MAKE) --no-print-directory all
	$(MANTA) devices
	$(MANTA) train --steps 300 --batch 64

bench-ops: deps
	@$(MAKE) --no-print-directory all
	$(MANTA) bench ops

# CLBlast's tuners (clblast-utils) for the device; see docs/tuning.md
tune: deps
	@$(MAKE) --no-print-directory all
	$(MANTA) tune

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(MANTA_OBJ:.o=.d) $(TEST_LIB_OBJ:.o=.d) $(TEST_SRC:tests/unit/%.c=$(BUILD)/obj/tests/unit/%.d)
