# mk/nccl_emu.mk — the NCCL host shim (kernels/nccl_emu/, docs/CUDA_EMU.md "NCCL on the host")
# and the programs that run mg-train's NCCL backend (train/comm_nccl.c) on it. Included by the
# Makefile after mk/cuda_emu.mk.
#   make nccl-emu   builds $(BUILD)/tests/tools/comm_probe_nccl (tests/tools/comm_probe.c on
#                   device buffers through the NCCL backend) and nccl_types_probe (the shim's
#                   other types and operators), run by tests/interop/test_nccl_emu.py under
#                   mpirun and (comm_probe_nccl) torchrun-style
#   make emu        (mk/emu.mk, EMU_TRAIN=1) the emulation build's mg-train gets the NCCL
#                   backend on this shim: train/comm_*.c compiled with MG_HAVE_NCCL=1 and
#                   NVIDIA's headers, the shim's objects linked (see the end of this file).
# Needs NVIDIA's headers (CUDA_INC: cuda_runtime.h, cuda_bf16.h, cublasLt.h, and nccl.h there
# or in NCCL_EMU_INC) and MPI; no CUDA or NCCL library is linked.

NCCL_EMU_INC ?= $(patsubst %/nccl.h,%,$(firstword $(wildcard $(CUDA_INC)/nccl.h \
                  $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h)))
HAVE_NCCL_EMU := $(if $(and $(filter 1,$(HAVE_CUDA_HEADERS)),$(filter 1,$(HAVE_MPI)),$(NCCL_EMU_INC)),1,0)
NCCL_EMU_INC_FLAGS := $(if $(filter /usr/include /usr/include/ $(CUDA_INC),$(NCCL_EMU_INC)),,-isystem $(NCCL_EMU_INC))
MPI_ISYSTEM := $(patsubst -I%,-isystem %,$(MPI_CFLAGS))
# MPI's C API from C++ (not Open MPI's deprecated C++ bindings, which need libmpi_cxx)
MPI_CXX_C_API := -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1

NCCL_EMU_DIR  := $(EMU_DIR)/nccl
NCCL_EMU_SRCS := $(sort $(wildcard kernels/nccl_emu/*.cc))
NCCL_EMU_OBJS := $(NCCL_EMU_SRCS:%.cc=$(NCCL_EMU_DIR)/%.o)
EMU_CORE_OBJS := $(EMU_CORE_SRCS:%.cc=$(EMU_DIR)/%.o)
NCCL_EMU_LDLIBS := $(MPI_LDLIBS)
# train/comm_*.c against the shim: both backends on, NVIDIA's headers for the types.
NCCL_EMU_COMM_CFLAGS := -DMG_HAVE_MPI=1 -DMG_HAVE_NCCL=1 $(MPI_ISYSTEM) $(CUDA_INC_FLAGS) \
                        $(NCCL_EMU_INC_FLAGS)

NCCL_EMU_COMM_SRCS := $(filter-out train/comm_plan.c,$(sort $(wildcard train/comm*.c)))
NCCL_EMU_PROBE_OBJS := $(NCCL_EMU_COMM_SRCS:%.c=$(NCCL_EMU_DIR)/%.o) \
                       $(NCCL_EMU_DIR)/tests/tools/comm_probe.o
NCCL_EMU_PROBE := $(BUILD)/tests/tools/comm_probe_nccl
NCCL_EMU_TYPES_OBJ := $(NCCL_EMU_DIR)/tests/nccl_emu/nccl_types_probe.o
NCCL_EMU_TYPES := $(BUILD)/tests/tools/nccl_types_probe

$(NCCL_EMU_DIR)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(say) CXX $<
	$(Q)$(CXX) $(CXXFLAGS_EMU) $(MPI_CXX_C_API) $(MPI_ISYSTEM) $(NCCL_EMU_INC_FLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(NCCL_EMU_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(say) CC-EMU $<
	$(Q)$(CC) $(CFLAGS_BASE) $(NCCL_EMU_COMM_CFLAGS) -I. -Itrain $(CFLAGS) -MMD -MP -c $< -o $@

$(NCCL_EMU_DIR)/tests/tools/comm_probe.o: CFLAGS_BASE += -DMG_PROBE_DEVICE=1

$(NCCL_EMU_PROBE): $(NCCL_EMU_PROBE_OBJS) $(NCCL_EMU_OBJS) $(EMU_CORE_OBJS) $(KLIB) $(LIB)
	@mkdir -p $(dir $@)
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS_EMU) $(CFLAGS) -o $@ $(NCCL_EMU_PROBE_OBJS) $(NCCL_EMU_OBJS) \
	  $(EMU_CORE_OBJS) $(KLIB) $(LIB) $(LDLIBS_ALL) $(NCCL_EMU_LDLIBS)

$(NCCL_EMU_TYPES): $(NCCL_EMU_TYPES_OBJ) $(NCCL_EMU_OBJS) $(EMU_CORE_OBJS) $(KLIB) $(LIB)
	@mkdir -p $(dir $@)
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS_EMU) $(CFLAGS) -o $@ $(NCCL_EMU_TYPES_OBJ) $(NCCL_EMU_OBJS) \
	  $(EMU_CORE_OBJS) $(KLIB) $(LIB) $(LDLIBS_ALL) $(NCCL_EMU_LDLIBS)

.PHONY: nccl-emu
ifeq ($(HAVE_NCCL_EMU),1)
nccl-emu: $(NCCL_EMU_PROBE) $(NCCL_EMU_TYPES)
else
# No stale probe may pass in place of one that cannot be built.
nccl-emu:
	@rm -f $(NCCL_EMU_PROBE) $(NCCL_EMU_TYPES)
	@echo "nccl-emu: needs NVIDIA's headers with nccl.h (CUDA_INC=$(CUDA_INC), NCCL_EMU_INC=$(NCCL_EMU_INC)) and MPI (HAVE_MPI=$(HAVE_MPI)): $(NCCL_EMU_PROBE) not built"
endif

test test-interop: nccl-emu

# The emulation build's mg-train (EMU_TRAIN=1, HAVE_NCCL=0 in its folder): the NCCL backend
# on the shim, and --version saying so. mk/emu.mk links the emulator's cudart.
ifeq ($(EMU_TRAIN)$(HAVE_NCCL_EMU),11)
COMM_DEFS := $(subst -DMG_HAVE_NCCL=0,-DMG_HAVE_NCCL=1,$(COMM_DEFS))
TRAIN_COMM_CFLAGS := $(subst -DMG_HAVE_NCCL=0,-DMG_HAVE_NCCL=1,$(TRAIN_COMM_CFLAGS)) \
                     $(CUDA_INC_FLAGS) $(NCCL_EMU_INC_FLAGS)
TRAIN_COMM_LDLIBS += $(NCCL_EMU_OBJS)
$(BIN)/mg-train: $(NCCL_EMU_OBJS)
endif

-include $(NCCL_EMU_OBJS:.o=.d) $(NCCL_EMU_PROBE_OBJS:.o=.d) $(NCCL_EMU_TYPES_OBJ:.o=.d)
