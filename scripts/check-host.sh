#!/usr/bin/env bash
# check-host.sh: `make check-host`. A real program's own regression suite under the library:
# CPython's (Debian's /usr/bin/python3 -m test, package libpython3.11-testsuite), the modules
# in test/host/tests.txt, run up to three times:
#   plain   without the library
#   fifo    every process the suite starts carries the library (LD_PRELOAD, its FIFO in a
#           directory of its own, ROUNDTRIM_GC_ROUNDS=1, ROUNDTRIM_SIGNAL=none), while
#           test/host/storm writes round and trim lines into every FIFO there, nonstop
#   signal  the same with the signal trigger on (SIGRTMIN+8); the storm also sends the signal,
#           only to processes whose maps hold the library and whose status file names it
# and compares each library run with the plain one (test/host/compare.py): same test cases
# run and skipped per module, no failure, error, crash, timeout or altered environment that
# the plain run does not have. Before that, the reproductions in test/host/repro/ (one per
# way the library has been seen to show itself) run plain and under the library.
# Installs nothing: scripts/deps.sh does (libpython3.11-testsuite).
#
# Usage: scripts/check-host.sh [--phases LIST] [--no-repro] [-- REGRTEST-ARGS...]
#   --phases LIST  comma-separated among plain, fifo, signal (default: plain,fifo, what users
#                  get by default; the signal phase shows the documented limits of the signal
#                  trigger, off by default: its blocked signal in test_signal's masks; the
#                  comparison needs plain)
#   --no-repro     skip the reproductions
#   REGRTEST-ARGS  instead of test/host/tests.txt, e.g. -- -v test_subprocess -m 'test_close*'
# Environment:
#   CHECK_HOST_INTERVAL_MS  the storm's pause between two sweeps (default 20)
#   CHECK_HOST_TEST_TIMEOUT regrtest --timeout, per test module, seconds (default 600)
#   CHECK_HOST_RUN_TIMEOUT  limit of one whole run, seconds (default 1500)
#   CHECK_HOST_JOBS         regrtest -j, the same for every run (default 2)
#   BUILD                   build directory (default build)
# Output: $BUILD/check-host/<phase>/ (regrtest.log, junit.xml, storm.txt, storm.log, ...),
# $BUILD/check-host/repro/, and the summary on stdout and in $BUILD/check-host/summary.txt.
# Exit status: 0 when the library changed nothing, 1 when it did, 2 on a usage error.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PYTHON=/usr/bin/python3
STORM=$BUILD_DIR/test/host/storm
OUT=$BUILD_DIR/check-host
INTERVAL_MS=${CHECK_HOST_INTERVAL_MS:-20}
TEST_TIMEOUT=${CHECK_HOST_TEST_TIMEOUT:-600}
RUN_TIMEOUT=${CHECK_HOST_RUN_TIMEOUT:-1500}
JOBS=${CHECK_HOST_JOBS:-2}
# test_socket's ThreadedVSOCKSocketStreamTest waits forever in accept() on a virtual machine
# whose host does not connect (here), with or without the library.
IGNORED=(ThreadedVSOCKSocketStreamTest)
# regrtest's resources: cpu (longer runs) and subprocess; no network, no GUI, no audio.
RESOURCES=cpu,subprocess

usage() {
	echo "usage: scripts/check-host.sh [--phases plain,fifo,signal] [--no-repro] [-- REGRTEST-ARGS...]" >&2
	exit 2
}

phases=(plain fifo)
repro=1
regrtest_args=()
while (($#)); do
	case $1 in
	--phases)
		(($# >= 2)) || usage
		IFS=, read -r -a phases <<<"$2"
		shift 2
		;;
	--no-repro)
		repro=0
		shift
		;;
	--)
		shift
		regrtest_args=("$@")
		break
		;;
	-h | --help) usage ;;
	*)
		echo "check-host.sh: unknown argument: $1" >&2
		usage
		;;
	esac
done
for phase in "${phases[@]}"; do
	case $phase in
	plain | fifo | signal) ;;
	*)
		echo "check-host.sh: unknown phase: $phase" >&2
		usage
		;;
	esac
