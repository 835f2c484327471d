#!/usr/bin/env bash
# bench-auto.sh: figure 7 of `make bench`, rounds that come by themselves (roundtrim(7), ROUNDS
# THAT COME BY THEMSELVES). The library is preloaded with its defaults (detection on, an action
# every round) into workloads that nobody tells about a round, and what it does by itself is
# scored against the true boundaries each workload prints ("start T", "boundary R T", T in
# CLOCK_MONOTONIC microseconds):
#   - the detections are the library's own: its stats lines with the trigger auto, each one's
#     unix_time put on the monotonic clock with an offset read at the run's start, scored by
#     detect_eval --detected (a detection matches a boundary within 3 s after it and before the
#     next; test/bench/detect_match.h);
#   - a steady loop with no rounds: actions a minute;
#   - the Python client, never told about a round, against the same client with a FIFO round after
#     each of its rounds: final RSS, run by run in pairs.
# scripts/bench-detect.sh replays recorded traces through the detector offline instead: a tool to
# find why a detection was missed, not this figure. BENCH_AUTO_RUNS: runs per workload and RSS
# pairs (default 3, 1 with BENCH_QUICK=1). Raw data under $RAW/auto/. Writes $RAW/fig7.md and
# summary rows (see bench-lib.sh). A missed goal is reported, not failed.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

PYTHON=/usr/bin/python3
FL_CLIENT=$ROOT/test/workloads/fl_client.py
EVAL=$BENCH_BIN/detect_eval
# The stats lines in columns, read with policy's reader (test/bench/stats_lines.c).
STATS_LINES=$BENCH_BIN/stats_lines
# The longest one workload may run before the figure fails.
RUN_LIMIT_S=600
# Between two rounds of the RSS pairs, the client waits this long for its next task (seconds).
RSS_PAUSE=1.5

# The workloads with rounds, and the loop without.
ROUND_WORKLOADS=(frag fl_client fl_server phases)

describe() {
	case $1 in
	frag) echo "frag: 2 threads, 16–256 MiB a round, pauses of 0.6–2 s" ;;
	fl_client) echo "PyTorch client (fl_client.py): 2–4 steps a round, batches of 4–64, pauses of 0.6–2 s" ;;
	fl_server) echo "server (fl_server): 5 client updates a round, each after 0.6–3 s" ;;
	phases) echo "train then evaluate (phases): a gap of 0.02–0.25 s between the phases, pauses of 0.6–2 s" ;;
	steady) echo "steady: a constant allocation rate and no rounds" ;;
	esac
}

# workload_command NAME ROUNDS SEED STEADY_S: the workload's command, one word a line.
workload_command() {
	local name=$1 rounds=$2 seed=$3 steady_s=$4 scale=1
	[[ $QUICK == 1 ]] && scale=0.25
	case $name in
	frag)
		printf '%s\n' "$WORKLOADS_BIN/frag" --threads 2 --mib-range 16:256 --pause 0.6:2 \
			--rounds "$rounds" --seed "$seed" --boundaries
		;;
	fl_client)
		printf '%s\n' "$PYTHON" "$FL_CLIENT" --scale "$scale" --steps 2:4 --batch 4:64 \
			--pause 0.6:2 --rounds "$rounds" --seed "$seed" --boundaries
		;;
	fl_server)
		printf '%s\n' "$WORKLOADS_BIN/fl_server" --clients 5 --train 0.6:3 --rounds "$rounds" \
			--seed "$seed"
		;;
	phases)
		printf '%s\n' "$WORKLOADS_BIN/phases" --gap 0.02:0.25 --pause 0.6:2 --rounds "$rounds" \
			--seed "$seed"
		;;
	steady)
		printf '%s\n' "$WORKLOADS_BIN/steady" --duration "$steady_s" --seed "$seed"
		;;
	esac
}

# CLOCK_REALTIME less CLOCK_MONOTONIC, in microseconds: what turns a stats line's unix_time into
# the clock of the workloads' boundaries.
clock_offset_us() {
	"$PYTHON" -c 'import time; print(time.time_ns() // 1000 - time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)'
}

# stats_events OFFSET STATS...: one line per round the library counted, "TRIGGER ACTION T_US",
# T_US when it was handled on the monotonic clock. A line that merged K rounds stands for K
# rounds (its round number moves by K).
stats_events() {
	local offset=$1
	shift
	"$STATS_LINES" "$@" | awk -v offset="$offset" '
		{ for (k = prev; k < $1; k++) printf "%s %s %.0f\n", $2, $3, $4 - offset; prev = $1 }'
}

