#!/usr/bin/env bash
# record-nvflare.sh: records one shape of NVFlare 2.8.1 (POC mode, grpc, hello-pt under FedAvg)
# for test/traces: every process of the run under the test-only recorder
# (build/test/tools/librecorder.so, a reading every 50 ms), then the server job process, the
# server parent, and each site's job process and parent client as PREFIX_ROLE.trace (every other
# reading kept) with PREFIX_ROLE.truth (test/traces/README.md says how the truth is read).
# With --library, the same run under the library instead, as a user runs it: the server's
# startup/sub_start.sh patched with `roundtrim patch --role server`, each site's with
# `--role client`, acting every --gc-rounds rounds found, a stats file per process; then, per
# process, the rounds the library found, its actions and NVFlare's rounds (from the logs),
# `roundtrim status` as last seen during the job and `roundtrim report`; the detector's own
# readings (ROUNDTRIM_TRACE) go to WORK/traces/ROLE.trace beside NVFlare's rounds as ROLE.truth,
# for build/test/bench/detect_eval.
# Nothing of NVFlare is in this repository: give its source tree (tag 2.8.1) and pyhocon's; the
# Debian packages test/traces/README.md lists must be installed. Not run by make.
#
# Usage: test/tools/record-nvflare.sh --nvflare DIR --pyhocon DIR --work DIR --out DIR
#                                     --name PREFIX [--width W] [--train N] [--test N]
#                                     [--epochs E] [--batch B] [--workers W] [--sites S]
#                                     [--rounds R] [--timeout-min M]
#        test/tools/record-nvflare.sh --library [--gc-rounds N] --nvflare DIR --pyhocon DIR
#                                     --work DIR [option]...
#   --nvflare DIR      NVFlare's source tree at tag 2.8.1 (nvflare/ and examples/hello-world)
#   --pyhocon DIR      pyhocon's source tree (the directory that holds the pyhocon package)
#   --work DIR         a directory of its own for the POC workspace, the job and the raw
#                      recordings (outside the repository; emptied first)
#   --out DIR          where PREFIX_*.trace and PREFIX_*.truth go (not with --library)
#   --name PREFIX      the traces' prefix, e.g. nvflare_s1 (not with --library)
#   --library          run under build/libroundtrim.so (patched sub_start.sh), not the recorder
#   --gc-rounds N      with --library: act every N rounds (default 5, the server role's)
#   --width W          hello-pt's SimpleNetwork with its two hidden layers W wide (W*W + 412*W
#                      + 2882 parameters; default 2220, 5.8M)
#   --train N          training samples of the stand-in data (default 640)
#   --test N           test samples (default a quarter of --train)
#   --epochs E         local epochs per round (default 1)
#   --batch B          batch size (default 32)
#   --workers W        DataLoader workers (default 0)
#   --sites S          client sites (default 2)
#   --rounds R         FedAvg rounds (default 25)
#   --timeout-min M    give up when the job has not finished after M minutes (default 60)
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/../../scripts/common.sh"

RECORDER=$BUILD_DIR/test/tools/librecorder.so
HELPER=$ROOT/test/tools/record_nvflare.py

usage() {
	sed -n '/^# Usage/,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

number() {
	[[ ${2-} =~ ^[1-9][0-9]*$ ]] || die "$1 needs a positive number"
	printf '%s\n' "$2"
}

nvflare="" pyhocon="" work="" out="" name="" library=0 gc_rounds=5 gc_given=0
width=2220 train=640 test="" epochs=1 batch=32 workers=0 sites=2 rounds=25 timeout_min=60
while (($# > 0)); do
	case $1 in
	--library)
		library=1
		shift
		continue
		;;
	--gc-rounds)
		gc_rounds=$(number "$1" "${2-}")
		gc_given=1
		;;
	--nvflare) nvflare=${2:?--nvflare needs a directory} ;;
	--pyhocon) pyhocon=${2:?--pyhocon needs a directory} ;;
	--work) work=${2:?--work needs a directory} ;;
	--out) out=${2:?--out needs a directory} ;;
	--name) name=${2:?--name needs a prefix} ;;
	--width) width=$(number "$1" "${2-}") ;;
	--train) train=$(number "$1" "${2-}") ;;
	--test) test=$(number "$1" "${2-}") ;;
	--epochs) epochs=$(number "$1" "${2-}") ;;
	--batch) batch=$(number "$1" "${2-}") ;;
	--workers)
		[[ ${2-} =~ ^[0-9]+$ ]] || die "--workers needs a number"
		workers=$2
		;;
	--sites) sites=$(number "$1" "${2-}") ;;
	--rounds) rounds=$(number "$1" "${2-}") ;;
	--timeout-min) timeout_min=$(number "$1" "${2-}") ;;
	*) usage ;;
	esac
	shift 2
done
[[ -n $nvflare && -n $pyhocon && -n $work ]] || usage
if ((library)); then
	[[ -z $out && -z $name ]] || usage
	[[ -x $ROUNDTRIM && -f $LIB ]] || die "$ROUNDTRIM and $LIB are not built (make all)"
else
	[[ -n $out && -n $name && $gc_given == 0 ]] || usage
	[[ -f $RECORDER ]] || die "$RECORDER is not built (make all)"
