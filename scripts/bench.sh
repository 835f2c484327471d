#!/usr/bin/env bash
# bench.sh: the benchmarks behind `make bench`, which has already built everything run here.
#
# overhead: what preloading roundtrim costs an allocation-heavy program. For each allocator
# (glibc, jemalloc) and thread count, alloc_bench runs without and with the library, in
# interleaved pairs so that drift in a shared, noisy machine hits both sides alike; the figure
# is the median of the per-pair ratios with/without. The table goes to stdout and to
# $BUILD/bench/overhead.txt.
#
# Environment:
#   BENCH_QUICK=1  3 pairs of shorter runs instead of 9 pairs
#   BENCH_PAIRS    pairs per configuration (overrides the mode's default)
#   BUILD          build directory, relative to the repository root (default: build)
#   JEMALLOC       path of libjemalloc.so.2 (default: Debian's)
#
# A missed goal is reported, not failed: the exit status is non-zero only when a run fails or
# prints something that is not a figure.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
JEMALLOC=${JEMALLOC:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
QUICK=${BENCH_QUICK:-0}
# A scratch directory for the whole run, removed however the script ends.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT



# Says how busy the machine is: other processes' load shows up as noise in every figure.
note_load() {
	local load
	read -r load _ </proc/loadavg
	note "$1: load average $load on $(nproc) cores"
}

# Numbers on stdin, one a line: prints the median (the mean of the middle two for an even count).
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) exit 1
		if (NR % 2) printf "%.6f\n", v[(NR + 1) / 2]
		else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2
	}'
}

# Numbers on stdin, one a line: prints the smallest.
minimum() {
	sort -g | awk 'NR == 1 { printf "%.6f\n", $1 } END { if (NR == 0) exit 1 }'
}

# Numbers on stdin, one a line: prints the largest.
maximum() {
	sort -g | awk '{ v = $1 } END { if (NR == 0) exit 1; printf "%.6f\n", v }'
}

# A non-negative decimal: the only thing a figure may be.
is_number() {
	[[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]
}

# Prints a / b with 4 decimals; fails when b is zero.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) exit 1; printf "%.4f\n", a / b }'
}

# Whether $1 <= $2, numerically.
at_most() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'
}

# run_alloc_bench PRELOAD THREADS OPS: runs alloc_bench with LD_PRELOAD=PRELOAD (none when
# empty) and prints the seconds it reports. Fails, showing the program's stderr, when the run
# fails, when the preload was refused, or when the output is not the expected line.
run_alloc_bench() {
	local preload=$1 threads=$2 ops=$3 out err=$SCRATCH/stderr status=0
	if [[ -n $preload ]]; then
		out=$(LD_PRELOAD=$preload "$BUILD_DIR/test/bench/alloc_bench" \
			--threads "$threads" --ops "$ops" 2>"$err") || status=$?
	else
		out=$("$BUILD_DIR/test/bench/alloc_bench" \
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
		withouts+="$a"$'\n'
		withs+="$b"$'\n'
		ratios+="$r"$'\n'
	done
	local med lo hi mwo mw verdict=MISS v
	med=$(median <<<"${ratios%$'\n'}")
	lo=$(minimum <<<"${ratios%$'\n'}")
	hi=$(maximum <<<"${ratios%$'\n'}")
	mwo=$(median <<<"${withouts%$'\n'}")
	mw=$(median <<<"${withs%$'\n'}")
	for v in "$med" "$lo" "$hi" "$mwo" "$mw"; do
		is_number "$v" || die "$name threads=$threads: statistic '$v' is not a number"
	done
	at_most "$med" 1.05 && verdict=PASS
	[[ $base == "$with" ]] && verdict="(noise control: same program on both sides)"
	printf '%-9s %7s  %12.4f  %6.4f  %6.4f  %16.4f  %13.4f  %s' \
		"$name" "$threads" "$med" "$lo" "$hi" "$mwo" "$mw" "$verdict"
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

bench_overhead() {
	local pairs=${BENCH_PAIRS:-9} threads ops
	if [[ $QUICK == 1 ]]; then
		pairs=${BENCH_PAIRS:-3}
	fi
	[[ $pairs =~ ^[1-9][0-9]*$ ]] || die "BENCH_PAIRS must be a positive integer, not '$pairs'"
	[[ -x $BUILD_DIR/test/bench/alloc_bench ]] || die "$BUILD_DIR/test/bench/alloc_bench is not built"
	[[ -r $LIB ]] || die "$LIB is not built"
	mkdir -p "$BUILD_DIR/bench"
	note_load "overhead: before"

	# Each row is shown as soon as it is measured; the file is written once the table is whole.
	local header row table
	header=$(printf '%-9s %7s  %12s  %6s  %6s  %16s  %13s  %s' allocator threads \
		median_ratio min max median_without_s median_with_s 'goal<=1.05')
	echo "$header"
	table=$header
	ops=$(overhead_ops glibc)
	# The machine's own noise: the baseline against itself, measured the same way.
	row=$(overhead_row control 1 "$ops" "" "" "$pairs")
	echo "$row"
	table+=$'\n'$row
	for threads in 1 2; do
		row=$(overhead_row glibc "$threads" "$ops" "" "$LIB" "$pairs")
		echo "$row"
		table+=$'\n'$row
	done
	ops=$(overhead_ops jemalloc)
	for threads in 1 2; do
		if [[ -r $JEMALLOC ]]; then
			# roundtrim first: its wrappers must be what the program's calls reach.
			row=$(overhead_row jemalloc "$threads" "$ops" "$JEMALLOC" \
				"$LIB:$JEMALLOC" "$pairs")
		else
			row=$(printf '%-9s %7s  SKIP: %s not found (set JEMALLOC)' jemalloc \
				"$threads" "$JEMALLOC")
		fi
		echo "$row"
		table+=$'\n'$row
	done
	note_load "overhead: after"
	echo "$table" >"$BUILD_DIR/bench/overhead.txt"
}

main() {
	# The library's defaults are what is measured: no setting inherited from the caller's shell,
	# and no preload on the baseline but the ones named here.
	local var
	for var in $(compgen -e); do
		case $var in
		ROUNDTRIM_* | NVFLARE_* | LD_PRELOAD) unset "$var" ;;
		esac
	done
	bench_overhead
}

main "$@"
