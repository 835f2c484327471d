/* detect_eval: scores policy/rt_detect offline on a recorded trace against its true boundaries,
 * or policy/rt_detect_server with --server (the detector of ROUNDTRIM_ROLE=server), or scores
 * the detections a running library made (--detected).
 *
 * usage: detect_eval [--server [--server-min-events N] [--server-share-permille P]
 *                    [--server-gap-ms MS] [--server-gap-period-permille P]
 *                    [--server-open-gap-period-permille P]
 *                    [--server-round-permille P] [--server-hold-ms MS]]
 *                    [--inputs WORD[+WORD...]] [--every-ms MS] [--quiet-ms MS]
 *                    [--quiet-permille P] [--quiet-cpu-permille P] [--idle-cpu-permille P]
 *                    [--half-life-ms MS]
 *                    [--min-burst-events N] [--min-burst-kib K] [--kept-permille P]
 *                    [--kept-count-permille P] [--rss-growth-permille P]
 *                    [--round-share-permille P] [--weight-permille P]
 *                    [--phase-permille P] [--early-quiet-ms MS]
 *                    [--burst-share-permille P] [--rhythm-bursts N]
 *                    [--rhythm-spread-permille P] [--name NAME]
 *                    [--list] TRACE TRUTH
 *        detect_eval --detected FILE --end-us T [--name NAME] [--list] TRUTH
 *
 * --detected: FILE holds one detection a line, its CLOCK_MONOTONIC microseconds (the library's
 * rounds with the trigger auto, as the benchmark reads them from its stats lines); T is the
 * moment the process ended, in the same clock. The detector's own options do not apply.
 *
 * --inputs: what the detector is shown besides the counts and the RSS, words joined by '+'
 * among counts (nothing more), freed, live-asked, live-always, cpu and all
 * (freed+live-always+cpu). --every-ms replays one reading every MS, as a slower reader sees.
 *
 * Prints one line:
 *   NAME inputs=I truths=T detected=D matched=M precision=P recall=R median_delay_s=S
 *   max_delay_s=S false_per_min=F warmup=W live_asks=A
 * and with the bytes sent among the inputs, the delays from the update a client sent
 * (dm_update_delays: over the matched rounds that sent one):
 *   update_rounds=N update_median_delay_s=S update_max_delay_s=S
 * and with --list, one line per true boundary and, between them, one per candidate the detector
 * weighed (a detection or a release it did not take for a round's end: its work, its weight and
 * phase in permille, and where its quiet began against the nearest round's end), or with
 * --detected one per detection. A detection matches a true
 * boundary when it comes within 3 s after it and before the next. */
#include "detect_server_match.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
usage(void)
{
	fprintf(stderr, "usage: detect_eval [--server [--server-min-events N] "
	                "[--server-share-permille P] [--server-gap-ms MS] "
	                "[--server-gap-period-permille P] [--server-open-gap-period-permille P] "
	                "[--server-round-permille P] "
	                "[--server-hold-ms MS]] "
	                "[--inputs WORD[+WORD...]] [--every-ms MS] "
	                "[--quiet-ms MS] [--quiet-permille P] [--quiet-cpu-permille P] "
	                "[--idle-cpu-permille P] "
	                "[--half-life-ms MS] [--min-burst-events N] [--min-burst-kib K] "
	                "[--kept-permille P] [--kept-count-permille P] [--rss-growth-permille P] "
	                "[--round-share-permille P] [--weight-permille P] [--phase-permille P] "
	                "[--early-quiet-ms MS] [--burst-share-permille P] [--rhythm-bursts N] "
	                "[--rhythm-spread-permille P] "
	                "[--name NAME] [--list] TRACE TRUTH\n"
	                "       detect_eval --detected FILE --end-us T [--name NAME] [--list] "
	                "TRUTH\n");
	return 2;
}

