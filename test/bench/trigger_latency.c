/* trigger_latency: how long from a round's trigger to the end of its handling. Starts PROGRAM
 * (an idle program that prints one line and waits for EOF, e.g. `probe idle`) with LD_PRELOAD=LIB,
 * its FIFO and status file in a fresh directory and ROUNDTRIM_GC_ROUNDS=N; then, one at a time,
 * ROUNDS times: take the clock, send one trigger (the line "round" to the FIFO, or the signal
 * SIGRTMIN+8), wait until the status file, rewritten in place, says rounds == k, take the clock.
 * One trigger is in flight at a time, so no two merge into one batch. Prints
 *   trigger=T every=N rounds=R p50_us=X p99_us=Y max_us=Z
 * and with --raw FILE writes every latency in microseconds, one a line.
 *
 * usage: trigger_latency --lib LIB --trigger fifo|signal --every N --rounds R [--raw FILE]
 *                        [--preload MORE] -- PROGRAM [ARGS...] */
#include "bench_read.h"

#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern char **environ;

#define LAT_TIMEOUT_MS 10000

struct lat_opts {
	const char *lib;
	const char *preload; /* preloaded after the library, e.g. jemalloc */
	int by_signal;
	long every;
	long rounds;
	const char *raw;
	char **program;
};

/* The child's environment: ours without any preload or roundtrim setting, plus the run's. */
static char **
lat_env(const struct lat_opts *o, const char *dir)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 5, sizeof(*env));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "ROUNDTRIM_", 10))
			env[k++] = environ[i];
	if (asprintf(&env[k++], "LD_PRELOAD=%s%s%s", o->lib, o->preload ? ":" : "",
	             o->preload ? o->preload : "") < 0 ||
	    asprintf(&env[k++], "ROUNDTRIM_FIFO=%s/%%p.fifo", dir) < 0 ||
	    asprintf(&env[k++], "ROUNDTRIM_GC_ROUNDS=%ld", o->every) < 0 ||
	    asprintf(&env[k++], "ROUNDTRIM_SIGNAL=%s", o->by_signal ? "RTMIN+8" : "none") < 0)
		bench_die("out of memory");
	return env;
}

static void
lat_parse(int argc, char **argv, struct lat_opts *o)
{
	int i;
	for (i = 1; i < argc && strcmp(argv[i], "--"); i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		if (!v)
			bench_die("%s needs a value", a);
		if (!strcmp(a, "--lib"))
			o->lib = v;
		else if (!strcmp(a, "--preload"))
			o->preload = v;
		else if (!strcmp(a, "--trigger") && (!strcmp(v, "fifo") || !strcmp(v, "signal")))
			o->by_signal = !strcmp(v, "signal");
		else if (!strcmp(a, "--every"))
			o->every = bench_arg_long(a, v, 0, 1000000000);
		else if (!strcmp(a, "--rounds"))
			o->rounds = bench_arg_long(a, v, 1, 10000000);
		else if (!strcmp(a, "--raw"))
			o->raw = v;
		else
			bench_die(
			    "unknown option %s (see the comment at the top of trigger_latency.c)",
			    a);
	}
	if (i + 1 >= argc || !o->lib)
		bench_die("usage: trigger_latency --lib LIB --trigger fifo|signal --every N "
		          "--rounds R [--raw FILE] [--preload MORE] -- PROGRAM [ARGS...]");
	o->program = argv + i + 1;
}

int
main(int argc, char **argv)
{
	struct lat_opts o = {.every = 1, .rounds = 1000};
	bench_name = "trigger_latency";
	lat_parse(argc, argv, &o);

	char dir[] = "/tmp/roundtrim-lat-XXXXXX";
	if (!mkdtemp(dir))
		bench_die("mkdtemp: %s", strerror(errno));
	int to_child[2], from_child[2];
	if (pipe2(to_child, O_CLOEXEC) || pipe2(from_child, O_CLOEXEC))
		bench_die("pipe: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
	posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
	pid_t pid;
	int err = posix_spawn(&pid, o.program[0], &fa, NULL, o.program, lat_env(&o, dir));
	if (err)
		bench_die("cannot start %s: %s", o.program[0], strerror(err));
	close(to_child[0]);
	close(from_child[1]);

	char fifo[PATH_MAX], status[PATH_MAX], buf[4096];
	struct bench_status_wait wait = {.rounds = 0};
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", dir, (int)pid);
	snprintf(status, sizeof(status), "%s/%d.status", dir, (int)pid);
	/* The status file is rewritten in place. */
	int ifd = bench_watch_dir(status, IN_MODIFY | IN_CREATE);
	if (!bench_wait_file(ifd, status, bench_status_has_rounds, &wait, buf, sizeof(buf),
	                     LAT_TIMEOUT_MS))
		bench_die("%s made no status file %s (does it carry %s?)", o.program[0], status,
		          o.lib);
	int fifo_fd = o.by_signal ? -1 : bench_fifo_open(fifo);
	if (!o.by_signal && fifo_fd < 0)
		bench_die("cannot write to %s: %s", fifo, strerror(errno));

	int64_t *lat = calloc((size_t)o.rounds, sizeof(*lat));
	if (!lat)
		bench_die("out of memory");
	for (long k = 1; k <= o.rounds; k++) {
		wait.rounds = (uint64_t)k;
		int64_t t0 = bench_now_ns();
		if (o.by_signal) {
			if (sigqueue(pid, SIGRTMIN + 8, (union sigval){0}) != 0)
				bench_die("sigqueue: %s", strerror(errno));
		} else if (write(fifo_fd, "round\n", 6) != 6) {
			bench_die("write to %s: %s", fifo, strerror(errno));
		}
		int64_t t1 = bench_wait_file(ifd, status, bench_status_has_rounds, &wait, buf,
		                             sizeof(buf), LAT_TIMEOUT_MS);
		if (!t1)
			bench_die("round %ld never reached the status file: %s", k, buf);
		lat[k - 1] = t1 - t0;
		if (o.every && k % o.every == 0 && wait.found.st.last_action_round != (uint64_t)k)
			bench_die("round %ld caused no action: %s", k, buf);
	}

	if (fifo_fd >= 0)
		close(fifo_fd);
	close(to_child[1]);
	int wstatus;
	if (waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus))
		bench_die("%s did not exit cleanly", o.program[0]);
	close(from_child[0]);
	rmdir(dir);

	if (o.raw) {
		FILE *f = fopen(o.raw, "w");
		if (!f)
			bench_die("%s: %s", o.raw, strerror(errno));
		for (long k = 0; k < o.rounds; k++)
			fprintf(f, "%.3f\n", (double)lat[k] / 1e3);
		if (fclose(f))
			bench_die("%s: %s", o.raw, strerror(errno));
	}
	qsort(lat, (size_t)o.rounds, sizeof(*lat), bench_cmp_i64);
	printf("trigger=%s every=%ld rounds=%ld p50_us=%.1f p99_us=%.1f max_us=%.1f\n",
	       o.by_signal ? "signal" : "fifo", o.every, o.rounds,
	       (double)bench_quantile(lat, (size_t)o.rounds, 0.50) / 1e3,
	       (double)bench_quantile(lat, (size_t)o.rounds, 0.99) / 1e3,
	       (double)lat[o.rounds - 1] / 1e3);
	free(lat);
	return 0;
}
