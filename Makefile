# roundtrim: build, test, check, bench, demo, install. Nothing else builds the project.
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
BUILD ?= build
OPT ?= -O2 -g

WARN := -Wall -Wextra -Werror
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -fPIC -Ipolicy -Ishim
# The shim: hidden by default (only exports.map's symbols leave the object); initial-exec TLS,
# which is right for a preloaded object; and no builtin malloc family, or GCC may turn
# malloc+memset inside our own calloc wrapper into a call to calloc.
SHIM_CFLAGS := $(BASE_CFLAGS) -fvisibility=hidden -ftls-model=initial-exec \
	-fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free
SHIM_LDFLAGS := -shared -pthread -Wl,--version-script=shim/exports.map -Wl,-z,nodelete \
	-Wl,-z,now -Wl,--no-undefined -Wl,-z,defs
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
WORKLOADS := $(WORKLOAD_SRC:test/workloads/%.c=$(BUILD)/test/workloads/%) \
	$(BUILD)/test/workloads/libstress_dso.so
BENCHES := $(BENCH_SRC:test/bench/%.c=$(BUILD)/test/bench/%) $(BUILD)/test/bench/libempty.so

.PHONY: all test check lint bench demo install uninstall clean format deps stress
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

# The stress tests (test/integration/test_stress.c): make check runs them at a hundredth of
# their sizes; make stress at full size (10^6 FIFO rounds, 10^5 signals, 10^4 fork+exec, ...),
# one at a time: 4 to 8 minutes on 2 cores, by their load. Their shared object allocates in its
# constructor and destructor.
$(BUILD)/test/workloads/libstress_dso.so: test/workloads/dso/stress_dso.c test/workloads/pattern.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -fvisibility=hidden -o $@ $<

stress: $(LIB) $(INTEGRATION) $(WORKLOADS)
	STRESS_DIVISOR=1 $(INTEGRATION) --filter 'stress/*' --jobs 1

# Figure 5's floor: what preloading any shared object costs.
$(BUILD)/test/bench/libempty.so: test/bench/preload/empty.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $<

$(BUILD)/test/bench/%: test/bench/%.c $(wildcard test/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $< -pthread -ldl -lm

test: check
# Unit tests first: they are fast and say precisely which rule broke.
check: $(LIB) $(UNIT) $(INTEGRATION) $(WORKLOADS) lint
	$(UNIT)
	$(INTEGRATION) --filter '!(bench/*)'
# The quick bench alone, last: it keeps both cores busy for up to a minute, and the other
# tests' bounded waits should not compete with it for them.
	$(INTEGRATION) --filter 'bench/*'

# Shell scripts pass shellcheck; the man page renders without a warning.
lint:
	shellcheck -x scripts/*.sh scripts/roundtrim test/fixtures/*.sh .ci/run
	mandoc -T lint -W warning man/roundtrim.7 man/roundtrim.1

bench: $(LIB) $(WORKLOADS) $(BENCHES)
	scripts/bench.sh

demo: $(LIB) $(WORKLOADS)
	scripts/demo.sh

deps:
	scripts/deps.sh

install: $(LIB)
	install -D -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libroundtrim.so
	install -D -m 0644 shim/roundtrim.h $(DESTDIR)$(PREFIX)/include/roundtrim.h
	install -D -m 0644 man/roundtrim.7 $(DESTDIR)$(PREFIX)/share/man/man7/roundtrim.7
	install -D -m 0755 scripts/roundtrim $(DESTDIR)$(PREFIX)/bin/roundtrim
	install -D -m 0644 man/roundtrim.1 $(DESTDIR)$(PREFIX)/share/man/man1/roundtrim.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libroundtrim.so $(DESTDIR)$(PREFIX)/include/roundtrim.h \
		$(DESTDIR)$(PREFIX)/share/man/man7/roundtrim.7 $(DESTDIR)$(PREFIX)/bin/roundtrim \
		$(DESTDIR)$(PREFIX)/share/man/man1/roundtrim.1

format:
	clang-format -i policy/*.[ch] shim/*.[ch] test/*/*.[ch]

clean:
	rm -rf $(BUILD)
