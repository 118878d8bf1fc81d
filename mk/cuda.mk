# mk/cuda.mk — the CUDA kernels (kernels/cuda/*.cu) and their GPU test program, included by the
# Makefile. Wherever nvcc is present (HAVE_CUDA, mk/config.mk) `make` builds:
#   $(BUILD)/libmgkernels_cuda.a  the .cu kernels (nvcc, warnings as errors, CUDA_ARCH), kernels.c
#                                 with the MGK_CUDA backend, the CPU kernels
#   $(BUILD)/test-gpu             tests/cuda/*.c (every kernel against its CPU reference) and
#                                 tests/gpu/*.c (main, timings); prints "skipped: no GPU" without one
# Goals: `make gpu-test` builds just these (and needs none of libcommon's optional libraries:
# they link kernels/, libcommon's error.c and the CUDA runtime + cuBLASLt only); `make test-gpu`
# also runs the program; `make cuda-report` prints registers, shared memory and spills of every
# kernel (ptxas -v, sm of the last CUDA_ARCH) and fails on spills in the hot kernels.
# Without nvcc none of this is built and everything else is.

CUDA_ARCH ?= 80 90
NVCC      ?= nvcc
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
NVCC_GENCODE := $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a))
# warnings as errors (NVCC_WERROR= builds anyway, e.g. with another toolkit's new warnings)
NVCC_WERROR ?= -Werror all-warnings -Xcompiler -Werror
NVCC_FLAGS := -std=c++17 -O3 -g -lineinfo $(NVCC_WERROR) \
              -Xcompiler -Wall,-Wextra,-Wshadow,-Wpointer-arith \
              -DMG_HAVE_CUDA=1 -Ikernels -Ilibcommon/include
CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcudart -lstdc++
# what the CPU kernels need at link time (they are the references of the GPU test)
KERN_LDLIBS := $(if $(filter 1,$(HAVE_BLAS)),$(BLAS_LDLIBS)) \
               $(if $(filter 1,$(HAVE_OPENMP)),-fopenmp) -lm -pthread

CUDA_SRCS   := $(sort $(wildcard kernels/cuda/*.cu))
CUDA_OBJS   := $(CUDA_SRCS:%.cu=$(BUILD)/nvcc/%.o)
CUDA_KLIB   := $(BUILD)/libmgkernels_cuda.a
CUDA_KOBJS  := $(patsubst %.c,$(BUILD)/nvcc/%.o,$(wildcard kernels/*.c)) \
               $(filter $(BUILD)/kernels/cpu/%,$(KERN_OBJS))
# the few libcommon files the kernels need (wherever libcommon keeps them)
CUDA_COMMON_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard libcommon/error.c libcommon/*/error.c))
GPU_TEST_SRCS := $(sort $(wildcard tests/cuda/*.c tests/gpu/*.c))
GPU_TEST_OBJS := $(GPU_TEST_SRCS:%.c=$(BUILD)/nvcc/%.o) $(BUILD)/nvcc/tests/harness.o
GPU_TEST    := $(BUILD)/test-gpu
GPU_CFLAGS  := -DMG_HAVE_CUDA=1 -I$(BUILD)/nvcc/tests -Itests/unit -Ikernels -I.

.PHONY: cuda gpu-test test-gpu cuda-report
ifeq ($(HAVE_CUDA),1)
all: cuda
cuda gpu-test: $(CUDA_KLIB) $(GPU_TEST)

$(BUILD)/nvcc/%.o: %.cu $(COMPILE_STAMP)
	@mkdir -p $(dir $@)
	$(say) NVCC $<
	$(Q)$(NVCC) $(NVCC_FLAGS) $(NVCC_GENCODE) -MMD -MP -c $< -o $@

$(BUILD)/nvcc/kernels/%.o: kernels/%.c $(COMPILE_STAMP)
	@mkdir -p $(dir $@)
	$(say) CC '$< (MGK_CUDA)'
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) -DMG_HAVE_CUDA=1 -Ikernels -I. -MMD -MP -c $< -o $@

$(CUDA_KLIB): $(CUDA_OBJS) $(CUDA_KOBJS)
	$(say) AR $@
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

# The unit harness (tests/unit/harness.c) runs the MG_TEST cases of tests/cuda (also run by the
# emulator) and tests/gpu (GPU-only sizes); tests/gpu's main calls it (renamed) before the timings.
$(BUILD)/nvcc/tests/test_list.h: $(GPU_TEST_SRCS)
	@mkdir -p $(dir $@)
	@grep -h '^MG_TEST(' $^ /dev/null | sed 's/^MG_TEST(\([a-z0-9_]*\)).*/MG_TEST_ENTRY(\1)/' | sort > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
$(BUILD)/nvcc/tests/harness.o: tests/unit/harness.c $(BUILD)/nvcc/tests/test_list.h \
                             $(COMPILE_STAMP)
	@mkdir -p $(dir $@)
	$(say) CC $<
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) $(GPU_CFLAGS) -Dmain=mg_test_harness_main \
	  -Wno-missing-prototypes -MMD -MP -c $< -o $@
$(BUILD)/nvcc/tests/%.o: tests/%.c $(COMPILE_STAMP)
	@mkdir -p $(dir $@)
	$(say) CC $<
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) $(GPU_CFLAGS) -MMD -MP -c $< -o $@

$(GPU_TEST): $(GPU_TEST_OBJS) $(CUDA_KLIB) $(CUDA_COMMON_OBJS)
	$(say) LINK $@
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $(GPU_TEST_OBJS) $(CUDA_KLIB) $(CUDA_COMMON_OBJS) \
	  $(CUDA_LDLIBS) $(KERN_LDLIBS)

test-gpu: $(GPU_TEST)
	$(GPU_TEST)

cuda-report:
	@scripts/cuda-report.sh "$(NVCC)" "$(lastword $(CUDA_ARCH))" $(CUDA_SRCS)

-include $(CUDA_OBJS:.o=.d) $(GPU_TEST_OBJS:.o=.d) $(BUILD)/nvcc/kernels/kernels.d
else
cuda gpu-test test-gpu cuda-report:
	@echo "skipped: not built with CUDA (no nvcc on PATH; HAVE_CUDA=0)"
endif
