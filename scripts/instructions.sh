#!/usr/bin/env bash
# instructions.sh: what the library costs, counted in instructions. valgrind's callgrind counts
# the same number in every run, where timings on a shared machine swing by ±20 %: these figures
# show a regression of one instruction per call, and prove a goal met or missed. The budgets are
# here and nowhere else: `make check` (test/integration/test_instructions.c) runs `check`, and
# figure 10 of `make bench` (bench-instructions.sh) runs `report`.
#
# Usage: scripts/instructions.sh report|check [NAME...]
#   report  prints one line per figure: NAME<TAB>VALUE<TAB>BUDGET<TAB>VERDICT<TAB>HOW
#   check   the same, then exits 1 when a figure is over its budget
# NAME picks figures (all by default):
#   call-glibc-1 call-glibc-2 call-jemalloc-1 call-jemalloc-2
#       instructions added per malloc-family call: alloc_bench (T threads, each N operations)
#       run twice, with N=OPS_LOW and OPS_HIGH, with and without the library (ROUNDTRIM_MATCH
#       matching it: counting and the worker on, ROUNDTRIM_SITES off, as deployed), counting only
#       the threads' loops (--toggle-collect=bench_thread_main): the difference between the two
#       runs with the library, less the same difference without, divided by the calls the
#       extra operations made (alloc_bench --calls). Start-up and the final frees cancel out.
#       Each count is the fewest of INSTRUCTIONS_RUNS runs (see loop_count).
#       jemalloc: LD_PRELOAD=libroundtrim.so:libjemalloc.so.2 against libjemalloc.so.2 alone.
#   start-nonmatching
#       instructions added to the whole run of /bin/true over an empty preloaded object
#       (test/bench/preload/empty.c), ROUNDTRIM_MATCH=no-such-program on both sides.
#   start-matching
#       the same with ROUNDTRIM_MATCH=true: the library starts its worker and files, and stops
#       them at exit. The worker's first steps run beside the program's exit, so this figure
#       varies by a few percent from run to run; the others do not.
# Environment: BUILD (build directory), INSTRUCTIONS_OPS_LOW, INSTRUCTIONS_OPS_HIGH (operations
# per thread; default 100000 and 300000), INSTRUCTIONS_RUNS (runs of each count, the fewest
# instructions kept; default 2), INSTRUCTIONS_VERBOSE=1 (every command on stderr).
# A figure whose prerequisite is missing (jemalloc not installed) is reported as "skipped", and
# does not fail `check`. Without valgrind the script says so and exits 2.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The budgets (issue 19's goals are 8 per call and 40,000 per start). A call's figure is 4.25 to
# 4.30 with 1 thread in every run; with 2 it moves with where valgrind switches threads (4.53 on
# jemalloc and 4.77 on glibc seen on a loaded machine), so make check holds the 1-thread figures
# and the starts, and make bench reports all. 5 still fails a regression of one instruction a
# call.
BUDGET_CALL=5
BUDGET_START_NONMATCHING=40000
BUDGET_START_MATCHING=1500000

OPS_LOW=${INSTRUCTIONS_OPS_LOW:-100000}
OPS_HIGH=${INSTRUCTIONS_OPS_HIGH:-300000}
RUNS=${INSTRUCTIONS_RUNS:-2}
BENCH_BIN=$BUILD_DIR/test/bench
EMPTY=$BENCH_BIN/libempty.so
ALL=(call-glibc-1 call-glibc-2 call-jemalloc-1 call-jemalloc-2 start-nonmatching start-matching)

usage() {
	echo "usage: $SCRIPT_NAME report|check [${ALL[*]}]" >&2
	exit 2
}

# The library's defaults, whatever the caller's shell holds: only the settings named below.
for var in $(compgen -e); do
	case $var in
	ROUNDTRIM_* | NVFLARE_* | LD_PRELOAD | MALLOC_CONF | MALLOC_ARENA_MAX | GLIBC_TUNABLES) unset "$var" ;;
	esac
done

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/roundtrim-instructions.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT

# counted PRELOAD MATCH VALGRIND-OPTIONS... -- PROGRAM ARGS...: runs PROGRAM under callgrind with
# LD_PRELOAD=PRELOAD (none when empty) and ROUNDTRIM_MATCH=MATCH, and prints the instructions
# collected, then the program's stdout on the next line. The preload also reaches valgrind's own
# launcher script: MATCH names only the measured program, where the library stays inactive.
counted() {
	local preload=$1 match=$2 opts=() log=$SCRATCH/callgrind.log out=$SCRATCH/out status=0 n
	shift 2
	while [[ $1 != -- ]]; do
		opts+=("$1")
		shift
	done
	shift
	local cmd=(valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file="$log"
		"${opts[@]}" "$@")
	[[ ${INSTRUCTIONS_VERBOSE:-0} == 1 ]] &&
		note "LD_PRELOAD=$preload ROUNDTRIM_MATCH=$match ${cmd[*]}"
	env ${preload:+LD_PRELOAD="$preload"} ROUNDTRIM_MATCH="$match" "${cmd[@]}" \
		>"$out" 2>"$SCRATCH/err" || status=$?
	if ((status != 0)) || grep -q 'cannot be preloaded' "$SCRATCH/err"; then
		cat "$SCRATCH/err" "$log" >&2
		die "failed (exit $status): LD_PRELOAD=$preload ${cmd[*]}"
	fi
	n=$(awk '/Collected :/ { n = $NF } END { print n }' "$log")
	[[ $n =~ ^[0-9]+$ ]] || die "no instruction count from callgrind: $(cat "$log")"
	echo "$n"
	cat "$out"
}