# run_workload NAME RUN ROUNDS STEADY_S: one run with the library's defaults; keeps the truth, the
# stats lines, the detections and the score under $RAW/auto/, with the end time (NAME.RUN.end) and
# the clock offset (NAME.RUN.offset) that turned the stats lines' times into the detections'.
run_workload() {
	local name=$1 run=$2 rounds=$3 steady_s=$4 dir=$ROUNDS_DIR/auto-$1-$2 base=$RAW/auto/$1.$2
	local cmd offset start end
	mapfile -t cmd < <(workload_command "$name" "$rounds" "$run" "$steady_s")
	mkdir -p "$dir"
	local env=("LD_PRELOAD=$LIB" "ROUNDTRIM_FIFO=$dir/%p.fifo" "ROUNDTRIM_STATS=$dir/stats.%p.jsonl")
	((run > 1)) || record_command env "${env[@]}" "${cmd[@]}"
	note "auto: $name, run $run: ${cmd[*]##*/}"
	offset=$(clock_offset_us)
	start=$SECONDS
	# timeout is not preloaded: env, after it, starts the one process that carries the library.
	timeout -k 10 "$RUN_LIMIT_S" env "${CLEAN_ENV[@]}" "${env[@]}" "${cmd[@]}" >"$base.truth" \
		2>"$base.err" || die "$name run $run failed or ran past $RUN_LIMIT_S s: $(tail -3 "$base.err")"
	end=$(now_us "$offset")
	echo "$end" >"$base.end"
	echo "$offset" >"$base.offset"
	echo "$((SECONDS - start))" >"$base.seconds"
	grep -q '^start ' "$base.truth" || die "$name printed no start line"
	# No file when the library counted no round: it appears with its first line.
	cat "$dir"/stats.*.jsonl >"$base.stats.jsonl" 2>/dev/null || : >"$base.stats.jsonl"
	stats_events "$offset" "$base.stats.jsonl" >"$base.events" || die "$name: unreadable stats lines"
	awk '$1 == "auto" { print $3 }' "$base.events" >"$base.detected"
	"$EVAL" --detected "$base.detected" --end-us "$end" --name "$name" --list "$base.truth" \
		>"$base.score" || die "detect_eval failed on $name run $run"
}

# score_field NAME RUN KEY: a value from the run's detect_eval line.
score_field() {
	local line re="(^| )$3=([^ ]+)"
	line=$(tail -1 "$RAW/auto/$1.$2.score")
	[[ $line =~ $re ]] || die "no $3 in $1 run $2's score: $line"
	echo "${BASH_REMATCH[2]}"
}

# per_run_field NAME RUNS KEY: the key's value for every run, one a line.
per_run_field() {
	local run
	for ((run = 1; run <= $2; run++)); do
		score_field "$1" "$run" "$3"
	done
}

# sum_field NAME RUNS KEY: the key's values added over the runs.
sum_field() {
	per_run_field "$@" | awk '{ s += $1 } END { print s + 0 }'
}

# cell VALUES DECIMALS: "median [min–max]" of the numbers on VALUES' lines.
cell() {
	local m lo hi
	read -r m lo hi < <(spread <<<"$1")
	echo "$(fmt "$m" "$2") [$(fmt "$lo" "$2")–$(fmt "$hi" "$2")]"
}

# detection_rows RUNS: the detection table's rows and the summary rows of the workloads with
# rounds.
detection_rows() {
	local runs=$1 name what m lo hi verdict values
	for name in "${ROUND_WORKLOADS[@]}"; do
		local precision recall
		precision=$(per_run_field "$name" "$runs" precision)
		recall=$(per_run_field "$name" "$runs" recall)
		echo "| $(describe "$name") | $(sum_field "$name" "$runs" truths) | $(sum_field "$name" "$runs" detected) | $(sum_field "$name" "$runs" matched) | $(cell "$precision" 3) | $(cell "$recall" 3) | $(cell "$(per_run_field "$name" "$runs" median_delay_s)" 2) |"
		for what in precision recall; do
			values=$precision
			[[ $what == recall ]] && values=$recall
			read -r m lo hi < <(spread <<<"$values")
			verdict=missed
			at_most 0.95 "$m" && verdict=met
			summary_row 7 "rounds found by themselves, $name: $what (runs)" "≥ 0.95" \
				"$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
			[[ $verdict == met ]] ||
				loss "Rounds found by themselves, $name: $what $(fmt "$m" 3) (median of $runs runs; goal ≥ 0.95). Each run's detections and boundaries: build/bench/auto/$name.RUN.score."
		done
	done
}

