#!/usr/bin/env bash
# bench-overhead.sh: figure 2 of `make bench`, what preloading roundtrim costs an allocation-heavy
# program. For each allocator (glibc, jemalloc) and thread count, alloc_bench runs without and
# with the library, in interleaved pairs so that drift in a shared, noisy machine hits both sides
# alike; the figure is the median of the per-pair ratios with/without of the process's CPU time
# over the loop (the wall time, shown beside it, also counts the time other processes held the
# cores), with a noise-control row. Goals: ≤ 1.02 with jemalloc and 1 thread (issue 11), ≤ 1.05
# elsewhere. BENCH_PAIRS: pairs per configuration (default 15, 3 with BENCH_QUICK=1). Writes
# $RAW/fig2.md and summary rows (see bench-lib.sh). A missed goal is reported, not failed.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

# run_alloc_bench PRELOAD THREADS OPS: runs alloc_bench with LD_PRELOAD=PRELOAD (none when
# empty) and prints the wall and CPU seconds it reports, "WALL CPU". Fails, showing the program's
# stderr, when the run fails, when the preload was refused, or when the output is not the expected
# line.
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
	local re="^threads=$threads ops=$ops seconds=([^ ]+) cpu_seconds=([^ ]+)$"
	[[ $out =~ $re ]] || die "unexpected alloc_bench output: '$out'"
	# is_number matches a pattern of its own, which overwrites BASH_REMATCH.
	local wall=${BASH_REMATCH[1]} cpu=${BASH_REMATCH[2]}
	if ! is_number "$wall" || ! is_number "$cpu"; then
		die "alloc_bench seconds is not a number: '$out'"
	fi
	echo "$wall $cpu"
}

