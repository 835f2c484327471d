/* detect_match: replaying a trace through policy/rt_detect and scoring it against the truth,
 * for the detector's unit tests and the offline evaluation (detect_eval). Owns the truth file
 * ("start T" and "boundary R T" lines, other lines ignored), which inputs a replay may see, and
 * the matching rule: a detection matches true boundary B when it comes at or after B, within
 * the tolerance (3 s), and before the next true boundary; one detection per boundary, every other
 * detection is a false one, except those before "start" or within the tolerance after it
 * (the end of the workload's set-up), which are counted apart as warm-up. */
#ifndef DETECT_MATCH_H
#define DETECT_MATCH_H

#include "rt_detect.h"
#include "rt_trace.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DM_TOLERANCE_US 3000000
/* A true boundary that the trace outlives by less than this (and that no detection matched) is
 * not scored: the recording stopped before any detector could have seen its quiet period. */
#define DM_MIN_OBSERVE_US 1000000

struct dm_trace {
	struct rt_reading *readings;
	size_t n;
};

struct dm_truth {
	uint64_t start_us; /* 0 when the file has no start line */
	uint64_t *boundaries;
	size_t n;
};

/* Which optional inputs the detector is shown, besides the counts and the RSS: the others are
 * replaced by RT_TRACE_UNKNOWN. Written as words joined by '+': "counts" (none of them),
 * "freed", "live-asked" (the live heap only in the reading after WANT_LIVE), "live-always",
 * "cpu", "sent" (the bytes sent); "all" is freed+live-always+cpu+sent. */
enum dm_inputs {
	DM_FREED = 1,
	DM_LIVE_ASKED = 2,
	DM_LIVE_ALWAYS = 4,
	DM_CPU = 8,
	DM_SENT = 16,
	DM_ALL = DM_FREED | DM_LIVE_ALWAYS | DM_CPU | DM_SENT,
};

struct dm_detection {
	uint64_t t_us;        /* the reading that fired */
	uint64_t boundary_us; /* the detector's estimate */
	enum rt_detect_basis basis;
	uint32_t confidence_permille;
};

/* A candidate the detector weighed (struct rt_detect's candidate_* outputs), a round's end or
 * not. */
struct dm_candidate {
	uint64_t t_us;     /* the reading at which it was weighed */
	uint64_t quiet_us; /* when its quiet period began */
	uint64_t work_bytes;
	uint32_t weight_permille;
	uint32_t phase_permille;
	bool boundary;
};

struct dm_result {
	size_t truths;   /* true boundaries scored (those the trace could show) */
	size_t detected; /* detections scored: all but the warm-up ones */
	size_t matched;
	size_t warmup;    /* detections before start or during the tolerance after it */
	size_t live_asks; /* WANT_LIVE answers */
	double precision; /* 1 when nothing was detected */
	double recall;    /* 1 when there was no boundary to find */
	double median_delay_s, max_delay_s;
	double minutes; /* from start to the last reading */
	struct dm_detection *detections;
	size_t ndetections;
	bool *truth_matched; /* per true boundary */
	bool *truth_scored;
	uint64_t *matched_at; /* per true boundary: the detection that matched it (t_us), or 0 */
	struct dm_candidate *candidates; /* a replay's, in time order; NULL otherwise */
	size_t ncandidates;
};

static const struct {
	const char *word;
	unsigned inputs;
} dm_input_words[] = {{"counts", 0},
                      {"freed", DM_FREED},
                      {"live-asked", DM_LIVE_ASKED},
                      {"live-always", DM_LIVE_ALWAYS},
                      {"cpu", DM_CPU},
                      {"sent", DM_SENT},
                      {"all", DM_ALL}};

static inline bool
dm_inputs_parse(const char *text, unsigned *out)
{
	const size_t nwords = sizeof(dm_input_words) / sizeof(dm_input_words[0]);
	unsigned inputs = 0;
	while (*text) {
		size_t len = strcspn(text, "+"), i;
		for (i = 0; i < nwords; i++) {
			if (strlen(dm_input_words[i].word) == len &&
			    !strncmp(text, dm_input_words[i].word, len))
				break;
		}
		if (i == nwords)
			return false;
		inputs |= dm_input_words[i].inputs;
		text += len + (text[len] == '+');
	}
	*out = inputs;
	return true;
}

