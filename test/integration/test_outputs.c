/* The library's outputs on a full or failing volume, and its messages: every record is written
 * whole or not at all, the first loss is said once and every loss counted, and a message names
 * the true cause and stays printable ASCII. */
#include "harness.h"
#include "rt_report.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
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
	/* LeakSanitizer's check at exit opens /proc files: with no descriptor free it fails. */
	th_asan_options("detect_leaks=0");
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

/* Where the outputs go: a tmpfs of 64 KiB of the test's own, mounted in a mount namespace of its
 * own (gone with the test's process); or, where mounting is refused, a directory where a
 * file-size limit on the probe (RLIMIT_FSIZE, SIGXFSZ ignored) plays the full volume. */
struct vol {
	char dir[PATH_MAX];
	char filler[PATH_MAX + 16];
	bool tmpfs;
	pid_t pid; /* the probe, under the file-size limit */
};

static void
vol_make(struct vol *v, bool tmpfs)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->dir, sizeof(v->dir), "%s/vol", th_tmpdir());
	snprintf(v->filler, sizeof(v->filler), "%s/filler", v->dir);
	cr_assert_eq(mkdir(v->dir, 0700), 0);
	v->tmpfs = tmpfs && unshare(CLONE_NEWNS) == 0 &&
	           mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	           mount("tmpfs", v->dir, "tmpfs", 0, "size=64k,mode=0700") == 0;
	if (tmpfs && !v->tmpfs)
		cr_log_warn("no tmpfs of the test's own (%s): a file-size limit plays the full "
		            "volume",
		            strerror(errno));
	/* Inherited by the probe: past RLIMIT_FSIZE, a write raises SIGXFSZ, which would end it. */
	signal(SIGXFSZ, SIG_IGN);
}

static off_t
file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : 0;
}

static void
vol_limit(const struct vol *v, rlim_t limit)
{
	/* The soft limit only: raising the hard one again takes CAP_SYS_RESOURCE. */
	struct rlimit lim;
	cr_assert_eq(prlimit(v->pid, RLIMIT_FSIZE, NULL, &lim), 0, "prlimit: %s", strerror(errno));
	lim.rlim_cur = limit;
	cr_assert_eq(prlimit(v->pid, RLIMIT_FSIZE, &lim, NULL), 0, "prlimit: %s", strerror(errno));
}

/* Nothing more fits: the tmpfs is filled up, or the limit set at the larger file's size plus
 * less than a record. */
