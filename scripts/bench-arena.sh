#!/usr/bin/env bash
# bench-arena.sh: figure 6 of `make bench`, what each way of giving memory back leaves, on the
# thread-pool workload (test/workloads/pool: 8 persistent threads, each of which leaves its round's
# 24 MiB as free top in its own glibc arena, after a free of a 16 MiB mmapped block raised glibc's
# dynamic thresholds) and on the fragmenting one (test/workloads/frag), driven round by round by
# rounds.sh. After the last round (and, with roundtrim, after that round's action) the driver
# reads the process's VmRSS and its smaps_rollup (Anonymous, LazyFree: pages given back with
# MADV_FREE that the kernel has not taken yet); the live heap is what the workload holds. Runs
# are interleaved (run 1 of every configuration, then run 2, ...), so that ratios are taken
# pairwise. Then, once each, per arena: what the program's own malloc_trim(0) leaves (pool
# --arenas: glibc's malloc_info and /proc/self/smaps, read in the workload before and after its
# call), and what roundtrim's action leaves (pool --arenas-next). Last, what the library's
# readings cost on a heap of many free chunks (test/bench/chunks): the live heap (mallinfo2) and
# the RSS split (smaps_rollup), and whether the library read the live heap or said live-skipped.
# Raw data: $RAW/arena/. See bench-lib.sh for the files it hands to bench.sh.
# Environment: ARENA_ROUNDS (rounds per run; 5, 3 with BENCH_QUICK=1).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

JEMALLOC=$(find_preload libjemalloc.so.2 libjemalloc2)
CONFIGS=(glibc glibc+self-trim glibc+roundtrim glibc+roundtrim-trim glibc-arena-max-2
	glibc-arena-max-1 jemalloc+self-purge jemalloc+roundtrim)
ARENA_CAPS=(glibc-arena-max-2 glibc-arena-max-1)

describe() {
	case $1 in
	glibc) echo "glibc, no release" ;;
	glibc+self-trim) echo "glibc, the program calls malloc_trim(0) at the very end of each round (the in-process best case)" ;;
	glibc+roundtrim) echo "glibc with roundtrim, its default action (glibc_release), one FIFO round after each round (N=1)" ;;
	glibc+roundtrim-trim) echo "glibc with roundtrim, ROUNDTRIM_GLIBC=trim: malloc_trim(0) on its worker (the action before issue 12)" ;;
	glibc-arena-max-2) echo "glibc with MALLOC_ARENA_MAX=2 (NVFlare's cap), the program's malloc_trim(0) at the end of each round" ;;
	glibc-arena-max-1) echo "glibc with MALLOC_ARENA_MAX=1, the program's malloc_trim(0) at the end of each round" ;;
	jemalloc+self-purge) echo "jemalloc, the program calls mallctl(\"arena.4096.purge\") at the end of each round" ;;
	jemalloc+roundtrim) echo "jemalloc with roundtrim (its purge on the worker)" ;;
	esac
}

# workload_cmd WORKLOAD: the command line, one word a line.
workload_cmd() {
	case $1 in
	pool) printf '%s\n' "$WORKLOADS_BIN/pool" --threads 8 --mib 24 --raise-mib 16 ;;
	frag) printf '%s\n' "$WORKLOADS_BIN/frag" --threads 2 --mib "$FRAG_MIB" ;;
	*) die "unknown workload $1" ;;
	esac
	printf '%s\n' --rounds "$ROUNDS" --wait
}

# config_env CONFIG: the variables, one a line.
config_env() {
	case $1 in
	glibc+roundtrim) echo "LD_PRELOAD=$LIB" && rounds_roundtrim_env ;;
	glibc+roundtrim-trim) echo "LD_PRELOAD=$LIB" ROUNDTRIM_GLIBC=trim | tr ' ' '\n' && rounds_roundtrim_env ;;
	glibc-arena-max-2) echo MALLOC_ARENA_MAX=2 ;;
	glibc-arena-max-1) echo MALLOC_ARENA_MAX=1 ;;
	jemalloc+self-purge) echo "LD_PRELOAD=$JEMALLOC" ;;
	# roundtrim first: its wrappers must be what the program's calls reach (roundtrim(7)).
	jemalloc+roundtrim) echo "LD_PRELOAD=$LIB:$JEMALLOC" && rounds_roundtrim_env ;;
	esac
}