/* Reads a trace file; false (with a message on stderr) on a bad line or an unreadable file. */
static inline bool
dm_trace_load(const char *path, struct dm_trace *trace)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t cap = 1024, lineno = 0;
	trace->n = 0;
	trace->readings = malloc(cap * sizeof(*trace->readings));
	if (!f || !trace->readings) {
		fprintf(stderr, "%s: cannot read\n", path);
		if (f)
			fclose(f);
		return false;
	}
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (trace->n == cap)
			trace->readings =
			    realloc(trace->readings, (cap *= 2) * sizeof(*trace->readings));
		switch (rt_trace_parse(&reader, line, &trace->readings[trace->n])) {
		case RT_TRACE_READING:
			trace->n++;
			break;
		case RT_TRACE_SKIP:
			break;
		case RT_TRACE_BAD:
			fprintf(stderr, "%s:%zu: not a reading: %s", path, lineno, line);
			fclose(f);
			return false;
		}
	}
	fclose(f);
	return true;
}

static inline bool
dm_truth_load(const char *path, struct dm_truth *truth)
{
	FILE *f = fopen(path, "r");
	char line[256];
	size_t cap = 256;
	unsigned long long t;
	int round;
	truth->start_us = 0;
	truth->n = 0;
	truth->boundaries = malloc(cap * sizeof(*truth->boundaries));
	if (!f || !truth->boundaries) {
		fprintf(stderr, "%s: cannot read\n", path);
		if (f)
			fclose(f);
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "start %llu", &t) == 1) {
			truth->start_us = t;
		} else if (sscanf(line, "boundary %d %llu", &round, &t) == 2) {
			if (truth->n == cap)
				truth->boundaries = realloc(
				    truth->boundaries, (cap *= 2) * sizeof(*truth->boundaries));
			truth->boundaries[truth->n++] = t;
		}
	}
	fclose(f);
	return true;
}

static inline void
dm_trace_free(struct dm_trace *trace)
{
	free(trace->readings);
}

static inline void
dm_truth_free(struct dm_truth *truth)
{
	free(truth->boundaries);
}

static inline void
dm_result_free(struct dm_result *result)
{
	free(result->detections);
	free(result->candidates);
	free(result->truth_matched);
	free(result->truth_scored);
	free(result->matched_at);
}

static inline int
dm_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static inline int
dm_cmp_detection(const void *a, const void *b)
{
	uint64_t x = ((const struct dm_detection *)a)->t_us,
	         y = ((const struct dm_detection *)b)->t_us;
	return (x > y) - (x < y);
}

/* Sorts n delays and gives their median (the mean of the middle two of an even count) and
 * largest; both 0 when n is 0. */
static inline void
dm_median_max(double *delays, size_t n, double *median_s, double *max_s)
{
	*median_s = *max_s = 0;
	if (!n)
		return;
	qsort(delays, n, sizeof(double), dm_cmp_double);
	*median_s = n % 2 ? delays[n / 2] : (delays[n / 2 - 1] + delays[n / 2]) / 2;
	*max_s = delays[n - 1];
}

/* Scores res->detections (res->ndetections of them, in time order, allocated with room for one
 * more) against the truth, end_us being the last moment the detector could see. */
