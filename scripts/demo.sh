#!/usr/bin/env bash
# demo.sh: the fragmenting workload twice, without and with roundtrim, RSS side by side.
# `make demo` builds what it runs first.
#
# The script drives the rounds. After each round of the workload (build/test/workloads/frag,
# which prints "round R live_kib=L rss_kib=S" and then waits for a line on stdin), it reads the
# process's RSS from /proc/PID/status and lets the next round begin. In the run with roundtrim
# it first tells the library about the round through the process's FIFO and waits until the
# round's line appears in the stats file, so that the RSS read is the one after the trim.
#
# It leaves the run's stats in build/demo/stats.jsonl and `roundtrim report`'s summary and
# plot in build/demo/report.txt and build/demo/report.png.
#
# Environment: DEMO_THREADS (2), DEMO_MIB (churn per round, 256), DEMO_ROUNDS (8),
# BUILD (build directory, default build).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
FRAG=$BUILD_DIR/test/workloads/frag
THREADS=${DEMO_THREADS:-2}
MIB=${DEMO_MIB:-256}
ROUNDS=${DEMO_ROUNDS:-8}
# The longest wait, in seconds, for one round of the workload and for roundtrim's answer.
STEP_TIMEOUT=60


for value in "$THREADS" "$MIB" "$ROUNDS"; do
	[[ $value =~ ^[1-9][0-9]*$ ]] || die "DEMO_THREADS, DEMO_MIB and DEMO_ROUNDS must be positive integers"
done
[[ -f $LIB && -x $FRAG ]] || die "$LIB or $FRAG is missing: run make demo"

SCRATCH=$(mktemp -d)
PID=""     # the workload now running, if any
TO_FD=""   # its stdin
FROM_FD="" # its stdout

