#!/usr/bin/env bash
# bench-heap.sh: figure 12 of `make bench`, the release against the program's own call across heap
# shapes (issue 26). test/bench/stall builds each shape: T threads allocate M MiB in blocks of a
# size mix (fastbin only 16-128 B, mixed 32-2,048 B, large only 1-128 KiB; log-uniform), touch
# them and keep one in K (2, 16, 256), interleaved; then one of them times each malloc+free of its
# loop while the release runs. Per cell, side by side in one run: on glibc the program's own
# malloc_trim(0), roundtrim's release and roundtrim with ROUNDTRIM_GLIBC=trim; on jemalloc the
# program's own arena.4096.purge and roundtrim's purge. Each cell: RSS after, time of the release
# (for roundtrim the library's duration_us), the worst malloc+free of the allocating thread.
# Raw data: $RAW/heap/. See bench-lib.sh for the files it hands to bench.sh.
# Environment (each a space-separated list): HEAP_MIXES (fast mixed large), HEAP_KEEPS (2 16 256),
# HEAP_MIBS (256 1024 4096), HEAP_THREADS (2 16); BENCH_QUICK=1: 64 MiB, 2 threads, 1 in 16.
# HEAP_IDLE=1: no thread allocates during the release (stall --idle): the release's own time,
# with nobody waiting for a lock; no worst op is timed, so the figure has no stall column and no
# stall goal (its ratio would read 1.000, missed, in every cell).
# The machine should hold the largest heap twice (the program's and the kernel's page cache).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

GLIBC_CONFIGS=(glibc-self glibc-roundtrim glibc-roundtrim-trim)
JEMALLOC_CONFIGS=(jemalloc-self jemalloc-roundtrim)

# mix_sizes MIX: the stall options of a size mix.
mix_sizes() {
	case $1 in
	fast) echo --min 16 --max 128 ;;
	mixed) echo --min 32 --max 2048 ;;
	large) echo --min 1024 --max 131072 ;;
	*) die "unknown size mix $1" ;;
	esac
}

mix_words() {
	case $1 in
	fast) echo "16–128 B" ;;
	mixed) echo "32–2,048 B" ;;
	large) echo "1–128 KiB" ;;
	esac
}

# idle: whether no thread allocates during the release (HEAP_IDLE=1).
idle() {
	[[ ${HEAP_IDLE:-0} == 1 ]]
}

# cell_args MIX KEEP MIB THREADS: stall's options for a cell.
cell_args() {
	echo "$(mix_sizes "$1") --keep $2 --mib $3 --threads $4$(idle && echo " --idle")"
}

# worst_op CONFIG CELL: " / " and the cell's worst malloc+free in ms; nothing when idle.
worst_op() {
	idle || echo " / $(fmt "$(value "$1" "$2" worst_op_ms)" 1)"
}

# value CONFIG CELL FIELD: a field of the cell's line.
value() {
	awk -v cell="$2" -v f="$3" '$1 == cell {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) print kv[2] } }' \
		"$RAW/heap/$1.txt"
}

# ratio_of A B [FLOOR]: A / B, each taken as at least FLOOR.
ratio_of() {
	awk -v a="$1" -v b="$2" -v f="${3:-0}" 'BEGIN {
		if (a < f) a = f; if (b < f) b = f
		printf "%.3f\n", (b > 0 ? a / b : (a > 0 ? 999 : 1)) }'
}

mib_of() {
	awk -v k="$1" 'BEGIN { printf "%.0f\n", k / 1024 }'
}

# table ALLOCATOR SELF RT [TRIM]: the figure's table for one allocator; the ratios of RT against
# SELF go to $RAW/heap/ALLOCATOR-{rss,time,stall}.txt, one per cell.
table() {
	local alloc=$1 self=$2 rt=$3 trim=${4:-} cell c rss time stall trim_cols="" trim_head=""
	local op=" / worst op (ms)" stall_head=" stall ratio |" stall_col
	rm -f "$RAW/heap/$alloc-rss.txt" "$RAW/heap/$alloc-time.txt" "$RAW/heap/$alloc-stall.txt"
	if idle; then
		op="" stall_head=""
	fi
	if [[ -n $trim ]]; then
		trim_head=" ROUNDTRIM_GLIBC=trim: RSS (MiB) / ms$op |"
	fi
	echo "| sizes | kept | heap (MiB) | threads | program's own: RSS after (MiB) / ms$op | roundtrim: RSS after (MiB) / ms / ms per GiB$op |$trim_head RSS ratio | time ratio |$stall_head"
	echo "|---|---|---|---|---|---|$([[ -n $trim ]] && echo '---|')---|---|$(idle || echo '---|')"
	for cell in "${CELLS[@]}"; do
		local mix keep mib threads
		IFS=: read -r mix keep mib threads <<<"$cell"
		rss=$(ratio_of "$(value "$rt" "$cell" rss_after_kib)" "$(value "$self" "$cell" rss_after_kib)")
		time=$(ratio_of "$(value "$rt" "$cell" action_ms)" "$(value "$self" "$cell" action_ms)")
		echo "$rss" >>"$RAW/heap/$alloc-rss.txt"
		echo "$time" >>"$RAW/heap/$alloc-time.txt"
		stall_col=""
		if ! idle; then
			stall=$(ratio_of "$(value "$rt" "$cell" worst_op_ms)" "$(value "$self" "$cell" worst_op_ms)" 0.1)
			echo "$stall" >>"$RAW/heap/$alloc-stall.txt"
			stall_col=" $(fmt "$stall" 3) |"
		fi
		if [[ -n $trim ]]; then
			trim_cols=" $(mib_of "$(value "$trim" "$cell" rss_after_kib)") / $(fmt "$(value "$trim" "$cell" action_ms)" 0)$(worst_op "$trim" "$cell") |"
		fi
		c=$(value "$rt" "$cell" action_ms)
		echo "| $(mix_words "$mix") | 1 in $keep | $mib | $threads | $(mib_of "$(value "$self" "$cell" rss_after_kib)") / $(fmt "$(value "$self" "$cell" action_ms)" 0)$(worst_op "$self" "$cell") | $(mib_of "$(value "$rt" "$cell" rss_after_kib)") / $(fmt "$c" 0) / $(fmt "$(awk -v t="$c" -v m="$mib" 'BEGIN { print t * 1024 / m }')" 0)$(worst_op "$rt" "$cell") |$trim_cols $(fmt "$rss" 2) | $(fmt "$time" 2) |$stall_col"
	done
	echo
}

