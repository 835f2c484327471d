#!/usr/bin/env bash
# bench-latency.sh: figure 3 of `make bench`, from a round's trigger to the end of its handling.
# test/bench/trigger_latency starts `probe idle` (a small heap) with roundtrim and sends it one
# trigger at a time, by FIFO or by signal, taking the clock from the send to the status file's
# rename that reports the round: with N large (rounds only counted) and with N=1 (a malloc_trim
# of the small heap every round). Several runs of many rounds each: p50 and p99 per run, median
# [min–max] over runs. Writes $RAW/fig3.md, summary rows and latency-cdf.png (see bench-lib.sh).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

main() {
	local rounds=1000 runs=5 run trigger every line p50s p99s maxes m lo hi dir=$RAW/latency
	if [[ $QUICK == 1 ]]; then
		rounds=200 runs=1
	fi
	local prog=("$BENCH_BIN/trigger_latency") probe=("$WORKLOADS_BIN/probe" idle)
	[[ -x ${prog[0]} && -x ${probe[0]} && -r $LIB ]] || die "trigger_latency, probe or $LIB is not built"
	rm -rf "$dir"
	mkdir -p "$dir"
	note_load "latency: before"
	record_command "${prog[@]}" --lib "$LIB" --trigger fifo --every 1 --rounds "$rounds" -- "${probe[@]}"
	for ((run = 1; run <= runs; run++)); do
		for every in 1000000 1; do
			for trigger in fifo signal; do
				note "latency: $trigger, N=$every, run $run of $runs"
				line=$(env "${CLEAN_ENV[@]}" "${prog[@]}" --lib "$LIB" --trigger "$trigger" \
					--every "$every" --rounds "$rounds" --raw "$dir/$trigger-$every.$run.us" \
					-- "${probe[@]}") || die "trigger_latency failed"
				[[ $line =~ p50_us=([0-9.]+)\ p99_us=([0-9.]+)\ max_us=([0-9.]+)$ ]] ||
					die "unexpected trigger_latency output: $line"
				echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}" >>"$dir/$trigger-$every.txt"
			done
		done
	done
	{
		echo "## Figure 3: trigger to done"
		echo
		echo "From sending one trigger to the status file rewritten with the round counted"
		echo "(after the round's action, if any), paced one at a time, $rounds rounds per run, $runs run(s);"
		echo "the program is \`probe idle\` (a heap of a few KiB). N = 1000000: rounds are only counted;"
		echo "N = 1: each round runs malloc_trim(0). Each cell: median [min–max] over runs of the run's"
		echo "percentile, in µs."
		echo
		echo "| trigger | N | p50 (µs) | p99 (µs) | max (µs) |"
		echo "|---|---|---|---|---|"
	} >"$RAW/fig3.md"
	for every in 1000000 1; do
		for trigger in fifo signal; do
			p50s=$(awk '{ print $1 }' "$dir/$trigger-$every.txt")
			p99s=$(awk '{ print $2 }' "$dir/$trigger-$every.txt")
			maxes=$(awk '{ print $3 }' "$dir/$trigger-$every.txt")
			local cells=()
			for values in "$p50s" "$p99s" "$maxes"; do
				read -r m lo hi < <(spread <<<"$values")
				cells+=("$(fmt "$m" 0) [$(fmt "$lo" 0)–$(fmt "$hi" 0)]")
			done
			echo "| $trigger | $every | ${cells[0]} | ${cells[1]} | ${cells[2]} |" >>"$RAW/fig3.md"
			read -r m lo hi < <(spread <<<"$p99s")
			summary_row 3 "trigger to done, $trigger, N=$every$([[ $every == 1 ]] && echo ', small heap' || echo ' (count only)'): p99 (µs)" \
				"—" "$(fmt "$m" 0)" "$(fmt "$lo" 0)" "$(fmt "$hi" 0)" "no goal"
		done
	done
	# The distribution of the first run of each row.
	gnuplot <<GP || die "gnuplot failed on the latency CDF"
$(gnuplot_png "$OUT/latency-cdf.png")
set title 'Trigger to done: cumulative distribution (run 1, $rounds rounds each)' noenhanced
set xlabel 'latency (µs), log scale'
set ylabel 'fraction of rounds'
set logscale x
set grid
set key bottom right noenhanced
set yrange [0:1]
plot '$dir/fifo-1000000.1.us' using 1:(1) smooth cnormal lw 2 title 'FIFO, N=1000000', \
     '$dir/signal-1000000.1.us' using 1:(1) smooth cnormal lw 2 title 'signal, N=1000000', \
     '$dir/fifo-1.1.us' using 1:(1) smooth cnormal lw 2 title 'FIFO, N=1', \
     '$dir/signal-1.1.us' using 1:(1) smooth cnormal lw 2 title 'signal, N=1'
GP
	[[ -s $OUT/latency-cdf.png ]] || die "gnuplot wrote no latency-cdf.png"
	printf '\n![Trigger to done, CDF](latency-cdf.png)\n\n' >>"$RAW/fig3.md"
	note_load "latency: after"
	cat "$RAW/fig3.md"
}

main "$@"
