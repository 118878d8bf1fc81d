# mk/config.mk — dependency detection by probe compiles. Each HAVE_X may be forced on the
# command line (make HAVE_ONIG=0). Required dependencies stop the build when missing;
# optional ones compile to code paths that answer "not built with X".

CC ?= cc
H := \#
probe = $(shell printf '$(1)\nint main(void){return 0;}\n' | $(CC) -x c - -o /dev/null $(2) 2>/dev/null && echo 1 || echo 0)
pcver = $(shell pkg-config --modversion $(1) 2>/dev/null || echo '?')

HAVE_JANSSON  ?= $(call probe,$(H)include <jansson.h>,-ljansson)
HAVE_ARCHIVE  ?= $(call probe,$(H)include <archive.h>,-larchive)
HAVE_ONIG     ?= $(call probe,$(H)include <oniguruma.h>,-lonig)
HAVE_UTF8PROC ?= $(call probe,$(H)include <utf8proc.h>,-lutf8proc)
HAVE_OPENMP   ?= $(call probe,$(H)include <omp.h>,-fopenmp)
# BLAS for mg-train's matrix products: OpenBLAS built for OpenMP (Debian libopenblas-openmp-dev),
# so its threads and ours share one OpenMP pool instead of oversubscribing the cores.
BLAS_DIR      ?= /usr/lib/x86_64-linux-gnu/openblas-openmp
BLAS_INC      ?= /usr/include/x86_64-linux-gnu/openblas-openmp
BLAS_CFLAGS   := -I$(BLAS_INC)
BLAS_LDLIBS   := -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -lopenblas
HAVE_BLAS     ?= $(call probe,$(H)include <cblas.h>,$(BLAS_CFLAGS) $(BLAS_LDLIBS))
HAVE_CUDA     ?= $(shell command -v nvcc >/dev/null 2>&1 && echo 1 || echo 0)
# MPI for mg-train's multi-process runs (train/comm_mpi.c): the flags of the MPI compiler
# wrapper (Debian libopenmpi-dev's mpicc), used for mg-train and the programs linking it.
MPICC         ?= mpicc
MPI_CFLAGS    ?= $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LDLIBS    ?= $(shell $(MPICC) --showme:link 2>/dev/null)
HAVE_MPI      ?= $(call probe,$(H)include <mpi.h>,$(MPI_CFLAGS) $(MPI_LDLIBS))
# NCCL for device buffers (train/comm_nccl.c): nccl.h and libnccl of the CUDA toolkit.
CUDA_HOME     ?= /usr/local/cuda
NCCL_CFLAGS   ?= -I$(CUDA_HOME)/include
NCCL_LDLIBS   ?= -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl -lcudart
HAVE_NCCL     ?= $(call probe,$(H)include <nccl.h>,$(NCCL_CFLAGS) $(NCCL_LDLIBS))

# The CUDA-only goals (mk/cuda.mk) link none of libcommon's libraries.
CUDA_ONLY_GOALS := cuda gpu-test test-gpu cuda-report
NEED_JANSSON := $(if $(MAKECMDGOALS),$(if $(filter-out $(CUDA_ONLY_GOALS),$(MAKECMDGOALS)),1,0),1)
ifeq ($(HAVE_JANSSON)-$(NEED_JANSSON),0-1)
$(error jansson (JSON library) not found: run scripts/setup.sh --system or apt-get install libjansson-dev)
endif

WARNINGS := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
            -Wcast-qual -Wvla -Wformat=2 -Wwrite-strings -Wundef -Wno-format-nonliteral

DEP_CFLAGS := -DMG_HAVE_ARCHIVE=$(HAVE_ARCHIVE) -DMG_HAVE_ONIG=$(HAVE_ONIG) \
              -DMG_HAVE_UTF8PROC=$(HAVE_UTF8PROC) -DMG_HAVE_OPENMP=$(HAVE_OPENMP) \
              -DMG_HAVE_BLAS=$(HAVE_BLAS)
DEP_LDLIBS := -ljansson
# mg-train's communication libraries: only for train/comm_*.c and the programs linking them
# (and libcommon's version table, which names every optional part of the build).
COMM_DEFS := -DMG_HAVE_MPI=$(HAVE_MPI) -DMG_HAVE_NCCL=$(HAVE_NCCL)
TRAIN_COMM_CFLAGS := $(COMM_DEFS)
TRAIN_COMM_LDLIBS :=
ifeq ($(HAVE_MPI),1)
TRAIN_COMM_CFLAGS += $(patsubst -I%,-isystem %,$(MPI_CFLAGS))
TRAIN_COMM_LDLIBS += $(MPI_LDLIBS)
endif
ifeq ($(HAVE_NCCL),1)
TRAIN_COMM_CFLAGS += $(patsubst -I%,-isystem %,$(NCCL_CFLAGS))
TRAIN_COMM_LDLIBS += $(NCCL_LDLIBS)
endif
ifeq ($(HAVE_ARCHIVE),1)
DEP_LDLIBS += -larchive
endif
ifeq ($(HAVE_ONIG),1)
DEP_LDLIBS += -lonig
endif
ifeq ($(HAVE_UTF8PROC),1)
DEP_LDLIBS += -lutf8proc
endif
ifeq ($(HAVE_BLAS),1)
DEP_CFLAGS += $(BLAS_CFLAGS)
DEP_LDLIBS += $(BLAS_LDLIBS)
endif
ifeq ($(HAVE_OPENMP),1)
DEP_CFLAGS += -fopenmp
DEP_LDLIBS += -fopenmp
endif

yesno = $(if $(filter 1,$(1)),yes $(2),no)
.PHONY: print-config
print-config:
	@echo "mgtools configuration (force with HAVE_X=0/1):"
	@echo "  jansson   : $(call yesno,$(HAVE_JANSSON),$(call pcver,jansson))"
	@echo "  libarchive: $(call yesno,$(HAVE_ARCHIVE),$(call pcver,libarchive))"
	@echo "  oniguruma : $(call yesno,$(HAVE_ONIG),$(call pcver,oniguruma))"
	@echo "  utf8proc  : $(call yesno,$(HAVE_UTF8PROC),$(call pcver,libutf8proc))"
	@echo "  openmp    : $(call yesno,$(HAVE_OPENMP),($(CC)))"
	@echo "  openblas  : $(call yesno,$(HAVE_BLAS),$(BLAS_DIR))"
	@echo "  cuda      : $(call yesno,$(HAVE_CUDA),$(shell command -v nvcc 2>/dev/null))"
	@echo "  mpi       : $(call yesno,$(HAVE_MPI),$(shell $(MPICC) --showme:version 2>/dev/null | sed 's/^mpicc: //'))"
	@echo "  nccl      : $(call yesno,$(HAVE_NCCL),$(CUDA_HOME))"

.PHONY: print-defs print-libs
print-defs:
	@echo $(DEP_CFLAGS) $(COMM_DEFS)
print-libs:
	@echo $(DEP_LDLIBS)