static void
vol_fill(const struct vol *v, const char *a, const char *b)
{
	if (!v->tmpfs) {
		off_t size = file_size(a) > file_size(b) ? file_size(a) : file_size(b);
		vol_limit(v, (rlim_t)size + 100);
		return;
	}
	static char page[4096];
	memset(page, 'f', sizeof(page));
	int fd = open(v->filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	while (write(fd, page, sizeof(page)) > 0)
		;
	cr_assert_eq(errno, ENOSPC);
	close(fd);
}

static void
vol_free(const struct vol *v)
{
	if (v->tmpfs)
		cr_assert_eq(unlink(v->filler), 0);
	else
		vol_limit(v, RLIM_INFINITY);
}

static const char *
vol_cause(const struct vol *v)
{
	return strerror(v->tmpfs ? ENOSPC : EFBIG);
}

/* Checks that the file holds whole lines only, each a record that policy's reader reads (a
 * stats object, or with rss an [RSS] line); returns how many, 0 when there is no file. */
static int
whole_records(const char *path, bool rss, uint64_t *last_round)
{
	static char text[1 << 20];
	ssize_t len = th_read_file(path, text, sizeof(text));
	if (len <= 0)
		return 0;
	cr_assert_eq(text[len - 1], '\n', "%s ends in a cut record: ...%s", path,
	             text + (len > 80 ? len - 80 : 0));
	int n = 0;
	for (char *line = text, *end; line < text + len; line = end + 1) {
		end = strchr(line, '\n');
		*end = '\0';
		struct rt_round_read r;
		enum rt_read_result res =
		    rss ? rt_report_read_rss_line(line, &r) : rt_report_read_json(line, &r);
		cr_assert_eq(res, RT_READ_OK, "%s: line %d is no whole record: %s", path, n + 1,
		             line);
		if (last_round)
			*last_round = r.rec.round;
		n++;
	}
	return n;
}

/* One round at a time, each acted on (ROUNDTRIM_GC_ROUNDS=1), each with its record. */
static void
rounds_until(struct th_probe *run, long *rounds, long until)
{
	char line[4096];
	while (*rounds < until) {
		cr_assert(th_fifo_write(run->fifo, "round\n", 6));
		th_wait_rounds(run, ++*rounds, line, sizeof(line));
	}
}

static int64_t
lost_records(struct th_probe *run)
{
	char text[8192];
	cr_assert_gt(th_read_file(run->status, text, sizeof(text)), 0);
	return th_field(text, "lost_records");
}

/* The lines said on stderr so far about a file's dropped records: exactly one, naming the file
 * and the cause. */
static void
said_once(struct th_probe *run, const char *feature, const char *path, const char *cause)
{
	char err[8192], needle[128];
	snprintf(needle, sizeof(needle), "%s: a record dropped", feature);
	cr_assert(th_wait_stderr(&run->proc, needle, err, sizeof(err), TH_TIMEOUT_MS),
	          "nothing said of %s: %s", path, err);
	cr_assert_eq(th_count_in(err, needle), 1, "%s", err);
	const char *said = strstr(err, needle), *end = strchr(said, '\n');
	cr_assert(end && memmem(said, (size_t)(end - said), path, strlen(path)) &&
	              memmem(said, (size_t)(end - said), cause, strlen(cause)),
	          "%s", said);
}

static void
start_on(struct th_probe *run, const char *stats, const char *log)
{
	char line[2048];
	static char env_stats[PATH_MAX + 32], env_log[PATH_MAX + 32];
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s", stats);
	snprintf(env_log, sizeof(env_log), "ROUNDTRIM_LOG=%s", log);
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1", env_stats, log ? env_log : NULL,
	                     "ROUNDTRIM_PROFILE=1", NULL};
	th_start_probe_env(run, (const char *[]){"idle", NULL}, env, line, sizeof(line));
}

/* A volume full from the start: every record is dropped, counted and said once; a per-process
 * stats file never gets its name, where it used to be made empty without a word. */
static void
full_from_the_start(bool tmpfs)
{
	struct vol v;
	struct th_probe run;
	char stats[PATH_MAX + 16], tmpl[PATH_MAX + 16];
	long rounds = 0;
	vol_make(&v, tmpfs);
	if (v.tmpfs) {
		vol_fill(&v, NULL, NULL);
		snprintf(tmpl, sizeof(tmpl), "%s/%%p.jsonl", v.dir);
	} else {
		/* A shared file already at the limit, of whole records. */
		snprintf(tmpl, sizeof(tmpl), "%s/stats.jsonl", v.dir);
		FILE *f = fopen(tmpl, "w");
		cr_assert_not_null(f);
		struct rt_round_record rec = {.pid = 1,
		                              .trigger = "fifo",
		                              .action = "none",
		                              .allocator = "glibc",
		                              .note = ""};
		char line[RT_REPORT_LINE_MAX];
		for (rec.round = 1; ftell(f) < 8192; rec.round++)
			fwrite(line, 1, rt_report_json(line, sizeof(line), &rec), f);
		fclose(f);
	}
	off_t before = file_size(tmpl);
	start_on(&run, tmpl, NULL);
	v.pid = run.proc.pid;
	if (v.tmpfs)
		snprintf(stats, sizeof(stats), "%s/%d.jsonl", v.dir, run.proc.pid);
	else
		vol_limit(&v, (rlim_t)before);
	rounds_until(&run, &rounds, 3);
	if (v.tmpfs)
		cr_assert_not(th_wait_path(stats, false, 0), "%s made without a record", stats);
	else
		cr_assert_eq(file_size(tmpl), before, "the full file changed");
	cr_assert_eq(lost_records(&run), 3);
	said_once(&run, "stats file", v.tmpfs ? stats : tmpl, vol_cause(&v));
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
	if (v.tmpfs)
		cr_assert_not(th_wait_path(stats, false, 0), "%s left behind", stats);
}

