#!/usr/bin/env bash
# bench-between.sh: figure 9 of `make bench`, between rounds (roundtrim(7), PYTHON, "The release
# never waits for Python"). An FL client spends most of its life waiting for its next model inside
# one blocking call; its RSS there is what a memory limit sees. The Python client
# (test/workloads/fl_client.py) runs rounds each followed by a wait in one blocking C call of its
# main thread (time.sleep, or threading.Event().wait), and VmRSS is read READ_AT seconds into each
# wait, against the same program calling NVFlare's cleanup itself at the very end of its round
# (--self-cleanup=end: gc.collect() + malloc_trim(0)). With the library (ROUNDTRIM_GC_ROUNDS=1),
# the round is announced
#   fifo  by the driver, `roundtrim round PID` the moment it reads the round's end;
#   api   by the program, roundtrim.round() at the very end of its round (--roundtrim-round);
#   auto  by nobody: the library's own detection, its defaults;
# with the collector enabled and disabled (--gc-disabled), on the PyTorch client and on the same
# client leaving cyclic garbage each round (--cycles). Runs go in pairs, the anchor beside each
# of the three, with the same seed; a ratio is one round's RSS over the same round's in the anchor
# run of the same repetition. Also: the delay from the round's end to the end of its release, and
# to the release after the Python steps (the library's stats lines, read by between_eval with
# policy's reader), and what a roundtrim.round() call costs in the program against NVFlare's
# cleanup in the same process (--call-cost).
# BENCH_BETWEEN_PAIRS: repetitions (default 2, 1 with BENCH_QUICK=1). Raw data under
# $RAW/between/. Writes $RAW/fig9.md and summary rows (see bench-lib.sh). A missed goal is
# reported, not failed.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

PYTHON=/usr/bin/python3
FL_CLIENT=$ROOT/test/workloads/fl_client.py
EVAL=$BENCH_BIN/between_eval
WORKLOADS=(pytorch cycles)
COLLECTORS=(enabled disabled)
# The anchor first: the three with the library are each paired with it.
CONFIGS=(nvflare fifo api auto)
KINDS=(fifo api auto)

# Sizes, full and quick.
ROUNDS=3 PAUSE=4 READ_AT=3 PAIRS=${BENCH_BETWEEN_PAIRS:-2}
PYTORCH_SCALE=1 CYCLES_SCALE=0.25 CYCLES_MIB=60 COST_CALLS=200 COST_EVERY=10
if [[ $QUICK == 1 ]]; then
	ROUNDS=2 PAUSE=1.5 READ_AT=1 PAIRS=${BENCH_BETWEEN_PAIRS:-1}
	PYTORCH_SCALE=0.25 CYCLES_SCALE=0.1 CYCLES_MIB=16 COST_CALLS=40
fi
READ_AT_US=$(awk -v s="$READ_AT" 'BEGIN { printf "%d\n", s * 1e6 }')
MARGIN_US=$(awk -v p="$PAUSE" -v s="$READ_AT" 'BEGIN { printf "%d\n", (p - s) * 1e6 }')

describe_workload() {
	case $1 in
	pytorch) echo "PyTorch client, scale $PYTORCH_SCALE, waits in time.sleep" ;;
	cycles) echo "client leaving $CYCLES_MIB MiB of cyclic garbage a round (1–4 KiB bytearrays), scale $CYCLES_SCALE, waits in Event().wait" ;;
	esac
}

describe_kind() {
	case $1 in
	fifo) echo "FIFO (roundtrim round PID at the round's end)" ;;
	api) echo "API (roundtrim.round() at the round's end)" ;;
	auto) echo "nobody (the library's detection)" ;;
	esac
}

# The goal of a workload's ratios: issue 24's, the same on both (issue 12's 0.90 holds against
# NVFlare's cleanup where NVFlare runs it, inside send: figure 1).
goal_of() {
	case $1 in
	pytorch | cycles) echo 1.00 ;;
	esac
}

