# mk/cuda_emu.mk — the CUDA emulator and its test runner (docs/CUDA_EMU.md). Included by the
# Makefile after mk/config.mk.
#   make test-cuda-emu   builds and runs build/test-cuda-emu: every MG_TEST of tests/cuda_emu/*.cu
#                        and tests/cuda/*.c, each under the thread orders fwd, rev and random
# Everything here is compiled by the host compilers against NVIDIA's headers (CUDA_INC), without
# nvcc: kernels/cuda/*.cu and tests/cuda_emu/*.cu as C++17 with -DMGK_CUDA_EMU, kernels/*.c and
# kernels/cuda/*.c again with CUDA_EMU_KERNEL_DEFS (the MGK_CUDA backend dispatching to the
# emulated kernels), linked with the CPU kernels, the emulator and the unit-test harness.
# Without NVIDIA's headers the runner is not built and scripts/run-tests.sh fails its suite.

# NVIDIA's headers: CUDA_HOME's, nvcc's toolkit's, /usr/local/cuda's, or Debian's
# nvidia-cuda-dev in /usr/include (the first that has cuda_bf16.h).
CUDA_EMU_NVCC_HOME := $(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null))
CUDA_INC ?= $(patsubst %/cuda_bf16.h,%,$(firstword $(wildcard $(addsuffix /cuda_bf16.h,\
              $(if $(CUDA_HOME),$(CUDA_HOME)/include) $(if $(CUDA_EMU_NVCC_HOME),$(CUDA_EMU_NVCC_HOME)/include) \
              /usr/local/cuda/include /usr/include)) /usr/local/cuda/include/cuda_bf16.h))
HAVE_CUDA_HEADERS ?= $(if $(and $(wildcard $(CUDA_INC)/cuda_runtime.h),$(wildcard $(CUDA_INC)/cuda_bf16.h),$(wildcard $(CUDA_INC)/cublasLt.h)),1,0)
# -isystem /usr/include would break libstdc++'s #include_next
CUDA_INC_FLAGS := $(if $(filter /usr/include /usr/include/,$(CUDA_INC)),,-isystem $(CUDA_INC))
# How kernels.c (and kernels/cuda/*.c) are compiled for the emulated MGK_CUDA backend.
CUDA_EMU_KERNEL_DEFS ?= -DMG_HAVE_CUDA=1 -DMGK_CUDA_EMU
CUDA_EMU_BIN := $(BUILD)/test-cuda-emu
EMU_DIR      := $(BUILD)/emu

CXX_WARNINGS := -Wall -Wextra -Wshadow -Wpointer-arith -Wcast-qual -Wvla -Wformat=2 \
                -Wwrite-strings -Wundef -Wno-format-nonliteral -Wmissing-declarations
CXXFLAGS_EMU := -std=c++17 -D_GNU_SOURCE -O2 -g -pthread $(CXX_WARNINGS) \
                $(filter-out -DMG_HAVE_CUDA=%,$(DEP_CFLAGS)) $(CUDA_EMU_KERNEL_DEFS) \
                -Ikernels -I. -Ilibcommon/include $(CUDA_INC_FLAGS)
# .cu files: `#pragma unroll` is nvcc's, unknown to the host compiler; comments naming
# "kernels/cuda/*.cu" (cuda_portable.h) are not nested comments; large stack frames probe
# every page, so a fiber's stack overflow hits its guard page instead of the next stack.
CUFLAGS_EMU  := -x c++ -DMGK_CUDA_EMU -Wno-unknown-pragmas -Wno-comment -fstack-clash-protection
CFLAGS_EMU   := $(filter-out -DMG_HAVE_CUDA=%,$(CFLAGS_BASE)) $(CUDA_EMU_KERNEL_DEFS) \
                -Ikernels -I. -Itrain $(CUDA_INC_FLAGS)