done
((${#regrtest_args[@]})) || regrtest_args=(--fromfile "$ROOT/test/host/tests.txt")

[[ -x $PYTHON ]] || die "$PYTHON is missing: run scripts/deps.sh"
"$PYTHON" -c 'import test.regrtest, test.test_subprocess' 2>/dev/null ||
	die "CPython's test suite is missing (libpython3.11-testsuite): run scripts/deps.sh"
[[ -f $LIB ]] || die "$LIB is missing: run make check-host"
[[ -x $STORM ]] || die "$STORM is missing: run make check-host"

# Only the settings named here reach the runs.
for var in $(compgen -e); do
	case $var in
	ROUNDTRIM_* | NVFLARE_* | LD_PRELOAD | MALLOC_CONF | MALLOC_ARENA_MAX | GLIBC_TUNABLES) unset "$var" ;;
	esac
done

rm -rf "$OUT"
mkdir -p "$OUT"
status=0

# library_env PHASE-DIR SIGNAL: the environment of a run under the library, one word a line.
library_env() {
	printf '%s\n' "LD_PRELOAD=$LIB" "ROUNDTRIM_FIFO=$1/fifo/%p.fifo" "ROUNDTRIM_GC_ROUNDS=1" \
		"ROUNDTRIM_SIGNAL=$2"
}

# survivors PHASE-DIR: kills, and lists, the processes that still hold a FIFO of this run.
survivors() {
	local fifo pid found=0
	for fifo in "$1"/fifo/*.fifo; do
		[[ -e $fifo ]] || continue
		pid=$(basename "$fifo" .fifo)
		[[ -d /proc/$pid ]] || continue
		grep -qF "$LIB" "/proc/$pid/maps" 2>/dev/null || continue
		echo "$pid $(cat "/proc/$pid/comm" 2>/dev/null) (state $(awk '/^State:/ { print $2 }' \
			"/proc/$pid/status" 2>/dev/null), ShdPnd $(awk '/^ShdPnd:/ { print $2 }' \
			"/proc/$pid/status" 2>/dev/null))"
		kill -KILL "$pid" 2>/dev/null || true
		found=1
	done
	return $((!found))
}

# run_phase NAME: one regrtest run; its files in $OUT/NAME.
run_phase() {
	local name=$1 dir=$OUT/$1 storm_pid='' rc start
	local -a env_words=() storm_args=()
	mkdir -p "$dir/work"
	mkdir -m 0700 "$dir/fifo"
	case $name in
	fifo) mapfile -t env_words < <(library_env "$dir" none) ;;
	signal)
		mapfile -t env_words < <(library_env "$dir" RTMIN+8)
		storm_args=(--signal)
		;;
	esac
	if [[ $name != plain ]]; then
		"$STORM" --interval-ms "$INTERVAL_MS" "${storm_args[@]}" --log "$dir/storm.log" \
			"$dir/fifo" >"$dir/storm.txt" &
		storm_pid=$!
	fi
	local -a cmd=("$PYTHON" -m test -j"$JOBS" --timeout "$TEST_TIMEOUT" -u "$RESOURCES"
		--junit-xml "$dir/junit.xml")
	local ignored
	for ignored in "${IGNORED[@]}"; do
		cmd+=(-i "$ignored")
	done
	cmd+=("${regrtest_args[@]}")
	printf '%q ' env "${env_words[@]}" "${cmd[@]}" >"$dir/command.txt"
	echo >>"$dir/command.txt"
	note "$name: $(cat "$dir/command.txt")"
	start=$SECONDS
	rc=0
	# timeout and env stay outside the library; timeout ends the whole process group.
	(cd "$dir/work" && timeout -k 30 "$RUN_TIMEOUT" env "${env_words[@]}" "${cmd[@]}") \
		>"$dir/regrtest.log" 2>&1 || rc=$?
	echo "$((SECONDS - start))" >"$dir/seconds"
	if [[ -n $storm_pid ]]; then
		kill -TERM "$storm_pid"
		wait "$storm_pid" || true
	fi
	note "$name: regrtest exited $rc after $((SECONDS - start)) s"
	((rc == 124 || rc == 137)) && echo "$name: the whole run timed out after $RUN_TIMEOUT s" >>"$OUT/problems"
	if [[ $name != plain ]] && survivors "$dir" >"$dir/survivors.txt"; then
		echo "$name: processes still alive after the run (killed): $(paste -sd';' "$dir/survivors.txt")" \
			>>"$OUT/problems"
	fi
	find "$dir/fifo" -mindepth 1 -printf '%f\n' | sort >"$dir/left-behind.txt"
}

# run_repro FILE: the reproduction plain and under the library (signal trigger on, the
# default); one line of the table.
run_repro() {
	local file=$1 name plain_rc=0 lib_rc=0 dir=$OUT/repro
	local -a env_words
	name=$(basename "$file" .py)
	mapfile -t env_words < <(library_env "$dir" RTMIN+8)
	# -B: no __pycache__ in the source tree.
	timeout -k 5 60 "$PYTHON" -B "$file" >"$dir/$name.plain.txt" 2>&1 || plain_rc=$?
	timeout -k 5 60 env "${env_words[@]}" "$PYTHON" -B "$file" >"$dir/$name.library.txt" 2>&1 ||
		lib_rc=$?
	local verdict=ok
	if ((plain_rc != 0)); then
		verdict="INVALID (fails plain: $(head -c 200 "$dir/$name.plain.txt"))"
		status=1
	elif ((lib_rc == 124 || lib_rc == 137)); then
		verdict="HANG (killed after 60 s)"
		status=1
	elif ((lib_rc == 3)); then
		# A documented limit of a setting that is off by default: shown, not failed.
		verdict=$(grep -m1 '^LIMIT:' "$dir/$name.library.txt" || echo "exit $lib_rc")
	elif ((lib_rc != 0)); then
		verdict=$(grep -m1 '^BUG:' "$dir/$name.library.txt" || echo "exit $lib_rc")
		status=1
	fi
	printf '%-28s %s\n' "$name" "${verdict:0:300}" >>"$OUT/repro.txt"
}

if ((repro)); then
	mkdir -p "$OUT/repro"
	mkdir -m 0700 "$OUT/repro/fifo"
	for file in "$ROOT"/test/host/repro/[a-z]*.py; do
		run_repro "$file"
	done
fi

for phase in "${phases[@]}"; do
	run_phase "$phase"
done

{
	echo "== check-host: CPython $("$PYTHON" -c 'import platform; print(platform.python_version())')" \
		"regression tests, plain and under $LIB"
	for phase in "${phases[@]}"; do
		line="$phase: $(cat "$OUT/$phase/seconds") s"
		if [[ -f $OUT/$phase/storm.txt ]]; then
			line+=", storm every $INTERVAL_MS ms: $(awk '$1 == "pids" { p = $2 } $1 == "lines" { l = $2 }
				$1 == "signals" { s = $2 } END { printf "%d processes stormed, %d lines written", p, l;
				if (s != "") printf ", %d signals sent", s }' "$OUT/$phase/storm.txt")"
			line+=", $(wc -l <"$OUT/$phase/left-behind.txt") files left in fifo/"
		fi
		echo "$line"
	done
	echo
	if [[ -d $OUT/plain ]] && ((${#phases[@]} > 1)); then
		compare_dirs=()
		for phase in "${phases[@]}"; do
			compare_dirs+=("$OUT/$phase")
		done
		"$PYTHON" "$ROOT/test/host/compare.py" "${compare_dirs[@]}" || status=1
	elif [[ ! -d $OUT/plain ]]; then
		echo "no plain run: nothing compared"
	fi
	if [[ -f $OUT/repro.txt ]]; then
		echo
		echo "== reproductions (test/host/repro/; plain, then under the library with the signal trigger on)"
		cat "$OUT/repro.txt"
	fi
	if [[ -f $OUT/problems ]]; then
		echo
		cat "$OUT/problems"
		status=1
	fi
	echo
	if ((status)); then
		echo "check-host: FAILED (raw logs in $OUT)"
	else
		echo "check-host: the library changed nothing (raw logs in $OUT)"
	fi
} >"$OUT/summary.txt"
cat "$OUT/summary.txt"
exit "$status"