# run_one WORKLOAD COLLECTOR CONFIG REP: one run, driven line by line; writes $base.rss (round
# rss_kib late_us), $base.truth (the workload's lines), and with the library $base.stats.jsonl
# and $base.eval (between_eval's lines).
run_one() {
	local workload=$1 collector=$2 config=$3 rep=$4
	local name=$workload-$collector-$config-$rep base=$RAW/between/$1.$2.$3.$4
	local dir=$ROUNDS_DIR/$name env=(PYTHONDONTWRITEBYTECODE=1) offset line r target now rss
	local cmd=("$PYTHON" "$FL_CLIENT" --rounds "$ROUNDS" --seed "$rep" --pause "$PAUSE"
		--first-pause 0 --boundaries)
	case $workload in
	pytorch) cmd+=(--scale "$PYTORCH_SCALE") ;;
	cycles) cmd+=(--scale "$CYCLES_SCALE" --cycles "$CYCLES_MIB" --pause-in event) ;;
	esac
	[[ $collector == disabled ]] && cmd+=(--gc-disabled)
	case $config in
	nvflare) cmd+=(--self-cleanup=end) ;;
	*)
		mkdir -p "$dir"
		env+=("LD_PRELOAD=$LIB" "ROUNDTRIM_FIFO=$dir/%p.fifo" "ROUNDTRIM_STATS=$dir/stats.%p.jsonl"
			ROUNDTRIM_GC_ROUNDS=1)
		;;
	esac
	if [[ $config == api ]]; then
		env+=("PYTHONPATH=$ROOT/scripts/python")
		cmd+=(--roundtrim-round)
	fi
	if ((rep == 1)); then
		record_command env "${env[@]}" "${cmd[@]}"
		[[ $config != fifo ]] || echo "# and at each \"boundary R T\" line it prints: build/roundtrim round PID" >>"$RAW/commands.txt"
	fi
	note "between: $workload, gc $collector, $config, pair $rep"
	offset=$("$EVAL" --clock-offset)
	rounds_start "$name" "${env[@]}" -- "${cmd[@]}"
	: >"$base.truth"
	: >"$base.rss"
	while IFS= read -r -t "$ROUNDS_STEP_TIMEOUT" -u "$ROUNDS_FROM_FD" line; do
		echo "$line" >>"$base.truth"
		case $line in
		start\ *)
			[[ $config != fifo ]] || wait_until 10 "$ROUNDTRIM" status "$ROUNDS_PID" >/dev/null 2>&1 ||
				die "roundtrim does not see pid $ROUNDS_PID: $(tail -3 "$ROUNDS_DIR/$name.err")"
			;;
		boundary\ *)
			[[ $config != fifo ]] || "$ROUNDTRIM" round "$ROUNDS_PID" >/dev/null ||
				die "$name: roundtrim round failed: $(tail -3 "$ROUNDS_DIR/$name.err")"
			;;
		wait\ *)
			read -r _ r target <<<"$line"
			target=$((target + READ_AT_US))
			now=$(now_us "$offset")
			((now >= target)) || sleep "$(awk -v us=$((target - now)) 'BEGIN { printf "%.6f\n", us / 1e6 }')"
			rss=$(vmrss_kib "$ROUNDS_PID")
			now=$(now_us "$offset")
			# A read after the wait ended measures something else: the page counts them.
			((now - target < MARGIN_US)) ||
				note "$name: RSS of round $r read $(((now - target) / 1000)) ms late, after the wait"
			echo "$r $rss $((now - target))" >>"$base.rss"
			;;
		esac
	done
	rounds_stop "$name"
	[[ $(wc -l <"$base.rss") -eq $ROUNDS ]] || die "$name: $(wc -l <"$base.rss") waits for $ROUNDS rounds"
	[[ $config != nvflare ]] || return 0
	# No file when the library wrote no line: it appears with its first.
	cat "$dir"/stats.*.jsonl >"$base.stats.jsonl" 2>/dev/null || : >"$base.stats.jsonl"
	"$EVAL" --offset-us "$offset" "$base.truth" "$base.stats.jsonl" >"$base.eval" ||
		die "between_eval failed on $name"
}