/* A per-process stats file whose name another file took before its first record cannot be
 * named: it goes off in one line, and each record meant for it, the first one on, is lost and
 * counted. */
Test(outputs, a_file_that_cannot_be_named_counts_every_record_lost)
{
	struct th_probe run;
	char tmpl[PATH_MAX + 16], stats[PATH_MAX + 16], err[8192], needle[PATH_MAX + 64];
	long rounds = 0;
	snprintf(tmpl, sizeof(tmpl), "%s/%%p.jsonl", th_tmpdir());
	start_on(&run, tmpl, NULL);
	snprintf(stats, sizeof(stats), "%s/%d.jsonl", th_tmpdir(), run.proc.pid);
	th_write_file(stats, "");
	rounds_until(&run, &rounds, 3);
	int64_t lost = lost_records(&run);
	cr_assert_eq(lost, 3, "%lld records lost", (long long)lost);
	snprintf(needle, sizeof(needle), "stats file off: cannot create %s: File exists", stats);
	cr_assert(th_wait_stderr(&run.proc, needle, err, sizeof(err), TH_TIMEOUT_MS), "%s", err);
	cr_assert_eq(th_count_in(err, "roundtrim: "), 1, "%s", err);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
}

Test(outputs, full_volume_from_the_start_drops_every_record_and_says_so)
{
	full_from_the_start(true);
}

Test(outputs, file_size_limit_from_the_start_drops_every_record_and_says_so)
{
	full_from_the_start(false);
}

/* A volume that fills mid-run, then gets space back: the stats and log files hold whole records
 * only throughout (the record that did not fit was cut back out, where it used to stay cut, and
 * the next one was glued to it), and every record is either there or counted. */
static void
fills_mid_run(bool tmpfs)
{
	struct vol v;
	struct th_probe run;
	char stats[PATH_MAX + 16], log[PATH_MAX + 16];
	long rounds = 0;
	uint64_t last = 0;
	vol_make(&v, tmpfs);
	snprintf(stats, sizeof(stats), "%s/stats.jsonl", v.dir);
	snprintf(log, sizeof(log), "%s/rss.log", v.dir);
	start_on(&run, stats, log);
	v.pid = run.proc.pid;
	while (file_size(stats) < 2048)
		rounds_until(&run, &rounds, rounds + 1);
	vol_fill(&v, stats, log);
	/* More records than the room left: tmpfs leaves each file the rest of its last page, up
	 * to 4095 bytes, some 25 [RSS] lines. */
	rounds_until(&run, &rounds, rounds + 32);
	int in_stats = whole_records(stats, false, &last), in_log = whole_records(log, true, NULL);
	int64_t lost = lost_records(&run);
	cr_assert_geq(lost, 2, "both files filled up");
	cr_assert_eq(in_stats + in_log + lost, 2 * rounds, "%d + %d records, %ld lost, of %ld",
	             in_stats, in_log, (long)lost, 2 * rounds);
	said_once(&run, "stats file", stats, vol_cause(&v));
	said_once(&run, "log file", log, vol_cause(&v));

	vol_free(&v);
	rounds_until(&run, &rounds, rounds + 3);
	cr_assert_eq(lost_records(&run), lost, "space came back");
	cr_assert_eq(whole_records(stats, false, &last), in_stats + 3);
	cr_assert_eq(last, (uint64_t)rounds, "the last record is the last round's");
	cr_assert_eq(whole_records(log, true, NULL), in_log + 3);
	said_once(&run, "stats file", stats, vol_cause(&v));
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
}

Test(outputs, volume_that_fills_mid_run_keeps_whole_records)
{
	fills_mid_run(true);
}

/* The same under a file-size limit, which stands in for a full volume where mounting is
 * refused: run here too, so that the fallback is known to work. */
Test(outputs, file_size_limit_mid_run_keeps_whole_records)
{
	fills_mid_run(false);
}

static void
wait_prom_rounds(const char *prom, pid_t pid, long rounds)
{
	char needle[128], line[512];
	snprintf(needle, sizeof(needle), "roundtrim_rounds_total{pid=\"%d\",program=\"probe\"} %ld",
	         (int)pid, rounds);
	cr_assert(th_wait_line(prom, needle, line, sizeof(line), TH_TIMEOUT_MS), "no %s", needle);
}