cleanup() {
	if [[ -n $PID ]] && kill -0 "$PID" 2>/dev/null; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The child's environment: none of the caller's preloads or roundtrim/NVFlare settings.
CLEAN_ENV=(-u LD_PRELOAD)
while IFS= read -r name; do
	if [[ $name == ROUNDTRIM_* || $name == NVFLARE_* ]]; then
		CLEAN_ENV+=(-u "$name")
	fi
done < <(compgen -e)

# start_workload NAME [NAME=VALUE...]: starts frag with those variables, stdin and stdout on
# named pipes held by TO_FD and FROM_FD.
start_workload() {
	local name=$1
	shift
	mkfifo "$SCRATCH/$name.in" "$SCRATCH/$name.out"
	env "${CLEAN_ENV[@]}" "$@" "$FRAG" --threads "$THREADS" --mib "$MIB" --rounds "$ROUNDS" \
		--wait <"$SCRATCH/$name.in" >"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err" &
	PID=$!
	# The same order as the child's redirections, so that neither open waits forever.
	exec {TO_FD}>"$SCRATCH/$name.in" {FROM_FD}<"$SCRATCH/$name.out"
}

# stop_workload NAME: end of input; the workload exits.
stop_workload() {
	local name=$1
	exec {TO_FD}>&-
	if ! wait "$PID"; then
		PID=""
		die "$name run failed: $(cat "$SCRATCH/$name.err")"
	fi
	PID=""
	exec {FROM_FD}<&-
}

# read_round NAME R: reads the workload's line for round R; sets LIVE_KIB.
read_round() {
	local name=$1 round=$2 line
	if ! IFS= read -r -t "$STEP_TIMEOUT" -u "$FROM_FD" line; then
		die "$name run: no line for round $round: $(cat "$SCRATCH/$name.err")"
	fi
	[[ $line =~ ^round\ ([0-9]+)\ live_kib=([0-9]+)\ rss_kib=([0-9]+)$ ]] ||
		die "$name run: unexpected line: $line"
	[[ ${BASH_REMATCH[1]} == "$round" ]] || die "$name run: expected round $round: $line"
	LIVE_KIB=${BASH_REMATCH[2]}
}

vmrss_kib() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# wait_until SECONDS COMMAND...: polls COMMAND every 20 ms; false if it never succeeds.
wait_until() {
	local tries=$(($1 * 50))
	shift
	while ((tries-- > 0)); do
		if "$@"; then
			return 0
		fi
		sleep 0.02
	done
	return 1
}

stats_has_round() {
	grep -q "\"round\":$2," "$1" 2>/dev/null
}

# trigger_round FIFO STATS R: one round through the FIFO, then waits for its stats line; sets
# RELEASED_KIB and ACTION.
trigger_round() {
	local fifo=$1 stats=$2 round=$3 line
	wait_until 10 test -p "$fifo" || die "roundtrim made no FIFO at $fifo: $(cat "$SCRATCH/with.err")"
	# The library holds its FIFO open, so this open does not block; timeout guards the case
	# where the process is gone and nobody reads. $1 is the inner shell's, on purpose.
	# shellcheck disable=SC2016
	timeout 5 bash -c 'printf "round\n" >"$1"' bash "$fifo" || die "cannot write to $fifo"
	wait_until "$STEP_TIMEOUT" stats_has_round "$stats" "$round" ||
		die "no stats line for round $round in $stats: $(cat "$SCRATCH/with.err")"
	line=$(grep -m1 "\"round\":$round," "$stats")
	[[ $line =~ \"released_kib\":([0-9]+) ]] || die "unexpected stats line: $line"
	RELEASED_KIB=${BASH_REMATCH[1]}
	if [[ $line =~ \"action\":\"([a-z_]+)\" ]]; then
		ACTION=${BASH_REMATCH[1]}
	fi
}

declare -a PLAIN_RSS WITH_RSS LIVE RELEASED
ACTION=none

echo "frag: $THREADS threads, $MIB MiB of churn per round, $ROUNDS rounds" >&2
echo "run 1: without roundtrim" >&2
start_workload plain
for ((r = 1; r <= ROUNDS; r++)); do
	read_round plain "$r"
	LIVE[r]=$LIVE_KIB
	PLAIN_RSS[r]=$(vmrss_kib "$PID")
	echo >&"$TO_FD"
done
stop_workload plain

echo "run 2: with roundtrim, one round through the FIFO after each of frag's rounds" >&2
STATS=$SCRATCH/stats.jsonl
start_workload with LD_PRELOAD="$LIB" ROUNDTRIM_FIFO="$SCRATCH/fifo/%p.fifo" \
	ROUNDTRIM_STATS="$STATS" ROUNDTRIM_GC_ROUNDS=1
FIFO=$SCRATCH/fifo/$PID.fifo
for ((r = 1; r <= ROUNDS; r++)); do
	read_round with "$r"
	trigger_round "$FIFO" "$STATS" "$r"
	RELEASED[r]=$RELEASED_KIB
	WITH_RSS[r]=$(vmrss_kib "$PID")
	echo >&"$TO_FD"
done
stop_workload with

# The stats of the run with roundtrim, and the picture `roundtrim report` makes of them.
mkdir -p "$BUILD_DIR/demo"
cp "$STATS" "$BUILD_DIR/demo/stats.jsonl"
ROUNDTRIM_LIB=$LIB scripts/roundtrim report -o "$BUILD_DIR/demo/report.png" \
	"$BUILD_DIR/demo/stats.jsonl" >"$BUILD_DIR/demo/report.txt"

for ((r = 1; r <= ROUNDS; r++)); do
	printf '%s %s %s %s %s\n' "$r" "${PLAIN_RSS[r]}" "${WITH_RSS[r]}" "${LIVE[r]}" \
		"${RELEASED[r]}"
done | awk -v action="$ACTION" '
	function mib(kib) { return kib / 1024 }
	BEGIN {
		printf "%5s  %17s  %24s  %15s  %14s\n", "round", "RSS without (MiB)",
			"RSS with roundtrim (MiB)", "live heap (MiB)", "released (MiB)"
	}
	{
		printf "%5d  %17.1f  %24.1f  %15.1f  %14.1f\n", $1, mib($2), mib($3), mib($4), mib($5)
		last = $1; without = $2; with = $3; live = $4; released += $5
	}
	END {
		printf "\nAfter round %d: %.1f MiB resident without roundtrim, %.1f MiB with it " \
			"(live heap %.1f MiB); %s gave back %.1f MiB a round on average.\n",
			last, mib(without), mib(with), mib(live), action, mib(released) / last
	}'
echo >&2
echo "roundtrim report of the run with roundtrim ($BUILD_DIR/demo/report.png):" >&2
cat "$BUILD_DIR/demo/report.txt"