# cost_run: the call costs, in the PyTorch client after one round.
cost_run() {
	local out=$RAW/between/cost.txt
	local env=(PYTHONDONTWRITEBYTECODE=1 "LD_PRELOAD=$LIB" "PYTHONPATH=$ROOT/scripts/python"
		ROUNDTRIM_AUTO=off "ROUNDTRIM_GC_ROUNDS=$COST_EVERY")
	local cmd=("$PYTHON" "$FL_CLIENT" --rounds 1 --scale "$PYTORCH_SCALE" --first-pause 0
		--call-cost "$COST_CALLS")
	record_command env "${env[@]}" "${cmd[@]}"
	note "between: what a roundtrim.round() call costs, $COST_CALLS calls"
	env "${CLEAN_ENV[@]}" "${env[@]}" "${cmd[@]}" >"$out" 2>"$RAW/between/cost.err" </dev/null ||
		die "the call-cost run failed: $(tail -3 "$RAW/between/cost.err")"
}

# late_reads: how many RSS reads of the figure came after their wait had ended.
late_reads() {
	cat "$RAW/between/"*.rss | awk -v m="$MARGIN_US" '$3 >= m { n++ } END { print n + 0 }'
}

# ratios WORKLOAD COLLECTOR KIND: for every repetition and round, the run's RSS over the anchor's.
ratios() {
	local rep
	for ((rep = 1; rep <= PAIRS; rep++)); do
		awk 'NR == FNR { anchor[$1] = $2; next }
			!($1 in anchor) || anchor[$1] == 0 { exit 1 }
			{ printf "%.4f\n", $2 / anchor[$1] }' \
			"$RAW/between/$1.$2.nvflare.$rep.rss" "$RAW/between/$1.$2.$3.$rep.rss"
	done
}

# waits_mib WORKLOAD COLLECTOR CONFIG: every RSS read in the waits of the config's runs, MiB.
waits_mib() {
	local rep
	for ((rep = 1; rep <= PAIRS; rep++)); do
		awk '{ printf "%.3f\n", $2 / 1024 }' "$RAW/between/$1.$2.$3.$rep.rss"
	done
}

# mib_cell WORKLOAD COLLECTOR CONFIG: median [min–max] of the RSS read in the waits, MiB.
mib_cell() {
	local m lo hi
	read -r m lo hi < <(waits_mib "$@" | spread)
	echo "$(fmt "$m" 1) [$(fmt "$lo" 1)–$(fmt "$hi" 1)]"
}

# eval_field KEY WORD [WORD...]: KEY's value in the between_eval lines on stdin that start with
# WORD and hold every other WORD.
eval_field() {
	local re="(^| )$1=([^ ]+)" first=$2 line w ok
	shift 2
	while IFS= read -r line; do
		[[ $line == "$first "* ]] || continue
		ok=1
		for w in "$@"; do
			[[ " $line " == *" $w "* ]] || ok=0
		done
		if ((ok)) && [[ $line =~ $re ]]; then
			echo "${BASH_REMATCH[2]}"
		fi
	done
}

# evals WORKLOAD COLLECTOR KIND: the between_eval lines of every repetition.
evals() {
	local rep
	for ((rep = 1; rep <= PAIRS; rep++)); do
		cat "$RAW/between/$1.$2.$3.$rep.eval"
	done
}

# quantile Q: the Q-quantile (nearest rank) of the numbers on stdin.
quantile() {
	sort -g | awk -v q="$1" '{ v[NR] = $1 } END {
		if (NR == 0) exit 1
		r = int(q * NR + 0.999999); if (r < 1) r = 1; if (r > NR) r = NR
		printf "%.6f\n", v[r]
	}'
}