# goal_rows ALLOCATOR WORDS: the summary rows and the losses of one allocator; no stall goal when
# idle (no worst op was timed).
goal_rows() {
	local alloc=$1 words=$2 m lo hi verdict kind goal n kinds="rss time stall"
	idle && kinds="rss time"
	for kind in $kinds; do
		case $kind in
		rss) goal=1.00 what="RSS after roundtrim's $words / after the program's own (ratio per cell)" ;;
		time) goal=1.00 what="time of roundtrim's $words / of the program's own (ratio per cell)" ;;
		stall) goal=0.10 what="worst malloc+free of an allocating thread during roundtrim's $words / during the program's own (ratio per cell)" ;;
		esac
		read -r m lo hi < <(spread <"$RAW/heap/$alloc-$kind.txt")
		verdict=met
		at_most "$hi" "$goal" || verdict=missed
		summary_row 12 "heap shapes, $alloc: $what; the verdict is the worst cell's" "≤ $goal in every cell" \
			"$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
		n=$(awk -v g="$goal" '$1 > g' "$RAW/heap/$alloc-$kind.txt" | wc -l)
		[[ $verdict == met ]] ||
			loss "figure 12 ($alloc): the $kind ratio is above $goal in $n of ${#CELLS[@]} heap shapes (worst $(fmt "$hi" 2)); the table names them"
	done
}

main() {
	local mixes keeps mibs threads mix keep mib t cell c args
	declare -gA RECORDED=()
	mixes=${HEAP_MIXES:-fast mixed large}
	keeps=${HEAP_KEEPS:-2 16 256}
	mibs=${HEAP_MIBS:-256 1024 4096}
	threads=${HEAP_THREADS:-2 16}
	if [[ $QUICK == 1 ]]; then
		keeps=${HEAP_KEEPS:-16} mibs=${HEAP_MIBS:-64} threads=${HEAP_THREADS:-2}
	fi
	JEMALLOC=$(find_preload libjemalloc.so.2 libjemalloc2)
	[[ -x $BENCH_BIN/stall && -r $LIB ]] || die "stall or $LIB is not built"
	rm -rf "$RAW/heap"
	mkdir -p "$RAW/heap" "$ROUNDS_DIR/heap"
	CELLS=()
	for mib in $mibs; do
		for t in $threads; do
			for mix in $mixes; do
				for keep in $keeps; do
					CELLS+=("$mix:$keep:$mib:$t")
				done
			done
		done
	done
	note_load "heap shapes: before"
	for cell in "${CELLS[@]}"; do
		IFS=: read -r mix keep mib t <<<"$cell"
		for c in "${GLIBC_CONFIGS[@]}" "${JEMALLOC_CONFIGS[@]}"; do
			note "heap shapes: $c, $(mix_words "$mix"), 1 in $keep kept, $mib MiB, $t threads"
			read -r -a args <<<"$(cell_args "$mix" "$keep" "$mib" "$t")"
			# The page shows each configuration's command once, for its first cell.
			stall_record heap "$c" "${args[@]}"
			line=$(stall_run heap "$c" "${args[@]}")
			[[ $line == action=* ]] || die "unexpected stall output: $line"
			echo "$cell $line" >>"$RAW/heap/$c.txt"
		done
	done
	note_load "heap shapes: after"
	{
		echo "## Figure 12: heap shapes"
		echo
		echo "test/bench/stall builds each heap: T threads allocate the heap's size in blocks of the"
		echo "size mix (log-uniform), touch them, keep one block in K (interleaved), free the rest and"
		echo "stay alive; one thread then times each malloc+free of a loop while the release runs."
		echo "Per cell the configurations run back to back (one run each: the ratios are noisy on a"
		echo "shared machine). Time: the program's own call's, or the library's duration_us. RSS"
		echo "ratio and time ratio: roundtrim's release against the program's own call; stall ratio:"
		echo "the worst malloc+free during each (goal ≤ 0.10), each taken as at least 0.1 ms (the"
		echo "worst op of the same loop with no release at all, figure 4)."
		if idle; then
			echo "HEAP_IDLE=1: no thread allocated during the release; no worst op was timed, so the"
			echo "figure has no stall column and no stall goal."
		fi
		echo
		echo "### glibc: roundtrim's release against the program's own \`malloc_trim(0)\`"
		echo
		table glibc glibc-self glibc-roundtrim glibc-roundtrim-trim
		echo "### jemalloc: roundtrim's purge against the program's own \`arena.4096.purge\`"
		echo
		table jemalloc jemalloc-self jemalloc-roundtrim
	} >"$RAW/fig12.md"
	goal_rows glibc "release"
	goal_rows jemalloc "purge"
}

main "$@"