static inline void
dm_score(const struct dm_truth *truth, uint64_t end_us, struct dm_result *res)
{
	res->truth_matched = calloc(truth->n + 1, sizeof(bool));
	res->truth_scored = calloc(truth->n + 1, sizeof(bool));
	res->matched_at = calloc(truth->n + 1, sizeof(uint64_t));
	res->minutes = end_us > truth->start_us ? (double)(end_us - truth->start_us) / 60e6 : 0;
	double *delays = calloc(truth->n + 1, sizeof(double));
	size_t next = 0; /* the first detection not yet looked at */
	for (size_t b = 0; b < truth->n; b++) {
		uint64_t from = truth->boundaries[b];
		uint64_t to = from + DM_TOLERANCE_US;
		if (b + 1 < truth->n && truth->boundaries[b + 1] < to)
			to = truth->boundaries[b + 1];
		while (next < res->ndetections && res->detections[next].t_us < from)
			next++;
		if (next < res->ndetections && res->detections[next].t_us < to) {
			delays[res->matched++] = (double)(res->detections[next].t_us - from) / 1e6;
			res->truth_matched[b] = true;
			res->matched_at[b] = res->detections[next].t_us;
			next++;
		}
		res->truth_scored[b] = res->truth_matched[b] || b + 1 < truth->n ||
		                       (end_us > from && end_us - from >= DM_MIN_OBSERVE_US);
		res->truths += res->truth_scored[b];
	}
	/* "start" comes once the workload is set up: the end of its set-up is neither a round
	 * nor a false alarm, so a detection within the tolerance after it is not scored. */
	uint64_t warmup_end = truth->start_us + DM_TOLERANCE_US;
	if (truth->n && truth->boundaries[0] < warmup_end)
		warmup_end = truth->boundaries[0];
	for (size_t i = 0; i < res->ndetections; i++) {
		if (res->detections[i].t_us < warmup_end)
			res->warmup++;
		else
			res->detected++;
	}
	res->precision = res->detected ? (double)res->matched / (double)res->detected : 1;
	res->recall = res->truths ? (double)res->matched / (double)res->truths : 1;
	dm_median_max(delays, res->matched, &res->median_delay_s, &res->max_delay_s);
	free(delays);
}

/* The delay from the update a client sent to the detection that matched its round: the median
 * and the largest over the matched rounds in which a reading between the true boundary and the
 * detection saw the bytes sent rise by at least min_bytes, counted from the reading before the
 * last such one (the last byte went after it); *n: how many. The true boundary is the script's
 * hand-off; the update leaves after it, and no release can come before the update's copy is
 * gone. */
static inline void
dm_update_delays(const struct dm_trace *trace, const struct dm_truth *truth,
                 const struct dm_result *res, uint64_t min_bytes, double *median_s, double *max_s,
                 size_t *n)
{
	double *delays = calloc(truth->n + 1, sizeof(double));
	size_t i = 1;
	*n = 0;
	for (size_t b = 0; b < truth->n && delays; b++) {
		if (!res->truth_matched[b])
			continue;
		uint64_t from = truth->boundaries[b], at = res->matched_at[b], sent_after = 0;
		while (i < trace->n && trace->readings[i].t_us <= from)
			i++;
		for (; i < trace->n && trace->readings[i].t_us <= at; i++) {
			const struct rt_reading *r = &trace->readings[i], *before = r - 1;
			if (r->bytes_sent != RT_TRACE_UNKNOWN &&
			    before->bytes_sent != RT_TRACE_UNKNOWN &&
			    r->bytes_sent >= before->bytes_sent &&
			    r->bytes_sent - before->bytes_sent >= min_bytes)
				sent_after = before->t_us;
		}
		if (sent_after)
			delays[(*n)++] = (double)(at - sent_after) / 1e6;
	}
	dm_median_max(delays, *n, median_s, max_s);
	free(delays);
}

/* What a reading carries with the given inputs: the rest unknown, as a reader without them
 * would see it. live_given: the live heap was asked for and read this time. */
static inline void
dm_keep_inputs(struct rt_reading *r, unsigned inputs, bool live_given)
{
	if (!(inputs & DM_FREED))
		r->bytes_freed = RT_TRACE_UNKNOWN;
	if (!(inputs & DM_LIVE_ALWAYS) && !live_given)
		r->live_bytes = RT_TRACE_UNKNOWN;
	if (!(inputs & DM_CPU))
		r->cpu_us = RT_TRACE_UNKNOWN;
	if (!(inputs & DM_SENT))
		r->bytes_sent = RT_TRACE_UNKNOWN;
}

/* Replays the trace (every reading, or one every every_us when every_us > 0, as a slower
 * reader would see it) with the given inputs, and scores the detections. */