# ms MICROSECONDS: in milliseconds, no decimal.
ms() {
	awk -v v="$1" 'BEGIN { printf "%.0f\n", v / 1000 }'
}

# ms_cells VALUES_US: "p50 | p99 | min–max" in ms, or "n/a" cells when there is none.
ms_cells() {
	if [[ -z $1 ]]; then
		echo "n/a | n/a | n/a"
		return
	fi
	echo "$(ms "$(quantile 0.5 <<<"$1")") | $(ms "$(quantile 0.99 <<<"$1")") | $(ms "$(minimum <<<"$1")")–$(ms "$(maximum <<<"$1")")"
}

# ratio_rows: the RSS table's rows, its summary rows and losses.
ratio_rows() {
	local workload collector kind values m lo hi goal verdict released missed followed
	for workload in "${WORKLOADS[@]}"; do
		goal=$(goal_of "$workload")
		for collector in "${COLLECTORS[@]}"; do
			for kind in "${KINDS[@]}"; do
				values=$(ratios "$workload" "$collector" "$kind") || die "no RSS for $workload $collector $kind"
				read -r m lo hi < <(spread <<<"$values")
				verdict=missed
				at_most "$m" "$goal" && verdict=met
				released=$(evals "$workload" "$collector" "$kind" | grep -c '^release ' || true)
				missed=$(evals "$workload" "$collector" "$kind" | grep -c '^missed ' || true)
				followed=$(evals "$workload" "$collector" "$kind" | grep -c '^followup ' || true)
				echo "| $workload | $collector | $(describe_kind "$kind") | $(mib_cell "$workload" "$collector" nvflare) | $(mib_cell "$workload" "$collector" "$kind") | $released of $((released + missed)) | $followed | $(fmt "$m" 3) [$(fmt "$lo" 3)–$(fmt "$hi" 3)] | ≤ $goal | $verdict |"
				summary_row 9 "between rounds, $(describe_workload "$workload"), gc $collector, announced by $(describe_kind "$kind"): RSS ${READ_AT} s into the wait / NVFlare's cleanup at the round's end (rounds of paired runs)" \
					"≤ $goal" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
				[[ $verdict == met ]] || loss "$(loss_text "$workload" "$collector" "$kind" "$m" "$goal" "$released" "$missed")"
			done
		done
	done
}