/* The Prometheus file is whole or not rewritten: past a file-size limit it keeps its last whole
 * content, where it used to be cut before its "# end" line. */
Test(outputs, prometheus_file_keeps_its_last_whole_content_when_it_cannot_grow)
{
	struct vol v;
	struct th_probe run;
	char line[2048], prom[PATH_MAX + 16], text[16384];
	long rounds = 0;
	vol_make(&v, false);
	char env_prom[PATH_MAX + 32];
	snprintf(env_prom, sizeof(env_prom), "ROUNDTRIM_PROM=%s/%%p.prom", v.dir);
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1", env_prom, NULL};
	th_start_probe_env(&run, (const char *[]){"idle", NULL}, env, line, sizeof(line));
	v.pid = run.proc.pid;
	snprintf(prom, sizeof(prom), "%s/%d.prom", v.dir, run.proc.pid);
	rounds_until(&run, &rounds, 9);
	wait_prom_rounds(prom, run.proc.pid, 9);
	/* Round 10 writes two digits where 9 wrote one: the content grows past the limit. */
	vol_limit(&v, (rlim_t)file_size(prom));
	/* Round 11's status: round 10's Prometheus file, written after its status, is done. */
	rounds_until(&run, &rounds, 11);
	cr_assert_gt(th_read_file(prom, text, sizeof(text)), 0);
	cr_assert_eq(th_count_in(text, "# end"), 1, "%s", text);
	cr_assert_eq(text[strlen(text) - 1], '\n', "%s", text);
	th_expect_in(text, "roundtrim_rounds_total{pid=");
	th_expect_in(text, "\"} 9\n");
	cr_assert_geq(lost_records(&run), 1);
	said_once(&run, "Prometheus file", prom, strerror(EFBIG));

	vol_free(&v);
	rounds_until(&run, &rounds, 12);
	wait_prom_rounds(prom, run.proc.pid, 12);
	cr_assert_gt(th_read_file(prom, text, sizeof(text)), 0);
	cr_assert_eq(th_count_in(text, "# end"), 1, "%s", text);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
}

/* The status file likewise: a reader finds the last whole status, never a cut one that it
 * would take for a rewrite in progress for ever. */
Test(outputs, status_file_keeps_its_last_whole_content_when_it_cannot_grow)
{
	struct vol v;
	struct th_probe run;
	char line[2048], text[8192];
	long rounds = 0;
	vol_make(&v, false);
	/* [RSS] lines on stderr tell when a round was handled while the status cannot. */
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1", "ROUNDTRIM_PROFILE=1", NULL};
	th_start_probe_env(&run, (const char *[]){"idle", NULL}, env, line, sizeof(line));
	v.pid = run.proc.pid;
	rounds_until(&run, &rounds, 9);
	vol_limit(&v, (rlim_t)file_size(run.status));
	for (const char *r = "r=10 fifo"; r; r = strcmp(r, "r=10 fifo") ? NULL : "r=11 fifo") {
		cr_assert(th_fifo_write(run.fifo, "round\n", 6));
		cr_assert(th_wait_stderr(&run.proc, r, text, sizeof(text), TH_TIMEOUT_MS), "%s",
		          text);
	}
	/* Round 11's line: round 10's status was written, or dropped. */
	cr_assert_gt(th_read_file(run.status, text, sizeof(text)), 0);
	struct rt_status_read st;
	cr_assert_eq(rt_report_read_status(text, &st), RT_READ_OK, "%s", text);
	cr_assert_eq(st.st.rounds, 9);
	said_once(&run, "status file", run.status, strerror(EFBIG));

	vol_free(&v);
	rounds = 11;
	rounds_until(&run, &rounds, 12);
	cr_assert_gt(th_read_file(run.status, text, sizeof(text)), 0);
	cr_assert_eq(rt_report_read_status(text, &st), RT_READ_OK, "%s", text);
	/* Round 10's, and round 11's unless it came after the limit went. */
	cr_assert(st.st.lost_records == 1 || st.st.lost_records == 2, "%s", text);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
}
