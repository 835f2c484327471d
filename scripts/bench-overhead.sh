#!/usr/bin/env bash
# bench-overhead.sh: figure 2 of `make bench`, what preloading roundtrim costs an allocation-heavy
# program. For each allocator (glibc, jemalloc) and thread count, alloc_bench runs without and
# with the library, in interleaved pairs so that drift in a shared, noisy machine hits both sides
# alike; the figure is the median of the per-pair ratios with/without, with a noise-control row.
# BENCH_PAIRS: pairs per configuration (default 9, 3 with BENCH_QUICK=1). Writes $RAW/fig2.md and
# summary rows (see bench-lib.sh). A missed goal is reported, not failed.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

# run_alloc_bench PRELOAD THREADS OPS: runs alloc_bench with LD_PRELOAD=PRELOAD (none when
# empty) and prints the seconds it reports. Fails, showing the program's stderr, when the run
# fails, when the preload was refused, or when the output is not the expected line.
run_alloc_bench() {
	local preload=$1 threads=$2 ops=$3 out err=$ROUNDS_DIR/alloc_bench.err status=0
	if [[ -n $preload ]]; then
		out=$(LD_PRELOAD=$preload "$BENCH_BIN/alloc_bench" \
			--threads "$threads" --ops "$ops" 2>"$err") || status=$?
	else
		out=$("$BENCH_BIN/alloc_bench" \
			--threads "$threads" --ops "$ops" 2>"$err") || status=$?
	fi
	# ld.so only warns about a preload it cannot load, then runs the program without it.
	local why=""
	if ((status != 0)); then
		why="failed (exit $status)"
	elif grep -q 'cannot be preloaded' "$err"; then
		why="ran without its preload"
	fi
	if [[ -n $why ]]; then
		cat "$err" >&2
		die "alloc_bench $why: LD_PRELOAD='$preload' --threads $threads --ops $ops"
	fi
	cat "$err" >&2
	local re="^threads=$threads ops=$ops seconds=([^ ]+)$"
	[[ $out =~ $re ]] || die "unexpected alloc_bench output: '$out'"
	is_number "${BASH_REMATCH[1]}" || die "alloc_bench seconds is not a number: '$out'"
	echo "${BASH_REMATCH[1]}"
}

# overhead_row NAME THREADS OPS BASE_PRELOAD WITH_PRELOAD PAIRS: measures one configuration
# and prints its table row.
overhead_row() {
	local name=$1 threads=$2 ops=$3 base=$4 with=$5 pairs=$6
	local i a b r ratios="" withouts="" withs=""
	local what="$name, $threads thread(s): time with / without roundtrim"
	[[ $base == "$with" ]] && what="noise control: the same program on both sides, $threads thread(s)"
	note "overhead: $name threads=$threads ops=$ops pairs=$pairs"
	# One discarded pair: the first runs pay for cold page cache and CPU frequency ramp-up.
	run_alloc_bench "$base" "$threads" "$ops" >/dev/null
	run_alloc_bench "$with" "$threads" "$ops" >/dev/null
	for ((i = 0; i < pairs; i++)); do
		# Which side runs first alternates, so that neither always inherits the other's
		# cache and frequency state.
		if ((i % 2 == 0)); then
			a=$(run_alloc_bench "$base" "$threads" "$ops")
			b=$(run_alloc_bench "$with" "$threads" "$ops")
		else
			b=$(run_alloc_bench "$with" "$threads" "$ops")
			a=$(run_alloc_bench "$base" "$threads" "$ops")
		fi
		r=$(ratio "$b" "$a") || die "$name threads=$threads: a run took 0 seconds"
		echo "without_s=$a with_s=$b ratio=$r" >>"$RAW/overhead/$name-$threads.txt"
		withouts+="$a"$'\n'
		withs+="$b"$'\n'
		ratios+="$r"$'\n'
	done
	local med lo hi mwo mw verdict=missed v
	read -r med lo hi < <(spread <<<"${ratios%$'\n'}")
	mwo=$(median <<<"${withouts%$'\n'}")
	mw=$(median <<<"${withs%$'\n'}")
	for v in "$mwo" "$mw"; do
		is_number "$v" || die "$name threads=$threads: statistic '$v' is not a number"
	done
	at_most "$med" 1.05 && verdict=met
	if [[ $base == "$with" ]]; then
		verdict="no goal"
	elif [[ $verdict == missed ]]; then
		loss "Hot path, $name with $threads thread(s): the allocation-heavy loop takes $(fmt "$med" 3)× the time with roundtrim (goal ≤ 1.05)."
	fi
	local goal="≤ 1.05"
	[[ $base == "$with" ]] && goal="—"
	summary_row 2 "$what" "$goal" "$(fmt "$med" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	printf '| %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %s |\n' "$name" "$threads" "$ops" \
		"$med" "$lo" "$hi" "$mwo" "$mw" "$verdict"
}