# config_args CONFIG: the workload's own options for the configuration, one a line.
config_args() {
	case $1 in
	glibc+self-trim | glibc-arena-max-*) echo --self-trim ;;
	jemalloc+self-purge) echo --self-purge ;;
	esac
}

# rollup PID FIELD: a field of the process's smaps_rollup, KiB.
rollup() {
	awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' "/proc/$1/smaps_rollup"
}

# lib_rss PID: the resident KiB of the process's mappings of libroundtrim.so (0 without it).
lib_rss() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { mine = /libroundtrim\.so/; next } mine && $1 == "Rss:" { kib += $2 }
		END { print kib + 0 }' "/proc/$1/smaps"
}

# run_one WORKLOAD CONFIG RUN: one run; writes "rss_kib anon_kib lazyfree_kib live_kib lib_kib".
run_one() {
	local workload=$1 config=$2 run=$3 r env=() cmd=() out
	mapfile -t env < <(config_env "$config")
	mapfile -t cmd < <(workload_cmd "$workload")
	mapfile -t -O "${#cmd[@]}" cmd < <(config_args "$config")
	out=$RAW/arena/$workload/$config.$run
	mkdir -p "$(dirname "$out")"
	((run > 1)) || record_command env "${env[@]}" "${cmd[@]}"
	rounds_start "$workload-$config" "${env[@]}" -- "${cmd[@]}"
	for ((r = 1; r <= ROUNDS; r++)); do
		rounds_read "$workload-$config" "$r"
		if [[ $config == *roundtrim* ]]; then
			rounds_trigger "$workload-$config" "$r"
		fi
		if ((r == ROUNDS)); then
			echo "$(vmrss_kib "$ROUNDS_PID") $(rollup "$ROUNDS_PID" Anonymous)" \
				"$(rollup "$ROUNDS_PID" LazyFree) $ROUND_LIVE_KIB $(lib_rss "$ROUNDS_PID")" >"$out"
		fi
		rounds_next
	done
	rounds_stop "$workload-$config"
}

# values WORKLOAD CONFIG COLUMN: the column (1 rss, 2 anon, 3 lazyfree, 4 live, 5 the library's
# mappings) of every run, MiB.
values() {
	local f
	for f in "$RAW/arena/$1/$2".*; do
		awk -v c="$3" '{ printf "%.3f\n", $c / 1024 }' "$f"
	done
}

# cell WORKLOAD CONFIG COLUMN [DECIMALS]: "median [min–max]" in MiB, one decimal by default.
cell() {
	local m lo hi d=${4:-1}
	read -r m lo hi < <(values "$1" "$2" "$3" | spread)
	echo "$(fmt "$m" "$d") [$(fmt "$lo" "$d")–$(fmt "$hi" "$d")]"
}

# pairs WORKLOAD A B...: run by run, A's final RSS over the smallest of the others', one a line.
pairs() {
	local workload=$1 a=$2 f run num den c v
	shift 2
	for f in "$RAW/arena/$workload/$a".*; do
		run=${f##*.}
		num=$(awk '{ print $1 }' "$f")
		den=
		for c in "$@"; do
			v=$(awk '{ print $1 }' "$RAW/arena/$workload/$c.$run")
			if [[ -z $den ]] || ! at_most "$den" "$v"; then
				den=$v
			fi
		done
		ratio "$num" "$den"
	done
}

# arena_read NAME R FILE: reads the workload's lines up to round R's, keeping its arena lines.
arena_read() {
	local line
	while IFS= read -r -t "$ROUNDS_STEP_TIMEOUT" -u "$ROUNDS_FROM_FD" line; do
		case $line in
		"round $2 "*) return 0 ;;
		arena*) echo "$line" >>"$3" ;;
		*) die "$1: unexpected line: $line" ;;
		esac
	done
	die "$1 run: no line for round $2: $(tail -5 "$ROUNDS_DIR/$1.err")"
}

