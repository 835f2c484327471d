/* startup: what LD_PRELOAD=LIB costs a short program that does not match ROUNDTRIM_MATCH. Runs
 * PROGRAM RUNS times without the preload and RUNS times with it, in PAIRS alternating blocks (the
 * side that goes first alternates too), each run a posix_spawn and a wait, so that no shell
 * stands between runs. Both sides get ROUNDTRIM_MATCH=MATCH. With --preload "" both sides run
 * without: the machine's noise, measured the same way. Prints one line per pair:
 *   pair=I without_s=X with_s=Y
 *
 * usage: startup --preload LIB --runs RUNS --pairs PAIRS [--match MATCH] -- PROGRAM [ARGS...] */
#include "bench_common.h"

#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

/* Our environment without LD_PRELOAD or ROUNDTRIM_MATCH, plus MATCH and, if set, the preload. */
static char **
startup_env(const char *preload, const char *match)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof(*env));
	size_t k = 0;
	if (!env)
		bench_die("out of memory");
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) &&
		    strncmp(environ[i], "ROUNDTRIM_MATCH=", 16))
			env[k++] = environ[i];
	if (asprintf(&env[k++], "ROUNDTRIM_MATCH=%s", match) < 0 ||
	    (*preload && asprintf(&env[k++], "LD_PRELOAD=%s", preload) < 0))
		bench_die("out of memory");
	return env;
}

/* Seconds for RUNS runs of program in env. */
static double
startup_block(char **program, char **env, long runs)
{
	int64_t t0 = bench_now_ns();
	for (long i = 0; i < runs; i++) {
		pid_t pid;
		int status, err = posix_spawn(&pid, program[0], NULL, NULL, program, env);
		if (err)
			bench_die("cannot start %s: %s", program[0], strerror(err));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			bench_die("%s failed", program[0]);
	}
	return (double)(bench_now_ns() - t0) / 1e9;
}

int
main(int argc, char **argv)
{
	const char *preload = NULL, *match = "no-such-program";
	long runs = 200, pairs = 10;
	int i;
	bench_name = "startup";
	for (i = 1; i + 1 < argc && strcmp(argv[i], "--"); i += 2) {
		if (!strcmp(argv[i], "--preload"))
			preload = argv[i + 1];
		else if (!strcmp(argv[i], "--match"))
			match = argv[i + 1];
		else if (!strcmp(argv[i], "--runs"))
			runs = bench_arg_long(argv[i], argv[i + 1], 1, 100000000);
		else if (!strcmp(argv[i], "--pairs"))
			pairs = bench_arg_long(argv[i], argv[i + 1], 1, 100000);
		else
			break;
	}
	if (!preload || i + 1 >= argc || strcmp(argv[i], "--"))
		bench_die("usage: startup --preload LIB --runs RUNS --pairs PAIRS [--match MATCH] "
		          "-- PROGRAM [ARGS...]");
	char **program = argv + i + 1;
	char **without = startup_env("", match), **with = startup_env(preload, match);
	/* One discarded pair: the first runs pay for a cold page cache. */
	startup_block(program, without, runs / 10 + 1);
	startup_block(program, with, runs / 10 + 1);
	for (long p = 0; p < pairs; p++) {
		double a, b;
		if (p % 2 == 0) {
			a = startup_block(program, without, runs);
			b = startup_block(program, with, runs);
		} else {
			b = startup_block(program, with, runs);
			a = startup_block(program, without, runs);
		}
		printf("pair=%ld without_s=%.6f with_s=%.6f\n", p + 1, a, b);
	}
	return 0;
}