# steady_rows RUNS: the steady loop's row and summary row.
steady_rows() {
	local runs=$1 run per_min=() minutes actions detections m lo hi verdict=missed
	for ((run = 1; run <= runs; run++)); do
		local base=$RAW/auto/steady.$run start
		start=$(awk '$1 == "start" { print $2; exit }' "$base.truth")
		minutes=$(awk -v a="$start" -v b="$(cat "$base.end")" 'BEGIN { printf "%.4f\n", (b - a) / 60e6 }')
		actions=$(awk '$2 != "none"' "$base.events" | wc -l)
		per_min+=("$(awk -v n="$actions" -v m="$minutes" 'BEGIN { printf "%.4f\n", (m > 0 ? n / m : 0) }')")
		detections=$(wc -l <"$base.detected")
		echo "| $run | $(fmt "$minutes" 2) | $detections | $actions | $(fmt "${per_min[-1]}" 2) |"
	done
	read -r m lo hi < <(printf '%s\n' "${per_min[@]}" | spread)
	at_most "$m" 1 && at_most "$hi" 1 && verdict=met
	summary_row 7 "steady loop with no rounds: actions a minute (runs)" "≤ 1" "$(fmt "$m" 2)" \
		"$(fmt "$lo" 2)" "$(fmt "$hi" 2)" "$verdict"
	[[ $verdict == met ]] ||
		loss "Steady loop with no rounds: up to $(fmt "$hi" 2) actions a minute (goal ≤ 1)."
}

# rss_run MODE RUN ROUNDS SCALE: the Python client driven round by round, as figure 1 drives it,
# with a pause of RSS_PAUSE after each round; announced: a FIFO round at the start of each pause
# (ROUNDTRIM_AUTO=off); auto: nothing. Writes $RAW/auto/rss-MODE.RUN.tsv (round rss_kib) and the stats lines.
rss_run() {
	local mode=$1 run=$2 rounds=$3 scale=$4 r out=$RAW/auto/rss-$1.$2.tsv
	local env=("LD_PRELOAD=$LIB" "ROUNDTRIM_FIFO=$ROUNDS_DIR/fifo-$mode-$run/%p.fifo"
		"ROUNDTRIM_STATS=$ROUNDS_DIR/rss-$mode-$run.%p.jsonl")
	local cmd=("$PYTHON" "$FL_CLIENT" --rounds "$rounds" --wait --scale "$scale" --seed "$run")
	# Announced from the first round: detection could otherwise find one before the first FIFO
	# line arrives, and the rounds the driver counts would be off by one.
	[[ $mode == announced ]] && env+=("ROUNDTRIM_AUTO=off")
	((run > 1)) || record_command env "${env[@]}" "${cmd[@]}"
	note "auto: Python client's RSS, $mode, run $run"
	rounds_start "client-$mode" "${env[@]}" -- "${cmd[@]}"
	: >"$out"
	for ((r = 1; r <= rounds; r++)); do
		rounds_read "client-$mode" "$r"
		[[ $mode == announced ]] && rounds_trigger "client-$mode" "$r"
		sleep "$RSS_PAUSE"
		echo "$r $(vmrss_kib "$ROUNDS_PID")" >>"$out"
		rounds_next
	done
	rounds_stop "client-$mode"
	cat "$ROUNDS_DIR/rss-$mode-$run".*.jsonl >"$RAW/auto/rss-$mode.$run.stats.jsonl" 2>/dev/null || true
}

# rss_rows RUNS: the RSS pairs' rows and summary row.
rss_rows() {
	local runs=$1 run a b r ratios=() auto_rounds m lo hi verdict=missed
	for ((run = 1; run <= runs; run++)); do
		a=$(awk 'END { printf "%.3f\n", $2 / 1024 }' "$RAW/auto/rss-auto.$run.tsv")
		b=$(awk 'END { printf "%.3f\n", $2 / 1024 }' "$RAW/auto/rss-announced.$run.tsv")
		r=$(ratio "$a" "$b") || die "RSS pair $run: no RSS"
		ratios+=("$r")
		auto_rounds=$("$STATS_LINES" "$RAW/auto/rss-auto.$run.stats.jsonl" | awk '$2 == "auto"' | wc -l) ||
			die "RSS pair $run: unreadable stats lines"
		echo "| $run | $(fmt "$b" 1) | $(fmt "$a" 1) | $auto_rounds | $(fmt "$r" 3) |"
	done
	read -r m lo hi < <(printf '%s\n' "${ratios[@]}" | spread)
	at_most "$m" 1.05 && verdict=met
	summary_row 7 "PyTorch client never told about a round: final RSS / with announced rounds (pairs)" \
		"≤ 1.05" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	[[ $verdict == met ]] ||
		loss "The PyTorch client never told about a round ends at $(fmt "$m" 3)× the RSS it reaches with announced rounds (median of $runs pairs; goal ≤ 1.05)."
}

