# mgtools — one entry point.
#   make            build libmgcommon.a and the tools into bin/
#   make test       build with -Werror and run every test (unit, CLI, fuzz smoke, interop)
#   make asan       ASan+UBSan build (build-asan/) running the C tests
#   make test-minimal  build-min/ with every optional dependency off, running the C unit tests
#   make fuzz       libFuzzer targets, run longer (FUZZ_SECONDS per target)
#   make bench      benchmarks against the peers (scripts/bench-*.sh)
#   make demo       the README's main job: corpus -> dataset -> mpirun training -> resharded
#                   checkpoints -> Hugging Face export, sample, curves (scripts/demo.sh)
#   make vocab      unpack the test vocabularies (tests/data/vocab.tar.zst) into build/vocab
#   make emu        build-emu/bin/mg-train: --device cuda on the CUDA emulator (mk/emu.mk)
#   make gpu-test / test-gpu / cuda-report   the CUDA kernels' GPU test and ptxas report
#                   (mk/cuda.mk; `make` builds the CUDA kernels wherever nvcc is present)
#   make install    tools, man pages, bash completion, README (PREFIX, DESTDIR, BINDIR, MANDIR;
#                   mk/install.mk); make uninstall, make dist, make distcheck
# Dependencies are detected with probe compiles; force one with HAVE_X=0/1.

.DEFAULT_GOAL := all
include mk/config.mk

BUILD   ?= build
# Quiet build lines ("CC file"); make V=1 shows the whole commands.
ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-6s %s\n'
endif
BIN     := bin
# Everything reaches the public headers mg/*.h; only libcommon's own objects and the tests
# that exercise internals (unit tests, test helper programs, fuzz targets) also reach
# libcommon's internal headers (-Ilibcommon: "tok/bpe.h", "text/pretok_internal.h", ...).
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -O2 -g -pthread $(WARNINGS) $(DEP_CFLAGS) \
               -Ilibcommon/include
LIB_INTERNAL := -Ilibcommon
CFLAGS  ?=
LDLIBS_ALL := $(DEP_LDLIBS) -lm -pthread

