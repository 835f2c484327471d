#!/usr/bin/env bash
# bench-gil.sh: figure 14 of `make bench`, a program's throughput under a round storm while its
# main thread computes in long C calls (issue 24, item 4). test/workloads/py/gil_hold.py computes
# for a fixed time, in calls that keep the GIL (hold: sorted()) or let it go (release: numpy's
# product), leaving cyclic garbage; a driver writes a round every STORM_MS (100 ms, ten rounds a
# second, hundreds of times an FL client's pace) into the library's FIFO, or into /dev/null
# without the library, so that both sides pay for it alike. Configurations, in turn within each
# pair: no library; no library, the program cleaning up itself every STORM_MS as NVFlare does at
# a round's end (gc.collect(), malloc_trim(0)); the library with ROUNDTRIM_PYTHON=off (the
# allocator's release alone); ROUNDTRIM_PYTHON=main (the steps on the main thread only); the
# default (the main thread first, then the library's thread). Each round acts (N=1) and asks for
# a collection, so the goal is the default against the program's own cleanup at the same pace:
# the library's thread waiting for the GIL, or collecting while the main thread computes without
# it, costs the program no more than its own cleanup (goal ≥ 0.95, for the noise of a shared
# machine). The other rows, against no library at all, have no goal.
# Writes $RAW/fig14.md and summary rows (see bench-lib.sh).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

PYTHON=/usr/bin/python3
WORKLOAD=$ROOT/test/workloads/py/gil_hold.py
CONFIGS=(none self off main default)
MODES=(hold release)
STORM_MS=100
# The driver: a line every PERIOD ms for SECONDS into PATH (the library's FIFO, or /dev/null);
# a full FIFO drops the line, as a FIFO writer that must not block does.
# shellcheck disable=SC2016 # a Python program
STORM='import os, sys, time
path, period, seconds = sys.argv[1], float(sys.argv[2]) / 1000, float(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        os.write(fd, b"round\n")
    except BlockingIOError:
        pass
    time.sleep(period)'

# config_env CONFIG: the variables of the configuration, one a line.
config_env() {
	[[ $1 == none || $1 == self ]] && return
	printf '%s\n' "LD_PRELOAD=$LIB" "ROUNDTRIM_FIFO=$ROUNDS_DIR/gil/%p.fifo" ROUNDTRIM_GC_ROUNDS=1 \
		ROUNDTRIM_AUTO=off
	case $1 in
	off) echo ROUNDTRIM_PYTHON=off ;;
	main) echo ROUNDTRIM_PYTHON=main ;;
	esac
}

# gil_run MODE CONFIG PAIR SECONDS: one run; its line goes to $RAW/gil/MODE.CONFIG.PAIR.txt.
gil_run() {
	local mode=$1 config=$2 pair=$3 seconds=$4 env=() pid target to line
	mapfile -t env < <(config_env "$config")
	local cmd=("$PYTHON" "$WORKLOAD" "$mode" "$seconds")
	[[ $config == self ]] && cmd+=("$STORM_MS")
	local out=$RAW/gil/$mode.$config.$pair.txt in=$ROUNDS_DIR/gil/in
	[[ $pair == 1 ]] && record_command env "${env[@]}" OPENBLAS_NUM_THREADS=1 "${cmd[@]}"
	rm -f "$in" && mkfifo "$in"
	env "${CLEAN_ENV[@]}" "${env[@]}" OPENBLAS_NUM_THREADS=1 "${cmd[@]}" <"$in" >"$out" \
		2>"$out.err" &
	pid=$!
	exec {to}>"$in"
	wait_until 60 grep -q '^ready$' "$out" || die "gil_hold $mode ($config) never got ready"
	target=/dev/null
	if [[ $config != none && $config != self ]]; then
		target=$ROUNDS_DIR/gil/$pid.fifo
		wait_until 10 test -p "$target" || die "gil_hold $mode ($config): no FIFO"
	fi
	echo >&"$to"
	"$PYTHON" -c "$STORM" "$target" "$STORM_MS" "$seconds" || die "the storm driver failed"
	exec {to}>&-
	wait "$pid" || die "gil_hold $mode ($config) failed: $(tail -3 "$out.err")"
	line=$(tail -1 "$out")
	[[ $line =~ ^ops\ [0-9]+\ seconds\ [0-9.]+\ collections\ [0-9]+\ on_main\ [0-9]+$ ]] ||
		die "gil_hold printed: $line"
}

# field FILE KEY: the number after KEY on the run's last line.
field() {
	tail -1 "$1" | tr ' ' '\n' | awk -v k="$2" 'prev == k { print; exit } { prev = $1 }'
}

# rate MODE CONFIG PAIR: the run's calls per second.
rate() {
	local f=$RAW/gil/$1.$2.$3.txt
	awk -v n="$(field "$f" ops)" -v s="$(field "$f" seconds)" 'BEGIN { printf "%.4f\n", n / s }'
}