static inline void
dm_replay(const struct dm_trace *trace, const struct dm_truth *truth,
          const struct rt_detect_params *params, unsigned inputs, uint64_t every_us,
          struct dm_result *res)
{
	struct rt_detect_params p = *params;
	struct rt_detect d;
	p.want_live = (inputs & DM_LIVE_ASKED) && !(inputs & DM_LIVE_ALWAYS);
	rt_detect_init(&d, &p);
	memset(res, 0, sizeof(*res));
	res->detections = calloc(trace->n + 1, sizeof(*res->detections));
	res->candidates = calloc(trace->n + 1, sizeof(*res->candidates));
	bool asked = false;
	uint64_t last_fed = 0;
	for (size_t i = 0; i < trace->n; i++) {
		struct rt_reading r = trace->readings[i];
		if (every_us && last_fed && r.t_us - last_fed < every_us && i + 1 < trace->n)
			continue;
		last_fed = r.t_us;
		dm_keep_inputs(&r, inputs, (inputs & DM_LIVE_ASKED) && asked);
		enum rt_detect_result got = rt_detect_feed(&d, &r);
		asked = got == RT_DETECT_WANT_LIVE;
		res->live_asks += asked;
		if (d.candidates > res->ncandidates) {
			/* At most one a reading: one quiet period is decided at a time. */
			res->candidates[res->ncandidates++] = (struct dm_candidate){
			    .t_us = r.t_us,
			    .quiet_us = d.candidate_quiet_us,
			    .work_bytes = d.candidate_work_bytes,
			    .weight_permille = d.candidate_weight_permille,
			    .phase_permille = d.candidate_phase_permille,
			    .boundary = got == RT_DETECT_BOUNDARY,
			};
		}
		if (got == RT_DETECT_BOUNDARY) {
			struct dm_detection *det = &res->detections[res->ndetections++];
			det->t_us = r.t_us;
			det->boundary_us = d.boundary_us;
			det->basis = d.basis;
			det->confidence_permille = d.confidence_permille;
		}
	}
	dm_score(truth, trace->n ? trace->readings[trace->n - 1].t_us : 0, res);
}

/* Reads the detections a running library made, one "T_US" (CLOCK_MONOTONIC microseconds) a
 * line, in any order, into res for dm_score; false (with a message on stderr) on a bad line or an
 * unreadable file. */
static inline bool
dm_detections_load(const char *path, struct dm_result *res)
{
	FILE *f = fopen(path, "r");
	char line[128];
	size_t cap = 256;
	memset(res, 0, sizeof(*res));
	res->detections = calloc(cap + 1, sizeof(*res->detections));
	if (!f || !res->detections) {
		fprintf(stderr, "%s: cannot read\n", path);
		if (f)
			fclose(f);
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long t;
		char rest;
		if (sscanf(line, "%llu %c", &t, &rest) != 1) {
			fprintf(stderr, "%s: not a detection time: %s", path, line);
			fclose(f);
			return false;
		}
		if (res->ndetections == cap)
			res->detections =
			    realloc(res->detections, ((cap *= 2) + 1) * sizeof(*res->detections));
		struct dm_detection *det = &res->detections[res->ndetections++];
		memset(det, 0, sizeof(*det));
		det->t_us = det->boundary_us = t;
	}
	fclose(f);
	qsort(res->detections, res->ndetections, sizeof(*res->detections), dm_cmp_detection);
	return true;
}

/* Leave-one-shape-out judging: the setting (row of score, ngrid rows of nshapes scores) that does
 * best on the held shapes other than `out`: the best worst score there (*worst_there), then the
 * best sum, then the first row. */
static inline size_t
dm_best_without(const double *score, size_t ngrid, size_t nshapes, const bool *held, size_t out,
                double *worst_there)
{
	size_t best = 0;
	double best_worst = -1, best_sum = -1;
	for (size_t i = 0; i < ngrid; i++) {
		double worst = 1, sum = 0;
		for (size_t k = 0; k < nshapes; k++) {
			if (k == out || !held[k])
				continue;
			double v = score[i * nshapes + k];
			worst = v < worst ? v : worst;
			sum += v;
		}
		if (worst > best_worst || (worst == best_worst && sum > best_sum)) {
			best_worst = worst;
			best_sum = sum;
			best = i;
		}
	}
	*worst_there = best_worst;
	return best;
}

#endif