# loss_text WORKLOAD COLLECTOR KIND RATIO GOAL RELEASED MISSED: a missed goal and its cause, from
# the run's own records.
loss_text() {
	local workload=$1 collector=$2 kind=$3 m=$4 goal=$5 released=$6 missed=$7 text follow above garbage
	above=$(awk -v a="$(waits_mib "$workload" "$collector" "$kind" | median)" \
		-v b="$(waits_mib "$workload" "$collector" nvflare | median)" 'BEGIN { printf "%.1f\n", a - b }')
	text="Between rounds, $(describe_workload "$workload"), gc $collector, announced by $(describe_kind "$kind"): RSS ${READ_AT} s into the wait is $(fmt "$m" 3)× that of the program calling NVFlare's cleanup at the end of its round ($above MiB more at the median; goal ≤ $goal)."
	if ((released == 0)); then
		text+=" The library found none of the $missed round ends by itself, so nothing was released or collected: the round's cyclic garbage is freed only by a collection"
		if [[ $collector == disabled ]]; then
			text+=", which with the collector disabled never comes,"
		else
			text+=", which the program's own collector had not run by the round's end,"
		fi
		text+=" so the heap kept what the round asked for, and the detector, which wants a round to give back what it took, saw no end."
		echo "$text"
		return
	fi
	((missed == 0)) || text+=" The library found $released of $((released + missed)) round ends by itself; a round it does not find is neither released nor collected."
	if [[ $kind == api ]]; then
		text+=" The collection ran in the program's call and the release right after it: both sides return every free page, and what is left above the anchor is the library's own memory (its code, data and thread stacks)."
		[[ $workload == pytorch ]] && text+=" At the very end of a round, with nothing referenced any more, NVFlare's cleanup returns as much as the library: the lower figure comes only against a cleanup where NVFlare runs it, inside send (figure 1)."
		echo "$text"
		return
	fi
	follow=$(evals "$workload" "$collector" "$kind" | eval_field delay_us followup | median 2>/dev/null || true)
	garbage="the trainer's model, gradients and optimizer state"
	[[ $workload != cycles ]] || garbage+=", the $CYCLES_MIB MiB of cycles"
	if [[ -n $follow ]] && ((${follow%.*} < READ_AT_US)); then
		text+=" The release came at once and the collection during the wait, on the library's thread (the main thread sits in one C call), with a release after it $(fmt "$(awk -v v="$follow" 'BEGIN { print v / 1e6 }')" 2) s after the round's end (median), before the RSS was read: both sides return every free page, and what is left above the anchor is the library's own memory (its code, data and thread stacks)."
		echo "$text"
		return
	fi
	text+=" The release comes at once, but the collection is a pending call that CPython runs only when the main thread comes back to bytecode: the round's unreachable cycles ($garbage) stay through the blocking wait"
	if [[ -n $follow ]]; then
		text+=", and the release after the collection came $(fmt "$(awk -v v="$follow" 'BEGIN { print v / 1e6 }')" 2) s after the round's end (median), once the wait was over."
	else
		text+="."
	fi
	echo "$text"
}

# delay_rows: the delays' rows and summary rows.
delay_rows() {
	local kind workload values follow m lo hi
	for kind in "${KINDS[@]}"; do
		for workload in "${WORKLOADS[@]}"; do
			values=$(for c in "${COLLECTORS[@]}"; do evals "$workload" "$c" "$kind"; done | eval_field delay_us release)
			follow=$(for c in "${COLLECTORS[@]}"; do evals "$workload" "$c" "$kind"; done | eval_field delay_us followup)
			echo "| $(describe_kind "$kind") | $workload | $(grep -c . <<<"$values" || true) | $(ms_cells "$values") | $(grep -c . <<<"$follow" || true) | $(ms_cells "$follow") |"
		done
		values=$(for workload in "${WORKLOADS[@]}"; do for c in "${COLLECTORS[@]}"; do evals "$workload" "$c" "$kind"; done; done | eval_field delay_us release)
		if [[ -n $values ]]; then
			read -r m lo hi < <(awk '{ printf "%.3f\n", $1 / 1000 }' <<<"$values" | spread)
			summary_row 9 "between rounds, announced by $(describe_kind "$kind"): round's end to its release's end (ms, rounds)" \
				"—" "$(fmt "$m" 0)" "$(fmt "$lo" 0)" "$(fmt "$hi" 0)" "no goal"
		fi
		[[ $kind != api ]] || continue
		follow=$(for workload in "${WORKLOADS[@]}"; do for c in "${COLLECTORS[@]}"; do evals "$workload" "$c" "$kind"; done; done | eval_field delay_us followup)
		if [[ -n $follow ]]; then
			read -r m lo hi < <(awk '{ printf "%.3f\n", $1 / 1000 }' <<<"$follow" | spread)
			summary_row 9 "between rounds, announced by $(describe_kind "$kind"): round's end to the release after the Python steps (ms, rounds)" \
				"—" "$(fmt "$m" 0)" "$(fmt "$lo" 0)" "$(fmt "$hi" 0)" "no goal"
		fi
	done
}

