# roundtrim: build, test, check, bench, demo, install. Nothing else builds the project.
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
BUILD ?= build
OPT ?= -O2 -g
# The release, from the one place the library reports it (roundtrim_version()).
VERSION := $(shell sed -n 's/^\#define RT_VERSION "\(.*\)"$$/\1/p' shim/rt_shim.h)
# The ABI: bump on an incompatible change to roundtrim.h or shim/exports.map, which renames the
# SONAME link that LD_PRELOAD lines and patched launchers name.
SOVERSION := 0
SONAME := libroundtrim.so.$(SOVERSION)

WARN := -Wall -Wextra -Werror
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -fPIC -Ipolicy -Ishim
# The shim: hidden by default (only exports.map's symbols leave the object); initial-exec TLS,
# which is right for a preloaded object; and no builtin malloc family, or GCC may turn
# malloc+memset inside our own calloc wrapper into a call to calloc.
SHIM_CFLAGS := $(BASE_CFLAGS) -fvisibility=hidden -ftls-model=initial-exec \
	-fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free
SHIM_LDFLAGS := -shared -pthread -Wl,-soname,$(SONAME) -Wl,--version-script=shim/exports.map \
	-Wl,-z,nodelete -Wl,-z,now -Wl,--no-undefined -Wl,-z,defs
TEST_CFLAGS := $(BASE_CFLAGS) -Itest/integration -DRT_BUILD_DIR='"$(abspath $(BUILD))"' \
	-DRT_SOURCE_DIR='"$(abspath .)"'

