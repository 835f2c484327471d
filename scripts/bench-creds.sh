#!/usr/bin/env bash
# bench-creds.sh: figure 13 of `make bench`, what a credential change costs the program (a server
# that switches its effective uid per request). test/bench/creds_toggle makes 1,000 pairs of
# seteuid(65534) and seteuid(0), each call timed, and prints the p50, p99 and largest; run
# without the library, with it (the worker's own descriptor table: private), and with it under
# test/tools/noshare (unshare refused, as in a container: the keeper, which takes each change
# after the call). RUNS runs of each, interleaved; median [min–max] over runs. Needs root (the
# figure says so and has no goal otherwise). Writes $RAW/fig13.md and summary rows.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

TOGGLE=$BENCH_BIN/creds_toggle
NOSHARE=$BUILD_DIR/test/tools/noshare
MODES=(none private keeper)
PAIRS=1000 RUNS=5
# The goal, per call, in µs: "a few hundred microseconds" at most.
GOAL_P50=300 GOAL_P99=500

# run_mode MODE: one run; prints creds_toggle's line.
run_mode() {
	local cmd=("$TOGGLE" "$PAIRS")
	case $1 in
	none) ;;
	private) cmd=(env "LD_PRELOAD=$LIB" "ROUNDTRIM_FIFO=$ROUNDS_DIR/%p.fifo" "${cmd[@]}") ;;
	keeper) cmd=("$NOSHARE" /usr/bin/env "LD_PRELOAD=$LIB" "ROUNDTRIM_FIFO=$ROUNDS_DIR/%p.fifo" "${cmd[@]}") ;;
	esac
	[[ $run == 1 ]] && record_command "${cmd[@]}"
	env "${CLEAN_ENV[@]}" "${cmd[@]}" || die "creds_toggle failed: $1"
}

# field LINE KEY: the number after KEY= in a creds_toggle line.
field() {
	sed -n "s/.* $2=\([0-9.]*\).*/\1/p" <<<" $1"
}

# row MODE: the table row and the summary rows of a mode.
row() {
	local mode=$1 m50 lo50 hi50 m99 lo99 hi99 mmax lomax himax verdict=met goal50="—" goal99="—"
	read -r m50 lo50 hi50 < <(field_spread "$mode" p50_us)
	read -r m99 lo99 hi99 < <(field_spread "$mode" p99_us)
	read -r mmax lomax himax < <(field_spread "$mode" max_us)
	if [[ $mode == keeper ]]; then
		goal50="≤ $GOAL_P50" goal99="≤ $GOAL_P99"
		if ! at_most "$m50" "$GOAL_P50" || ! at_most "$m99" "$GOAL_P99"; then
			verdict=missed
			loss "Credential changes under the keeper: a seteuid call takes $(fmt "$m50" 0) µs at p50 and $(fmt "$m99" 0) µs at p99 (goal ≤ $GOAL_P50 and ≤ $GOAL_P99 µs; without the library $(fmt "$NONE_P50" 1) µs at p50)."
		fi
	else
		verdict="no goal"
	fi
	summary_row 13 "seteuid under the library, $mode: p50 per call (µs)" "$goal50" \
		"$(fmt "$m50" 1)" "$(fmt "$lo50" 1)" "$(fmt "$hi50" 1)" "$verdict"
	summary_row 13 "seteuid under the library, $mode: p99 per call (µs)" "$goal99" \
		"$(fmt "$m99" 1)" "$(fmt "$lo99" 1)" "$(fmt "$hi99" 1)" "$verdict"
	echo "| $mode | $(cell "$m50" "$lo50" "$hi50") | $(cell "$m99" "$lo99" "$hi99") | $(cell "$mmax" "$lomax" "$himax") | $verdict |"
}

# field_spread MODE KEY: "median min max" of KEY over the mode's runs.
field_spread() {
	local line
	while read -r line; do
		field "$line" "$2"
	done <"$RAW/creds-$1.txt" | spread
}

# cell MEDIAN MIN MAX: "median [min–max]".
cell() {
	echo "$(fmt "$1" 1) [$(fmt "$2" 1)–$(fmt "$3" 1)]"
}

NONE_P50=0
main() {
	local mode run
	[[ $QUICK == 1 ]] && RUNS=2 PAIRS=500
	[[ -x $TOGGLE && -x $NOSHARE && -r $LIB ]] || die "creds_toggle, noshare or $LIB is not built"
	{
		echo "## Figure 13: credential changes"
		echo
		echo "\`creds_toggle $PAIRS\`: $PAIRS pairs of seteuid(65534) and seteuid(0), each call timed;"
		echo "without the library, with it (private: the worker's own descriptor table), and with it"
		echo "under test/tools/noshare (keeper: unshare refused, as in a container), $RUNS runs each,"
		echo "interleaved. Microseconds per call, median [min–max] over runs. The keeper takes each"
		echo "change after the call; a wait of its on the FIFO is cut short (roundtrim(7), PRIVILEGES)."
		echo
	} >"$RAW/fig13.md"
	if [[ $(id -u) != 0 ]]; then
		echo "Not measured: seteuid needs root." >>"$RAW/fig13.md"
		summary_row 13 "seteuid under the library, keeper: p99 per call (µs)" "≤ $GOAL_P99" 0 0 0 "not run (needs root)"
		cat "$RAW/fig13.md"
		return
	fi
	note_load "creds: before"
	for mode in "${MODES[@]}"; do
		: >"$RAW/creds-$mode.txt"
	done
	for ((run = 1; run <= RUNS; run++)); do
		for mode in "${MODES[@]}"; do
			run_mode "$mode" >>"$RAW/creds-$mode.txt"
		done
	done
	NONE_P50=$(field_spread none p50_us | awk '{ print $1 }')
	{
		echo "| mode | p50 | p99 | largest | goal (keeper): p50 ≤ $GOAL_P50, p99 ≤ $GOAL_P99 |"
		echo "|---|---|---|---|---|"
		for mode in "${MODES[@]}"; do
			row "$mode"
		done
		echo
	} >>"$RAW/fig13.md"
	note_load "creds: after"
	cat "$RAW/fig13.md"
}

main "$@"