LIB_SRCS  := $(sort $(wildcard libcommon/*.c libcommon/*/*.c))
PRE_SRCS  := $(sort $(wildcard preprocess/*.c))
CKPT_SRCS := $(sort $(wildcard ckpt/*.c))
TRAIN_SRCS:= $(sort $(wildcard train/*.c))
KERN_SRCS := $(sort $(wildcard kernels/*.c kernels/cpu/*.c))
UNIT_SRCS := $(sort $(wildcard tests/unit/*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
TOOL_SRCS := $(sort $(wildcard tests/tools/*.c))

LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
PRE_OBJS  := $(PRE_SRCS:%.c=$(BUILD)/%.o)
CKPT_OBJS := $(CKPT_SRCS:%.c=$(BUILD)/%.o)
TRAIN_OBJS:= $(TRAIN_SRCS:%.c=$(BUILD)/%.o)
KERN_OBJS := $(KERN_SRCS:%.c=$(BUILD)/%.o)
UNIT_OBJS := $(UNIT_SRCS:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libmgcommon.a
# CPU kernels (kernels/*.c, API kernels/kernels.h): linked into mg-train and the unit tests.
KLIB      := $(BUILD)/libmgkernels.a
# mg-train's modules without its main(), so the unit tests can link them.
TLIB      := $(BUILD)/libmgtrain.a
TLIB_OBJS := $(filter-out $(BUILD)/train/main.o,$(TRAIN_OBJS))
TOOLS     := $(BIN)/mg-preprocess
# A tool is built once its directory has a main.c.
ifneq ($(wildcard ckpt/main.c),)
TOOLS     += $(BIN)/mg-convert
endif
ifneq ($(wildcard train/main.c),)
TOOLS     += $(BIN)/mg-train
endif
UNIT_BIN  := $(BUILD)/test-unit
# Test helper programs (tests/tools/NAME.c -> build/tests/tools/NAME), built by `make test`.
TEST_TOOLS := $(TOOL_SRCS:%.c=$(BUILD)/%)
# Every object's compile flags: a change recompiles (-Werror: see the file).
include mk/compile_flags.mk
# The CUDA emulator and build/test-cuda-emu (make test-cuda-emu).
include mk/cuda_emu.mk
# The NCCL host shim and build/tests/tools/comm_probe_nccl (make nccl-emu).
include mk/nccl_emu.mk
# make emu: mg-train on the emulated CUDA backend; which kernels mg-train links.
include mk/emu.mk
# --version's revision, man pages, bash completion, install/uninstall, dist/distcheck.
include mk/install.mk

all: config $(TOOLS)
tools-test: $(TEST_TOOLS)
.PHONY: tools-test all test test-c test-cli test-interop test-minimal asan fuzz bench demo \
        clean config vocab

$(BUILD)/%.o: %.c $(COMPILE_STAMP)
	@mkdir -p $(dir $@)
	$(say) CC $<
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(say) AR $@
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(KLIB): $(KERN_OBJS)
	@mkdir -p $(dir $@)
	$(say) AR $@
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(TLIB): $(TLIB_OBJS)
	@mkdir -p $(dir $@)
	$(say) AR $@
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(BUILD)/libcommon/%.o: CFLAGS_BASE += $(LIB_INTERNAL)
$(BUILD)/kernels/%.o $(BUILD)/train/%.o: CFLAGS_BASE += -Ikernels -I.
$(BUILD)/train/comm_%.o: CFLAGS_BASE += $(TRAIN_COMM_CFLAGS)

$(BIN)/mg-preprocess: $(PRE_OBJS) $(LIB)
	@mkdir -p $(BIN)
	$(say) LINK $@
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $(PRE_OBJS) $(LIB) $(LDLIBS_ALL)

$(BIN)/mg-convert: $(CKPT_OBJS) $(LIB)
	@mkdir -p $(BIN)
	$(say) LINK $@
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $(CKPT_OBJS) $(LIB) $(LDLIBS_ALL)

$(BIN)/mg-train: $(BUILD)/train/main.o $(TLIB) $(TRAIN_KERNELS) $(LIB)
	@mkdir -p $(BIN)
	$(say) LINK $@
	$(Q)$(TRAIN_LD) $(CFLAGS_BASE) $(CFLAGS) -o $@ $(BUILD)/train/main.o $(TLIB) $(TRAIN_KERNELS) \
	  $(LIB) $(LDLIBS_ALL) $(TRAIN_COMM_LDLIBS) $(TRAIN_KERNEL_LIBS)

# Unit tests: every MG_TEST(name) in tests/unit/*.c is registered through a generated list.
$(BUILD)/tests/unit/test_list.h: $(UNIT_SRCS)
	@mkdir -p $(dir $@)
	@grep -h '^MG_TEST(' $(UNIT_SRCS) | sed 's/^MG_TEST(\([a-z0-9_]*\)).*/MG_TEST_ENTRY(\1)/' | sort > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
$(BUILD)/tests/unit/harness.o: $(BUILD)/tests/unit/test_list.h
$(BUILD)/tests/unit/%.o: CFLAGS_BASE += $(LIB_INTERNAL) -I$(BUILD)/tests/unit -Itests/unit -Ikernels -I. -Itrain
$(UNIT_BIN): $(UNIT_OBJS) $(TLIB) $(KLIB) $(LIB)
	$(say) LINK $@
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $(UNIT_OBJS) $(TLIB) $(KLIB) $(LIB) $(LDLIBS_ALL) $(TRAIN_COMM_LDLIBS)

$(BUILD)/tests/tools/%.o: CFLAGS_BASE += $(LIB_INTERNAL) -Ikernels -I.
$(BUILD)/tests/tools/%: $(BUILD)/tests/tools/%.o $(TLIB) $(KLIB) $(LIB)
	$(say) LINK $@
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(TLIB) $(KLIB) $(LIB) $(LDLIBS_ALL) $(TRAIN_COMM_LDLIBS)

config:
	@$(MAKE) -s --no-print-directory -f mk/config.mk print-config

# The vocabularies the tests and benchmarks read (tests/data/README.md: provenance, licences);
# the test runners default MG_VOCAB_DIR to this folder.
VOCAB_DIR := build/vocab
vocab:
	@scripts/unpack-vocab.sh $(VOCAB_DIR)

test: CFLAGS += -Werror
test: all $(UNIT_BIN) $(TEST_TOOLS) vocab
	@scripts/run-tests.sh

test-c: $(UNIT_BIN) vocab
	$(UNIT_BIN)

test-cli: all vocab
	tests/cli/run.sh

test-interop: all $(TEST_TOOLS) vocab
	MG_SKIP_FUZZ=1 MG_SKIP_UNIT=1 MG_SKIP_CLI=1 MG_SKIP_CUDA_EMU=1 MG_SKIP_GPU=1 MG_SKIP_INSTALL=1 \
	  scripts/run-tests.sh

asan: vocab
	$(MAKE) BUILD=build-asan BIN=build-asan/bin \
	  CFLAGS="-Werror -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
	  $(TOOLS:$(BIN)/%=build-asan/bin/%) build-asan/test-unit \
	  $(if $(filter 1,$(HAVE_CUDA_HEADERS)),build-asan/test-cuda-emu)
	MG_BIN=build-asan/bin MG_UNIT=build-asan/test-unit MG_CUDA_EMU=build-asan/test-cuda-emu \
	  MG_SKIP_INTEROP=1 MG_SKIP_FUZZ=1 MG_SKIP_MINIMAL=1 MG_SKIP_INSTALL=1 scripts/run-tests.sh

# docs/DESIGN.md: without its optional dependencies the build still links, runs and passes
# its tests (each test checks the refusal instead).
test-minimal: vocab
	rm -rf build-min/nvcc
	$(MAKE) BUILD=build-min BIN=build-min/bin HAVE_ONIG=0 HAVE_ARCHIVE=0 HAVE_UTF8PROC=0 HAVE_MPI=0 HAVE_NCCL=0 HAVE_CUDA=0 \
	  HAVE_OPENMP=0 HAVE_BLAS=0 CFLAGS=-Werror $(TOOLS:$(BIN)/%=build-min/bin/%) build-min/test-unit
	@test ! -e build-min/nvcc || { echo "test-minimal: CUDA kernels were compiled (build-min/nvcc)"; exit 1; }
	build-min/test-unit

fuzz:
	scripts/fuzz.sh $${FUZZ_SECONDS:-60}

bench: all tools-test vocab
	scripts/bench-preprocess.sh
	scripts/bench-tokenizers.sh
	scripts/bench-tokenizers.sh --peers
	scripts/bench-tokenizers.sh --zh --rounds 3
	scripts/bench-convert.sh
	MG_BENCH_FORMAT=torch_dist scripts/bench-convert.sh
	scripts/bench-train.sh
	scripts/bench-dist.sh

demo: all $(BUILD)/tests/tools/model_probe
	scripts/demo.sh

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-min $(BIN)

include mk/cuda.mk

-include $(LIB_OBJS:.o=.d) $(PRE_OBJS:.o=.d) $(CKPT_OBJS:.o=.d) $(TRAIN_OBJS:.o=.d) \
         $(KERN_OBJS:.o=.d) $(UNIT_OBJS:.o=.d) $(TOOL_SRCS:%.c=$(BUILD)/%.d)
