# mk/static.mk — make STATIC=1: tools that can be copied to compute nodes without the -dev
# packages. Every library of the link whose static archive the system has (libX.a, as the
# compiler finds it) is linked statically, with the libraries it needs in turn (pkg-config
# --static); the others stay dynamic. On Debian 12, with the packages of scripts/setup.sh
# (liblz4-dev and libacl1-dev give libarchive.a's own dependencies as .a), that leaves:
#   Oniguruma  libonig-dev ships no libonig.a: the nodes need libonig5
#   glibc      libc, libm, libpthread, libdl, librt stay dynamic: a static glibc cannot load
#              the node's NSS modules, and a copied binary runs on the node's own libc
# The linker takes only the members it needs (mg-preprocess 2.5 MB, mg-convert 1.3 MB);
# mg-train is 28 MB, OpenBLAS's kernels for every CPU it knows. Switching STATIC relinks
# the tools ($(BUILD)/gen/link-flags).
#   make STATIC=1 BUILD=build-static BIN=build-static/bin

ifeq ($(STATIC),1)
GLIBC_LIBS := c m pthread dl rt
# -lX -> -l:libX.a when the compiler finds libX.a, -lX when it finds only libX.so, nothing
# when it finds neither (the linker then names any symbol still missing)
found = $(filter /%,$(shell $(CC) -print-file-name=lib$(1).$(2)))
one_static = $(if $(filter $(GLIBC_LIBS),$(1)),-l$(1),$(if $(call found,$(1),a),-l:lib$(1).a,$(if $(call found,$(1),so),-l$(1))))
# what each library of DEP_LDLIBS needs in turn when it is linked statically
STATIC_DEPS_archive  := $(shell pkg-config --static --libs-only-l libarchive libxml-2.0 icu-i18n) -lstdc++
STATIC_DEPS_openblas := -lgfortran -lquadmath -lgomp
STATIC_DEPS_jansson  :=
STATIC_DEPS_onig     :=
STATIC_DEPS_utf8proc :=
static_libs = $(foreach w,$(1),$(if $(filter -l%,$(w)),\
                $(foreach l,$(patsubst -l%,%,$(w)) $(patsubst -l%,%,$(STATIC_DEPS_$(w:-l%=%))),\
                  $(call one_static,$(l))),$(w)))
LDLIBS_ALL := $(call static_libs,$(DEP_LDLIBS) -lm) -pthread
endif

# The link line of the tools: a change (STATIC=1 or not, a dependency forced on or off)
# relinks them.
LINK_STAMP := $(BUILD)/gen/link-flags
$(LINK_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(LDLIBS_ALL)' >$@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
$(TOOLS): $(LINK_STAMP)
