#!/usr/bin/env bash
# run.sh: runs one libFuzzer target of test/fuzz/ for make check (short, deterministic) or
# make fuzz (long, corpus merged back into the repository).
#
# Usage: test/fuzz/run.sh check FUZZ_BUILD NAME RUNS
#        test/fuzz/run.sh long FUZZ_BUILD NAME SECONDS
#
# FUZZ_BUILD holds fuzz_NAME; seeds are test/fuzz/corpus/NAME/, the dictionary test/fuzz/NAME.dict
# when there is one. A crash, a broken invariant or a leak exits 1 and leaves the reproducer in
# FUZZ_BUILD/artifacts/ (replay: FUZZ_BUILD/fuzz_NAME FILE). The log is FUZZ_BUILD/NAME.log.
set -euo pipefail

usage() {
	echo "usage: test/fuzz/run.sh check|long FUZZ_BUILD NAME RUNS|SECONDS" >&2
	exit 2
}

(($# == 4)) || usage
mode=$1 build=$2 name=$3 amount=$4
[[ $amount =~ ^[0-9]+$ ]] || usage
bin=$build/fuzz_$name
seeds=test/fuzz/corpus/$name
artifacts=$build/artifacts
log=$build/$name.log
[[ -x $bin ]] || {
	echo "run.sh: $bin is not built" >&2
	exit 2
}
mkdir -p "$seeds" "$artifacts"

# -len_control=0: long inputs from the start (values past the 512-byte buffers, oversized
# FIFO lines), not only after a long run.
options=(-max_len=4096 -len_control=0 -timeout=10 -rss_limit_mb=1024 "-artifact_prefix=$artifacts/$name-")
if [[ -f test/fuzz/$name.dict ]]; then
	options+=("-dict=test/fuzz/$name.dict")
fi

# Prints the log's tail and the reproducers, and fails.
failed() {
	tail -n 40 "$log" >&2
	echo "run.sh: fuzz_$name failed; reproducer(s):" >&2
	find "$artifacts" -name "$name-*" -newer "$bin" -printf '  %p\n' >&2
	echo "replay: $bin FILE" >&2
	exit 1
}

# "N runs, cov: C ft: F corp: K/Sb" from the last "#N DONE ..." line.
summary() {
	grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 |
		sed -E 's/^#([0-9]+)[[:space:]]+DONE[[:space:]]+/\1 runs, /; s/[[:space:]]+(lim|exec\/s|rss):.*//'
}

case $mode in
check)
	# New inputs go to a scratch directory, never into the repository. The same inputs run
	# each time: the seeds, then a fixed number of mutations from a fixed seed, with address
	# randomisation off where the system allows it, since pointers feed libFuzzer's tables
	# (what they find can still differ by a few features between runs).
	scratch=$build/check/$name
	rm -rf "$scratch"
	mkdir -p "$scratch"
	same=()
	if setarch -R true 2>/dev/null; then
		same=(setarch -R)
	fi
	"${same[@]}" "$bin" "${options[@]}" -seed=1 "-runs=$amount" "$scratch" "$seeds" \
		>"$log" 2>&1 || failed
	echo "fuzz_$name: $(summary) (from $(find "$seeds" -type f | wc -l) seeds, seed 1)"
	;;
long)
	work=$build/corpus/$name
	mkdir -p "$work"
	"$bin" "${options[@]}" "-max_total_time=$amount" "$work" "$seeds" >"$log" 2>&1 || failed
	done=$(summary)
	before=$(find "$seeds" -type f | wc -l)
	# Only inputs that reach an edge the seeds do not are added (-use_counters=0: new hit
	# counts of known edges do not count), so the seeds stay small; review them before a
	# commit.
	"$bin" "${options[@]}" -merge=1 -use_counters=0 "$seeds" "$work" >"$log.merge" 2>&1 ||
		failed
	after=$(find "$seeds" -type f | wc -l)
	echo "fuzz_$name: $done in $amount s; $((after - before)) new input(s) merged into $seeds"
	;;
*)
	usage
	;;
esac
