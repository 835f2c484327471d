/* The command as `make install` writes it: the library path baked into it (here the Makefile's
 * test copy, build/test/baked/, with a SONAME link to the built library), and the SONAME link. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

TestSuite(install, .timeout = 60, .fini = th_cleanup);

#define BAKED_DIR RT_BUILD_DIR "/test/baked"
#define BAKED_COMMAND BAKED_DIR "/roundtrim"
/* Not resolved: the path that upgrades keep valid. */
#define BAKED_LIB BAKED_DIR "/libroundtrim.so.0"

static char out[16384], err[16384];

/* The LD_PRELOAD that `COMMAND run` gives a shell, with the extra variable set. */
static void
preload_of_run(const char *command, const char *extra_env, char *line, size_t size)
{
	const char *argv[] = {command, "run", "sh", "-c", "echo \"$LD_PRELOAD\"", NULL};
	const char *env[] = {"ROUNDTRIM_DISABLE=1", extra_env, NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	cr_assert(th_read_line(&p, line, size, TH_TIMEOUT_MS), "%s run printed nothing", command);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0);
}

Test(install, run_preloads_the_baked_path_unless_roundtrim_lib_says_otherwise)
{
	char line[PATH_MAX * 2], env[PATH_MAX + 16];
	preload_of_run(BAKED_COMMAND, NULL, line, sizeof(line));
	cr_assert_str_eq(line, BAKED_LIB);

	snprintf(env, sizeof(env), "ROUNDTRIM_LIB=%s", th_lib());
	preload_of_run(BAKED_COMMAND, env, line, sizeof(line));
	cr_assert_str_eq(line, th_lib());
}

Test(install, patch_writes_the_baked_path)
{
	char launcher[PATH_MAX], text[4096];
	snprintf(launcher, sizeof(launcher), "%s/start.sh", th_tmpdir());
	FILE *f = fopen(launcher, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\nexec python3 train.py\n", f);
	cr_assert_eq(fclose(f), 0);
	const char *argv[] = {BAKED_COMMAND, "patch", "--force", launcher, NULL};
	cr_assert_eq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(th_read_file(launcher, text, sizeof(text)), 0);
	cr_assert_not_null(
	    strstr(text, "\nexport LD_PRELOAD=\"" BAKED_LIB "${LD_PRELOAD:+:$LD_PRELOAD}\"\n"),
	    "%s", text);
}

/* Inside a patched launcher the command carries the SONAME link: it starts once more without it
 * (not forever), and run preloads one library, not two. */
Test(install, command_carrying_the_soname_link_drops_it)
{
	char line[PATH_MAX * 2];
	preload_of_run(BAKED_COMMAND, "LD_PRELOAD=" BAKED_LIB, line, sizeof(line));
	cr_assert_str_eq(line, BAKED_LIB);
	/* The command run from the build tree preloads the library built beside it. */
	preload_of_run(RT_BUILD_DIR "/roundtrim", "LD_PRELOAD=" BAKED_LIB, line, sizeof(line));
	cr_assert_str_eq(line, th_lib());
}
