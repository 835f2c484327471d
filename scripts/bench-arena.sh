#!/usr/bin/env bash
# bench-arena.sh: what each way of giving memory back leaves, on the thread-pool workload
# (test/workloads/pool: 8 threads that each leave a round's 24 MiB as free top in their own glibc
# arena) and on the fragmenting one (test/workloads/frag), driven round by round by rounds.sh.
# For each configuration it prints the final RSS (VmRSS after the last round and, with roundtrim,
# after that round's action), the live heap, the goal 1.05 x live + 8 MiB, and how much of the
# RSS is LazyFree (smaps_rollup: pages given back with MADV_FREE that the kernel has not taken).
#
#   glibc                 no release at all
#   glibc+self-trim       the program calls malloc_trim(0) at the very end of each round
#   glibc+roundtrim       roundtrim, one FIFO round after each round (N=1)
#   glibc-arena-max-2     MALLOC_ARENA_MAX=2, the program's malloc_trim(0) at the end of rounds
#   glibc-arena-max-1     MALLOC_ARENA_MAX=1, likewise
#   jemalloc+roundtrim    jemalloc preloaded after roundtrim, its purge each round
#
# Environment: ARENA_ROUNDS (5), ARENA_WORKLOADS ("pool frag"), BUILD.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

ROUNDS=${ARENA_ROUNDS:-5}
WORKLOADS=${ARENA_WORKLOADS:-pool frag}
JEMALLOC=$(find_preload libjemalloc.so.2 libjemalloc2)
CONFIGS=(glibc glibc+self-trim glibc+roundtrim glibc-arena-max-2 glibc-arena-max-1
	jemalloc+roundtrim)

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ARENA_ROUNDS must be a positive integer"

# workload_cmd WORKLOAD: the command line, one word a line.
workload_cmd() {
	case $1 in
	pool) printf '%s\n' "$WORKLOADS_BIN/pool" --threads 8 --mib 24 --raise-mib 16 ;;
	frag) printf '%s\n' "$WORKLOADS_BIN/frag" --threads 2 --mib 256 ;;
	*) die "unknown workload $1" ;;
	esac
	printf '%s\n' --rounds "$ROUNDS" --wait
}

# config_env CONFIG: the variables, one a line.
config_env() {
	case $1 in
	glibc+roundtrim) echo "LD_PRELOAD=$LIB" && rounds_roundtrim_env ;;
	glibc-arena-max-2) echo MALLOC_ARENA_MAX=2 ;;
	glibc-arena-max-1) echo MALLOC_ARENA_MAX=1 ;;
	jemalloc+roundtrim) echo "LD_PRELOAD=$LIB:$JEMALLOC" && rounds_roundtrim_env ;;
	esac
}

# run WORKLOAD CONFIG: prints "rss_kib live_kib lazyfree_kib" after the last round.
run() {
	local workload=$1 config=$2 r env=() cmd=() rss lazy
	mapfile -t env < <(config_env "$config")
	mapfile -t cmd < <(workload_cmd "$workload")
	case $config in
	glibc+self-trim | glibc-arena-max-*) cmd+=(--self-trim) ;;
	esac
	rounds_start "$workload-$config" "${env[@]}" -- "${cmd[@]}"
	for ((r = 1; r <= ROUNDS; r++)); do
		rounds_read "$workload-$config" "$r"
		if [[ $config == *roundtrim ]]; then
			rounds_trigger "$workload-$config" "$r"
		fi
		if ((r == ROUNDS)); then
			rss=$(vmrss_kib "$ROUNDS_PID")
			lazy=$(awk '/^LazyFree:/ { print $2 }' "/proc/$ROUNDS_PID/smaps_rollup")
		fi
		rounds_next
	done
	rounds_stop "$workload-$config"
	echo "$rss $ROUND_LIVE_KIB ${lazy:-0}"
}

main() {
	local workload config rss live lazy
	[[ -r $LIB ]] || die "$LIB is not built: run make"
	note_load "arena: before"
	for workload in $WORKLOADS; do
		echo "## $workload, $ROUNDS rounds: RSS after the last round"
		echo
		echo "| configuration | RSS (MiB) | live (MiB) | goal 1.05 x live + 8 (MiB) | LazyFree (MiB) |"
		echo "|---|---|---|---|---|"
		for config in "${CONFIGS[@]}"; do
			note "arena: $workload, $config"
			read -r rss live lazy < <(run "$workload" "$config")
			awk -v c="$config" -v r="$rss" -v l="$live" -v z="$lazy" 'BEGIN {
				printf "| %s | %.1f | %.1f | %.1f | %.1f |\n", c, r / 1024, l / 1024,
				    1.05 * l / 1024 + 8, z / 1024 }'
		done
		echo
	done
	note_load "arena: after"
}

main "$@"