# cost_rows: the call costs' rows and summary rows.
cost_rows() {
	local what label unit scale values m lo hi p99 n
	for what in count act delay nvflare; do
		case $what in
		count) label="roundtrim.round(), a round that only counts" unit=µs scale=1e6 ;;
		act) label="roundtrim.round(), a round that acts (the collection and the release, both in the call)" unit=ms scale=1e3 ;;
		delay) label="roundtrim.round(), a round that acts: from the call's start to its release's end" unit=ms scale=1e3 ;;
		nvflare) label="NVFlare's cleanup: gc.collect() + malloc_trim(0)" unit=ms scale=1e3 ;;
		esac
		values=$(awk -v w="$what" -v s="$scale" '$1 == "cost" && $2 == w { printf "%.6f\n", $3 * s }' "$RAW/between/cost.txt")
		[[ -n $values ]] || die "the call-cost run printed no '$what' timing"
		n=$(grep -c . <<<"$values")
		read -r m lo hi < <(spread <<<"$values")
		p99=$(quantile 0.99 <<<"$values")
		echo "| $label | $n | $(fmt "$m" 3) | $(fmt "$p99" 3) | $(fmt "$lo" 3)–$(fmt "$hi" 3) | $unit |"
		summary_row 9 "in the PyTorch client, scale $PYTORCH_SCALE: $label ($unit)" "—" \
			"$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "no goal"
	done
	local workload config
	for workload in "${WORKLOADS[@]}"; do
		for config in nvflare api; do
			values=$(end_to_wait_ms "$workload" "$config")
			read -r m lo hi < <(spread <<<"$values")
			label="roundtrim.round() at the end of this figure's rounds, $workload (the collection of the round's garbage and the release)"
			[[ $config == nvflare ]] && label="NVFlare's cleanup at the end of this figure's rounds, $workload"
			echo "| $label | $(grep -c . <<<"$values") | $(fmt "$m" 3) | $(fmt "$(quantile 0.99 <<<"$values")" 3) | $(fmt "$lo" 3)–$(fmt "$hi" 3) | ms |"
		done
	done
}

# end_to_wait_ms WORKLOAD CONFIG: for every round of the config's runs, from the round's end to
# the start of its wait (the program's own lines), in ms: the end-of-round call's time.
end_to_wait_ms() {
	local collector rep
	for collector in "${COLLECTORS[@]}"; do
		for ((rep = 1; rep <= PAIRS; rep++)); do
			awk '$1 == "boundary" { b[$2] = $3 } $1 == "wait" && ($2 in b) { printf "%.3f\n", ($3 - b[$2]) / 1000 }' \
				"$RAW/between/$1.$collector.$2.$rep.truth"
		done
	done
}

