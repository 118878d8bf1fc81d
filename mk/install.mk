# mk/install.mk — mgtools as an installed Unix tool and a release (included by the Makefile
# once TOOLS is known):
#   - the git revision compiled into --version ($(BUILD)/gen/mg_revision.h);
#   - make STATIC=1: the optional libraries linked statically where possible (mk/static.mk);
#   - the man pages, generated from each tool's --help (scripts/gen-man.sh) around the
#     hand-written sections of docs/man/TOOL.1.in, and the bash completion, generated from
#     the tools' flag tables (TOOL --list-flags, scripts/gen-completion.sh); both built by
#     `make` into $(BUILD)/man and $(BUILD)/bash-completion;
#   make install / uninstall   PREFIX (/usr/local), DESTDIR, BINDIR, MANDIR, DOCDIR,
#                              COMPLETIONSDIR, with the GNU meanings
#   make dist                  mgtools-VERSION.tar.gz: the tracked files + REVISION
#   make distcheck             unpacks it in an empty folder and runs make && make test there
#                              (DISTCHECK_TESTS=... runs other test targets instead)
#   make test-install          tests/install/run.sh: install, documentation and completion tests

MG_RELEASE := $(shell sed -n 's/^\#define MG_VERSION "\(.*\)"$$/\1/p' libcommon/include/mg/cli.h)
# A release tarball records its revision in REVISION (there is no .git there).
MG_REVISION := $(or $(if $(wildcard REVISION),$(shell cat REVISION)),\
                    $(shell git describe --always --dirty 2>/dev/null),unknown)

# --- the revision in --version: the header changes only when the revision does, and an
# unknown revision (git refusing another user's tree under `sudo make install`) keeps it ---
REVISION_H := $(BUILD)/gen/mg_revision.h
.PHONY: FORCE
$(REVISION_H): FORCE
	@mkdir -p $(dir $@)
	@if [ '$(MG_REVISION)' != unknown ] || [ ! -f $@ ]; then \
	  printf '#define MG_REVISION "%s"\n' '$(MG_REVISION)' >$@.tmp; \
	  cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp; fi
$(BUILD)/libcommon/base/version.o: $(REVISION_H)
$(BUILD)/libcommon/base/version.o: CFLAGS_BASE += -I$(BUILD)/gen $(COMM_DEFS)

# --- make STATIC=1 ---
include mk/static.mk

# --- man pages and bash completion, generated from the built tools ---
MAN_PAGES  := $(TOOLS:$(BIN)/%=$(BUILD)/man/%.1)
COMPLETION := $(BUILD)/bash-completion/mgtools
$(BUILD)/man/%.1: $(BIN)/% docs/man/%.1.in scripts/gen-man.sh
	@mkdir -p $(dir $@)
	$(say) MAN $@
	$(Q)scripts/gen-man.sh $< docs/man/$*.1.in $(MG_RELEASE) >$@.tmp && mv $@.tmp $@
$(COMPLETION): $(TOOLS) scripts/gen-completion.sh
	@mkdir -p $(dir $@)
	$(say) GEN $@
	$(Q)scripts/gen-completion.sh $(TOOLS) >$@.tmp && mv $@.tmp $@
all: $(MAN_PAGES) $(COMPLETION)

# --- install / uninstall ---
PREFIX         ?= /usr/local
BINDIR         ?= $(PREFIX)/bin
DATADIR        ?= $(PREFIX)/share
MANDIR         ?= $(DATADIR)/man
DOCDIR         ?= $(DATADIR)/doc/mgtools
COMPLETIONSDIR ?= $(DATADIR)/bash-completion/completions
INSTALL        ?= install
# The documents installed under DOCDIR (the project has no licence file yet): README.md and,
# under DOCDIR/docs, the pages its links point to (docs/*.md), so the links resolve there too.
DOC_FILES      := README.md
DOC_PAGES      := $(sort $(wildcard docs/*.md))
TOOL_NAMES     := $(notdir $(TOOLS))
# bash-completion loads completions/NAME for command NAME: the file under the first tool's
# name, links under the others'.
COMPLETION_FILE  := $(firstword $(TOOL_NAMES))
COMPLETION_LINKS := $(wordlist 2,$(words $(TOOL_NAMES)),$(TOOL_NAMES))

.PHONY: install uninstall dist distcheck test-install
install: $(TOOLS) $(MAN_PAGES) $(COMPLETION)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR)/docs \
	  $(DESTDIR)$(COMPLETIONSDIR)
	$(INSTALL) -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 644 $(DOC_FILES) $(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 644 $(DOC_PAGES) $(DESTDIR)$(DOCDIR)/docs
	$(INSTALL) -m 644 $(COMPLETION) $(DESTDIR)$(COMPLETIONSDIR)/$(COMPLETION_FILE)
	for n in $(COMPLETION_LINKS); do \
	  ln -sf $(COMPLETION_FILE) $(DESTDIR)$(COMPLETIONSDIR)/$$n || exit 1; done

# Removes what install wrote, and DOCDIR (ours alone); the shared folders stay.
uninstall:
	rm -f $(TOOL_NAMES:%=$(DESTDIR)$(BINDIR)/%) $(TOOL_NAMES:%=$(DESTDIR)$(MANDIR)/man1/%.1) \
	  $(TOOL_NAMES:%=$(DESTDIR)$(COMPLETIONSDIR)/%) $(DOC_FILES:%=$(DESTDIR)$(DOCDIR)/%) \
	  $(DOC_PAGES:%=$(DESTDIR)$(DOCDIR)/%)
	if [ -d $(DESTDIR)$(DOCDIR)/docs ]; then rmdir $(DESTDIR)$(DOCDIR)/docs; fi
	if [ -d $(DESTDIR)$(DOCDIR) ]; then rmdir $(DESTDIR)$(DOCDIR); fi

test-install: $(TOOLS) $(MAN_PAGES) $(COMPLETION)
	tests/install/run.sh

# --- release tarball ---
DIST_NAME := mgtools-$(MG_RELEASE)
DISTCHECK_TESTS ?= test
dist:
	scripts/make-dist.sh $(DIST_NAME) '$(MG_REVISION)'
distcheck: dist
	scripts/distcheck.sh $(DIST_NAME).tar.gz $(DISTCHECK_TESTS)
