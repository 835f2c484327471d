#!/usr/bin/env bash
# bench-memory.sh: figure 1 of `make bench`. RSS after every round, and at the end, for every
# configuration a user could pick, on the fragmenting C workload (two sizes) and on the Python
# federated client (test/workloads/fl_client.py), each driven round by round by rounds.sh. RSS is
# VmRSS from /proc/PID/status read after the workload's round line, and, in the configurations
# with roundtrim, after the round's trigger has been handled. Runs are interleaved (run 1 of every
# configuration, then run 2, ...), so that the ratios between configurations are taken pairwise.
# Raw data: $RAW/memory/WORKLOAD/CONFIG.RUN.tsv (round rss_kib live_kib). See bench-lib.sh for the
# files it hands to bench.sh. BENCH_MEMORY_WORKLOADS: which of "frag python" run (default both;
# one alone reruns part of the figure, as when a change touches only the Python client's side).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

JEMALLOC=$(find_preload libjemalloc.so.2 libjemalloc2)
TCMALLOC=$(find_preload libtcmalloc.so.4 libgoogle-perftools4)
# BENCH_FL_CLIENT: another client with the same interface (default: the project's).
FL_CLIENT=${BENCH_FL_CLIENT:-$ROOT/test/workloads/fl_client.py}
PYTHON=/usr/bin/python3
# What NVFlare's sub_start.sh sets when its jemalloc block is enabled.
NVFLARE_MALLOC_CONF=dirty_decay_ms:5000,muzzy_decay_ms:5000

CONFIGS=(glibc glibc+roundtrim glibc+self-cleanup glibc-arena-max-2 jemalloc jemalloc-nvflare
	jemalloc+roundtrim tcmalloc)
# The Python client also runs its in-process cleanup at the very end of the round, where the
# program holds no references any more: the best case for cleaning up oneself.
PY_CONFIGS=(glibc glibc+roundtrim glibc+roundtrim-trim glibc+self-cleanup glibc+self-cleanup-end
	glibc-arena-max-2 jemalloc jemalloc-nvflare jemalloc+roundtrim tcmalloc)
# The Python client's runs are slow: quick mode keeps the four that issue 4 asks for and the
# best case.
PY_QUICK_CONFIGS=(glibc glibc+roundtrim glibc+self-cleanup glibc+self-cleanup-end jemalloc-nvflare)

describe() {
	case $1 in
	glibc) echo "glibc, no roundtrim" ;;
	glibc+roundtrim) echo "glibc with roundtrim, its default action glibc_release (FIFO round after each round, N=1)" ;;
	glibc+roundtrim-trim) echo "glibc with roundtrim, ROUNDTRIM_GLIBC=trim: malloc_trim(0) on its worker (before issue 12)" ;;
	glibc+self-cleanup) echo "glibc, the program cleans up itself each round (NVFlare's way; the Python client where NVFlare does it, inside send)" ;;
	glibc+self-cleanup-end) echo "glibc, the Python client cleans up itself at the very end of each round (best case)" ;;
	glibc-arena-max-2) echo "glibc with MALLOC_ARENA_MAX=2" ;;
	jemalloc) echo "jemalloc preloaded, its defaults" ;;
	jemalloc-nvflare) echo "jemalloc with MALLOC_CONF=$NVFLARE_MALLOC_CONF (NVFlare's)" ;;
	jemalloc+roundtrim) echo "jemalloc with roundtrim (purge)" ;;
	tcmalloc) echo "tcmalloc (gperftools) preloaded, a reference" ;;
	esac
}

# config_env CONFIG: the variables of the configuration, one a line.
config_env() {
	case $1 in
	glibc+roundtrim) echo "LD_PRELOAD=$LIB" && rounds_roundtrim_env ;;
	glibc+roundtrim-trim) echo "LD_PRELOAD=$LIB" ROUNDTRIM_GLIBC=trim | tr ' ' '\n' && rounds_roundtrim_env ;;
	glibc-arena-max-2) echo MALLOC_ARENA_MAX=2 ;;
	jemalloc) echo "LD_PRELOAD=$JEMALLOC" ;;
	jemalloc-nvflare) echo "LD_PRELOAD=$JEMALLOC" "MALLOC_CONF=$NVFLARE_MALLOC_CONF" | tr ' ' '\n' ;;
	# roundtrim first: its wrappers must be what the program's calls reach (roundtrim(7)).
	jemalloc+roundtrim) echo "LD_PRELOAD=$LIB:$JEMALLOC" && rounds_roundtrim_env ;;
	tcmalloc) echo "LD_PRELOAD=$TCMALLOC" ;;
	esac
}