# arena_run CONFIG: one pool run that prints its arenas; its lines go to $RAW/arena/CONFIG.arenas.
arena_run() {
	local config=$1 r env=() cmd=() out=$RAW/arena/$1.arenas flag=--arenas-next line
	mapfile -t env < <(config_env "$config")
	mapfile -t cmd < <(workload_cmd pool)
	[[ $config == glibc ]] && flag=--arenas
	cmd+=("$flag")
	: >"$out"
	record_command env "${env[@]}" "${cmd[@]}"
	rounds_start "arenas-$config" "${env[@]}" -- "${cmd[@]}"
	for ((r = 1; r <= ROUNDS; r++)); do
		arena_read "arenas-$config" "$r" "$out"
		if [[ $config == *roundtrim* ]]; then
			rounds_trigger "arenas-$config" "$r"
		fi
		rounds_next
	done
	# With --arenas-next, the last round's lines after its action come before the exit.
	if [[ $flag == --arenas-next ]]; then
		while [[ ${line:-} != "arenas round=$ROUNDS when=next "* ]]; do
			IFS= read -r -t "$ROUNDS_STEP_TIMEOUT" -u "$ROUNDS_FROM_FD" line ||
				die "no arena lines after round $ROUNDS: $(tail -5 "$ROUNDS_DIR/arenas-$config.err")"
			echo "$line" >>"$out"
		done
	fi
	rounds_stop "arenas-$config"
}

# arena_field CONFIG WHEN NR KEY: a value from the last round's arena lines.
arena_field() {
	awk -v r="$ROUNDS" -v w="$2" -v nr="$3" -v k="$4" '
		$1 == "arena" && $2 == "round=" r && $3 == "when=" w && $4 == "nr=" nr {
			for (i = 5; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] }
		}' "$RAW/arena/$1.arenas"
}

# arena_total CONFIG WHEN KEY: a value from the last round's process line.
arena_total() {
	awk -v r="$ROUNDS" -v w="$2" -v k="$3" '
		$1 == "arenas" && $2 == "round=" r && $3 == "when=" w {
			for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] }
		}' "$RAW/arena/$1.arenas"
}

# arena_count CONFIG: how many arenas the last round's lines show.
arena_count() {
	awk -v r="$ROUNDS" '$1 == "arena" && $2 == "round=" r && $3 == "when=before" { n++ } END { print n + 0 }' \
		"$RAW/arena/$1.arenas"
}

# arena_tables: the per-arena tables of the last round.
arena_tables() {
	local nr n who c
	echo "### Per arena, round $ROUNDS of pool: what malloc_trim(0) leaves"
	echo
	echo "glibc alone, the program's own malloc_trim(0) at the end of the round (\`pool --arenas\`:"
	echo "malloc_info's figures and the RSS of each arena's heaps from /proc/self/smaps, read in the"
	echo "workload just before and just after its call). KiB. \"Pool threads\": how many of the pool's"
	echo "threads hold their live block in the arena."
	echo
	echo "| arena | pool threads | system | free top | free in bins | RSS before | RSS after malloc_trim(0) | left by malloc_trim |"
	echo "|---|---|---|---|---|---|---|---|"
	n=$(arena_count glibc)
	for ((nr = 0; nr < n; nr++)); do
		awk -v nr="$nr" -v kind="$(arena_field glibc before "$nr" kind)" \
			-v p="$(arena_field glibc before "$nr" pool_threads)" \
			-v s="$(arena_field glibc before "$nr" system_kib)" \
			-v t="$(arena_field glibc before "$nr" top_kib)" \
			-v b="$(arena_field glibc before "$nr" bins_kib)" \
			-v x="$(arena_field glibc before "$nr" rss_kib)" \
			-v y="$(arena_field glibc after "$nr" rss_kib)" 'BEGIN {
			printf "| %d %s | %d | %d | %d | %d | %d | %d | %.0f%% |\n", nr, kind, p, s, t, b, x, y,
			    (x > 0 ? 100 * y / x : 0) }'
	done
	echo "| process (VmRSS; LazyFree) | | | | | $(arena_total glibc before rss_kib) | $(arena_total glibc after rss_kib) (LazyFree $(arena_total glibc after lazyfree_kib)) | |"
	echo
	echo "With roundtrim (\`pool --arenas-next\`: the same readings at the end of the round, then again"
	echo "after roundtrim's action on it). One run each; arenas in ring order (the newest first), so"
	echo "a row of one run need not be the same thread's arena as the same row of the other. An"
	echo "arena that holds no pool thread's block is the library's: its worker takes one as it starts"
	echo "(see roundtrim(7), ALLOCATORS)."
	echo
	echo "| arena | glibc_release: pool threads | RSS before | RSS after | ROUNDTRIM_GLIBC=trim: pool threads | RSS before | RSS after |"
	echo "|---|---|---|---|---|---|---|"
	n=$(arena_count glibc+roundtrim)
	for ((nr = 0; nr < n; nr++)); do
		printf '| %s %s ' "$nr" "$(arena_field glibc+roundtrim before "$nr" kind)"
		for c in glibc+roundtrim glibc+roundtrim-trim; do
			who=$(arena_field "$c" before "$nr" pool_threads)
			printf '| %s | %s | %s ' "${who:--}" "$(arena_field "$c" before "$nr" rss_kib)" \
				"$(arena_field "$c" next "$nr" rss_kib)"
		done
		echo "|"
	done
	printf '| process (VmRSS) '
	for c in glibc+roundtrim glibc+roundtrim-trim; do
		printf '| | %s | %s (LazyFree %s) ' "$(arena_total "$c" before rss_kib)" \
			"$(arena_total "$c" next rss_kib)" "$(arena_total "$c" next lazyfree_kib)"
	done
	echo "|"
	echo
}

