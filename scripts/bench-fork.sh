#!/usr/bin/env bash
# bench-fork.sh: figure 11 of `make bench`, what fork children cost. A Python parent holding
# small objects (dicts, strings, ints) forks 4 workers that allocate in bursts with pauses, as a
# DataLoader with fork workers does (test/workloads/py/fork_workers.py); the parent reads the PSS
# of itself and its workers every 0.2 s and reports the peak of their sum. Runs alternate without
# the library, with it (its defaults: workers that live less than ROUNDTRIM_CHILD_START get
# nothing of it), and with ROUNDTRIM_CHILD_START=1s (the workers start the library; the rounds
# they find take the allocator's action alone, never a collection). Ratio of the peaks with /
# without per pair; median [min–max] over pairs.
# Writes $RAW/fig11.md and summary rows (see bench-lib.sh).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

PYTHON=/usr/bin/python3
WORKERS=$ROOT/test/workloads/py/fork_workers.py
CONFIGS=(without with with-started)

# config_env CONFIG: the variables of the configuration, one a line.
config_env() {
	case $1 in
	without) ;;
	with) echo "LD_PRELOAD=$LIB" ;;
	with-started) printf '%s\n' "LD_PRELOAD=$LIB" ROUNDTRIM_CHILD_START=1s ;;
	esac
}

# fork_run CONFIG PAIR MIB BURSTS: one run; its line goes to $RAW/fork/CONFIG.PAIR.txt.
fork_run() {
	local config=$1 pair=$2 mib=$3 bursts=$4 env=() line
	mapfile -t env < <(config_env "$config")
	local cmd=("$PYTHON" "$WORKERS" "$mib" 4 "$bursts")
	[[ $pair == 1 ]] && record_command env "${env[@]}" PYTHONPATH=test/workloads/py "${cmd[@]}"
	line=$(env "${CLEAN_ENV[@]}" "${env[@]}" PYTHONPATH="$ROOT/test/workloads/py" \
		ROUNDTRIM_FIFO="$ROUNDS_DIR/fork/%p.fifo" "${cmd[@]}" </dev/null) ||
		die "fork_workers failed: $config, pair $pair"
	[[ $line == peak_pss_kib=* ]] || die "fork_workers printed: $line"
	echo "$line" >"$RAW/fork/$config.$pair.txt"
}

# field FILE KEY: the number after KEY= in the run's line.
field() {
	tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k { print $2 }'
}

fork_row() {
	local config=$1 pairs=$2 ratios="" p base peak m lo hi verdict=met goal="≤ 1.00" workers=0
	local peaks="" parent=0
	for ((p = 1; p <= pairs; p++)); do
		base=$(field "$RAW/fork/without.$p.txt" peak_pss_kib)
		peak=$(field "$RAW/fork/$config.$p.txt" peak_pss_kib)
		ratios+="$(ratio "$peak" "$base")"$'\n'
		peaks+="$peak"$'\n'
		workers=$((workers + $(field "$RAW/fork/$config.$p.txt" worker_collections)))
		# The parent's collections beyond its own: the library's rounds in it.
		parent=$((parent + $(field "$RAW/fork/$config.$p.txt" parent_collections) -
			$(field "$RAW/fork/without.$p.txt" parent_collections)))
	done
	local peak_mib
	peak_mib=$(awk '{ printf "%.1f\n", $1 / 1024 }' <<<"${peaks%$'\n'}" | median)
	if [[ $config == without ]]; then
		echo "| $config | $(fmt "$peak_mib" 1) | — | — | — | $workers | — | — |"
		return
	fi
	read -r m lo hi < <(spread <<<"${ratios%$'\n'}")
	# The goal's precision: the library's own footprint in each process that starts it (its
	# worker's stack and tables, well under a MiB) is not what the figure is about.
	at_most "$(fmt "$m" 2)" 1.00 || verdict=missed
	[[ $verdict == missed ]] &&
		loss "Fork children ($config): the parent and its 4 fork workers peak at $(fmt "$m" 3)× the PSS they have without the library (goal ≤ 1.00); the workers collected $workers times."
	at_most "$hi" 1.01 ||
		loss "Fork children ($config): one run of $pairs peaked at $(fmt "$hi" 3)× the PSS without the library; the workers collected $workers times, the parent $parent times more than without it (the library's rounds, found by detection in the parent). A collection in the parent after the fork copies the pages its workers still share, as the program's own gc.collect() would."
	summary_row 11 "fork workers sharing the parent's heap, $config: total PSS with / without" \
		"$goal" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	echo "| $config | $(fmt "$peak_mib" 1) | $(fmt "$m" 3) | $(fmt "$lo" 3) | $(fmt "$hi" 3) | $workers | $parent | $verdict |"
}

main() {
	local mib=300 bursts=30 pairs=3 p config
	if [[ $QUICK == 1 ]]; then
		mib=40 bursts=6 pairs=1
	fi
	mkdir -p "$RAW/fork" "$ROUNDS_DIR/fork"
	note_load "fork: before"
	for ((p = 1; p <= pairs; p++)); do
		for config in "${CONFIGS[@]}"; do
			note "fork: $config, pair $p of $pairs"
			fork_run "$config" "$p" "$mib" "$bursts"
		done
	done
	{
		echo "## Figure 11: fork children"
		echo
		echo "A Python parent holding $mib MiB of small objects (dicts, strings, ints) forks 4"
		echo "workers that each make $bursts bursts of allocation (8 MiB in 2 KiB buffers, an eighth kept)"
		echo "with pauses of 0.6 s, as a DataLoader's fork workers do (test/workloads/py/fork_workers.py)."
		echo "The parent reads the PSS of itself and its workers every 0.2 s; the figure is the peak of"
		echo "their sum. Runs alternate without the library, with it (its defaults), and with"
		echo "ROUNDTRIM_CHILD_START=1s (the workers start the library, and the rounds they find take the"
		echo "allocator's action alone); $pairs pairs. Ratio with / without"
		echo "per pair, median [min–max]; worker collections: gc.collect()s counted in the workers"
		echo "through gc.callbacks, all runs; parent collections added: the parent's beyond those it makes"
		echo "without the library (the library's rounds in it; a collection there after the fork copies"
		echo "the pages its workers still share, as the program's own would). The goal is met where the"
		echo "ratio rounds to 1.00 or less."
		echo
		echo "| configuration | peak PSS (MiB, median) | median ratio | min | max | worker collections | parent collections added | goal ≤ 1.00 |"
		echo "|---|---|---|---|---|---|---|---|"
		for config in "${CONFIGS[@]}"; do
			fork_row "$config" "$pairs"
		done
		echo
	} >"$RAW/fig11.md"
	note_load "fork: after"
	cat "$RAW/fig11.md"
}

main "$@"