fi
[[ -f $nvflare/nvflare/__init__.py ]] || die "$nvflare is not NVFlare's source tree"
[[ -d $pyhocon/pyhocon ]] || die "$pyhocon is not pyhocon's source tree"
test=${test:-$((train / 4 > 0 ? train / 4 : 1))}
mkdir -p "$work"
work=$(cd "$work" && pwd)
if ((!library)); then
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
fi
case $work/ in
"$ROOT"/*) die "--work $work is inside the repository" ;;
esac

# NVFlare's sub_start.sh runs python3: Debian's, which has the packages.
export PATH=/usr/bin:$PATH
export PYTHONPATH=$nvflare:$pyhocon:$work/stub
# The POC keeps its settings (workspace, startup kits) under ~/.nvflare: one of this run's own.
export HOME=$work/home
nvflare_cli() {
	python3 -m nvflare.cli "$@"
}

stop_poc() {
	nvflare_cli poc stop >/dev/null 2>&1 || true
}

rm -rf "${work:?}"/{poc,job,raw,stats,traces,stub,home,project.yml,clock,procs,status.txt}
mkdir -p "$work/stub/safetensors" "$work/raw" "$work/stats" "$work/traces" "$HOME"
# A stand-in: NVFlare imports safetensors; an exchange of numpy arrays never calls it.
cat >"$work/stub/safetensors/__init__.py" <<'EOF'
def safe_open(*args, **kwargs):
    raise NotImplementedError("safetensors stand-in")
EOF
cat >"$work/stub/safetensors/torch.py" <<'EOF'
def _missing(*args, **kwargs):
    raise NotImplementedError("safetensors stand-in")


load = save = load_file = save_file = _missing
EOF

note "POC workspace for $sites sites in $work/poc"
nvflare_cli poc config --pw "$work/poc" >/dev/null
nvflare_cli poc prepare -n "$sites" --force >/dev/null
python3 "$HELPER" project "$work/poc/project.yml" "$work/project.yml" "$sites"
nvflare_cli poc prepare -i "$work/project.yml" --force >/dev/null
if ((library)); then
	# As a user would: the generated launchers patched, the server's with its role.
	while IFS= read -r launcher; do
		kit=$(basename "$(dirname "$(dirname "$launcher")")")
		case $kit in
		server) role=server ;;
		site-*) role=client ;;
		*) continue ;;
		esac
		"$ROUNDTRIM" patch --role "$role" --gc-rounds "$gc_rounds" \
			--stats "$work/stats/%p.jsonl" "$launcher" >/dev/null
		note "roundtrim patch --role $role --gc-rounds $gc_rounds: $kit"
	done < <(find "$work/poc" -path '*/startup/sub_start.sh' | sort)
fi

script_args="--synthetic_data --train_size $train --test_size $test --epochs $epochs"
script_args+=" --batch_size $batch --num_workers $workers"
note "job: width $width, $rounds rounds, client.py $script_args"
python3 "$HELPER" job "$nvflare" "$work/job" "$width" "$sites" "$rounds" "$script_args"

trap stop_poc EXIT
python3 "$HELPER" clock "$work/clock"
note "load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
if ((library)); then
	ROUNDTRIM_TRACE=$work/traces/%p.trace nvflare_cli poc start >"$work/poc-start.log" 2>&1
else
	LD_PRELOAD=$RECORDER RT_RECORD=$work/raw/%p.trace RT_RECORD_INTERVAL_MS=50 \
		nvflare_cli poc start >"$work/poc-start.log" 2>&1
fi
nvflare_cli job submit -j "$work/job/jobs/hello-pt" >"$work/submit.log" 2>&1 ||
	die "job submit failed: $(tail -5 "$work/submit.log")"

# NVFlare's processes (pid and command line), and what roundtrim status says of them, as
# last seen: the job processes are gone once the job ends.
watch_processes() {
	local pid pids=()
	ps -eo pid=,args= | sed -n 's/^ *\([0-9]* .* -m nvflare\.private\.fed\.app\.\)/\1/p' \
		>>"$work/procs"
	sort -u -o "$work/procs" "$work/procs"
	while read -r pid _; do
		[[ ! -d /proc/$pid ]] || pids+=("$pid")
	done <"$work/procs"
	((${#pids[@]} == 0)) || "$ROUNDTRIM" status "${pids[@]}" >"$work/status.txt" 2>&1 || true
}

deadline=$((SECONDS + timeout_min * 60))
until grep -rqs "Finished FedAvg\." "$work/poc"; do
	((SECONDS < deadline)) || die "the job did not finish in $timeout_min minutes"
	((!library)) || watch_processes
	sleep 10
done
note "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
# The job processes end on their own; the parents are recorded idle a little longer.
sleep 20
if ((library)); then
	note "roundtrim status, as last seen during the job:"
	cat "$work/status.txt" >&2
	watch_processes
fi
stop_poc
trap - EXIT
sleep 5
if ((library)); then
	python3 "$HELPER" live "$work/stats" "$work/procs" "$work/poc" "$work/clock" "$sites" \
		"$gc_rounds" "$work/traces"
	"$ROUNDTRIM" report "$work"/stats/*.jsonl
	exit 0
fi
python3 "$HELPER" collect "$work/raw" "$work/poc" "$work/clock" "$out" "$name" "$sites"
