# mk/compile_flags.mk — what the objects were compiled with, included by the Makefile.
# $(COMPILE_STAMP) holds the compilers, CFLAGS and the optional parts' flags (HAVE_X=0/1,
# mk/config.mk) of the objects in $(BUILD); every object depends on it, so a change of any
# of them recompiles everything. -Werror is kept apart: objects compiled with it serve a
# build without it (they are the same code and known to be warning-free), while objects
# compiled without it are compiled again for a build with it (`make` then `make test`), so
# that no warning passes `make test` in an object built before.

# '...' quoting for the shell
compile_sq = '$(subst ','\'',$(1))'
COMPILE_STAMP  := $(BUILD)/gen/compile-flags
# recursive: a target's own CFLAGS (test: CFLAGS += -Werror) count
COMPILE_SIG     = $(CC) | $(CXX) | $(NVCC) $(NVCC_GENCODE) $(NVCC_WERROR) | \
                  $(filter-out -Werror,$(CFLAGS)) | $(DEP_CFLAGS) $(COMM_DEFS)
COMPILE_WERROR  = $(if $(filter -Werror,$(CFLAGS)),1,0)

# Rewritten (and everything recompiled) unless it holds these flags, or these flags with
# -Werror when this build has none.
$(COMPILE_STAMP): FORCE
	@mkdir -p $(dir $@)
	@printf '%s\nwerror=%s\n' $(call compile_sq,$(COMPILE_SIG)) $(COMPILE_WERROR) >$@.tmp; \
	if cmp -s $@.tmp $@ || { [ $(COMPILE_WERROR) = 0 ] && \
	   printf '%s\nwerror=1\n' $(call compile_sq,$(COMPILE_SIG)) | cmp -s - $@; }; \
	then rm -f $@.tmp; else mv $@.tmp $@; fi