# overhead_row NAME THREADS OPS BASE_PRELOAD WITH_PRELOAD PAIRS GOAL [LABEL WHAT]: measures one
# configuration and prints its table row; GOAL is the most the median CPU ratio may be, "-" for a
# row with no goal; LABEL (the table's first cell) and WHAT (the summary's) default to NAME and
# "NAME, T thread(s): CPU time with / without roundtrim".
overhead_row() {
	local name=$1 threads=$2 ops=$3 base=$4 with=$5 pairs=$6 goal=$7 label=${8:-$1}
	local i a b aw bw r rw ratios="" wall_ratios="" withouts="" withs=""
	local what=${9:-"$name, $threads thread(s): CPU time with / without roundtrim"}
	[[ $base == "$with" ]] && what="noise control: the same program on both sides, $threads thread(s)" goal=-
	note "overhead: $name threads=$threads ops=$ops pairs=$pairs"
	# One discarded pair: the first runs pay for cold page cache and CPU frequency ramp-up.
	run_alloc_bench "$base" "$threads" "$ops" >/dev/null
	run_alloc_bench "$with" "$threads" "$ops" >/dev/null
	for ((i = 0; i < pairs; i++)); do
		# Which side runs first alternates, so that neither always inherits the other's
		# cache and frequency state.
		if ((i % 2 == 0)); then
			read -r aw a < <(run_alloc_bench "$base" "$threads" "$ops")
			read -r bw b < <(run_alloc_bench "$with" "$threads" "$ops")
		else
			read -r bw b < <(run_alloc_bench "$with" "$threads" "$ops")
			read -r aw a < <(run_alloc_bench "$base" "$threads" "$ops")
		fi
		r=$(ratio "$b" "$a") || die "$name threads=$threads: a run took 0 CPU seconds"
		rw=$(ratio "$bw" "$aw") || die "$name threads=$threads: a run took 0 seconds"
		echo "without_s=$aw with_s=$bw without_cpu_s=$a with_cpu_s=$b cpu_ratio=$r wall_ratio=$rw" \
			>>"$RAW/overhead/$name-$threads.txt"
		withouts+="$a"$'\n'
		withs+="$b"$'\n'
		ratios+="$r"$'\n'
		wall_ratios+="$rw"$'\n'
	done
	local med lo hi mwo mw mrw verdict=missed v
	read -r med lo hi < <(spread <<<"${ratios%$'\n'}")
	mwo=$(median <<<"${withouts%$'\n'}")
	mw=$(median <<<"${withs%$'\n'}")
	mrw=$(median <<<"${wall_ratios%$'\n'}")
	for v in "$mwo" "$mw" "$mrw"; do
		is_number "$v" || die "$name threads=$threads: statistic '$v' is not a number"
	done
	[[ $goal == - ]] || ! at_most "$med" "$goal" || verdict=met
	if [[ $goal == - ]]; then
		verdict="no goal" goal="—"
	elif [[ $verdict == missed ]]; then
		loss "Hot path, $name with $threads thread(s): the allocation-heavy loop takes $(fmt "$med" 3)× the CPU time with roundtrim (goal ≤ $goal)."
	fi
	[[ $goal == "—" ]] || goal="≤ $goal"
	summary_row 2 "$what" "$goal" "$(fmt "$med" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	printf '| %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %s | %s |\n' "$label" \
		"$threads" "$ops" "$med" "$lo" "$hi" "$mwo" "$mw" "$mrw" "$goal" "$verdict"
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

# The last commit before automatic round detection landed (cc92fbb): issue 11 asks for the hot
# path's cost before and after it.
BEFORE_DETECTION=cc92fbb^

# build_before: builds the library as it was at BEFORE_DETECTION from that commit's tree, exported
# under $RAW/before (no worktree, nothing written to the repository), and prints its path, or
# prints nothing, saying why on stderr, where the source is not a git checkout holding that commit.
build_before() {
	local commit dir=$RAW/before
	if ! commit=$(git -C "$ROOT" rev-parse --verify -q "$BEFORE_DETECTION^{commit}" 2>/dev/null); then
		note "overhead: no commit $BEFORE_DETECTION here; the row before detection is left out"
		return 0
	fi
	if [[ $(cat "$dir/commit" 2>/dev/null) != "$commit" || ! -r $dir/build/libroundtrim.so ]]; then
		note "overhead: building the library at ${commit:0:7} (before detection) in $dir"
		rm -rf "$dir"
		mkdir -p "$dir/src"
		git -C "$ROOT" archive "$commit" | tar -x -C "$dir/src" || die "cannot export $commit"
		make -s -C "$dir/src" BUILD="$dir/build" "$dir/build/libroundtrim.so" >&2 ||
			die "the library at $commit does not build"
		echo "$commit" >"$dir/commit"
	fi
	echo "$dir/build/libroundtrim.so"
}

main() {
	local pairs=${BENCH_PAIRS:-15} threads ops jemalloc goal load_before load_after before before_commit
	if [[ $QUICK == 1 ]]; then
		pairs=${BENCH_PAIRS:-3}
	fi
	[[ $pairs =~ ^[1-9][0-9]*$ ]] || die "BENCH_PAIRS must be a positive integer, not '$pairs'"
	[[ -x $BENCH_BIN/alloc_bench ]] || die "$BENCH_BIN/alloc_bench is not built"
	[[ -r $LIB ]] || die "$LIB is not built"
	jemalloc=$(find_preload libjemalloc.so.2 libjemalloc2)
	before=$(build_before) || die "cannot build the library before detection"
	before_commit=$(cat "$RAW/before/commit" 2>/dev/null || true)
	read -r load_before _ </proc/loadavg
	note_load "overhead: before"
	# Every pair, for a second look at a surprising median.
	rm -rf "$RAW/overhead"
	mkdir -p "$RAW/overhead"
	record_command "$BENCH_BIN/alloc_bench" --threads 1 --ops "$(overhead_ops glibc)"
	record_command env LD_PRELOAD="$LIB:$jemalloc" "$BENCH_BIN/alloc_bench" --threads 2 \
		--ops "$(overhead_ops jemalloc)"
	{
		ops=$(overhead_ops glibc)
		# The machine's own noise: the baseline against itself, measured the same way.
		overhead_row control 1 "$ops" "" "" "$pairs" 1.05
		for threads in 1 2; do
			overhead_row glibc "$threads" "$ops" "" "$LIB" "$pairs" 1.05
		done
		ops=$(overhead_ops jemalloc)
		for threads in 1 2; do
			goal=1.05
			# Issue 11's goal: the detector adds nothing to the hot path.
			((threads == 1)) && goal=1.02
			# roundtrim first: its wrappers must be what the program's calls reach.
			overhead_row jemalloc "$threads" "$ops" "$jemalloc" "$LIB:$jemalloc" "$pairs" "$goal"
			if ((threads == 1)) && [[ -n $before ]]; then
				# Before and after detection, side by side: the library at
				# BEFORE_DETECTION against no library, then today's against it directly.
				overhead_row jemalloc-before "$threads" "$ops" "$jemalloc" "$before:$jemalloc" \
					"$pairs" - "jemalloc, library at ${before_commit:0:7} (before detection)" \
					"jemalloc, $threads thread(s), the library before automatic detection (${before_commit:0:7}): CPU time with / without"
				overhead_row jemalloc-now-vs-before "$threads" "$ops" "$before:$jemalloc" \
					"$LIB:$jemalloc" "$pairs" - "jemalloc, library now / at ${before_commit:0:7}" \
					"jemalloc, $threads thread(s): CPU time with the library now / with it before automatic detection (${before_commit:0:7})"
			fi
		done
	} >"$RAW/overhead/rows.md"
	read -r load_after _ </proc/loadavg
	{
		echo "## Figure 2: hot path"
		echo
		echo "\`alloc_bench\` (T threads, each N malloc/free/realloc/calloc of 16 B..8 KiB on its own"
		echo "table) without and with roundtrim preloaded, in $pairs interleaved pairs after one"
		echo "discarded pair; the side that runs first alternates. Ratio: with / without, per pair, of the"
		echo "process's CPU time from before its threads start to after they are joined (every thread,"
		echo "the library's own worker included); median [min–max] over the pairs. The wall-time ratio"
		echo "(median) is shown beside it: it also counts the time other processes held the cores, and"
		echo "swings with the machine's load. The control row runs the same program on both sides: its"
		echo "spread is the machine's noise. Load average (1 min): $load_before before, $load_after"
		echo "after, on $(nproc) cores. The library runs as deployed: ROUNDTRIM_SITES off, which leaves"
		echo "the hot path as it is without the feature (figure 8 has it on)."
		if [[ -n $before ]]; then
			echo
			echo "Before and after automatic round detection (issue 11): the two rows after jemalloc's"
			echo "1-thread row run the library as it was at ${before_commit:0:7}, the commit before"
			echo "detection landed, built by this benchmark from that commit's tree (\`git archive\` into"
			echo "\`$(realpath --relative-to="$ROOT" "$RAW/before" 2>/dev/null || echo "$RAW/before")\`, \`make\` there): first against no library, then"
			echo "today's library against it, pair by pair in the same way."
		fi
		echo
		echo "| allocator | threads | ops/thread | median CPU ratio | min | max | median CPU without (s) | median CPU with (s) | median wall ratio | goal | verdict |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
		cat "$RAW/overhead/rows.md"
		echo
	} >"$RAW/fig2.md"
	note_load "overhead: after"
	cat "$RAW/fig2.md"
}

main "$@"