main() {
	local rep workload collector config load_before load_after start
	[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || die "BENCH_BETWEEN_PAIRS must be a positive integer, not '$PAIRS'"
	[[ -x $EVAL && -r $LIB && -x $ROUNDTRIM ]] || die "between_eval, $LIB or the command are not built"
	rm -rf "$RAW/between"
	mkdir -p "$RAW/between"
	read -r load_before _ </proc/loadavg
	note_load "between: before"
	start=$SECONDS
	for ((rep = 1; rep <= PAIRS; rep++)); do
		for workload in "${WORKLOADS[@]}"; do
			for collector in "${COLLECTORS[@]}"; do
				for config in "${CONFIGS[@]}"; do
					run_one "$workload" "$collector" "$config" "$rep"
				done
			done
		done
	done
	cost_run
	read -r load_after _ </proc/loadavg
	note_load "between: after"
	{
		echo "## Figure 9: between rounds"
		echo
		echo "An FL client spends most of its life between rounds, waiting for its next model inside one"
		echo "blocking call, and its RSS there is what a memory limit sees. The Python client"
		echo "(test/workloads/fl_client.py) runs $ROUNDS rounds, each followed by a ${PAUSE} s wait in one"
		echo "blocking C call of its main thread (time.sleep, or threading.Event().wait), where CPython"
		echo "runs no pending call (the library's thread takes the steps 50 ms into it, unless"
		echo "ROUNDTRIM_PYTHON=main); VmRSS is read ${READ_AT} s into each wait. The anchor is the same"
		echo "program calling NVFlare's cleanup itself at the very end of each round (gc.collect() +"
		echo "malloc_trim(0), --self-cleanup=end), with the collector enabled or disabled as the run is."
		echo "With the library (ROUNDTRIM_GC_ROUNDS=1, its other defaults) the round is announced by the"
		echo "FIFO (the driver runs \`roundtrim round PID\` as it reads the round's end), by the API (the"
		echo "program calls roundtrim.round() where the anchor cleans up), or by nobody (the library's"
		echo "own detection). Gc disabled: the program calls gc.disable() at its start. The cyclic"
		echo "workload is the same client, smaller, whose trainer keeps $CYCLES_MIB MiB of pairs of objects"
		echo "pointing at each other, each with a bytearray of 1–4 KiB, until it is dropped at the end of"
		echo "the round. $PAIRS repetition(s), seeds 1..$PAIRS; in each, the anchor runs, then the three"
		echo "with the library, back to back, with the same seed. Ratio: a round's RSS in the wait over"
		echo "the same round's in the anchor run of the same repetition; median [min–max] over rounds."
		echo "Released: rounds whose release the library's stats lines show before the next round;"
		echo "follow-ups: releases after the Python steps ran (trigger python). RSS reads that came after"
		echo "their wait had ended (a loaded machine): $(late_reads) of $((PAIRS * ${#WORKLOADS[@]} * ${#COLLECTORS[@]} * ${#CONFIGS[@]} * ROUNDS)), kept."
		echo "Load average (1 min): $load_before before, $load_after after, on $(nproc) cores; $((SECONDS - start)) s."
		echo
		echo "| workload | gc | announced by | NVFlare's cleanup: RSS in the wait (MiB) | roundtrim: RSS in the wait (MiB) | released | follow-ups | ratio | goal | verdict |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
		ratio_rows
		echo
		echo "The delays, from the library's stats lines (between_eval: each line's unix_time, written"
		echo "right after its release, put on the workload's CLOCK_MONOTONIC with an offset read as the"
		echo "run began) against the moment the round's work ended (fl_client's boundary lines, taken"
		echo "before the cleanup or the API call), over the rounds of both collector settings. FIFO:"
		echo "the driver's reading of the line, the command's start and its FIFO write, then the"
		echo "release. API: the collection, then the release, both in the program's call (its time is"
		echo "in the last table); the record's time is the release's end. Nobody: the detector's"
		echo "400 ms of quiet, then the release. The release after the"
		echo "Python steps comes once the main thread has run them, or, while it waits in a C call,"
		echo "the library's thread 50 ms after the round's own release, plus one full collection."
		echo
		echo "| announced by | workload | releases | to the release's end: p50 (ms) | p99 (ms) | min–max (ms) | follow-ups | to the follow-up's release: p50 (ms) | p99 (ms) | min–max (ms) |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
		delay_rows
		echo
		echo "What a call costs in the program: the PyTorch client (scale $PYTORCH_SCALE) after one round,"
		echo "$COST_CALLS calls of roundtrim.round() with ROUNDTRIM_GC_ROUNDS=$COST_EVERY (every ${COST_EVERY}th acts)"
		echo "and ROUNDTRIM_AUTO=off, each timed with time.perf_counter, and for each acting call the"
		echo "delay from its start to its release's end (the status's last_action_unix_time); after"
		echo "each acting call, once the library has recorded it, NVFlare's cleanup in the same"
		echo "process; and, from this figure's runs (both collector settings), the time from the"
		echo "round's end to the start of its wait in the anchor and in the API runs, where the"
		echo "round's garbage is collected and the memory released. No goal."
		echo
		echo "| call | calls | median | p99 | min–max | unit |"
		echo "|---|---|---|---|---|---|"
		cost_rows
		echo
	} >"$RAW/fig9.md"
	cat "$RAW/fig9.md"
}

main "$@"