main() {
	local runs=${BENCH_AUTO_RUNS:-3} rounds=16 steady_s=65 rss_rounds=10 rss_scale=1 run name
	local load_before load_after
	if [[ $QUICK == 1 ]]; then
		runs=${BENCH_AUTO_RUNS:-1} rounds=4 steady_s=10 rss_rounds=3 rss_scale=0.25
	fi
	[[ $runs =~ ^[1-9][0-9]*$ ]] || die "BENCH_AUTO_RUNS must be a positive integer, not '$runs'"
	[[ -x $EVAL && -x $STATS_LINES && -r $LIB && -x $WORKLOADS_BIN/frag ]] ||
		die "detect_eval, stats_lines, $LIB or the workloads are not built"
	rm -rf "$RAW/auto"
	mkdir -p "$RAW/auto"
	read -r load_before _ </proc/loadavg
	note_load "auto: before"
	# Run by run, every workload, so that a slow spell of the machine hits them all alike.
	for ((run = 1; run <= runs; run++)); do
		for name in "${ROUND_WORKLOADS[@]}" steady; do
			# The server's rounds are longer: 4/5 as many.
			local n=$rounds
			[[ $name == fl_server ]] && n=$((rounds * 4 / 5))
			run_workload "$name" "$run" "$n" "$steady_s"
		done
		rss_run announced "$run" "$rss_rounds" "$rss_scale"
		rss_run auto "$run" "$rss_rounds" "$rss_scale"
	done
	read -r load_after _ </proc/loadavg
	note_load "auto: after"
	{
		echo "## Figure 7: rounds that come by themselves"
		echo
		echo "The library preloaded with its defaults (detection on, an action every round), and nothing"
		echo "announces a round. Each workload prints its true round ends; the library's detections are"
		echo "its own stats lines with the trigger auto (their unix_time put on the workloads' monotonic"
		echo "clock). A detection matches a true end when it comes within 3 s after it and before the"
		echo "next one; detections during the 3 s after the workload's start (its set-up) are not"
		echo "scored. $runs run(s) per workload, seeds 1..$runs; $rounds rounds a run ($((rounds * 4 / 5))"
		echo "for the server). Cells: median [min–max] over the runs; the counts are their sums."
		echo "The last column is how long after the true end the stats line was written, the action done:"
		echo "the detector's quiet period (400 ms), then the action; in Python, the collection first, which"
		echo "waits (up to 2 s) for the main thread to come back to the interpreter, here at the end of"
		echo "the client's pause. Load average (1 min): $load_before before, $load_after after, on"
		echo "$(nproc) cores."
		echo
		echo "| workload | true round ends | detections | matched | precision | recall | end to action done (s) |"
		echo "|---|---|---|---|---|---|---|"
		detection_rows "$runs"
		echo
		echo "$(describe steady), $steady_s s a run: every action counts (whatever its trigger),"
		echo "goal at most one a minute."
		echo
		echo "| run | minutes | detections | actions | actions a minute |"
		echo "|---|---|---|---|---|"
		steady_rows "$runs"
		echo
		echo "The PyTorch client (fl_client.py, scale $rss_scale, $rss_rounds rounds), unmodified, driven"
		echo "round by round as in figure 1 with a ${RSS_PAUSE} s wait for its next task after each"
		echo "round; RSS (VmRSS) read at the end of each wait. Announced: \`roundtrim round --wait\` at the"
		echo "start of each wait (FIFO, N=1); never told: nothing but the library's defaults. Pairs run"
		echo "back to back with the same seed; ratio: never told / announced, final RSS."
		echo
		echo "| pair | announced: final RSS (MiB) | never told: final RSS (MiB) | rounds it found | ratio (goal ≤ 1.05) |"
		echo "|---|---|---|---|---|"
		rss_rows "$runs"
		echo
	} >"$RAW/fig7.md"
	cat "$RAW/fig7.md"
}

main "$@"
