#!/usr/bin/env bash
# bench-detect.sh: how well policy/rt_detect finds round boundaries by itself. Runs each round
# workload under the test-only recorder (build/test/tools/librecorder.so, a reading every
# 50 ms), keeps the boundaries the workload prints as the truth, and scores the detector on each
# trace with detect_eval, once per set of inputs it may be given besides the counts
# (allocations, bytes requested, frees: what the library counts today) and the RSS:
#   counts            nothing more
#   counts+cpu        the process's CPU time at each reading
#   live-asked+cpu    and the live heap, read only when the detector asks for it
#   freed+cpu         and the bytes freed instead (a cost in every free())
# A server's shapes (a name with "server" in it) are scored by the server role's detector too
# (policy/rt_detect_server, what ROUNDTRIM_ROLE=server runs), on what the library gives it:
#   server:counts+cpu+sent the counts, the CPU time and the bytes sent where recorded (it never
#                          asks for the live heap)
# A detection matches a true boundary when it comes within 3 s after it and before the next.
# "mallinfo" is how many times the detector asked for the live heap.
#
# Usage: scripts/bench-detect.sh [--traces DIR] [--out DIR] [--seed S] [--rounds R]
#                                [--interval-ms MS] [--quick]
#   --traces DIR       score every NAME.trace/NAME.truth pair in DIR instead of recording
#                      (test/traces: the recorded shapes, real and synthetic)
#   --out DIR          where recorded traces go (default $BUILD/bench-detect)
#   --seed S           the workloads' seed (default 1)
#   --rounds R         rounds per workload (default 25; the server runs 4/5 of them)
#   --interval-ms MS   the recorder's reading interval (default 50)
#   --quick            6 rounds and 20 s of the steady loop: a check of the harness
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

RECORDER=$BUILD_DIR/test/tools/librecorder.so
EVAL=$BUILD_DIR/test/bench/detect_eval
WORKLOADS_BIN=$BUILD_DIR/test/workloads
INPUTS=(counts counts+cpu live-asked+cpu freed+cpu)
WORKLOAD_NAMES=(frag fl_client fl_server phases steady fl_shape_short fl_shape_tiny server_rounds)

usage() {
	sed -n '/^# Usage/,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

traces=""
out=$BUILD_DIR/bench-detect
seed=1
rounds=25
interval_ms=50
quick=0
while (($# > 0)); do
	case $1 in
	--traces)
		traces=${2:?--traces needs a directory}
		shift 2
		;;
	--out)
		out=${2:?--out needs a directory}
		shift 2
		;;
	--seed)
		seed=${2:?--seed needs a number}
		[[ $seed =~ ^[0-9]+$ ]] || usage
		shift 2
		;;
	--rounds)
		rounds=${2:?--rounds needs a number}
		[[ $rounds =~ ^[1-9][0-9]*$ ]] || usage
		shift 2
		;;
	--interval-ms)
		interval_ms=${2:?--interval-ms needs a number}
		[[ $interval_ms =~ ^[1-9][0-9]*$ ]] || usage
		shift 2
		;;
	--quick)
		quick=1
		rounds=6
		shift
		;;
	*) usage ;;
	esac
done

[[ -x $EVAL ]] || die "$EVAL is not built (make bench-detect)"

