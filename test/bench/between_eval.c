/* between_eval: how long after a round's end its release ended, from the library's own stats
 * lines (read with policy's reader, rt_report_read_json), for figure 9 (scripts/bench-between.sh).
 *
 * usage: between_eval --clock-offset
 *        between_eval --offset-us O TRUTH STATS...
 *
 * --clock-offset prints CLOCK_REALTIME less CLOCK_MONOTONIC, in microseconds: what puts a stats
 * line's unix_time on the clock of a workload's boundaries. Read in one process, back to back,
 * from the closest of a few pairs of readings.
 *
 * TRUTH holds the workload's "boundary R T" lines (T: CLOCK_MONOTONIC microseconds, the moment
 * its round's work ended; test/bench/detect_match.h reads them); O is the offset read when the
 * run began. Each stats record is put on that clock (unix_time less O: the moment the record was
 * written, right after its release). A round's release is the first record that is not a Python
 * follow-up at or after a boundary and before the next one; every other such record is an extra
 * one (a detection inside a round, a round announced twice). A follow-up (trigger "python") names
 * the library's round it served: its delay is taken from that round's boundary. Prints, for each
 * boundary,
 *   release round=R trigger=T delay_us=D released_kib=K python=P
 *   missed round=R                       (no release before the next boundary)
 * for each follow-up
 *   followup round=R trigger=T delay_us=D released_kib=K gc_collected=N
 * (T: the trigger of the release it followed), then
 *   records boundaries=B releases=N followups=F extra=E before=S
 * (S: records written before the first boundary, during the program's set-up). */
#include "detect_match.h"
#include "rt_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct be_record {
	struct rt_round_read read;
	int64_t t_us;   /* on the boundaries' clock */
	long boundary;  /* the index of the boundary whose release it is, -1 when none */
};

static int
usage(void)
{
	fprintf(stderr, "usage: between_eval --clock-offset\n"
	                "       between_eval --offset-us O TRUTH STATS...\n");
	return 2;
}

static int64_t
be_clock_us(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
be_clock_offset(void)
{
	int64_t best_gap = INT64_MAX, offset = 0;
	for (int i = 0; i < 16; i++) {
		int64_t before = be_clock_us(CLOCK_MONOTONIC);
		int64_t real = be_clock_us(CLOCK_REALTIME);
		int64_t after = be_clock_us(CLOCK_MONOTONIC);
		if (after - before < best_gap) {
			best_gap = after - before;
			offset = real - (before + after) / 2;
		}
	}
	printf("%lld\n", (long long)offset);
	return 0;
}

/* Appends every record of the stats file at path; false on an unreadable file or line. */
static bool
be_load(const char *path, int64_t offset_us, struct be_record **recs, size_t *n, size_t *cap)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "between_eval: cannot read %s\n", path);
		return false;
	}
	char line[RT_REPORT_LINE_MAX + 2];
	size_t lineno = 0;
	bool ok = true;
	while (ok && fgets(line, sizeof(line), f)) {
		lineno++;
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*recs = realloc(*recs, *cap * sizeof(**recs));
			if (!*recs) {
				fprintf(stderr, "between_eval: out of memory\n");
				exit(1);
			}
		}
		struct be_record *r = &(*recs)[*n];
		if (rt_report_read_json(line, &r->read) != RT_READ_OK) {
			fprintf(stderr, "between_eval: %s:%zu: not a stats line: %s", path, lineno,
			        line);
			ok = false;
			break;
		}
		r->t_us = r->read.rec.unix_time_us - offset_us;
		r->boundary = -1;
		(*n)++;
	}
	fclose(f);
	return ok;
}

static int
be_cmp_time(const void *a, const void *b)
{
	const struct be_record *x = a, *y = b;
	return (x->t_us > y->t_us) - (x->t_us < y->t_us);
}

static bool
be_is_follow_up(const struct be_record *r)
{
	return !strcmp(r->read.rec.trigger, RT_REPORT_TRIGGER_PYTHON);
}

int
main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--clock-offset"))
		return be_clock_offset();
	if (argc < 5 || strcmp(argv[1], "--offset-us"))
		return usage();
	char *end;
	long long offset = strtoll(argv[2], &end, 10);
	if (end == argv[2] || *end)
		return usage();
	struct dm_truth truth;
	if (!dm_truth_load(argv[3], &truth))
		return 1;
	struct be_record *recs = NULL;
	size_t n = 0, cap = 0;
	for (int i = 4; i < argc; i++)
		if (!be_load(argv[i], offset, &recs, &n, &cap))
			return 1;
	if (n)
		qsort(recs, n, sizeof(*recs), be_cmp_time);

	/* The rounds' releases, boundary by boundary. */
	size_t releases = 0, extra = 0, before = 0, followups = 0;
	long *release_of = malloc((truth.n + 1) * sizeof(*release_of));
	if (!release_of)
		return 1;
	for (size_t b = 0; b < truth.n; b++)
		release_of[b] = -1;
	for (size_t i = 0; i < n; i++) {
		if (be_is_follow_up(&recs[i]))
			continue;
		size_t b = truth.n;
		while (b > 0 && (int64_t)truth.boundaries[b - 1] > recs[i].t_us)
			b--;
		if (b == 0) {
			before++;
		} else if (release_of[b - 1] < 0) {
			release_of[b - 1] = (long)i;
			recs[i].boundary = (long)(b - 1);
			releases++;
		} else {
			extra++;
		}
	}
	for (size_t b = 0; b < truth.n; b++) {
		if (release_of[b] < 0) {
			printf("missed round=%zu\n", b + 1);
			continue;
		}
		const struct be_record *r = &recs[release_of[b]];
		printf("release round=%zu trigger=%s delay_us=%lld released_kib=%llu python=%s\n",
		       b + 1, r->read.rec.trigger,
		       (long long)(r->t_us - (int64_t)truth.boundaries[b]),
		       (unsigned long long)rt_report_released_kib(&r->read.rec),
		       r->read.rec.python ? r->read.rec.python : "none");
	}

	/* The Python steps' own records: the round they served is the library's count. */
	for (size_t i = 0; i < n; i++) {
		if (!be_is_follow_up(&recs[i]))
			continue;
		const struct be_record *served = NULL;
		for (size_t j = 0; j < n; j++)
			if (!be_is_follow_up(&recs[j]) && recs[j].read.rec.pid == recs[i].read.rec.pid &&
			    recs[j].read.rec.round == recs[i].read.rec.round && recs[j].boundary >= 0)
				served = &recs[j];
		if (!served)
			continue;
		followups++;
		printf("followup round=%ld trigger=%s delay_us=%lld released_kib=%llu "
		       "gc_collected=%lld\n",
		       served->boundary + 1, served->read.rec.trigger,
		       (long long)(recs[i].t_us - (int64_t)truth.boundaries[served->boundary]),
		       (unsigned long long)rt_report_released_kib(&recs[i].read.rec),
		       (long long)recs[i].read.rec.gc_collected);
	}
	printf("records boundaries=%zu releases=%zu followups=%zu extra=%zu before=%zu\n", truth.n,
	       releases, followups, extra, before);
	free(release_of);
	free(recs);
	dm_truth_free(&truth);
	return 0;
}
