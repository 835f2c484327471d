/* The library's outputs on a full or failing volume, and its messages: every record is written
 * whole or not at all, the first loss is said once and every loss counted, and a message names
 * the true cause and stays printable ASCII. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(outputs, .timeout = 120, .fini = th_cleanup);

/* Whether text holds a byte outside printable ASCII other than a newline. */
static bool
has_raw_byte(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c != '\n' && (c < 0x20 || c > 0x7e))
			return true;
	}
	return false;
}

Test(outputs, fifo_line_outside_ascii_is_escaped_on_stderr)
{
	struct th_probe run;
	char line[2048], err[4096];
	th_start_probe(&run, (const char *[]){"idle", NULL}, NULL, line, sizeof(line));
	cr_assert(th_fifo_write(run.fifo, "h\xc3\xa9llo \xff\x80\x1b[31m\nround\n", 21));
	th_wait_rounds(&run, 1, line, sizeof(line));
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	size_t len = th_read_stderr(&run.proc, err, sizeof(err));
	th_expect_in(err, "ignoring FIFO line \"h\\xc3\\xa9llo \\xff\\x80\\x1b[31m\"");
	cr_assert(!has_raw_byte(err, len), "a raw byte reached stderr: %s", err);
}

/* A fork child that starts its library with every descriptor taken: each file it cannot open is
 * named with the error of the call that failed (EMFILE), not with what a later check guessed. */
Test(outputs, fork_child_under_emfile_names_the_true_cause)
{
	struct th_proc p;
	char line[256], err[8192];
	const char *argv[] = {th_workload("probe"), "emfile", NULL};
	char preload[PATH_MAX + 16];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	const char *env[] = {preload, th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     th_env_in_tmp("ROUNDTRIM_STATS", "%p.jsonl"), NULL};
	th_spawn(&p, argv, env);
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS), "probe emfile said nothing");
	cr_assert(!strncmp(line, "emfile ", 7), "%s", line);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	th_read_stderr(&p, err, sizeof(err));
	th_expect_in(err, "stats file off: cannot open");
	cr_assert_eq(th_count_in(err, "stats file off"), 1, "%s", err);
	cr_assert_eq(th_count_in(err, "does not exist"), 0, "%s", err);
	const char *said = strstr(err, "stats file off");
	const char *end = strchr(said, '\n');
	cr_assert(end && memmem(said, (size_t)(end - said), "Too many open files", 19), "%s", err);
}

/* The Prometheus file is rewritten in place: one copy of the figures, however many rounds. */
Test(outputs, prometheus_file_holds_one_copy_after_many_rewrites)
{
	struct th_probe run;
	char line[2048], prom[PATH_MAX + 16], text[16384];
	const char *env[] = {th_env_in_tmp("ROUNDTRIM_PROM", "%p.prom"), NULL};
	th_start_probe_env(&run, (const char *[]){"idle", NULL}, env, line, sizeof(line));
	snprintf(prom, sizeof(prom), "%s/%d.prom", th_tmpdir(), run.proc.pid);
	for (int i = 1; i <= 5; i++) {
		cr_assert(th_fifo_write(run.fifo, "round\n", 6));
		th_wait_rounds(&run, i, line, sizeof(line));
	}
	cr_assert(th_wait_line(prom, "roundtrim_rounds_total{", line, sizeof(line), TH_TIMEOUT_MS));
	ssize_t len = th_read_file(prom, text, sizeof(text));
	cr_assert_gt(len, 0);
	cr_assert_eq(th_count_in(text, "# end"), 1, "%s", text);
	cr_assert_eq(th_count_in(text, "# TYPE roundtrim_rounds_total"), 1, "%s", text);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
}