# chunks_run NAME ENV... -- ARGS...: one run of test/bench/chunks under roundtrim; its lines go
# to $RAW/arena/chunks.NAME.
chunks_run() {
	local name=$1 env=()
	shift
	while [[ $1 != -- ]]; do
		env+=("$1")
		shift
	done
	shift
	local cmd=("$BENCH_BIN/chunks" "$@" --rounds 3)
	env+=("LD_PRELOAD=$LIB" "ROUNDTRIM_FIFO=$ROUNDS_DIR/chunks/%p.fifo"
		"ROUNDTRIM_STATS=$ROUNDS_DIR/chunks/%p.jsonl" ROUNDTRIM_GC_ROUNDS=1)
	mkdir -p "$ROUNDS_DIR/chunks"
	record_command env "${env[@]}" "${cmd[@]}"
	env "${CLEAN_ENV[@]}" "${env[@]}" "${cmd[@]}" >"$RAW/arena/chunks.$name" ||
		die "chunks failed: $name"
}

# key FILE LINE-PREFIX KEY: a key's value from the first line of FILE that starts with the prefix.
key() {
	awk -v p="$2" -v k="$3" 'index($0, p) == 1 {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) { print kv[2]; exit } } }' "$1"
}

# chunks_table CASES...: the readings' costs, one row per case "name|description".
chunks_table() {
	local c name what f r
	echo "| heap | RSS (MiB) | mallinfo2 (ms) | smaps_rollup (ms) | statm (µs) | round 1 | round 2 | round 3 |"
	echo "|---|---|---|---|---|---|---|---|"
	for c in "$@"; do
		name=${c%%|*} what=${c#*|}
		f=$RAW/arena/chunks.$name
		printf '| %s | %s | %s [%s–%s] | %s [%s–%s] | %s ' "$what" \
			"$(fmt "$(awk -v v="$(key "$f" chunks= rss_kib)" 'BEGIN { print v / 1024 }')" 0)" \
			"$(fmt "$(key "$f" chunks= mallinfo2_ms)" 1)" "$(fmt "$(key "$f" chunks= mallinfo2_min_ms)" 1)" \
			"$(fmt "$(key "$f" chunks= mallinfo2_max_ms)" 1)" \
			"$(fmt "$(awk -v v="$(key "$f" chunks= smaps_rollup_us)" 'BEGIN { print v / 1000 }')" 1)" \
			"$(fmt "$(awk -v v="$(key "$f" chunks= smaps_rollup_min_us)" 'BEGIN { print v / 1000 }')" 1)" \
			"$(fmt "$(awk -v v="$(key "$f" chunks= smaps_rollup_max_us)" 'BEGIN { print v / 1000 }')" 1)" \
			"$(fmt "$(key "$f" chunks= statm_us)" 0)"
		for r in 1 2 3; do
			if [[ $(key "$f" "round=$r " live_skipped) == 1 ]]; then
				printf '| live-skipped, %s ms ' "$(fmt "$(key "$f" "round=$r " handled_ms)" 1)"
			else
				printf '| read, %s ms ' "$(fmt "$(key "$f" "round=$r " handled_ms)" 1)"
			fi
		done
		echo "|"
	done
}

# chunks_reads NAME: how many of its rounds read the live heap.
chunks_reads() {
	grep -c 'live_skipped=0' "$RAW/arena/chunks.$1" || true
}

main() {
	local runs run workload c m lo hi rt goal verdict million small_chunks large_chunks
	[[ -r $LIB && -x $WORKLOADS_BIN/pool && -x $BENCH_BIN/chunks ]] ||
		die "$LIB, pool or chunks is not built: run make"
	if [[ $QUICK == 1 ]]; then
		ROUNDS=${ARENA_ROUNDS:-3} FRAG_MIB=64 runs=1 small_chunks=100000 large_chunks=10000
	else
		ROUNDS=${ARENA_ROUNDS:-5} FRAG_MIB=256 runs=3 small_chunks=1000000 large_chunks=50000
	fi
	[[ $ROUNDS =~ ^[2-9]$|^[1-9][0-9]+$ ]] || die "ARENA_ROUNDS must be an integer of at least 2"
	rm -rf "$RAW/arena"
	mkdir -p "$RAW/arena"
	note_load "arena: before"
	for ((run = 1; run <= runs; run++)); do
		for workload in pool frag; do
			for c in "${CONFIGS[@]}"; do
				note "arena: $workload, $c, run $run of $runs"
				run_one "$workload" "$c" "$run"
			done
		done
	done
	for c in glibc glibc+roundtrim glibc+roundtrim-trim; do
		note "arena: pool's arenas, $c"
		arena_run "$c"
	done
	note "arena: readings on $small_chunks free chunks"
	chunks_run small -- --chunks "$small_chunks" --size 200
	chunks_run small-pages -- --chunks "$small_chunks" --size 200 --pages 100
	chunks_run large -- --chunks "$large_chunks" --size 5000
	chunks_run small-trim ROUNDTRIM_GLIBC=trim -- --chunks "$small_chunks" --size 200
	local load_after
	read -r load_after _ </proc/loadavg
	note_load "arena: after"

	{
		echo "## Figure 6: what each way of giving memory back leaves"
		echo
		echo "pool: 8 persistent threads; each round every thread frees a 16 MiB block (glibc unmaps it"
		echo "and raises its dynamic mmap threshold to 16 MiB and its trim threshold to 32 MiB), then"
		echo "allocates, touches and frees 24 MiB in blocks of 64 KiB..1 MiB, which merge into its own"
		echo "arena's free top; 4 KiB a thread stays live. frag: 2 threads, $FRAG_MIB MiB churned per"
		echo "round, one block in ten kept into the next round. $ROUNDS rounds; after the last one (and,"
		echo "with roundtrim, after its action on it) the driver reads VmRSS and smaps_rollup, and the"
		echo "resident pages of the process's mappings of libroundtrim.so (its code and data: RSS"
		echo "that no release can return). Each cell: median [min–max] of $runs run(s), MiB. Goal:"
		echo "1.05 × live + 8 MiB. Load average (1 min) after the runs: $load_after on $(nproc) cores."
		echo
		for workload in pool frag; do
			local live
			live=$(values "$workload" glibc+roundtrim 4 | median)
			echo "### $workload: after the last round"
			echo
			echo "| configuration | RSS | anonymous | LazyFree | libroundtrim.so's pages | live heap | RSS ≤ 1.05 × live + 8 ($(fmt "$(awk -v l="$live" 'BEGIN { print 1.05 * l + 8 }')" 1))? |"
			echo "|---|---|---|---|---|---|---|"
			for c in "${CONFIGS[@]}"; do
				m=$(values "$workload" "$c" 1 | median)
				verdict=no
				at_most "$m" "$(awk -v l="$(values "$workload" "$c" 4 | median)" 'BEGIN { print 1.05 * l + 8 }')" && verdict=yes
				echo "| $c: $(describe "$c") | $(cell "$workload" "$c" 1) | $(cell "$workload" "$c" 2) | $(cell "$workload" "$c" 3) | $(cell "$workload" "$c" 5 2) | $(cell "$workload" "$c" 4 2) | $verdict |"
			done
			echo
		done
		arena_tables
		echo "### What the library's readings cost"
		echo
		echo "test/bench/chunks builds a heap of free chunks kept apart by live ones (2N blocks, every"
		echo "other one freed, then sorted into glibc's bins), times in the process itself, 5 times"
		echo "each, mallinfo2() (the live-heap reading on glibc: it walks every free chunk, holding"
		echo "each arena's lock through that arena's walk), a pread of /proc/self/smaps_rollup (the RSS"
		echo "split, which the library reads after each action only) and of /proc/self/statm (RSS,"
		echo "read every round), then asks roundtrim for 3 rounds. Cells: median [min–max] of the 5;"
		echo "per round, whether the library read the live heap or wrote live-skipped, and the time"
		echo "from the trigger to the round's stats line. The rule: the live heap is read only when it"
		echo "costs at most 1 ms, else the round's note says live-skipped."
		echo
		chunks_table "small|$small_chunks free chunks of 200 B (small bins)" \
			"small-pages|the same and 100 free chunks of 8 KiB" \
			"large|$large_chunks free chunks of 5000 B (large bins)" \
			"small-trim|$small_chunks free chunks of 200 B, ROUNDTRIM_GLIBC=trim"
		echo
		echo "The release walks, and so counts, only the bins that malloc_trim walks (unsorted, and"
		echo "those of a page or more); a heap whose free chunks all sit in the small bins or"
		echo "fastbins shows it none, and only the cost of a first reading then tells."
		echo
	} >"$RAW/fig6.md"

	# Goals.
	local cap_note=""
	rt=$(values pool glibc+roundtrim 1 | median)
	goal=$(awk -v l="$(values pool glibc+roundtrim 4 | median)" 'BEGIN { print 1.05 * l + 8 }')
	read -r m lo hi < <(values pool glibc+roundtrim 1 | spread)
	verdict=missed
	at_most "$m" "$goal" && verdict=met
	summary_row 6 "pool, 8 threads: final RSS with roundtrim (glibc_release), no arena cap (MiB)" \
		"≤ 1.05 × live + 8 = $(fmt "$goal" 1)" "$(fmt "$m" 1)" "$(fmt "$lo" 1)" "$(fmt "$hi" 1)" "$verdict"
	[[ $verdict == met ]] || loss "pool: with roundtrim the final RSS is $(fmt "$m" 1) MiB, above the goal of $(fmt "$goal" 1) MiB (1.05 × live + 8)."
	read -r m lo hi < <(pairs pool glibc+roundtrim "${ARENA_CAPS[@]}" | spread)
	verdict=missed
	awk -v v="$m" 'BEGIN { exit !(v < 1) }' && verdict=met
	summary_row 6 "pool: final RSS, roundtrim (no cap) / the best arena cap with the program's malloc_trim(0) (ratio, pairs of runs)" \
		"< 1.00" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	if [[ $verdict != met ]]; then
		for c in "${ARENA_CAPS[@]}"; do
			cap_note+=", $c $(fmt "$(values pool "$c" 1 | median)" 1) MiB (anonymous $(fmt "$(values pool "$c" 2 | median)" 2))"
		done
		loss "pool: roundtrim ends at $(fmt "$rt" 1) MiB (anonymous $(fmt "$(values pool glibc+roundtrim 2 | median)" 2), libroundtrim.so's own pages $(fmt "$(values pool glibc+roundtrim 5 | median)" 2)) against${cap_note#,}: an arena cap with the program's own malloc_trim(0) ends as low or lower, at the cost of every thread sharing one or two arena locks; what roundtrim keeps above it is its own code and data, and 8 KiB per thread arena."
	fi
	read -r m lo hi < <(pairs frag glibc+roundtrim glibc+roundtrim-trim | spread)
	verdict=missed
	at_most "$m" 1.0 && verdict=met
	summary_row 6 "frag: final RSS, roundtrim's glibc_release / its malloc_trim (ROUNDTRIM_GLIBC=trim) (ratio, pairs of runs)" \
		"≤ 1.00" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	[[ $verdict == met ]] || loss "frag: glibc_release ends $(fmt "$(awk -v v="$m" 'BEGIN { print (v - 1) * 100 }')" 1)% above malloc_trim (median of pairs; $(fmt "$(values frag glibc+roundtrim 1 | median)" 1) against $(fmt "$(values frag glibc+roundtrim-trim 1 | median)" 1) MiB)."
	# The same against the in-process best case: no worse than today's action was.
	local today
	today=$(pairs frag glibc+roundtrim-trim glibc+self-trim | median)
	read -r m lo hi < <(pairs frag glibc+roundtrim glibc+self-trim | spread)
	verdict=missed
	at_most "$m" "$today" && verdict=met
	summary_row 6 "frag: final RSS, roundtrim / the program's own malloc_trim(0) at the very end of each round (ratio, pairs of runs; goal: today's, ROUNDTRIM_GLIBC=trim's)" \
		"≤ $(fmt "$today" 3)" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	[[ $verdict == met ]] || loss "frag: roundtrim ends at $(fmt "$m" 3) × the program's own malloc_trim(0) at the end of each round, against $(fmt "$today" 3) × with its malloc_trim (ROUNDTRIM_GLIBC=trim)."
	for workload in pool frag; do
		read -r m lo hi < <(pairs "$workload" jemalloc+roundtrim jemalloc+self-purge | spread)
		verdict=missed
		at_most "$m" 1.0 && verdict=met
		summary_row 6 "$workload on jemalloc: final RSS, roundtrim's purge / the program's own purge (ratio, pairs of runs)" \
			"≤ 1.00" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
		[[ $verdict == met ]] || loss "$workload on jemalloc: roundtrim's purge ends at $(fmt "$(values "$workload" jemalloc+roundtrim 1 | median)" 1) MiB (anonymous $(fmt "$(values "$workload" jemalloc+roundtrim 2 | median)" 2), libroundtrim.so's own pages $(fmt "$(values "$workload" jemalloc+roundtrim 5 | median)" 2)), against $(fmt "$(values "$workload" jemalloc+self-purge 1 | median)" 1) MiB (anonymous $(fmt "$(values "$workload" jemalloc+self-purge 2 | median)" 2)) when the program purges at the very end of its round."
		read -r m lo hi < <(values "$workload" jemalloc+roundtrim 3 | spread)
		summary_row 6 "$workload on jemalloc with roundtrim: LazyFree in the final RSS (MiB)" \
			"—" "$(fmt "$m" 1)" "$(fmt "$lo" 1)" "$(fmt "$hi" 1)" "no goal"
	done
	million=$(key "$RAW/arena/chunks.small" chunks= mallinfo2_ms)
	local reads=0 name
	for name in small small-pages large; do
		[[ $(key "$RAW/arena/chunks.$name" chunks= mallinfo2_min_ms) ]] || die "no chunks figures for $name"
		if ! at_most "$(key "$RAW/arena/chunks.$name" chunks= mallinfo2_min_ms)" 1; then
			reads=$((reads + $(chunks_reads "$name")))
		fi
	done
	verdict=met
	((reads == 0)) || verdict="missed: read $reads time(s) at over 1 ms"
	summary_row 6 "live heap on $small_chunks free chunks of 200 B: mallinfo2's cost (ms); the library reads it only at ≤ 1 ms, else says live-skipped" \
		"≤ 1 or live-skipped" "$(fmt "$million" 1)" "$(fmt "$(key "$RAW/arena/chunks.small" chunks= mallinfo2_min_ms)" 1)" \
		"$(fmt "$(key "$RAW/arena/chunks.small" chunks= mallinfo2_max_ms)" 1)" "$verdict"
	[[ $verdict == met ]] || loss "Live heap on glibc: over the three heaps of many free chunks, the library read mallinfo2 $reads time(s) in 9 rounds where it costs more than 1 ms (at $small_chunks chunks of 200 B: $(fmt "$million" 1) ms in this process, with each arena's lock held through its walk); the first reading of a process can only learn its cost by paying it."
	local per_gib
	per_gib=$(awk -v us="$(key "$RAW/arena/chunks.small" chunks= smaps_rollup_us)" \
		-v kib="$(key "$RAW/arena/chunks.small" chunks= rss_kib)" 'BEGIN { printf "%.3f\n", us / 1000 / (kib / 1048576) }')
	summary_row 6 "smaps_rollup read after an action, $(fmt "$(awk -v v="$(key "$RAW/arena/chunks.small" chunks= rss_kib)" 'BEGIN { print v / 1024 }')" 0) MiB RSS (ms; $(fmt "$per_gib" 1) ms per GiB at the median)" \
		"—" "$(fmt "$(awk -v v="$(key "$RAW/arena/chunks.small" chunks= smaps_rollup_us)" 'BEGIN { print v / 1000 }')" 1)" \
		"$(fmt "$(awk -v v="$(key "$RAW/arena/chunks.small" chunks= smaps_rollup_min_us)" 'BEGIN { print v / 1000 }')" 1)" \
		"$(fmt "$(awk -v v="$(key "$RAW/arena/chunks.small" chunks= smaps_rollup_max_us)" 'BEGIN { print v / 1000 }')" 1)" "no goal"
	cat "$RAW/fig6.md"
}

main "$@"
