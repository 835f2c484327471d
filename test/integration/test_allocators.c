/* Each allocator row acts on its own allocator: preloaded after the library, tcmalloc and
 * mimalloc are recognised by their markers, named in the stats, and their actions run and return
 * memory: tcmalloc's page heap after frag's round; what pool's exited threads left to mimalloc
 * (another thread's live heap is out of mi_collect's reach, roundtrim(7) ALLOCATORS). */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void
one_round_under(const char *file, const char *allocator, const char *action,
                const char *const argv[])
{
	const char *so = th_system_lib(file);
	cr_assert_not_null(so, "%s is not installed (scripts/deps.sh)", file);
	const char *dir = th_tmpdir();
	char env_preload[PATH_MAX * 2], stats[PATH_MAX], fifo[PATH_MAX], line[2048], needle[64];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s:%s", th_lib(), so);
	snprintf(stats, sizeof(stats), "%s/stats.jsonl", dir);
	const char *env[] = {env_preload,
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats.jsonl"),
	                     th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     "ROUNDTRIM_GC_ROUNDS=1",
	                     "ROUNDTRIM_AUTO=off",
	                     NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", dir, p.pid);
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS), "no round");
	cr_assert(th_wait_path(fifo, false, TH_TIMEOUT_MS) && th_fifo_write(fifo, "round\n", 6),
	          "FIFO %s not served", fifo);
	cr_assert(th_wait_line(stats, "\"round\":1,", line, sizeof(line), TH_TIMEOUT_MS),
	          "round 1 never reported");
	snprintf(needle, sizeof(needle), "\"allocator\":\"%s\"", allocator);
	th_expect_in(line, needle);
	snprintf(needle, sizeof(needle), "\"action\":\"%s\"", action);
	th_expect_in(line, needle);
	int64_t before = th_field(line, "rss_before_kib"), after = th_field(line, "rss_after_kib");
	cr_assert_lt(after, before - 16 * 1024, "%s returned less than 16 MiB: %s", allocator,
	             line);
	th_write(&p, "next\n");
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(p.status, 0);
}

TestSuite(allocators, .timeout = 120, .fini = th_cleanup);

Test(allocators, tcmalloc_row_releases_its_page_heap)
{
	const char *argv[] = {th_workload("frag"), "--threads", "2",      "--mib", "128",
	                      "--rounds",          "1",         "--wait", NULL};
	one_round_under("libtcmalloc.so.4", "tcmalloc", "tcmalloc_release", argv);
}

Test(allocators, mimalloc_row_collects)
{
	const char *argv[] = {th_workload("pool"), "--threads", "4",         "--mib",  "48",
	                      "--rounds",          "1",         "--exiting", "--wait", NULL};
	one_round_under("libmimalloc.so.2", "mimalloc", "mi_collect", argv);
}