EMU_CORE_SRCS := $(sort $(wildcard kernels/cuda_emu/*.cc))
EMU_CU_SRCS   := $(sort $(wildcard kernels/cuda/*.cu))
EMU_KC_SRCS   := $(sort $(wildcard kernels/*.c kernels/cuda/*.c))
EMU_TCU_SRCS  := $(sort $(wildcard tests/cuda_emu/*.cu tests/cuda/*.cu))
EMU_TC_SRCS   := $(sort $(wildcard tests/cuda/*.c))
EMU_OBJS := $(EMU_CORE_SRCS:%.cc=$(EMU_DIR)/%.o) $(EMU_CU_SRCS:%.cu=$(EMU_DIR)/%.o) \
            $(EMU_KC_SRCS:%.c=$(EMU_DIR)/%.o) $(EMU_TCU_SRCS:%.cu=$(EMU_DIR)/%.o) \
            $(EMU_TC_SRCS:%.c=$(EMU_DIR)/%.o) $(EMU_DIR)/tests/cuda_emu/runner.o \
            $(EMU_DIR)/tests/unit/harness.o
# The CPU kernels (references for the tests) without the CPU-only kernels.o.
EMU_CPU_OBJS := $(filter $(BUILD)/kernels/cpu/%,$(KERN_OBJS))

$(EMU_DIR)/%.o: %.cc $(COMPILE_STAMP)
	@mkdir -p $(dir $@)
	$(say) CXX $<
	$(Q)$(CXX) $(CXXFLAGS_EMU) $(CFLAGS) -MMD -MP -c $< -o $@

$(EMU_DIR)/%.o: %.cu $(COMPILE_STAMP)
	@mkdir -p $(dir $@)
	$(say) CXX-EMU $<
	$(Q)$(CXX) $(CXXFLAGS_EMU) $(CUFLAGS_EMU) $(CFLAGS) -Itests/unit -MMD -MP -c $< -o $@

$(EMU_DIR)/%.o: %.c $(COMPILE_STAMP)
	@mkdir -p $(dir $@)
	$(say) CC-EMU $<
	$(Q)$(CC) $(CFLAGS_EMU) $(CFLAGS) -Itests/unit -I$(EMU_DIR)/tests -MMD -MP -c $< -o $@

$(EMU_DIR)/tests/unit/harness.o: CFLAGS_EMU += -DMG_TEST_VARIANTS
$(EMU_DIR)/tests/unit/harness.o: $(EMU_DIR)/tests/test_list.h

# Every MG_TEST(name) of the emulated suite, registered through a generated list (remade on
# every run, rewritten only when it changes: a deleted test file drops its tests).
$(EMU_DIR)/tests/test_list.h: cuda-emu-force
	@mkdir -p $(dir $@)
	@grep -h '^MG_TEST(' $(EMU_TCU_SRCS) $(EMU_TC_SRCS) /dev/null | sed 's/^MG_TEST(\([a-z0-9_]*\)).*/MG_TEST_ENTRY(\1)/' | sort > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(CUDA_EMU_BIN): $(EMU_OBJS) $(EMU_CPU_OBJS) $(TLIB) $(LIB)
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS_EMU) $(CFLAGS) -o $@ $(EMU_OBJS) $(EMU_CPU_OBJS) $(TLIB) $(LIB) $(LDLIBS_ALL)

.PHONY: cuda-emu test-cuda-emu cuda-emu-force
cuda-emu-force:
ifeq ($(HAVE_CUDA_HEADERS),1)
cuda-emu: $(CUDA_EMU_BIN)
test-cuda-emu: cuda-emu
	$(CUDA_EMU_BIN)
else
# No stale runner may pass in place of one that cannot be built.
cuda-emu:
	@rm -f $(CUDA_EMU_BIN)
	@echo "cuda-emu: NVIDIA's CUDA headers not found under CUDA_INC=$(CUDA_INC): $(CUDA_EMU_BIN) not built (docs/CUDA_EMU.md)"
test-cuda-emu: cuda-emu
	@echo "test-cuda-emu: cannot run without NVIDIA's CUDA headers"; exit 1
endif

test: cuda-emu

-include $(EMU_OBJS:.o=.d)
