# roundtrim: build, test, check, bench, demo, install. Nothing else builds the project.
# `make check` also runs every libFuzzer target of test/fuzz/ briefly; `make fuzz` runs them
# longer (see the section at the end).
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
WORKLOADS := $(WORKLOAD_SRC:test/workloads/%.c=$(BUILD)/test/workloads/%)
BENCHES := $(BENCH_SRC:test/bench/%.c=$(BUILD)/test/bench/%) $(BUILD)/test/bench/libempty.so

.PHONY: all test check lint bench demo install uninstall clean format deps
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

$(INTEGRATION): $(INTEGRATION_SRC) $(wildcard test/integration/*.h test/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $(INTEGRATION_SRC) -lcriterion -pthread

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
check: $(LIB) $(UNIT) $(INTEGRATION) $(WORKLOADS) lint fuzz-check
	$(UNIT)
	$(INTEGRATION) --filter '!(bench/*)'
# The quick bench alone, last: it keeps both cores busy for up to a minute, and the other
# tests' bounded waits should not compete with it for them.
	$(INTEGRATION) --filter 'bench/*'

# Shell scripts pass shellcheck; the man page renders without a warning.
lint:
	shellcheck -x scripts/*.sh scripts/roundtrim test/fixtures/*.sh test/fuzz/*.sh .ci/run
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

# ---------------------------------------------------------------------------------------------
# Fuzzing, with Debian 12's clang 14 (clang-14, libclang-rt-14-dev).

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
	-fsanitize=address,undefined -fno-sanitize-recover=all

# Kept after a build, as make would delete them as mere intermediates of the targets.
.SECONDARY: $(FUZZ_POLICY_OBJ)
$(FUZZ_BUILD)/policy/%.o: policy/%.c $(wildcard policy/*.h) Makefile
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/fuzz.h $(FUZZ_POLICY_OBJ)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_POLICY_OBJ)

.PHONY: fuzz fuzz-check
fuzz-check: $(FUZZ_BIN)
	@for name in $(FUZZ_NAMES); do \
		test/fuzz/run.sh check $(FUZZ_BUILD) $$name $(FUZZ_CHECK_RUNS) || exit 1; done

fuzz: $(FUZZ_BIN)
	@for name in $(FUZZ_NAMES); do \
		test/fuzz/run.sh long $(FUZZ_BUILD) $$name $(FUZZ_SECONDS) || exit 1; done
