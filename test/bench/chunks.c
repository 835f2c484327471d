/* chunks: what the library's readings of a process cost when its heap holds many free chunks.
 * Builds a heap of N free chunks of S bytes in the main arena (2N blocks allocated and touched,
 * every other one freed, so that no two free chunks merge; then one allocation of another size,
 * which sorts them out of glibc's unsorted bin into their bins, as the program's next malloc
 * would). Then it times, in this process, R times each:
 *   mallinfo2()                   the live-heap reading on glibc: it walks every free chunk,
 *                                 holding each arena's lock through that arena's walk
 *   pread of /proc/self/smaps_rollup   the RSS split (anonymous, file-backed, LazyFree) that the
 *                                 library reads after each action
 *   pread of /proc/self/statm     RSS, which the library reads for every round
 * With --rounds K (the caller preloads roundtrim with ROUNDTRIM_FIFO, ROUNDTRIM_STATS and
 * ROUNDTRIM_GC_ROUNDS=1), it then asks the library for K rounds through its FIFO, one at a time,
 * and reports what each round's stats line says: the live heap it read, or live-skipped in its
 * note, the action's duration, and the time from the trigger to the line (the quiet-moment wait,
 * the action, the readings after it).
 * --pages P adds P free chunks of 8 KiB, apart too: the bins that the library's release walks
 * (those of a page or more) are then not empty.
 * Prints one line, then one per round:
 *   chunks=N size=S pages=P rss_kib=R in_use_kib=U mallinfo2_ms=M mallinfo2_min_ms=m
 *       mallinfo2_max_ms=X smaps_rollup_us=V smaps_rollup_min_us=v smaps_rollup_max_us=W
 *       statm_us=T
 *   round=K action=A live_kib=L live_skipped=0|1 action_ms=D handled_ms=H
 * (the median over the R repetitions, the smallest and the largest).
 *
 * usage: chunks --chunks N --size S [--pages P] [--repeat R] [--rounds K] */
#include "bench_read.h"

#include <inttypes.h>
#include <malloc.h>

#define CHUNKS_TIMEOUT_MS 120000

static int64_t
chunks_median(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_i64);
	return v[n / 2];
}

/* The time of one pread of the whole file at fd, as the library reads its kept descriptors. */
static int64_t
chunks_time_pread(int fd)
{
	char buf[4096];
	int64_t t0 = bench_now_ns();
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	int64_t dt = bench_now_ns() - t0;
	if (n <= 0)
		bench_die("pread: %s", n < 0 ? strerror(errno) : "empty");
	return dt;
}

/* Round k through the FIFO of the roundtrim loaded in this process; prints its line. */
static void
chunks_round(int k)
{
	struct bench_files f;
	char buf[16384];
	bench_files_of_this_process(&f, "--rounds");
	if (k == 1)
		bench_wait_started(&f, buf, sizeof(buf), CHUNKS_TIMEOUT_MS);
	int fd = bench_fifo_open(f.fifo);
	int stats_fd = bench_watch_dir(f.stats, IN_MODIFY | IN_CREATE);
	struct bench_stats_wait round = {.round = (uint64_t)k};
	int64_t t0 = bench_now_ns();
	if (fd < 0 || write(fd, "round\n", 6) != 6)
		bench_die("cannot write to %s: %s", f.fifo, strerror(errno));
	int64_t t1 = bench_wait_file(stats_fd, f.stats, bench_stats_has_round, &round, buf,
	                             sizeof(buf), CHUNKS_TIMEOUT_MS);
	if (!t1)
		bench_die("round %d never reached %s", k, f.stats);
	close(fd);
	close(stats_fd);
	const struct rt_round_record *rec = &round.found.rec;
	/* The worker's note when it left the live heap unread (shim/worker/rt_worker.c). */
	bool skipped = strstr(round.found.note, "live-skipped") != NULL;
	printf("round=%d action=%s live_kib=%" PRIu64 " live_skipped=%d action_ms=%.3f "
	       "handled_ms=%.3f\n",
	       k, round.found.action, rec->live_kib, skipped, (double)rec->duration_us / 1e3,
	       (double)(t1 - t0) / 1e6);
}

