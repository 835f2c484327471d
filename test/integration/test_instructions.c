/* The library's cost in instructions, held to its budgets: scripts/instructions.sh check, which
 * counts with valgrind's callgrind (the same count in every run, unlike a timing) and holds the
 * budgets, fails when a malloc-family call or a program's start costs more than they allow. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(instructions, .timeout = 400, .fini = th_cleanup);

/* About 11 s on an idle 2-core machine: 22 runs under callgrind. */
#define INSTRUCTIONS_LIMIT_S 300

static bool
have_valgrind(void)
{
	const char *argv[] = {"/bin/sh", "-c", "command -v valgrind", NULL};
	char out[256], err[256];
	return th_run(argv, NULL, out, sizeof(out), err, sizeof(err)) == 0;
}

Test(instructions, within_the_budgets_of_scripts_instructions_sh)
{
	if (!have_valgrind())
		cr_skip_test(
		    "valgrind is not installed (Debian: valgrind; scripts/deps.sh installs it)");
	const char *dir = th_tmpdir();
	char cmd[4 * PATH_MAX], path[PATH_MAX], limit[16];
	/* The figures that count the same in every run. With 2 threads a call's figure moves with
	 * where valgrind switches threads (4.25 to 4.77 seen on a loaded machine): make bench
	 * reports those, with their spread. */
	snprintf(cmd, sizeof(cmd),
	         "exec '%s/scripts/instructions.sh' check call-glibc-1 call-jemalloc-1 "
	         "start-nonmatching start-matching >'%s/report' 2>&1",
	         RT_SOURCE_DIR, dir);
	snprintf(limit, sizeof(limit), "%d", INSTRUCTIONS_LIMIT_S);
	char build[PATH_MAX + 8];
	snprintf(build, sizeof(build), "BUILD=%s", RT_BUILD_DIR);
	const char *argv[] = {"/usr/bin/timeout", "-k", "10", limit, "/bin/sh", "-c", cmd, NULL};
	const char *env[] = {build, NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, (INSTRUCTIONS_LIMIT_S + 30) * 1000), "instructions.sh did not end");
	snprintf(path, sizeof(path), "%s/report", dir);
	static char report[1 << 15];
	cr_assert_geq(th_read_file(path, report, sizeof(report)), 0, "no %s", path);
	cr_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0,
	          "scripts/instructions.sh check failed (status %d):\n%s", p.status, report);
	/* Every figure was counted: none over, none skipped for want of a count. */
	int figures = th_count_in(report, "\n");
	cr_assert_gt(figures, 0, "no figure:\n%s", report);
	cr_assert_eq(th_count_in(report, "\twithin\t"), figures,
	             "not every figure within its budget:\n%s", report);
}
