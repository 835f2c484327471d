/* The server role's rounds: a process started with ROUNDTRIM_ROLE=server finds its rounds with the
 * server's detector (policy/rt_detect_server), one a round of a server's rhythm. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

TestSuite(server_role, .timeout = 180, .fini = th_cleanup);

/* The rounds the library found, from the process's status file; -1 while it has none. */
static int64_t
detected_rounds(const char *status)
{
	char text[8192];
	if (th_read_file(status, text, sizeof(text)) <= 0)
		return -1;
	return th_field(text, "detected_rounds");
}

/* test/workloads/server_rounds, NVFlare's server job in miniature: what follows a round's end
 * (the model sent to each client) keeps memory and what begins the next (the first update)
 * gives back what the last round kept, so the client detector counts about two rounds a round
 * there (20 for 10 replayed from a recording). The server role counts one a round: the first
 * once its hold has passed, the others at the aggregation's quiet. */
Test(server_role, counts_one_round_a_round_of_a_servers_rhythm)
{
	const int rounds = 6;
	const char *dir = th_tmpdir();
	char env[4][PATH_MAX], status[PATH_MAX], line[512];
	snprintf(env[0], PATH_MAX, "LD_PRELOAD=%s", th_lib());
	snprintf(env[1], PATH_MAX, "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(env[2], PATH_MAX, "ROUNDTRIM_STATS=%s/%%p.jsonl", dir);
	snprintf(env[3], PATH_MAX, "ROUNDTRIM_ROLE=server");
	const char *envp[] = {env[0], env[1], env[2], env[3], NULL};
	char rounds_text[16];
	snprintf(rounds_text, sizeof(rounds_text), "%d", rounds);
	const char *argv[] = {th_workload("server_rounds"),
	                      "--rounds",
	                      rounds_text,
	                      "--train",
	                      "2",
	                      "--pause",
	                      "0.6",
	                      "--wait",
	                      NULL};
	struct th_proc proc;
	th_spawn(&proc, argv, envp);
	snprintf(status, sizeof(status), "%s/%d.status", dir, proc.pid);
	int boundaries = 0;
	for (;;) {
		cr_assert(th_read_line(&proc, line, sizeof(line), 60000), "server_rounds stalled");
		if (!strncmp(line, "done", 4))
			break;
		boundaries += !strncmp(line, "boundary ", 9);
	}
	cr_assert_eq(boundaries, rounds);
	/* The last round's end was due a wait of the clients before "done": the status shows it
	 * once the worker has published it. */
	int64_t found = detected_rounds(status);
	for (int waits = 0; found < rounds - 1 && waits < 50; waits++) {
		th_wait_change(status, TH_TIMEOUT_MS / 10);
		found = detected_rounds(status);
	}
	cr_assert_geq(found, rounds - 1, "%lld rounds found of %d", (long long)found, rounds);
	cr_assert_leq(found, rounds, "%lld rounds found of %d", (long long)found, rounds);
	th_close_stdin(&proc);
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS));
	cr_assert_eq(proc.status, 0);
}
