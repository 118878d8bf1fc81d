# mk/emu.mk — `make emu`: an mg-train whose MGK_CUDA backend is the host emulator, so that
# `--device cuda` runs every line of the GPU training path on the CPU (docs/CUDA_EMU.md,
# docs/TRAINING.md "On GPUs"). Included by the Makefile after mk/cuda_emu.mk.
#   make emu   builds $(EMU_BUILD)/bin/mg-train in its own build folder ($(EMU_BUILD), default
#              build-emu): everything compiled again there, kernels/cuda/*.cu with
#              -DMGK_CUDA_EMU as mk/cuda_emu.mk does, kernels.c dispatching MGK_CUDA to them,
#              the emulator's cudart and cuBLASLt in place of NVIDIA's libraries, no nvcc and
#              no real NCCL (HAVE_CUDA=0 HAVE_NCCL=0 in that folder).
# mg-train's kernels, by build: the emulated backend (EMU_TRAIN=1, set by `make emu`), the
# nvcc library wherever nvcc is present (HAVE_CUDA=1, mk/cuda.mk: the real GPU binary), else
# the CPU kernels.

EMU_BUILD ?= build-emu

ifeq ($(EMU_TRAIN),1)
ifneq ($(HAVE_CUDA_HEADERS),1)
$(error make emu: NVIDIA's CUDA headers not found under CUDA_INC=$(CUDA_INC) (docs/CUDA_EMU.md))
endif
TRAIN_KERNELS := $(EMU_CORE_SRCS:%.cc=$(EMU_DIR)/%.o) $(EMU_CU_SRCS:%.cu=$(EMU_DIR)/%.o) \
                 $(EMU_KC_SRCS:%.c=$(EMU_DIR)/%.o) $(EMU_CPU_OBJS)
TRAIN_KERNEL_LIBS := -lstdc++
TRAIN_LD := $(CC)
else ifeq ($(HAVE_CUDA),1)
TRAIN_KERNELS := $(BUILD)/libmgkernels_cuda.a
TRAIN_KERNEL_LIBS = $(CUDA_LDLIBS)
TRAIN_LD := $(CC)
else
TRAIN_KERNELS := $(KLIB)
TRAIN_KERNEL_LIBS :=
TRAIN_LD := $(CC)
endif

.PHONY: emu
ifeq ($(HAVE_CUDA_HEADERS),1)
emu:
	@$(MAKE) --no-print-directory BUILD=$(EMU_BUILD) BIN=$(EMU_BUILD)/bin HAVE_CUDA=0 HAVE_NCCL=0 \
	  EMU_TRAIN=1 CFLAGS="$(CFLAGS)" $(EMU_BUILD)/bin/mg-train
else
# No stale binary may pass in place of one that cannot be built: the interop tests that need
# it (tests/interop/test_train_device.py) fail.
emu:
	@rm -f $(EMU_BUILD)/bin/mg-train
	@echo "emu: NVIDIA's CUDA headers not found under CUDA_INC=$(CUDA_INC): $(EMU_BUILD)/bin/mg-train not built (docs/CUDA_EMU.md)"
endif

# make test and make test-interop run tests/interop/test_train_device.py on it.
test test-interop: emu