# loop_count PRELOAD THREADS OPS: "INSTRUCTIONS CALLS" of alloc_bench's loops, the fewest of
# RUNS runs: with 2 threads, glibc's own count now and then comes out a few hundred thousand
# higher in one run (the threads' interleaving, which valgrind leaves to the host's scheduler).
loop_count() {
	local preload=$1 threads=$2 ops=$3 result n calls least="" i
	for ((i = 0; i < RUNS; i++)); do
		result=$(counted "$preload" alloc_bench --toggle-collect=bench_thread_main -- \
			"$BENCH_BIN/alloc_bench" --threads "$threads" --ops "$ops" --calls)
		n=${result%%$'\n'*}
		[[ $result =~ calls=([0-9]+) ]] || die "alloc_bench did not count its calls: $result"
		calls=${BASH_REMATCH[1]}
		if [[ -z $least ]] || ((n < least)); then
			least=$n
		fi
	done
	echo "$least $calls"
}

# per_call BASE_PRELOAD WITH_PRELOAD THREADS: prints the instructions added per call.
per_call() {
	local base=$1 with=$2 threads=$3 b1 b2 w1 w2 c1 c2 c r
	# Not read from a process substitution, whose failure would go unnoticed.
	r=$(loop_count "$base" "$threads" "$OPS_LOW") && read -r b1 c1 <<<"$r"
	r=$(loop_count "$base" "$threads" "$OPS_HIGH") && read -r b2 c2 <<<"$r"
	r=$(loop_count "$with" "$threads" "$OPS_LOW") && read -r w1 c <<<"$r"
	[[ $c == "$c1" ]] || die "alloc_bench made $c1 calls without the library, $c with it"
	r=$(loop_count "$with" "$threads" "$OPS_HIGH") && read -r w2 c <<<"$r"
	[[ $c == "$c2" ]] || die "alloc_bench made $c2 calls without the library, $c with it"
	((c2 > c1)) || die "alloc_bench made no more calls with more operations"
	awk -v b1="$b1" -v b2="$b2" -v w1="$w1" -v w2="$w2" -v c1="$c1" -v c2="$c2" \
		'BEGIN { printf "%.3f\n", ((w2 - w1) - (b2 - b1)) / (c2 - c1) }'
}

# start_count PRELOAD MATCH: the instructions of a whole run of /bin/true.
start_count() {
	local result
	result=$(counted "$1" "$2" -- /bin/true)
	echo "${result%%$'\n'*}"
}

# row NAME VALUE BUDGET HOW: one line of the report; VALUE "-" when skipped (HOW says why).
row() {
	local verdict=over
	if [[ $2 == - ]]; then
		verdict=skipped
	elif awk -v v="$2" -v b="$3" 'BEGIN { exit !(v + 0 <= b + 0) }'; then
		verdict=within
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$verdict" "$4"
}

jemalloc_path() {
	# awk reads all of ldconfig's output: an early exit would make it fail with SIGPIPE.
	ldconfig -p | awk '$1 == "libjemalloc.so.2" && !found && /x86-64/ { print $NF; found = 1 }'
}

figure() {
	local name=$1 jemalloc threads value
	case $name in
	call-glibc-[12])
		threads=${name##*-}
		value=$(per_call "" "$LIB" "$threads")
		row "$name" "$value" "$BUDGET_CALL" \
			"alloc_bench --threads $threads --ops $OPS_LOW and $OPS_HIGH, loops only, with / without LD_PRELOAD=libroundtrim.so"
		;;
	call-jemalloc-[12])
		threads=${name##*-}
		jemalloc=$(jemalloc_path)
		if [[ -z $jemalloc ]]; then
			row "$name" - "$BUDGET_CALL" "libjemalloc.so.2 is not installed (Debian: libjemalloc2)"
			return
		fi
		value=$(per_call "$jemalloc" "$LIB:$jemalloc" "$threads")
		row "$name" "$value" "$BUDGET_CALL" \
			"alloc_bench --threads $threads --ops $OPS_LOW and $OPS_HIGH, loops only, LD_PRELOAD=libroundtrim.so:libjemalloc.so.2 / libjemalloc.so.2"
		;;
	start-nonmatching | start-matching)
		local match=no-such-program empty with
		[[ $name == start-matching ]] && match=true
		empty=$(start_count "$EMPTY" "$match")
		with=$(start_count "$LIB" "$match")
		row "$name" "$((with - empty))" \
			"$([[ $name == start-matching ]] && echo "$BUDGET_START_MATCHING" || echo "$BUDGET_START_NONMATCHING")" \
			"/bin/true, ROUNDTRIM_MATCH=$match: $with with LD_PRELOAD=libroundtrim.so, $empty with libempty.so"
		;;
	*) usage ;;
	esac
}

main() {
	local mode=${1:-} names=() report over
	case $mode in
	report | check) shift ;;
	*) usage ;;
	esac
	names=("$@")
	((${#names[@]})) || names=("${ALL[@]}")
	command -v valgrind >/dev/null || {
		note "valgrind is not installed (Debian: valgrind; scripts/deps.sh installs it)"
		exit 2
	}
	[[ -r $LIB && -x $BENCH_BIN/alloc_bench && -r $EMPTY ]] ||
		die "$LIB, $BENCH_BIN/alloc_bench or $EMPTY is not built: run make"
	report=$(for name in "${names[@]}"; do figure "$name"; done)
	echo "$report"
	if [[ $mode == check ]]; then
		over=$(awk -F'\t' '$4 == "over" { printf "%s: %s over its budget of %s\n", $1, $2, $3 }' <<<"$report")
		if [[ -n $over ]]; then
			echo "$over" >&2
			exit 1
		fi
	fi
}

main "$@"