POLICY_SRC := $(wildcard policy/*.c)
SHIM_SRC := $(wildcard shim/*.c)
UNIT_SRC := $(wildcard test/unit/*.c)
INTEGRATION_SRC := $(wildcard test/integration/*.c)
WORKLOAD_SRC := $(wildcard test/workloads/*.c)
BENCH_SRC := $(wildcard test/bench/*.c)

POLICY_OBJ := $(POLICY_SRC:%.c=$(BUILD)/%.o)
SHIM_OBJ := $(SHIM_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libroundtrim.so
UNIT := $(BUILD)/test/unit-tests
INTEGRATION := $(BUILD)/test/integration-tests
WORKLOADS := $(WORKLOAD_SRC:test/workloads/%.c=$(BUILD)/test/workloads/%)
BENCHES := $(BENCH_SRC:test/bench/%.c=$(BUILD)/test/bench/%) $(BUILD)/test/bench/libempty.so
# The command as `make install` writes it (below), and a copy baked with a library path in the
# build tree, which test/integration/test_install.c runs.
COMMAND := $(BUILD)/gen/roundtrim
BAKED_COMMAND := $(BUILD)/test/baked/roundtrim

.PHONY: all test check lint bench demo install uninstall deb check-deb clean format deps FORCE
all: $(LIB) $(WORKLOADS) $(BENCHES)

$(BUILD)/policy/%.o: policy/%.c $(wildcard policy/*.h) Makefile
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c -o $@ $<

$(BUILD)/shim/%.o: shim/%.c $(wildcard shim/*.h policy/*.h) Makefile
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c -o $@ $<

$(LIB): $(SHIM_OBJ) $(POLICY_OBJ) shim/exports.map
	$(CC) $(SHIM_LDFLAGS) -o $@ $(SHIM_OBJ) $(POLICY_OBJ)

$(UNIT): $(UNIT_SRC) $(POLICY_OBJ)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $(UNIT_SRC) $(POLICY_OBJ) -lcriterion

$(INTEGRATION): $(INTEGRATION_SRC) $(POLICY_OBJ) $(wildcard test/integration/*.h test/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $(INTEGRATION_SRC) $(POLICY_OBJ) -lcriterion -pthread

$(BUILD)/test/workloads/%: test/workloads/%.c $(wildcard test/workloads/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $< -pthread -ldl -lm

# Figure 5's floor: what preloading any shared object costs.
$(BUILD)/test/bench/libempty.so: test/bench/preload/empty.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $<

$(BUILD)/test/bench/%: test/bench/%.c $(wildcard test/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $< -pthread -ldl -lm

test: check
# Unit tests first: they are fast and say precisely which rule broke.
check: $(LIB) $(UNIT) $(INTEGRATION) $(WORKLOADS) $(BAKED_COMMAND) lint
	$(UNIT)
	$(INTEGRATION) --filter '!(bench/*)'
# The package, installed and purged in a throwaway copy of this machine: CI runs as root.
ifeq ($(shell id -u),0)
	$(MAKE) --no-print-directory check-deb
else
	@echo "check-deb: not run: it needs root (dpkg -i into an overlay of /)"
endif
# The quick bench alone, last: it keeps both cores busy for up to a minute, and the other
# tests' bounded waits should not compete with it for them.
	$(INTEGRATION) --filter 'bench/*'

# Shell scripts pass shellcheck; the man page renders without a warning.
lint:
	shellcheck -x scripts/*.sh scripts/deb/*.sh scripts/roundtrim test/fixtures/*.sh .ci/run
	mandoc -T lint -W warning man/roundtrim.7 man/roundtrim.1

bench: $(LIB) $(WORKLOADS) $(BENCHES)
	scripts/bench.sh

demo: $(LIB) $(WORKLOADS)
	scripts/demo.sh

deps:
	scripts/deps.sh

# ---------------------------------------------------------------------------------------------
# Install and package: install, uninstall, deb, check-deb.
#
# The library is installed as LIBDIR/libroundtrim.so.VERSION, with the SONAME link
# libroundtrim.so.SOVERSION beside it (the path LD_PRELOAD lines and `roundtrim patch` name: it
# stays valid across upgrades of the same ABI, where the versioned file does not), and the link
# libroundtrim.so for -lroundtrim. LIBDIR is the multiarch directory: DEB_HOST_MULTIARCH from the
# environment (dpkg-buildpackage), else dpkg-architecture's, else the compiler's, else none.
ifndef DEB_HOST_MULTIARCH
DEB_HOST_MULTIARCH := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || \
	$(CC) -print-multiarch 2>/dev/null)
endif
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib$(if $(DEB_HOST_MULTIARCH),/$(DEB_HOST_MULTIARCH))
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
REALNAME := libroundtrim.so.$(VERSION)
# What the command preloads and roundtrim.pc's preload variable says.
PRELOAD_LIB = $(LIBDIR)/$(SONAME)

# roundtrim.pc and rt_install.h (PRELOAD_LIB, for the C command) are rewritten only when their
# text changes: what depends on them is rebuilt after `make install PREFIX=...`, and only then.
# $(call write_if_changed,FILE) after a command that wrote FILE.tmp.
write_if_changed = if cmp -s $(1).tmp $(1); then rm -f $(1).tmp; else mv -f $(1).tmp $(1); fi

$(BUILD)/gen/rt_install.h: FORCE
	@mkdir -p $(@D)
	@printf '%s' '$(PRELOAD_LIB)' | grep -Eqx '/[A-Za-z0-9_./+@,=-]+' || { echo \
		"LIBDIR=$(LIBDIR): LD_PRELOAD needs an absolute path without blanks or colons" >&2; \
		exit 1; }
	@printf '%s\n' '/* rt_install.h: written by the Makefile: the library path that the installed' \
		' * command preloads unless ROUNDTRIM_LIB is set (the SONAME link in LIBDIR). */' \
		'#define RT_INSTALL_PRELOAD_LIB "$(PRELOAD_LIB)"' >$@.tmp
	@$(call write_if_changed,$@)

$(BUILD)/gen/roundtrim.pc: scripts/deb/roundtrim.pc.in FORCE
	@mkdir -p $(@D)
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
		-e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
		-e 's|@SONAME@|$(SONAME)|' -e 's|@VERSION@|$(VERSION)|' $< >$@.tmp
	@$(call write_if_changed,$@)

# The bash command with the library path on its INSTALLED_LIB= line. $(call bake,LIBRARY)
define bake
	@mkdir -p $(@D)
	sed 's|^INSTALLED_LIB=$$|INSTALLED_LIB=$(1)|' $< >$@.tmp
	@grep -qx 'INSTALLED_LIB=$(1)' $@.tmp || { echo "$<: no INSTALLED_LIB= line" >&2; exit 1; }
	chmod 0755 $@.tmp && mv -f $@.tmp $@
endef

$(COMMAND): scripts/roundtrim $(BUILD)/gen/rt_install.h
	$(call bake,$(PRELOAD_LIB))

$(BAKED_COMMAND): scripts/roundtrim $(LIB)
	$(call bake,$(abspath $(@D))/$(SONAME))
	ln -sfn ../../libroundtrim.so $(@D)/$(SONAME)

install: $(LIB) $(COMMAND) $(BUILD)/gen/roundtrim.pc
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/$(REALNAME)
	ln -sfn $(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/libroundtrim.so
	install -D -m 0644 shim/roundtrim.h $(DESTDIR)$(INCLUDEDIR)/roundtrim.h
	install -D -m 0644 $(BUILD)/gen/roundtrim.pc $(DESTDIR)$(PKGCONFIGDIR)/roundtrim.pc
	install -D -m 0755 $(COMMAND) $(DESTDIR)$(BINDIR)/roundtrim
	install -D -m 0644 man/roundtrim.1 $(DESTDIR)$(MANDIR)/man1/roundtrim.1
	install -D -m 0644 man/roundtrim.7 $(DESTDIR)$(MANDIR)/man7/roundtrim.7
ifeq ($(DESTDIR)$(shell id -u),0)
	ldconfig
endif

# The files of older versions go too: libroundtrim.so straight in PREFIX/lib.
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libroundtrim.so $(DESTDIR)$(PREFIX)/lib/libroundtrim.so \
		$(DESTDIR)$(INCLUDEDIR)/roundtrim.h $(DESTDIR)$(PKGCONFIGDIR)/roundtrim.pc \
		$(DESTDIR)$(BINDIR)/roundtrim $(DESTDIR)$(MANDIR)/man1/roundtrim.1 \
		$(DESTDIR)$(MANDIR)/man7/roundtrim.7
ifeq ($(DESTDIR)$(shell id -u),0)
	ldconfig
endif

# The Debian package: `make install` with PREFIX=/usr into a staging tree, then the Debian parts
# (scripts/deb/build-deb.sh): plain dpkg-deb, no debhelper.
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB := $(BUILD)/roundtrim_$(VERSION)_$(DEB_ARCH).deb
DEB_STAGE := $(BUILD)/deb

deb: $(LIB)
	rm -rf $(DEB_STAGE) $(DEB)
	$(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(DEB_STAGE))/debian/roundtrim
	scripts/deb/build-deb.sh $(DEB_STAGE) $(DEB) $(VERSION) $(DEB_ARCH) $(SONAME)

# Installs the package into an overlay of / (or, where none can be mounted, into this machine),
# runs a short frag workload through the installed command, purges it, checks nothing is left.
check-deb: deb $(BUILD)/test/workloads/frag
	timeout 600 scripts/deb/check-deb.sh $(DEB) $(BUILD)/test/workloads/frag

format:
	clang-format -i policy/*.[ch] shim/*.[ch] test/*/*.[ch]

clean:
	rm -rf $(BUILD)
