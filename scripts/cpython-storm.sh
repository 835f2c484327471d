#!/usr/bin/env bash
# cpython-storm.sh: CPython's own test suites under a round storm (issue 24; roundtrim(7), PYTHON).
# Runs Debian's libpython3.11-testsuite tests (test_gc, test_threading, test_weakref,
# test_finalization, test_faulthandler, test_subprocess, test_os by default; or the names given)
# twice with regrtest: without the library, then with it preloaded and a round written into the
# FIFO of every process that carries it every STORM_MS milliseconds (default 5), so that the
# Python steps run all the time, on the main thread or, while it waits in a C call, on the
# library's thread. Prints, for each run, regrtest's result and the test cases it counted
# (its JUnit XML), the tests that failed, and how many rounds acted and how many steps ran.
# STORM_KEEP=DIR keeps both runs' logs and XML there. Not part of make check: it takes minutes.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PYTHON=/usr/bin/python3
STORM_MS=${STORM_MS:-5}
TESTS=("$@")
if [[ ${#TESTS[@]} == 0 ]]; then
	TESTS=(test_gc test_threading test_weakref test_finalization test_faulthandler
		test_subprocess test_os)
fi
[[ -f $LIB ]] || die "build the library first (make all)"
[[ -d /usr/lib/python3.11/test ]] || die "no CPython test suite: install libpython3.11-testsuite"

WORK=$(mktemp -d)
STORM_PID=
cleanup() {
	if [[ -n $STORM_PID ]]; then
		kill "$STORM_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

# count XML: the test cases regrtest ran, and those that failed or erred.
count() {
	"$PYTHON" - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET
cases = failed = skipped = 0
for case in ET.parse(sys.argv[1]).iter("testcase"):
    cases += 1
    if case.find("failure") is not None or case.find("error") is not None:
        failed += 1
    if case.find("skipped") is not None:
        skipped += 1
print("cases=%d failed=%d skipped=%d" % (cases, failed, skipped))
PY
}

# run NAME [ENV...]: one regrtest run of TESTS; prints its summary line.
run() {
	local name=$1
	shift
	local status=0
	env "$@" "$PYTHON" -m test --junit-xml "$WORK/$name.xml" "${TESTS[@]}" \
		>"$WORK/$name.log" 2>&1 || status=$?
	printf '%-8s exit=%d %s %s\n' "$name" "$status" "$(count "$WORK/$name.xml")" \
		"$(grep -E '^(Tests result|== Tests result)' "$WORK/$name.log" | tail -1)"
	grep -E -A1 '^[0-9]+ tests? failed' "$WORK/$name.log" || true
	grep -E '^(FAIL|ERROR): ' "$WORK/$name.log" || true
	if [[ -n ${STORM_KEEP:-} ]]; then
		cp "$WORK/$name.log" "$WORK/$name.xml" "$STORM_KEEP/"
	fi
}

run plain
mkdir "$WORK/fifos"
# The storm: a round into every FIFO there, every STORM_MS ms; a FIFO whose process is gone
# (or not yet reading) is skipped.
"$PYTHON" - "$WORK/fifos" "$STORM_MS" <<'PY' &
import os, sys, time
d, every = sys.argv[1], float(sys.argv[2]) / 1000
while True:
    for name in os.listdir(d):
        if name.endswith(".fifo"):
            try:
                fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                os.write(fd, b"round\n")
            except OSError:
                pass
            os.close(fd)
    time.sleep(every)
PY
STORM_PID=$!
run storm LD_PRELOAD="$LIB" ROUNDTRIM_FIFO="$WORK/fifos/%p.fifo" ROUNDTRIM_STATS="$WORK/fifos/%p.jsonl"
kill "$STORM_PID"
STORM_PID=
printf 'rounds acted: %s; steps run: %s\n' \
	"$(cat "$WORK"/fifos/*.jsonl 2>/dev/null | grep -c '"python":"pending"' || true)" \
	"$(cat "$WORK"/fifos/*.jsonl 2>/dev/null | grep -c '"trigger":"python"' || true)"