# overhead_ops ALLOCATOR: operations per thread, for runs of about 0.4 s (0.1 s quick) on an idle
# 2-core machine; jemalloc is the faster allocator, so it gets more.
overhead_ops() {
	local ops
	case $1 in
	glibc) ops=10000000 ;;
	jemalloc) ops=13000000 ;;
	*) die "no operation count for allocator $1" ;;
	esac
	if [[ $QUICK == 1 ]]; then
		ops=$((ops / 4))
	fi
	echo "$ops"
}

main() {
	local pairs=${BENCH_PAIRS:-9} threads ops jemalloc
	if [[ $QUICK == 1 ]]; then
		pairs=${BENCH_PAIRS:-3}
	fi
	[[ $pairs =~ ^[1-9][0-9]*$ ]] || die "BENCH_PAIRS must be a positive integer, not '$pairs'"
	[[ -x $BENCH_BIN/alloc_bench ]] || die "$BENCH_BIN/alloc_bench is not built"
	[[ -r $LIB ]] || die "$LIB is not built"
	jemalloc=$(find_preload libjemalloc.so.2 libjemalloc2)
	note_load "overhead: before"
	# Every pair, for a second look at a surprising median.
	rm -rf "$RAW/overhead"
	mkdir -p "$RAW/overhead"
	record_command "$BENCH_BIN/alloc_bench" --threads 1 --ops "$(overhead_ops glibc)"
	record_command env LD_PRELOAD="$LIB:$jemalloc" "$BENCH_BIN/alloc_bench" --threads 2 \
		--ops "$(overhead_ops jemalloc)"
	{
		echo "## Figure 2: hot path"
		echo
		echo "\`alloc_bench\` (T threads, each N malloc/free/realloc/calloc of 16 B..8 KiB on its own"
		echo "table) without and with roundtrim preloaded, in $pairs interleaved pairs after one"
		echo "discarded pair; the side that runs first alternates. Ratio: with / without, per pair;"
		echo "median [min–max] over the pairs. The control row runs the same program on both sides:"
		echo "its spread is the machine's noise. The library runs as deployed: ROUNDTRIM_SITES off,"
		echo "which leaves the hot path as it is without the feature (figure 8 has it on)."
		echo
		echo "| allocator | threads | ops/thread | median ratio | min | max | median without (s) | median with (s) | goal ≤ 1.05 |"
		echo "|---|---|---|---|---|---|---|---|---|"
		ops=$(overhead_ops glibc)
		# The machine's own noise: the baseline against itself, measured the same way.
		overhead_row control 1 "$ops" "" "" "$pairs"
		for threads in 1 2; do
			overhead_row glibc "$threads" "$ops" "" "$LIB" "$pairs"
		done
		ops=$(overhead_ops jemalloc)
		for threads in 1 2; do
			# roundtrim first: its wrappers must be what the program's calls reach.
			overhead_row jemalloc "$threads" "$ops" "$jemalloc" "$LIB:$jemalloc" "$pairs"
		done
		echo
	} >"$RAW/fig2.md"
	note_load "overhead: after"
	cat "$RAW/fig2.md"
}

main "$@"