# run_one WORKLOAD CONFIG RUN ROUNDS COMMAND...: one run; writes its tsv.
run_one() {
	local workload=$1 config=$2 run=$3 rounds=$4 r env=() rss out
	shift 4
	local cmd=("$@")
	mapfile -t env < <(config_env "$config")
	case $config in
	glibc+self-cleanup) if [[ $workload == python ]]; then cmd+=(--self-cleanup=send); else cmd+=(--self-trim); fi ;;
	glibc+self-cleanup-end) cmd+=(--self-cleanup=end) ;;
	esac
	out=$RAW/memory/$workload/$config.$run.tsv
	mkdir -p "$(dirname "$out")"
	((run > 1)) || record_command env "${env[@]}" "${cmd[@]}"
	rounds_start "$workload-$config" "${env[@]}" -- "${cmd[@]}"
	: >"$out"
	for ((r = 1; r <= rounds; r++)); do
		rounds_read "$workload-$config" "$r"
		if [[ $config == *roundtrim* ]]; then
			rounds_trigger "$workload-$config" "$r"
		fi
		rss=$(vmrss_kib "$ROUNDS_PID")
		echo "$r $rss ${ROUND_LIVE_KIB:--}" >>"$out"
		rounds_next
	done
	rounds_stop "$workload-$config"
}

# per_run WORKLOAD CONFIG AWK: AWK over each run's tsv (round rss live), one number per run.
per_run() {
	local f
	for f in "$RAW/memory/$1/$2".*.tsv; do
		awk "$3" "$f"
	done
}

# shellcheck disable=SC2016 # an awk program
FINAL='END { printf "%.3f\n", $2 / 1024 }'
# shellcheck disable=SC2016 # an awk program
PEAK='$2 > m { m = $2 } END { printf "%.3f\n", m / 1024 }'
# shellcheck disable=SC2016 # an awk program
LIVE='END { if ($3 == "-") print "n/a"; else printf "%.3f\n", $3 / 1024 }'
# shellcheck disable=SC2016 # an awk program
PER_LIVE='END { if ($3 == "-" || $3 == 0) print "n/a"; else printf "%.3f\n", $2 / $3 }'
# Least-squares slope of RSS (MiB) over the last 10 rounds (all of them when fewer).
# shellcheck disable=SC2016 # an awk program
SLOPE='{ x[NR] = $1; y[NR] = $2 / 1024 } END {
	k = NR < 10 ? NR : 10; sx = sy = sxy = sxx = 0
	for (i = NR - k + 1; i <= NR; i++) { sx += x[i]; sy += y[i]; sxy += x[i] * y[i]; sxx += x[i] * x[i] }
	d = k * sxx - sx * sx
	printf "%.3f\n", d == 0 ? 0 : (k * sxy - sx * sy) / d
}'

# cell WORKLOAD CONFIG AWK DECIMALS: "median [min–max]" of a per-run figure, or n/a.
cell() {
	local values m lo hi
	values=$(per_run "$1" "$2" "$3")
	if grep -q n/a <<<"$values"; then
		echo n/a
		return
	fi
	read -r m lo hi < <(spread <<<"$values")
	echo "$(fmt "$m" "$4") [$(fmt "$lo" "$4")–$(fmt "$hi" "$4")]"
}

# med WORKLOAD CONFIG AWK: the median of a per-run figure.
med() {
	per_run "$1" "$2" "$3" | median
}