# gil_row MODE CONFIG BASE PAIRS GOAL: the table's row of CONFIG against BASE; a summary row with
# a verdict where GOAL is a number, else "no goal".
gil_row() {
	local mode=$1 config=$2 base=$3 pairs=$4 goal=$5 ratios="" rates="" per_s="" p m lo hi
	local verdict="no goal" shown="—" all=0 main=0 share="—"
	for ((p = 1; p <= pairs; p++)); do
		all=$((all + $(field "$RAW/gil/$mode.$config.$p.txt" collections)))
		main=$((main + $(field "$RAW/gil/$mode.$config.$p.txt" on_main)))
		ratios+="$(ratio "$(rate "$mode" "$config" "$p")" "$(rate "$mode" "$base" "$p")")"$'\n'
		rates+="$(rate "$mode" "$config" "$p")"$'\n'
		per_s+="$(awk -v c="$(field "$RAW/gil/$mode.$config.$p.txt" collections)" \
			-v s="$(field "$RAW/gil/$mode.$config.$p.txt" seconds)" \
			'BEGIN { printf "%.4f\n", c / s }')"$'\n'
	done
	read -r m lo hi < <(spread <<<"${ratios%$'\n'}")
	((all == 0)) || share="$((100 * main / all)) %"
	if [[ $goal != - ]]; then
		shown="≥ $goal" verdict=missed
		at_most "$goal" "$m" && verdict=met
		[[ $verdict == met ]] ||
			loss "Round storm, $mode: with the library the program computes at $(fmt "$m" 3)× its pace when it cleans up itself at the same pace (goal ≥ $goal)."
	fi
	summary_row 14 "round storm, main thread in C calls that $([[ $mode == hold ]] && echo keep || echo release) the GIL: throughput, $config / $base" \
		"$shown" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	echo "| $mode | $config / $base | $(fmt "$(median <<<"${rates%$'\n'}")" 1) | $(fmt "$(median <<<"${per_s%$'\n'}")" 1) | $share | $(fmt "$m" 3) | $(fmt "$lo" 3) | $(fmt "$hi" 3) | $shown | $verdict |"
}

main() {
	local seconds=8 pairs=3 p mode config
	if [[ $QUICK == 1 ]]; then
		seconds=2 pairs=1
	fi
	mkdir -p "$RAW/gil" "$ROUNDS_DIR/gil"
	note_load "gil: before"
	for ((p = 1; p <= pairs; p++)); do
		for mode in "${MODES[@]}"; do
			for config in "${CONFIGS[@]}"; do
				note "gil: $mode, $config, pair $p of $pairs"
				gil_run "$mode" "$config" "$p" "$seconds"
			done
		done
	done
	{
		echo "## Figure 14: a round storm while the main thread computes in C"
		echo
		echo "test/workloads/py/gil_hold.py computes for $seconds s in calls that keep the GIL (hold:"
		echo "sorted() of 200,000 floats, about 30 ms each) or let it go (release: numpy's product of two"
		echo "384x384 matrices), each call leaving 100 reference cycles; a driver writes a round every"
		echo "$STORM_MS ms into the library's FIFO (into /dev/null without it). Every round acts (N=1) and"
		echo "asks for a collection. Configurations in turn within each of $pairs pairs: no library"
		echo "(none); no library, the program cleaning up itself every $STORM_MS ms between two calls as"
		echo "NVFlare does at a round's end (self: gc.collect(), malloc_trim(0)); ROUNDTRIM_PYTHON=off;"
		echo "=main (the steps on the main thread only) and the default (the main thread first, then"
		echo "the library's thread). Throughput: calls per second, median; full collections per second"
		echo "(gc.callbacks, any thread), median, and the share of them the main thread ran, all runs;"
		echo "ratio per pair, median [min–max]. The goal is the"
		echo "default against the program's own cleanup at the same pace: the library's thread waiting"
		echo "for the GIL, or collecting while the main thread computes without it, costs the program"
		echo "no more than cleaning up itself (≥ 0.95, for the noise of a shared machine). The rows"
		echo "against no library at all say what the storm's collections and releases cost. With"
		echo "=main on CPython 3.11 a main thread that never lets the GIL go never runs the steps (hold:"
		echo "no collections): a pending call from another thread is seen only at the main thread's"
		echo "next GIL switch (roundtrim(7), PYTHON)."
		echo
		echo "| mode | configuration / base | calls/s | collections/s | on the main thread | median ratio | min | max | goal | verdict |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
		for mode in "${MODES[@]}"; do
			gil_row "$mode" default self "$pairs" 0.95
			gil_row "$mode" default none "$pairs" -
			gil_row "$mode" self none "$pairs" -
			gil_row "$mode" main none "$pairs" -
			gil_row "$mode" off none "$pairs" -
		done
		echo
	} >"$RAW/fig14.md"
	note_load "gil: after"
	cat "$RAW/fig14.md"
}

main "$@"
