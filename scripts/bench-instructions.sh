#!/usr/bin/env bash
# bench-instructions.sh: figure 10 of `make bench`, what the library costs counted in
# instructions (valgrind's callgrind), which do not vary from run to run: per malloc-family call
# on glibc and jemalloc with 1 and 2 threads, and at the start of a short program that
# ROUNDTRIM_MATCH leaves out and of one it matches. scripts/instructions.sh measures and holds
# the budgets; this script lays its report out. Quick mode changes nothing: the counts are exact
# at any size. Writes $RAW/fig10.md and summary rows (see bench-lib.sh).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

# what NAME: the summary's wording of a figure of instructions.sh.
what() {
	case $1 in
	call-glibc-1) echo "instructions added per malloc-family call, glibc, 1 thread" ;;
	call-glibc-2) echo "instructions added per malloc-family call, glibc, 2 threads" ;;
	call-jemalloc-1) echo "instructions added per malloc-family call, jemalloc, 1 thread" ;;
	call-jemalloc-2) echo "instructions added per malloc-family call, jemalloc, 2 threads" ;;
	start-nonmatching) echo "instructions added to the start of a program ROUNDTRIM_MATCH leaves out, over an empty preload" ;;
	start-matching) echo "instructions added to the start and exit of a matching program (the worker's start), over an empty preload" ;;
	*) die "no wording for figure $1" ;;
	esac
}

main() {
	local report name value budget verdict how
	command -v valgrind >/dev/null || die "valgrind is not installed (Debian: valgrind; scripts/deps.sh)"
	note "instructions: counting with callgrind"
	report=$("$ROOT/scripts/instructions.sh" report) || die "instructions.sh report failed"
	record_command scripts/instructions.sh report
	record_command env INSTRUCTIONS_VERBOSE=1 scripts/instructions.sh report
	{
		echo "## Figure 10: instructions"
		echo
		echo "Counted by valgrind's callgrind, which counts the same number in every run (the start of"
		echo "a matching program aside, whose worker runs beside the program's exit: it varies by a"
		echo "few percent). Per call: \`alloc_bench\` run with 100,000 and 300,000 operations per"
		echo "thread, with and without the library, only its threads' loops counted; the difference"
		echo "between the two runs with the library, less the same difference without, divided by the"
		echo "calls the extra operations made. Start: the whole run of \`/bin/true\` with the library"
		echo "preloaded, less the same with an empty preloaded object. The budgets are those of"
		echo "\`scripts/instructions.sh\`, which \`make check\` holds the library to; roundtrim(7),"
		echo "OVERHEAD, says what each remaining instruction pays for."
		echo
		echo "| figure | instructions | budget | verdict | how |"
		echo "|---|---|---|---|---|"
		while IFS=$'\t' read -r name value budget verdict how; do
			echo "| $name | $value | ≤ $budget | $verdict | $how |"
			if [[ $value == - ]]; then
				continue
			fi
			is_number "$value" || die "figure $name: '$value' is not a number"
			local v=met
			if [[ $verdict == over ]]; then
				v=missed
				loss "Instructions: $(what "$name") is $value, over its budget of $budget."
			fi
			summary_row 10 "$(what "$name")" "≤ $budget" "$value" "$value" "$value" "$v"
		done <<<"$report"
		echo
	} >"$RAW/fig10.md"
	cat "$RAW/fig10.md"
}

main "$@"