# pair_ratios WORKLOAD A B: run by run, A's final RSS / B's, one a line.
pair_ratios() {
	local f run a b
	for f in "$RAW/memory/$1/$2".*.tsv; do
		run=${f%.tsv}
		run=${run##*.}
		a=$(awk "$FINAL" "$f")
		b=$(awk "$FINAL" "$RAW/memory/$1/$3.$run.tsv")
		ratio "$a" "$b"
	done
}

# report WORKLOAD TITLE CONFIGS...: the section, the plot and the summary rows of one workload.
report() {
	local workload=$1 title=$2 config c r data png
	shift 2
	local configs=("$@")
	data=$RAW/memory/$workload.dat
	png=rss-$workload.png
	# Per round, the median over runs of each configuration's RSS, in MiB.
	{
		echo "round ${configs[*]}"
		local rounds
		rounds=$(wc -l <"$RAW/memory/$workload/${configs[0]}.1.tsv")
		for ((r = 1; r <= rounds; r++)); do
			printf '%d' "$r"
			for c in "${configs[@]}"; do
				printf ' %s' "$(per_run "$workload" "$c" "NR == $r { printf \"%.3f\\n\", \$2 / 1024 }" | median)"
			done
			echo
		done
	} >"$data"
	plot_png "$OUT/$png" "RSS after each round, median of runs\\n$title" "RSS (MiB)" "$data" round
	{
		echo "### $title"
		echo
		echo "| configuration | final RSS (MiB) | peak RSS (MiB) | live heap at end (MiB) | RSS/live at end | slope, last 10 rounds (MiB/round) |"
		echo "|---|---|---|---|---|---|"
		for c in "${configs[@]}"; do
			echo "| $c: $(describe "$c") | $(cell "$workload" "$c" "$FINAL" 1) | $(cell "$workload" "$c" "$PEAK" 1) | $(cell "$workload" "$c" "$LIVE" 1) | $(cell "$workload" "$c" "$PER_LIVE" 2) | $(cell "$workload" "$c" "$SLOPE" 2) |"
		done
		echo
		echo "![RSS per round, $title]($png)"
		echo
		echo "Lines that coincide hide each other: the table has every configuration."
		echo
		echo "<details><summary>RSS per round (MiB, median of runs)</summary>"
		echo
		echo "| $(head -1 "$data" | sed 's/ / | /g') |"
		echo "|$(head -1 "$data" | sed 's/[^ ]*/---|/g; s/ //g')"
		tail -n +2 "$data" | awk '{ printf "|"; for (i = 1; i <= NF; i++) printf " %s |", (i == 1 ? $i : sprintf("%.1f", $i)); print "" }'
		echo
		echo "</details>"
		echo
	} >>"$RAW/fig1.md"

	# The goals are for the Python client (issue 24's, which restate issue 12's 0.90 against
	# NVFlare's cleanup where NVFlare runs it, inside send); frag's rows are shown without a
	# verdict.
	local m lo hi rt self verdict goal
	read -r m lo hi < <(pair_ratios "$workload" glibc+roundtrim glibc+self-cleanup | spread)
	verdict=missed
	at_most "$m" 0.9 && verdict=met
	goal="≤ 0.90"
	[[ $workload == python ]] || verdict="no goal" goal="—"
	summary_row 1 "$title: final RSS, roundtrim / in-process cleanup (ratio, pairs of runs)" \
		"$goal" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
	# Issue 24's: no more than the program's own cleanup at the very end of each round, the
	# in-process best case (issue 12 asked for 5 % below it); and on jemalloc, where NVFlare's
	# cleanup returns nothing, 10 % below NVFlare's decay settings.
	if [[ $workload == python ]]; then
		read -r m lo hi < <(pair_ratios "$workload" glibc+roundtrim glibc+self-cleanup-end | spread)
		verdict=missed
		at_most "$m" 1.0 && verdict=met
		summary_row 1 "$title: final RSS, roundtrim / the program's own cleanup at the very end of each round (ratio, pairs of runs)" \
			"≤ 1.00" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
		[[ $verdict == met ]] ||
			loss "$title: with roundtrim the final RSS is $(fmt "$m" 3) × the program's own cleanup at the very end of each round (goal ≤ 1.00): $(fmt "$(med "$workload" glibc+roundtrim "$FINAL")" 1) against $(fmt "$(med "$workload" glibc+self-cleanup-end "$FINAL")" 1) MiB."
		if [[ " ${configs[*]} " == *" jemalloc+roundtrim "* && " ${configs[*]} " == *" jemalloc-nvflare "* ]]; then
			read -r m lo hi < <(pair_ratios "$workload" jemalloc+roundtrim jemalloc-nvflare | spread)
			verdict=missed
			at_most "$m" 0.9 && verdict=met
			summary_row 1 "$title: final RSS on jemalloc, roundtrim / NVFlare's settings (ratio, pairs of runs)" \
				"≤ 0.90" "$(fmt "$m" 3)" "$(fmt "$lo" 3)" "$(fmt "$hi" 3)" "$verdict"
		fi
	fi
	read -r m lo hi < <(per_run "$workload" glibc+roundtrim "$SLOPE" | spread)
	verdict=missed
	at_most "${m#-}" 1.0 && verdict=met
	goal="flat within ±1"
	[[ $workload == python ]] || verdict="no goal" goal="—"
	summary_row 1 "$title: RSS slope with roundtrim, last 10 rounds (MiB/round)" "$goal" \
		"$(fmt "$m" 2)" "$(fmt "$lo" 2)" "$(fmt "$hi" 2)" "$verdict"

	# Where roundtrim loses, from this run's medians.
	rt=$(med "$workload" glibc+roundtrim "$FINAL")
	for c in glibc+self-cleanup glibc+self-cleanup-end; do
		[[ " ${configs[*]} " == *" $c "* ]] || continue
		self=$(med "$workload" "$c" "$FINAL")
		if ! at_most "$rt" "$self"; then
			loss "$title: with roundtrim the final RSS is $(fmt "$rt" 1) MiB, $(fmt "$(awk -v a="$rt" -v b="$self" 'BEGIN { print (a - b) * 1024 }')" 0) KiB ($(fmt "$(awk -v a="$rt" -v b="$self" 'BEGIN { print (a / b - 1) * 100 }')" 1)%) above $c ($(fmt "$self" 1) MiB)."
		fi
	done
	for c in "${configs[@]}"; do
		# The in-process cleanups have their lines above.
		[[ $c == glibc+roundtrim || $c == glibc+self-cleanup* ]] && continue
		m=$(med "$workload" "$c" "$FINAL")
		if at_most "$m" "$(awk -v v="$rt" 'BEGIN { print v * 0.95 }')"; then
			loss "$title: $c ends at $(fmt "$m" 1) MiB, more than 5% below glibc+roundtrim's $(fmt "$rt" 1) MiB."
		fi
	done
	if [[ " ${configs[*]} " == *" jemalloc+roundtrim "* ]]; then
		local je jert
		je=$(med "$workload" jemalloc-nvflare "$FINAL")
		jert=$(med "$workload" jemalloc+roundtrim "$FINAL")
		if ! at_most "$jert" "$(awk -v v="$je" 'BEGIN { print v * 0.95 }')"; then
			loss "$title: on jemalloc, roundtrim's purge ends at $(fmt "$jert" 1) MiB against $(fmt "$je" 1) MiB for jemalloc with NVFlare's decay settings alone: little or no gain."
		fi
	fi
}

main() {
	local frag=$WORKLOADS_BIN/frag rounds runs py_rounds py_runs py_scale sizes mib run c
	[[ -x $frag && -r $LIB ]] || die "$frag or $LIB is not built"
	[[ -r $FL_CLIENT ]] || die "no Python client at $FL_CLIENT"
	if [[ $QUICK == 1 ]]; then
		sizes=(64 256) rounds=4 runs=1 py_rounds=5 py_runs=1 py_scale=0.25
	else
		sizes=(256 1024) rounds=12 runs=3 py_rounds=20 py_runs=2 py_scale=1
	fi
	rm -rf "$RAW/memory"
	note_load "memory: before"
	{
		echo "## Figure 1: memory"
		echo
		echo "RSS (VmRSS) after each round, read by the driver after the workload's round line and, with"
		echo "roundtrim, after the round it triggered through the FIFO was handled (in the Python client,"
		echo "once the Python steps it handed over had run and their release ended). Each cell: median of"
		echo "$runs run(s) [min–max] for frag, $py_runs for the Python client. Live heap: what frag itself"
		echo "holds; the Python client has no such figure (n/a). The driver starts each round as soon"
		echo "as the previous one is measured: releases that go by time (jemalloc's decay) get no idle"
		echo "time between rounds here."
		echo
	} >"$RAW/fig1.md"
	[[ " ${BENCH_MEMORY_WORKLOADS:-frag python} " == *" frag "* ]] || sizes=()
	for mib in "${sizes[@]}"; do
		for ((run = 1; run <= runs; run++)); do
			for c in "${CONFIGS[@]}"; do
				note "memory: frag $mib MiB, $c, run $run of $runs"
				run_one "frag-$mib" "$c" "$run" "$rounds" "$frag" --threads 2 --mib "$mib" \
					--rounds "$rounds" --wait
			done
		done
		report "frag-$mib" "frag, 2 threads, $mib MiB churned per round, $rounds rounds" "${CONFIGS[@]}"
	done

	local py_configs=("${PY_CONFIGS[@]}")
	if [[ $QUICK == 1 ]]; then
		py_configs=("${PY_QUICK_CONFIGS[@]}")
	fi
	[[ " ${BENCH_MEMORY_WORKLOADS:-frag python} " == *" python "* ]] || py_runs=0
	for ((run = 1; run <= py_runs; run++)); do
		for c in "${py_configs[@]}"; do
			note "memory: Python client, $c, run $run of $py_runs"
			run_one python "$c" "$run" "$py_rounds" "$PYTHON" "$FL_CLIENT" --rounds "$py_rounds" \
				--wait --scale "$py_scale" --seed 1
		done
	done
	((py_runs == 0)) ||
		report python "Python FL client (PyTorch), scale $py_scale, $py_rounds rounds" "${py_configs[@]}"
	note_load "memory: after"
	cat "$RAW/fig1.md"
}

main "$@"