/* Where `t_us` lies against the truth: "round N +S s" from the nearest true boundary. */
static void
nearest(const struct dm_truth *truth, uint64_t t_us, char *out, size_t size)
{
	size_t best = 0;
	double best_off = 0;
	for (size_t b = 0; b < truth->n; b++) {
		double off = ((double)t_us - (double)truth->boundaries[b]) / 1e6;
		if (b == 0 || (off < 0 ? -off : off) < (best_off < 0 ? -best_off : best_off)) {
			best = b;
			best_off = off;
		}
	}
	if (truth->n)
		snprintf(out, size, "round %zu %+.2f s", best + 1, best_off);
	else
		snprintf(out, size, "no round");
}

/* One line per true boundary, and between them, for a replay every candidate the detector
 * weighed (a detection, or a release it did not take for a round's end) with its work, weight,
 * phase and where its quiet began against the nearest round's end; for --detected the
 * detections. */
static void
list(const struct dm_truth *truth, const struct dm_result *res, bool detected)
{
	size_t d = 0, c = 0;
	uint64_t t0 = truth->start_us;
	char near[64];
	for (size_t b = 0; b <= truth->n; b++) {
		uint64_t until = b < truth->n ? truth->boundaries[b] : UINT64_MAX;
		for (; detected && d < res->ndetections && res->detections[d].t_us < until; d++)
			printf("  detection at %.3f s\n",
			       ((double)res->detections[d].t_us - (double)t0) / 1e6);
		for (; !detected && c < res->ncandidates && res->candidates[c].t_us < until; c++) {
			const struct dm_candidate *k = &res->candidates[c];
			double at = ((double)k->t_us - (double)t0) / 1e6;
			nearest(truth, k->quiet_us, near, sizeof(near));
			if (k->boundary) {
				const struct dm_detection *det = &res->detections[d++];
				printf("  detection at %.3f s (quiet from %.3f s, %s, by %s, "
				       "confidence %u",
				       at, ((double)det->boundary_us - (double)t0) / 1e6, near,
				       rt_detect_basis_name(det->basis), det->confidence_permille);
			} else
				printf("  not a round's end at %.3f s (quiet from %.3f s, %s", at,
				       ((double)k->quiet_us - (double)t0) / 1e6, near);
			printf("; work %.1f MiB, weight %u, phase %u)\n",
			       (double)k->work_bytes / (1024.0 * 1024.0), k->weight_permille,
			       k->phase_permille);
		}
		if (b < truth->n)
			printf("boundary %zu at %.3f s%s\n", b + 1,
			       ((double)truth->boundaries[b] - (double)t0) / 1e6,
			       res->truth_matched[b]  ? ""
			       : res->truth_scored[b] ? "  MISSED"
			                              : "  (trace ends: not scored)");
	}
}

