# rounds.sh: drives a round workload from outside, as a federated-learning site would; sourced
# after common.sh, never run. Used by demo.sh and the memory benchmark, for test/workloads/frag
# and test/workloads/fl_client.py alike: both print "round R [live_kib=L] rss_kib=S" after each
# round and, with --wait, read one line from stdin before the next.
#
#   rounds_start NAME [VAR=VALUE...] -- COMMAND [ARGS...]
#       starts COMMAND (with --wait among its ARGS) in a clean environment (CLEAN_ENV) plus the
#       given variables, stdin and stdout on named pipes; sets ROUNDS_PID
#   rounds_read NAME R        reads round R's line; sets ROUND_LIVE_KIB ("" when the workload
#                             does not report it)
#   rounds_trigger NAME R     one round through `roundtrim round --wait`; then, from the
#                             process's status (`roundtrim status --json`), sets ACTION to the
#                             round's action, if it acted, and RELEASED_KIB to what it released;
#                             in a Python process, waits (10 s at most) for the record of the
#                             Python steps the round handed over, which follows their release
#   rounds_next               lets the workload begin its next round
#   rounds_stop NAME          end of input; waits for the workload to exit
#   rounds_roundtrim_env      prints the variables that put roundtrim's FIFO and stats in ROUNDS_DIR
#   vmrss_kib PID             the process's VmRSS
# Sets ROUNDS_DIR (a scratch directory) and an EXIT trap that stops the workload and removes it.
# shellcheck shell=bash disable=SC2034 # sets variables for the scripts that source it

# The longest wait, in seconds, for one round of the workload and for roundtrim's answer.
ROUNDS_STEP_TIMEOUT=${ROUNDS_STEP_TIMEOUT:-120}
ROUNDS_DIR=$(mktemp -d)
ROUNDS_PID=""     # the workload now running, if any
ROUNDS_TO_FD=""   # its stdin
ROUNDS_FROM_FD="" # its stdout
ACTION=none
RELEASED_KIB=0
ROUND_LIVE_KIB=""

rounds_cleanup() {
	if [[ -n $ROUNDS_PID ]] && kill -0 "$ROUNDS_PID" 2>/dev/null; then
		kill "$ROUNDS_PID" 2>/dev/null || true
		wait "$ROUNDS_PID" 2>/dev/null || true
	fi
	rm -rf "$ROUNDS_DIR"
}
trap rounds_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The child's environment: none of the caller's preloads, allocator settings or roundtrim/NVFlare
# variables; each run names its own.
CLEAN_ENV=(-u LD_PRELOAD -u MALLOC_CONF -u MALLOC_ARENA_MAX -u GLIBC_TUNABLES)
while IFS= read -r name; do
	if [[ $name == ROUNDTRIM_* || $name == NVFLARE_* ]]; then
		CLEAN_ENV+=(-u "$name")
	fi
done < <(compgen -e)

rounds_roundtrim_env() {
	printf '%s\n' "ROUNDTRIM_FIFO=$ROUNDS_DIR/fifo/%p.fifo" \
		"ROUNDTRIM_STATS=$ROUNDS_DIR/stats.%p.jsonl" ROUNDTRIM_GC_ROUNDS=1
}

rounds_start() {
	local name=$1 vars=()
	shift
	while (($# > 0)) && [[ $1 != -- ]]; do
		vars+=("$1")
		shift
	done
	[[ ${1:-} == -- ]] || die "rounds_start $name: no -- before the command"
	shift
	rm -f "$ROUNDS_DIR/$name.in" "$ROUNDS_DIR/$name.out"
	mkfifo "$ROUNDS_DIR/$name.in" "$ROUNDS_DIR/$name.out"
	env "${CLEAN_ENV[@]}" "${vars[@]}" "$@" <"$ROUNDS_DIR/$name.in" >"$ROUNDS_DIR/$name.out" \
		2>"$ROUNDS_DIR/$name.err" &
	ROUNDS_PID=$!
	# The same order as the child's redirections, so that neither open waits forever.
	exec {ROUNDS_TO_FD}>"$ROUNDS_DIR/$name.in" {ROUNDS_FROM_FD}<"$ROUNDS_DIR/$name.out"
}

rounds_stop() {
	local name=$1
	exec {ROUNDS_TO_FD}>&-
	if ! wait "$ROUNDS_PID"; then
		ROUNDS_PID=""
		die "$name run failed: $(tail -5 "$ROUNDS_DIR/$name.err")"
	fi
	ROUNDS_PID=""
	exec {ROUNDS_FROM_FD}<&-
}

rounds_read() {
	local name=$1 round=$2 line
	if ! IFS= read -r -t "$ROUNDS_STEP_TIMEOUT" -u "$ROUNDS_FROM_FD" line; then
		die "$name run: no line for round $round: $(tail -5 "$ROUNDS_DIR/$name.err")"
	fi
	[[ $line =~ ^round\ ([0-9]+)( live_kib=([0-9]+))?\ rss_kib=([0-9]+)$ ]] ||
		die "$name run: unexpected line: $line"
	[[ ${BASH_REMATCH[1]} == "$round" ]] || die "$name run: expected round $round: $line"
	ROUND_LIVE_KIB=${BASH_REMATCH[3]}
}

rounds_next() {
	echo >&"$ROUNDS_TO_FD"
}

vmrss_kib() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# wait_until SECONDS COMMAND...: polls COMMAND every 20 ms; false if it never succeeds.
wait_until() {
	local tries=$(($1 * 50))
	shift
	while ((tries-- > 0)); do
		if "$@"; then
			return 0
		fi
		sleep 0.02
	done
	return 1
}

rounds_trigger() {
	local name=$1 round=$2 counted action released
	# The command finds the process once its worker has opened the FIFO and written the status
	# file beside it; until then it refuses the pid.
	wait_until 10 "$ROUNDTRIM" status "$ROUNDS_PID" >/dev/null 2>&1 ||
		die "roundtrim does not see pid $ROUNDS_PID: $(tail -5 "$ROUNDS_DIR/$name.err")"
	# The command's own FIFO write and wait: its answer means the round was handled.
	"$ROUNDTRIM" round --wait --timeout "$ROUNDS_STEP_TIMEOUT" "$ROUNDS_PID" >/dev/null ||
		die "round $round of $name: roundtrim round failed: $(tail -5 "$ROUNDS_DIR/$name.err")"
	# What it did, from the status object's fields (roundtrim(7), STATUS FILE): the round acted
	# when the last action is its own.
	read -r counted action released < <("$ROUNDTRIM" status --json "$ROUNDS_PID" | python3 -c '
import json, sys
(st,) = json.load(sys.stdin)
acted = st["actions"] > 0 and st["last_action_round"] == st["rounds"]
print(st["rounds"], st["last_action"] if acted else "-", st["last_released_kib"] if acted else 0)
') || die "round $round of $name: no status from roundtrim status --json"
	[[ $counted == "$round" ]] || die "round $round of $name: the library counts $counted rounds"
	[[ $action == - ]] || ACTION=$action
	RELEASED_KIB=$released
	# A round that handed the Python steps over (python=pending) is handled once their record is
	# written, after the release of what they freed (roundtrim(7), PYTHON). Bounded: with
	# ROUNDTRIM_PYTHON=main they wait for a main thread that waits for this driver.
	local stats=$ROUNDS_DIR/stats.$ROUNDS_PID.jsonl
	if [[ -r $stats ]] && grep -q "\"round\":$round,.*\"python\":\"pending\"" "$stats"; then
		wait_until 10 grep -q "\"round\":$round,\"trigger\":\"python\"" "$stats" || true
	fi
}