int
main(int argc, char **argv)
{
	long nchunks = 0, size = 0, repeat = 5, rounds = 0, pages = 0;
	bench_name = "chunks";
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--chunks"))
			nchunks = bench_arg_long(argv[i], argv[i + 1], 1, 1L << 26);
		else if (!strcmp(argv[i], "--size"))
			size = bench_arg_long(argv[i], argv[i + 1], 1, 1L << 20);
		else if (!strcmp(argv[i], "--repeat"))
			repeat = bench_arg_long(argv[i], argv[i + 1], 1, 1000);
		else if (!strcmp(argv[i], "--pages"))
			pages = bench_arg_long(argv[i], argv[i + 1], 0, 1L << 20);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = bench_arg_long(argv[i], argv[i + 1], 0, 100);
		else
			bench_die("usage: chunks --chunks N --size S [--pages P] [--repeat R] "
			          "[--rounds K]");
	}
	if (!nchunks || !size)
		bench_die(
		    "usage: chunks --chunks N --size S [--pages P] [--repeat R] [--rounds K]");
	setvbuf(stdout, NULL, _IOLBF, 0);

	size_t n = 2 * (size_t)nchunks;
	char **blocks = malloc(n * sizeof(*blocks));
	if (!blocks)
		bench_die("out of memory");
	for (size_t i = 0; i < n; i++) {
		blocks[i] = malloc((size_t)size);
		if (!blocks[i])
			bench_die("out of memory");
		memset(blocks[i], 1, (size_t)size);
	}
	/* The survivors stay to the end: they keep the free chunks apart. */
	for (size_t i = 0; i < n; i += 2)
		free(blocks[i]);
	/* Separated by blocks too large to come from the small free chunks above. */
	char **page = malloc(((size_t)pages + 1) * sizeof(*page));
	for (long i = 0; page && i < pages; i++) {
		page[i] = malloc(2 * 4096);
		if (!page[i] || !malloc(1100))
			bench_die("out of memory");
		memset(page[i], 1, 2 * 4096);
	}
	for (long i = 0; page && i < pages; i++)
		free(page[i]);
	/* Each malloc sorts at most 10000 chunks of the unsorted bin (glibc's MAX_ITERS): enough
	 * mallocs of a size they cannot serve sort them all; freed in reverse, those blocks merge
	 * back into the top chunk. */
	size_t nsort = n / 2 / 10000 + 16;
	char **sorters = malloc(nsort * sizeof(*sorters));
	for (size_t i = 0; sorters && i < nsort; i++)
		sorters[i] = malloc((size_t)size * 3 + 4096);
	for (size_t i = nsort; sorters && i > 0; i--)
		free(sorters[i - 1]);
	free(sorters);

	int64_t *mi = malloc((size_t)repeat * sizeof(*mi));
	int64_t *smaps = malloc((size_t)repeat * sizeof(*smaps));
	int64_t *statm = malloc((size_t)repeat * sizeof(*statm));
	int smaps_fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
	int statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (!mi || !smaps || !statm || smaps_fd < 0 || statm_fd < 0)
		bench_die("cannot set up the measurement: %s", strerror(errno));
	size_t used = 0;
	for (long r = 0; r < repeat; r++) {
		int64_t t0 = bench_now_ns();
		struct mallinfo2 info = mallinfo2();
		mi[r] = bench_now_ns() - t0;
		used = info.uordblks;
		smaps[r] = chunks_time_pread(smaps_fd);
		statm[r] = chunks_time_pread(statm_fd);
	}
	/* Sorted in place: the median, then the ends. */
	int64_t mi_med = chunks_median(mi, (size_t)repeat);
	int64_t smaps_med = chunks_median(smaps, (size_t)repeat);
	printf("chunks=%ld size=%ld pages=%ld rss_kib=%ld in_use_kib=%zu mallinfo2_ms=%.3f "
	       "mallinfo2_min_ms=%.3f mallinfo2_max_ms=%.3f smaps_rollup_us=%.1f "
	       "smaps_rollup_min_us=%.1f smaps_rollup_max_us=%.1f statm_us=%.1f\n",
	       nchunks, size, pages, bench_rss_kib(), used / 1024, (double)mi_med / 1e6,
	       (double)mi[0] / 1e6, (double)mi[repeat - 1] / 1e6, (double)smaps_med / 1e3,
	       (double)smaps[0] / 1e3, (double)smaps[repeat - 1] / 1e3,
	       (double)chunks_median(statm, (size_t)repeat) / 1e3);
	close(smaps_fd);
	close(statm_fd);
	for (long k = 1; k <= rounds; k++)
		chunks_round((int)k);
	return 0;
}