int
main(int argc, char **argv)
{
	struct rt_detect_params params;
	rt_detect_default_params(&params);
	struct rt_detect_server_params server_params;
	rt_detect_server_default_params(&server_params);
	bool server = false;
	unsigned inputs = 0;
	const char *inputs_text = "counts";
	uint64_t every_us = 0;
	const char *name = NULL, *detected = NULL;
	uint64_t end_us = 0;
	int with_list = 0, i;
	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--list")) {
			with_list = 1;
			continue;
		}
		if (!strcmp(a, "--server")) {
			server = true;
			continue;
		}
		if (i + 1 >= argc)
			return usage();
		const char *v = argv[++i];
		unsigned long long n = strtoull(v, NULL, 10);
		if (!strcmp(a, "--inputs")) {
			if (!dm_inputs_parse(v, &inputs))
				return usage();
			inputs_text = v;
		} else if (!strcmp(a, "--every-ms"))
			every_us = n * 1000;
		else if (!strcmp(a, "--quiet-ms"))
			params.quiet_us = server_params.quiet_us = n * 1000;
		else if (!strcmp(a, "--quiet-permille"))
			params.quiet_permille = (uint32_t)n;
		else if (!strcmp(a, "--quiet-cpu-permille"))
			params.quiet_cpu_permille = (uint32_t)n;
		else if (!strcmp(a, "--idle-cpu-permille"))
			params.idle_cpu_permille = (uint32_t)n;
		else if (!strcmp(a, "--half-life-ms"))
			params.peak_half_life_us = n * 1000;
		else if (!strcmp(a, "--min-burst-events"))
			params.min_burst_events = n;
		else if (!strcmp(a, "--min-burst-kib"))
			params.min_burst_bytes = n * 1024;
		else if (!strcmp(a, "--kept-permille"))
			params.max_kept_permille = (uint32_t)n;
		else if (!strcmp(a, "--kept-count-permille"))
			params.max_kept_count_permille = (uint32_t)n;
		else if (!strcmp(a, "--rss-growth-permille"))
			params.max_rss_growth_permille = (uint32_t)n;
		else if (!strcmp(a, "--round-share-permille"))
			params.min_round_share_permille = (uint32_t)n;
		else if (!strcmp(a, "--weight-permille"))
			params.min_weight_permille = (uint32_t)n;
		else if (!strcmp(a, "--phase-permille"))
			params.in_phase_permille = (uint32_t)n;
		else if (!strcmp(a, "--early-quiet-ms"))
			params.early_quiet_us = n * 1000;
		else if (!strcmp(a, "--burst-share-permille"))
			params.min_burst_share_permille = (uint32_t)n;
		else if (!strcmp(a, "--rhythm-bursts"))
			params.rhythm_bursts = (uint32_t)n;
		else if (!strcmp(a, "--rhythm-spread-permille"))
			params.rhythm_spread_permille = (uint32_t)n;
		else if (!strcmp(a, "--server-min-events"))
			server_params.min_burst_events = n;
		else if (!strcmp(a, "--server-share-permille"))
			server_params.min_share_permille = (uint32_t)n;
		else if (!strcmp(a, "--server-gap-ms"))
			server_params.gap_us = n * 1000;
		else if (!strcmp(a, "--server-gap-period-permille"))
			server_params.gap_period_permille = (uint32_t)n;
		else if (!strcmp(a, "--server-open-gap-period-permille"))
			server_params.open_gap_period_permille = (uint32_t)n;
		else if (!strcmp(a, "--server-round-permille"))
			server_params.round_permille = (uint32_t)n;
		else if (!strcmp(a, "--server-hold-ms"))
			server_params.hold_us = n * 1000;
		else if (!strcmp(a, "--name"))
			name = v;
		else if (!strcmp(a, "--detected"))
			detected = v;
		else if (!strcmp(a, "--end-us"))
			end_us = n;
		else
			return usage();
	}
	struct dm_trace trace = {NULL, 0};
	struct dm_truth truth;
	struct dm_result res;
	if (detected) {
		if (argc - i != 1 || !end_us)
			return usage();
		if (!dm_truth_load(argv[i], &truth) || !dm_detections_load(detected, &res))
			return 1;
		dm_score(&truth, end_us, &res);
		inputs_text = "library";
	} else {
		if (argc - i != 2)
			return usage();
		if (!dm_trace_load(argv[i], &trace) || !dm_truth_load(argv[i + 1], &truth))
			return 1;
		if (server) {
			dm_server_replay(&trace, &truth, &server_params, inputs, every_us, &res);
		} else
			dm_replay(&trace, &truth, &params, inputs, every_us, &res);
	}
	if (with_list)
		list(&truth, &res, detected != NULL || server);
	printf("%s inputs=%s truths=%zu detected=%zu matched=%zu precision=%.3f recall=%.3f "
	       "median_delay_s=%.2f max_delay_s=%.2f false_per_min=%.2f warmup=%zu live_asks=%zu",
	       name ? name : argv[argc - 1], inputs_text, res.truths, res.detected, res.matched,
	       res.precision, res.recall, res.median_delay_s, res.max_delay_s,
	       res.minutes > 0 ? (double)(res.detected - res.matched) / res.minutes : 0.0,
	       res.warmup, res.live_asks);
	if (!detected && !server && (inputs & DM_SENT)) {
		double median, max;
		size_t n;
		dm_update_delays(&trace, &truth, &res, params.min_round_sent_bytes, &median, &max,
		                 &n);
		printf(" update_rounds=%zu update_median_delay_s=%.2f update_max_delay_s=%.2f", n,
		       median, max);
	}
	printf("\n");
	dm_result_free(&res);
	dm_trace_free(&trace);
	dm_truth_free(&truth);
	return 0;
}
