/* creds_toggle [N]: the cost of a credential change, as servers that switch their effective uid
 * per request pay it: N (default 1000) pairs of seteuid(65534) and seteuid(0), each call timed
 * (CLOCK_MONOTONIC). Prints "calls=2N p50_us=... p99_us=... max_us=..." and exits 0, or 1 when
 * a call fails (run it as root). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CREDS_TOGGLE_ID 65534

static double
creds_toggle_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
creds_toggle_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	long pairs = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
	if (pairs <= 0 || pairs > 1000000) {
		fprintf(stderr, "usage: creds_toggle [PAIRS]\n");
		return 2;
	}
	size_t calls = (size_t)pairs * 2;
	double *took = malloc(calls * sizeof(*took));
	if (!took)
		return 1;
	for (size_t i = 0; i < calls; i++) {
		uid_t to = i % 2 == 0 ? CREDS_TOGGLE_ID : 0;
		double start = creds_toggle_now_us();
		if (seteuid(to) != 0) {
			perror("creds_toggle: seteuid");
			return 1;
		}
		took[i] = creds_toggle_now_us() - start;
	}
	qsort(took, calls, sizeof(*took), creds_toggle_cmp);
	printf("calls=%zu p50_us=%.1f p99_us=%.1f max_us=%.1f\n", calls, took[calls / 2],
	       took[calls * 99 / 100], took[calls - 1]);
	free(took);
	return 0;
}