# The bench form of each workload: a minute or two each, rounds of varied size and pause.
workload_command() {
	local name=$1
	case $name in
	frag)
		echo "$WORKLOADS_BIN/frag" --threads 2 --mib-range 16:256 --pause 0.6:2 \
			--rounds "$rounds" --seed "$seed" --boundaries
		;;
	fl_client)
		echo "$ROOT/test/workloads/fl_client.py" --scale 1 --steps 2:4 --batch 4:64 \
			--pause 0.6:2 --rounds "$rounds" --seed "$seed" --boundaries
		;;
	fl_server)
		echo "$WORKLOADS_BIN/fl_server" --clients 5 --train 0.6:3 \
			--rounds $((rounds * 4 / 5)) --seed "$seed"
		;;
	phases)
		echo "$WORKLOADS_BIN/phases" --gap 0.02:0.25 --pause 0.6:2 --rounds "$rounds" \
			--seed "$seed"
		;;
	steady)
		echo "$WORKLOADS_BIN/steady" --duration $((quick ? 20 : 65)) --seed "$seed"
		;;
	fl_shape_short)
		echo "$ROOT/test/workloads/py/fl_shape.py" --rounds "$rounds" --seed "$seed"
		;;
	fl_shape_tiny)
		echo "$ROOT/test/workloads/py/fl_shape.py" --model-mib 0.4 --train 0.6:2 \
			--rounds "$rounds" --seed "$seed"
		;;
	server_rounds)
		echo "$WORKLOADS_BIN/server_rounds" --rounds "$rounds" --train 2 --pause 0.6
		;;
	esac
}

record() {
	local name=$1 cmd
	read -r -a cmd <<<"$(workload_command "$name")"
	note "recording $name: ${cmd[*]}"
	echo "RT_RECORD=$out/$name.trace RT_RECORD_INTERVAL_MS=$interval_ms" \
		"LD_PRELOAD=$RECORDER ${cmd[*]} >$out/$name.truth" >>"$out/commands.txt"
	# None of the caller's preloads or allocator settings: only the recorder.
	timeout 300 env -u MALLOC_CONF -u MALLOC_ARENA_MAX -u GLIBC_TUNABLES \
		RT_RECORD="$out/$name.trace" RT_RECORD_INTERVAL_MS="$interval_ms" \
		LD_PRELOAD="$RECORDER" "${cmd[@]}" >"$out/$name.truth" ||
		die "$name failed or timed out"
}

if [[ -z $traces ]]; then
	[[ -r $RECORDER ]] || die "$RECORDER is not built (make bench-detect)"
	mkdir -p "$out"
	: >"$out/commands.txt"
	read -r load _ </proc/loadavg
	note "load average $load on $(nproc) cores"
	for name in "${WORKLOAD_NAMES[@]}"; do
		record "$name"
	done
	traces=$out
fi

# One detect_eval line, "key=value ..." after the name: prints the values of the given keys.
fields() {
	local line=$1 key
	shift
	for key in "$@"; do
		[[ $line =~ (^| )$key=([^ ]+) ]] || die "no $key in: $line"
		printf '%s\t' "${BASH_REMATCH[2]}"
	done
	echo
}

names=("${WORKLOAD_NAMES[@]}")
if [[ $traces != "$out" ]]; then
	names=()
	for trace in "$traces"/*.trace; do
		names+=("$(basename "$trace" .trace)")
	done
fi
printf '%-22s %-22s %6s %8s %9s %6s %12s %9s %9s %8s\n' workload inputs rounds detected \
	precision recall median_delay max_delay false/min mallinfo
for name in "${names[@]}"; do
	[[ -r $traces/$name.trace && -r $traces/$name.truth ]] || continue
	rows=("${INPUTS[@]}")
	[[ $name == *server* ]] && rows+=(server:counts+cpu+sent)
	for inputs in "${rows[@]}"; do
		detector=()
		[[ $inputs == server:* ]] && detector=(--server)
		line=$("$EVAL" "${detector[@]}" --inputs "${inputs#server:}" --name "$name" \
			"$traces/$name.trace" "$traces/$name.truth")
		IFS=$'\t' read -r truths detected precision recall median max fpm asks < <(fields "$line" \
			truths detected precision recall median_delay_s max_delay_s false_per_min live_asks)
		printf '%-22s %-22s %6s %8s %9s %6s %11ss %8ss %9s %8s\n' "$name" "$inputs" "$truths" \
			"$detected" "$precision" "$recall" "$median" "$max" "$fpm" "$asks"
	done
done
