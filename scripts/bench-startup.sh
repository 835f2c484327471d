#!/usr/bin/env bash
# bench-startup.sh: figure 5 of `make bench`, what the library adds to a short program that does
# not match ROUNDTRIM_MATCH (the sleep, cat and kill of NVFlare's watchdog loop). test/bench/startup
# runs test/bench/tiny in alternating blocks without and with LD_PRELOAD=libroundtrim.so (both
# with ROUNDTRIM_MATCH=no-such-program), spawn by spawn, and a control with no preload on either
# side. Ratio with / without per pair of blocks; median [min–max] over pairs. Writes $RAW/fig5.md
# and summary rows (see bench-lib.sh).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

FLOOR_RATIO="" FLOOR_US="" # the empty preload's row, for roundtrim's loss line
# startup_row NAME PRELOAD RUNS PAIRS: measures, prints the table row and records the summary.
startup_row() {
	local name=$1 preload=$2 runs=$3 pairs=$4 out ratios per_run m lo hi verdict=missed goal="≤ 1.02"
	local cmd=("$BENCH_BIN/startup" --preload "$preload" --runs "$runs" --pairs "$pairs" -- "$BENCH_BIN/tiny")
	record_command "${cmd[@]}"
	note "startup: $name, $pairs pairs of $runs runs"
	out=$(env "${CLEAN_ENV[@]}" "${cmd[@]}") || die "startup failed: $name"
	echo "$out" >"$RAW/startup-$name.txt"
	ratios=$(awk '{ split($2, a, "="); split($3, b, "="); if (a[2] > 0) printf "%.6f\n", b[2] / a[2] }' <<<"$out")
	[[ $(wc -l <<<"$ratios") == "$pairs" ]] || die "startup printed an unexpected table: $out"
	# The library's cost per run, in µs.
	per_run=$(awk -v n="$runs" '{ split($2, a, "="); split($3, b, "="); printf "%.3f\n", (b[2] - a[2]) * 1e6 / n }' <<<"$out" | median)
	read -r m lo hi < <(spread <<<"$ratios")
	at_most "$m" 1.02 && verdict=met
	if [[ $name != roundtrim ]]; then
		verdict="no goal" goal="—"
	elif [[ $verdict == missed ]]; then
		loss "Start-up: a short program that does not match ROUNDTRIM_MATCH still takes $(fmt "$m" 3)× as long to start and exit with the library preloaded (about $(fmt "$per_run" 0) µs added to each run; goal ≤ 1.02). Preloading an empty shared object already costs $(fmt "$FLOOR_RATIO" 3)× (about $(fmt "$FLOOR_US" 0) µs) here: that part is the loader's, not roundtrim's."
	fi
	if [[ $name == empty-preload ]]; then
		FLOOR_RATIO=$m FLOOR_US=$per_run
	fi
	summary_row 5 "start-up of a non-matching short program, $name: time with / without" "$goal" \
		"$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	echo "| $name | $((runs * pairs)) | $(fmt "$m" 4) | $(fmt "$lo" 4) | $(fmt "$hi" 4) | $(fmt "$per_run" 1) | $verdict |"
}

main() {
	local runs=200 pairs=10
	if [[ $QUICK == 1 ]]; then
		runs=100 pairs=3
	fi
	[[ -x $BENCH_BIN/startup && -x $BENCH_BIN/tiny && -r $BENCH_BIN/libempty.so && -r $LIB ]] ||
		die "startup, tiny, libempty.so or $LIB is not built"
	note_load "startup: before"
	{
		echo "## Figure 5: start-up"
		echo
		echo "\`tiny\` (main returns 0) started with posix_spawn and waited for, $runs times per block,"
		echo "blocks alternating without and with LD_PRELOAD=libroundtrim.so, $pairs pairs after one"
		echo "discarded pair; ROUNDTRIM_MATCH=no-such-program on both sides. Ratio with / without per"
		echo "pair, median [min–max]. Control: no preload on either side. empty-preload: an empty"
		echo "shared object (test/bench/preload/empty.c) instead of the library, the floor that any"
		echo "preload costs on this machine."
		echo
		echo "| row | runs per side | median ratio | min | max | added per run (µs) | goal ≤ 1.02 |"
		echo "|---|---|---|---|---|---|---|"
		startup_row control "" "$runs" "$pairs"
		startup_row empty-preload "$BENCH_BIN/libempty.so" "$runs" "$pairs"
		startup_row roundtrim "$LIB" "$runs" "$pairs"
		echo
	} >"$RAW/fig5.md"
	note_load "startup: after"
	cat "$RAW/fig5.md"
}

main "$@"
