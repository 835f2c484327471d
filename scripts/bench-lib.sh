# bench-lib.sh: what the benchmark scripts share; sourced after common.sh, never run.
# Statistics over numbers, the preloads of the compared allocators, the child environment, and the
# files through which each figure's script hands its results to bench.sh:
#   $RAW/summary.tsv   one row per goal: figure<TAB>what<TAB>goal<TAB>median<TAB>min<TAB>max<TAB>verdict
#   $RAW/figN.md       the figure's section of RESULTS.md
#   $RAW/losses.md     one bullet per place where roundtrim loses, worded from the data
#   $RAW/commands.txt  the exact commands, one a line
# CLEAN_ENV, ROUNDS_DIR (scratch) and the round driver come from rounds.sh.
# Environment: BENCH_QUICK=1 (short mode), BENCH_RAW (raw data, default $BUILD/bench),
# BENCH_OUT (where RESULTS.md and the PNGs go, default test/bench).
# shellcheck shell=bash disable=SC2034 # sets variables for the scripts that source it
# shellcheck source=scripts/rounds.sh
source "$ROOT/scripts/rounds.sh"
QUICK=${BENCH_QUICK:-0}
RAW=${BENCH_RAW:-$BUILD_DIR/bench}
OUT=${BENCH_OUT:-$ROOT/test/bench}
mkdir -p "$RAW" "$OUT"
RAW=$(cd "$RAW" && pwd)
OUT=$(cd "$OUT" && pwd)
BENCH_BIN=$BUILD_DIR/test/bench

WORKLOADS_BIN=$BUILD_DIR/test/workloads

# Says how busy the machine is: other processes' load shows up as noise in every figure.
note_load() {
	local load
	read -r load _ </proc/loadavg
	note "$1: load average $load on $(nproc) cores"
}

# now_us OFFSET: CLOCK_MONOTONIC now, in microseconds, from bash's own clock and OFFSET
# (CLOCK_REALTIME less CLOCK_MONOTONIC, read once): the clock of the workloads' boundary lines.
now_us() {
	echo $((${EPOCHREALTIME/./} - $1))
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

# Numbers on stdin, one a line: prints "median min max", each checked to be a number.
spread() {
	local values med lo hi v
	values=$(cat)
	med=$(median <<<"$values") || die "no values to summarise"
	lo=$(minimum <<<"$values")
	hi=$(maximum <<<"$values")
	for v in "$med" "$lo" "$hi"; do
		is_number "$v" || die "statistic '$v' is not a number"
	done
	echo "$med $lo $hi"
}

# A decimal number, possibly negative: the only thing a figure may be.
is_number() {
	[[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]
}

# Prints a / b with 4 decimals; fails when b is zero.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) exit 1; printf "%.4f\n", a / b }'
}

# Whether $1 <= $2, numerically.
at_most() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'
}

# Prints a number with the given decimals: fmt VALUE DECIMALS.
fmt() {
	awk -v v="$1" -v d="$2" 'BEGIN { printf "%.*f\n", d, v }'
}

# find_preload SONAME PACKAGE: the path of a shared library from ld.so's cache; dies naming the
# Debian package when it is missing.
find_preload() {
	local path
	# awk reads all of ldconfig's output: an early exit would make it fail with SIGPIPE.
	path=$(ldconfig -p | awk -v so="$1" '$1 == so && !found && /x86-64/ { print $NF; found = 1 }')
	[[ -n $path && -r $path ]] || die "$1 not found: install the Debian package $2 (scripts/deps.sh)"
	echo "$path"
}

# summary_row FIGURE WHAT GOAL MEDIAN MIN MAX VERDICT: one row of the page's summary table.
summary_row() {
	local v
	for v in "$4" "$5" "$6"; do
		is_number "$v" || die "summary '$2': '$v' is not a number"
	done
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RAW/summary.tsv"
}

# loss TEXT: one bullet of "where roundtrim loses".
loss() {
	printf -- '- %s\n' "$*" >>"$RAW/losses.md"
}

