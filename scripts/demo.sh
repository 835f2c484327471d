#!/usr/bin/env bash
# demo.sh: the fragmenting workload twice, without and with roundtrim, RSS side by side.
# `make demo` builds what it runs first.
#
# The script drives the rounds. After each round of the workload (build/test/workloads/frag,
# which prints "round R live_kib=L rss_kib=S" and then waits for a line on stdin), it reads the
# process's RSS from /proc/PID/status and lets the next round begin. In the run with roundtrim
# it first counts the round with `roundtrim round --wait` (a line on the process's FIFO, then
# the library's answer), so that the RSS read is the one after the trim.
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
# shellcheck source=scripts/rounds.sh
source "$ROOT/scripts/rounds.sh"

for value in "$THREADS" "$MIB" "$ROUNDS"; do
	[[ $value =~ ^[1-9][0-9]*$ ]] || die "DEMO_THREADS, DEMO_MIB and DEMO_ROUNDS must be positive integers"
done
[[ -f $LIB && -x $ROUNDTRIM && -x $FRAG ]] || die "$LIB, $ROUNDTRIM or $FRAG is missing: run make demo"
FRAG_ARGS=(--threads "$THREADS" --mib "$MIB" --rounds "$ROUNDS" --wait)

declare -a PLAIN_RSS WITH_RSS LIVE RELEASED

echo "frag: $THREADS threads, $MIB MiB of churn per round, $ROUNDS rounds" >&2
echo "run 1: without roundtrim" >&2
rounds_start plain -- "$FRAG" "${FRAG_ARGS[@]}"
for ((r = 1; r <= ROUNDS; r++)); do
	rounds_read plain "$r"
	LIVE[r]=$ROUND_LIVE_KIB
	PLAIN_RSS[r]=$(vmrss_kib "$ROUNDS_PID")
	rounds_next
done
rounds_stop plain

echo "run 2: with roundtrim, one round through the FIFO after each of frag's rounds" >&2
mapfile -t RT_ENV < <(rounds_roundtrim_env)
rounds_start with LD_PRELOAD="$LIB" "${RT_ENV[@]}" -- "$FRAG" "${FRAG_ARGS[@]}"
for ((r = 1; r <= ROUNDS; r++)); do
	rounds_read with "$r"
	rounds_trigger with "$r"
	RELEASED[r]=$RELEASED_KIB
	WITH_RSS[r]=$(vmrss_kib "$ROUNDS_PID")
	rounds_next
done
STATS=$ROUNDS_DIR/stats.$ROUNDS_PID.jsonl
rounds_stop with

# The stats of the run with roundtrim, and the picture `roundtrim report` makes of them.
mkdir -p "$BUILD_DIR/demo"
cp "$STATS" "$BUILD_DIR/demo/stats.jsonl"
"$ROUNDTRIM" report -o "$BUILD_DIR/demo/report.png" \
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
		last = $1; without = $2; with = $3; live = $4; released += mib($5)
	}
	END {
		printf "\nAfter round %d: %.1f MiB resident without roundtrim, %.1f MiB with it " \
			"(live heap %.1f MiB); %s gave back %.1f MiB a round on average.\n",
			last, mib(without), mib(with), mib(live), action, released / last
	}'
echo >&2
echo "roundtrim report of the run with roundtrim ($BUILD_DIR/demo/report.png):" >&2
cat "$BUILD_DIR/demo/report.txt"
