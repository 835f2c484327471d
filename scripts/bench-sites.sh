#!/usr/bin/env bash
# bench-sites.sh: figure 8 of `make bench`, what finding the call sites that grow costs. The same
# allocation-heavy loop (alloc_bench, 1 thread) runs without the library, with it and
# ROUNDTRIM_SITES off, with it on (ROUNDTRIM_SAMPLE_BYTES at its default, 512 KiB), and under
# heaptrack (Debian's), which records every allocation, and without the library a second time (the
# noise control); all in rotating order, round after round, so that drift in a shared, noisy
# machine hits all alike. Time: per round, each ratio;
# median [min–max] over rounds. Memory: the program's own peak RSS, and the largest peak RSS of
# any process of the run (heaptrack's interpreter runs beside the program). BENCH_PAIRS: rounds
# (default 7, 3 with BENCH_QUICK=1). Writes $RAW/fig8.md and summary rows (see bench-lib.sh). A
# missed goal is reported, not failed.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

CONFIGS=(none control off on heaptrack)
declare -A WHAT=(
	[none]="no library"
	[control]="no library again: the noise control"
	[off]="roundtrim, ROUNDTRIM_SITES off"
	[on]="roundtrim, ROUNDTRIM_SITES on (a sample every 512 KiB)"
	[heaptrack]="heaptrack recording every allocation"
)

# run_config NAME OPS: runs alloc_bench once as configuration NAME; prints "SECONDS RSS_KIB
# ALL_KIB": the loop's seconds, the program's peak RSS, the largest peak RSS of the run.
run_config() {
	local name=$1 ops=$2 out err=$ROUNDS_DIR/sites.err all=$ROUNDS_DIR/sites.time
	local dir=$ROUNDS_DIR/sites-$name
	local cmd=("$BENCH_BIN/alloc_bench" --threads 1 --ops "$ops" --rss)
	rm -rf "$dir"
	mkdir -p "$dir"
	case $name in
	none | control) ;;
	off) cmd=(env LD_PRELOAD="$LIB" "${cmd[@]}") ;;
	on) cmd=(env LD_PRELOAD="$LIB" ROUNDTRIM_SITES=1 ROUNDTRIM_STATS="$dir/%p.jsonl" "${cmd[@]}") ;;
	heaptrack) cmd=(heaptrack -o "$dir/heaptrack" "${cmd[@]}") ;;
	*) die "no configuration $name" ;;
	esac
	out=$(env "${CLEAN_ENV[@]}" /usr/bin/time -f "%M" -o "$all" "${cmd[@]}" 2>"$err") ||
		{
			cat "$err" >&2
			die "alloc_bench failed under $name"
		}
	if grep -q 'cannot be preloaded' "$err"; then
		cat "$err" >&2
		die "alloc_bench ran without its preload under $name"
	fi
	# heaptrack prints its own lines around the program's.
	local re="threads=1 ops=$ops seconds=([0-9.]+) max_rss_kib=([0-9]+)"
	[[ $out =~ $re ]] || die "unexpected alloc_bench output under $name: '$out'"
	local seconds=${BASH_REMATCH[1]} rss_kib=${BASH_REMATCH[2]} all_kib
	all_kib=$(tail -n 1 "$all")
	is_number "$all_kib" || die "/usr/bin/time gave '$all_kib' under $name"
	echo "$seconds $rss_kib $all_kib"
}

# ratio_row WHAT NUMERATOR DENOMINATOR GOAL: a row of the ratio table from the per-round seconds
# in $RAW/sites/*.txt, and its summary row.
ratio_row() {
	local what=$1 num=$2 den=$3 goal=$4 ratios m lo hi verdict="no goal"
	ratios=$(paste -d' ' "$RAW/sites/$num.txt" "$RAW/sites/$den.txt" |
		awk '{ if ($4 + 0 == 0) exit 1; printf "%.4f\n", $1 / $4 }') ||
		die "$what: a run took 0 seconds"
	read -r m lo hi < <(spread <<<"$ratios")
	if [[ $goal != "—" ]]; then
		verdict=missed
		at_most "$m" "${goal#≤ }" && verdict=met
		[[ $verdict == met ]] ||
			loss "Sites: with ROUNDTRIM_SITES on, the allocation-heavy loop takes $(fmt "$m" 3)× the time it takes without the library (goal $goal)."
	fi
	summary_row 8 "$what" "$goal" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	echo "| $what | $(fmt "$m" 3) | $(fmt "$lo" 3) | $(fmt "$hi" 3) | $goal | $verdict |"
}