# record_command WORDS...: one exact command for the page, run from the repository root; the
# run's scratch directory shows as $SCRATCH.
record_command() {
	local q
	q=$(printf '%q ' "$@")
	q=${q% }
	q=${q//"$ROUNDS_DIR"/\$SCRATCH}
	echo "${q//"$ROOT"\//}" >>"$RAW/commands.txt"
}

# stall_config SCRATCH CONFIG: the environment (STALL_ENV) and --action (STALL_ACTION) of one
# test/bench/stall run under a configuration: glibc-none, glibc-self, glibc-roundtrim,
# glibc-roundtrim-trim, jemalloc-self, jemalloc-roundtrim (JEMALLOC: its preload). The library's
# FIFO and stats go to $ROUNDS_DIR/SCRATCH.
stall_config() {
	local scratch=$1 config=$2
	STALL_ACTION=roundtrim
	STALL_ENV=()
	case $config in
	*-none) STALL_ACTION=none ;;
	*-self) STALL_ACTION=self ;;
	esac
	case $config in
	jemalloc-self) STALL_ENV=(LD_PRELOAD="$JEMALLOC") ;;
	glibc-roundtrim) STALL_ENV=(LD_PRELOAD="$LIB") ;;
	glibc-roundtrim-trim) STALL_ENV=(LD_PRELOAD="$LIB" ROUNDTRIM_GLIBC=trim) ;;
	jemalloc-roundtrim) STALL_ENV=(LD_PRELOAD="$LIB:$JEMALLOC") ;;
	esac
	if [[ $STALL_ACTION == roundtrim ]]; then
		STALL_ENV+=("ROUNDTRIM_FIFO=$ROUNDS_DIR/$scratch/%p.fifo"
			"ROUNDTRIM_STATS=$ROUNDS_DIR/$scratch/%p.jsonl" ROUNDTRIM_GC_ROUNDS=1)
	fi
}

# stall_record SCRATCH CONFIG ARGS...: the page's command for a configuration, the first time
# only (RECORDED: the caller's associative array). In the script's own shell, not in $(...),
# where RECORDED would not keep it.
stall_record() {
	local scratch=$1 config=$2
	shift 2
	[[ -z ${RECORDED["$config"]:-} ]] || return 0
	stall_config "$scratch" "$config"
	record_command env "${STALL_ENV[@]}" "$BENCH_BIN/stall" "$@" --action "$STALL_ACTION"
	RECORDED["$config"]=1
}

# stall_run SCRATCH CONFIG ARGS...: one run of test/bench/stall with ARGS under the
# configuration; prints its line.
stall_run() {
	local scratch=$1 config=$2
	shift 2
	stall_config "$scratch" "$config"
	env "${CLEAN_ENV[@]}" "${STALL_ENV[@]}" "$BENCH_BIN/stall" "$@" --action "$STALL_ACTION" ||
		die "stall failed: $config $*"
}

# gnuplot_png OUTPUT: the first lines of a gnuplot script that draws into the PNG file OUTPUT,
# with pngcairo where gnuplot has it.
gnuplot_png() {
	local terminal=pngcairo
	if ! gnuplot -e 'set terminal' 2>&1 | grep -qw pngcairo; then
		terminal=png
	fi
	printf 'set terminal %s size 900,540\nset output "%s"\n' "$terminal" "$1"
}

# plot_png OUTPUT TITLE YLABEL DATA XLABEL: an RSS-per-round style line plot of DATA, whose first
# line is "x name1 name2 ..." and whose next lines hold numbers; one line per column.
plot_png() {
	local png=$1 title=$2 ylabel=$3 data=$4 xlabel=$5 ncols
	ncols=$(head -1 "$data" | awk '{ print NF }')
	gnuplot <<EOF || die "gnuplot failed on $data"
$(gnuplot_png "$png")
set title "$title" noenhanced
set xlabel '$xlabel'
set ylabel '$ylabel'
set key outside right top noenhanced
set grid
set yrange [0:*]
set xtics 1
set mxtics 1
set ytics nomirror
# Ten distinct colours (gnuplot's default cycle has eight: a ninth line would repeat the first).
array colours[10] = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf']
do for [i=1:10] { set linetype i linecolor rgb colours[i] }
set linetype cycle 10
plot for [c=2:$ncols] '$data' using 1:c with linespoints lt (c-1) lw 2 pt c title columnheader(c)
EOF
	[[ -s $png ]] || die "gnuplot wrote no $png"
}