main() {
	local rounds=${BENCH_PAIRS:-7} ops=3000000 i k name line
	if [[ $QUICK == 1 ]]; then
		rounds=${BENCH_PAIRS:-3} ops=1000000
	fi
	[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "BENCH_PAIRS must be a positive integer, not '$rounds'"
	[[ -x $BENCH_BIN/alloc_bench && -r $LIB ]] || die "alloc_bench or $LIB is not built"
	command -v heaptrack >/dev/null || die "heaptrack not found: install the Debian package heaptrack (scripts/deps.sh)"
	[[ -x /usr/bin/time ]] || die "/usr/bin/time not found: install the Debian package time"
	local heaptrack_version
	# ${Version} is dpkg-query's field, not a shell variable.
	# shellcheck disable=SC2016
	heaptrack_version=$(dpkg-query -W -f='${Version}' heaptrack 2>/dev/null || echo "?")
	note_load "sites: before"
	rm -rf "$RAW/sites"
	mkdir -p "$RAW/sites"
	record_command "$BENCH_BIN/alloc_bench" --threads 1 --ops "$ops" --rss
	record_command env LD_PRELOAD="$LIB" ROUNDTRIM_SITES=1 ROUNDTRIM_STATS="$ROUNDS_DIR/%p.jsonl" \
		"$BENCH_BIN/alloc_bench" --threads 1 --ops "$ops" --rss
	record_command heaptrack -o "$ROUNDS_DIR/heaptrack" "$BENCH_BIN/alloc_bench" --threads 1 \
		--ops "$ops" --rss
	# One discarded round: cold page cache, libunwind and heaptrack loaded for the first time.
	for name in "${CONFIGS[@]}"; do
		run_config "$name" "$ops" >/dev/null
	done
	for ((i = 0; i < rounds; i++)); do
		note "sites: round $((i + 1)) of $rounds"
		# Each configuration takes each place in the order in turn.
		for ((k = 0; k < ${#CONFIGS[@]}; k++)); do
			name=${CONFIGS[(i + k) % ${#CONFIGS[@]}]}
			line=$(run_config "$name" "$ops")
			echo "$i $line" >>"$RAW/sites/$name.rounds"
		done
	done
	for name in "${CONFIGS[@]}"; do
		sort -n "$RAW/sites/$name.rounds" | cut -d' ' -f2- >"$RAW/sites/$name.txt"
	done
	{
		echo "## Figure 8: sites"
		echo
		echo "What ROUNDTRIM_SITES costs, on one workload side by side: \`alloc_bench\` (1 thread,"
		echo "$ops malloc/free/realloc/calloc of 16 B..8 KiB) without the library, with it and"
		echo "ROUNDTRIM_SITES off, with it on (a sample every 512 KiB on average: the stack taken with"
		echo "libunwind, the block recorded in the table of live samples that every free looks up), and"
		echo "under heaptrack $heaptrack_version, which records every allocation. $rounds"
		echo "rounds after one discarded, the five in rotating order; per round each ratio, median"
		echo "[min–max] over rounds; the control runs the same program as the baseline: its spread"
		echo "is the machine's noise. With sampling off the library runs figure 2's malloc family"
		echo "unchanged (the cold path asks one flag more), so its row is figure 2's on a shorter loop."
		echo
		echo "| time ratio | median | min | max | goal | verdict |"
		echo "|---|---|---|---|---|---|"
		ratio_row "sites on / no library: the loop's time" on none "≤ 1.15"
		ratio_row "sites on / sites off: the loop's time" on off "—"
		ratio_row "sites off / no library: the loop's time" off none "—"
		ratio_row "noise control: no library / no library" control none "—"
		ratio_row "heaptrack / no library: the loop's time" heaptrack none "—"
		echo
		echo "| configuration | loop (s), median | program's peak RSS (MiB), median | largest peak RSS of the run (MiB), median |"
		echo "|---|---|---|---|"
		for name in "${CONFIGS[@]}"; do
			local s rss all
			s=$(cut -d' ' -f1 "$RAW/sites/$name.txt" | median)
			rss=$(cut -d' ' -f2 "$RAW/sites/$name.txt" | median)
			all=$(cut -d' ' -f3 "$RAW/sites/$name.txt" | median)
			echo "| ${WHAT[$name]} | $(fmt "$s" 4) | $(fmt "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" 1) | $(fmt "$(awk -v k="$all" 'BEGIN { print k / 1024 }')" 1) |"
		done
		echo
		local extra
		extra=$(paste -d' ' "$RAW/sites/on.txt" "$RAW/sites/off.txt" |
			awk '{ printf "%.3f\n", ($2 - $5) / 1024 }')
		local m lo hi
		read -r m lo hi < <(spread <<<"$extra")
		summary_row 8 "sites on − sites off: the program's peak RSS (MiB)" "—" "$(fmt "$m" 2)" \
			"$(fmt "$lo" 2)" "$(fmt "$hi" 2)" "no goal"
		echo "With sites on the program's peak RSS is $(fmt "$m" 2) MiB [$(fmt "$lo" 2)–$(fmt "$hi" 2)] above"
		echo "sites off: libunwind and its per-thread cache, and the pages of the tables that samples"
		echo "touched."
		echo
	} >"$RAW/fig8.md"
	note_load "sites: after"
	cat "$RAW/fig8.md"
}

main "$@"
