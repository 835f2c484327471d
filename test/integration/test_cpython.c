/* A real program's own tests of what it does with descriptors: CPython's test_subprocess and
 * test_os (Debian's libpython3.11-testsuite), with every process they start carrying the
 * library, in each of its descriptor modes: the worker's own table ("private") and, where
 * unshare is refused as in a container, the keeper's ("keeper"). They must pass as they do
 * without the library (about 22 s each here). make check-host runs many more modules. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(cpython, .timeout = 600, .fini = th_cleanup);

#define CPYTHON_RUN_MS (500 * 1000)

/* Runs the two modules under the library, under the launcher (noshare) or not; fails with the
 * end of regrtest's log unless they pass. */
static void
cpython_modules(bool noshare)
{
	static char text[1 << 16];
	char log[PATH_MAX], script[2 * PATH_MAX], preload[PATH_MAX + 16];
	if (access("/usr/lib/python3.11/test/test_subprocess.py", R_OK) != 0)
		cr_skip_test("CPython's tests are not installed (libpython3.11-testsuite)");
	snprintf(log, sizeof(log), "%s/regrtest.log", th_tmpdir());
	/* The FIFOs in a directory of their own: the tests' children that change their uid refuse
	 * it and run without one. */
	/* In a sanitizer build every process holds its runtime's report file
	 * (th_report_descriptors), which test_pass_fds_redirected finds among a child's. */
	snprintf(script, sizeof(script),
	         "cd %s && exec /usr/bin/python3 -m test -u subprocess %s test_subprocess test_os "
	         ">%s 2>&1",
	         th_tmpdir(), th_report_descriptors() ? "-i test_pass_fds_redirected" : "", log);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	const char *argv[] = {th_noshare(), "/bin/sh", "-c", script, NULL};
	/* Under ASan or TSan the library's line that their allocator is unknown would be in every
	 * child's stderr, which test_subprocess compares; counting only, it has nothing to say, and
	 * no round comes here. */
	const char *env[] = {preload, th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     th_allocator_unknown() ? "ROUNDTRIM_GC_ROUNDS=0" : NULL, NULL};
	struct th_proc p;
	th_spawn(&p, noshare ? argv : argv + 1, env);
	th_close_stdin(&p);
	bool ended = th_wait(&p, CPYTHON_RUN_MS);
	ssize_t len = th_read_file(log, text, sizeof(text));
	const char *tail = len > 3000 ? text + len - 3000 : text;
	cr_assert(ended, "regrtest did not end within %d s: %s", CPYTHON_RUN_MS / 1000, tail);
	cr_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0 &&
	              strstr(text, "Tests result: SUCCESS"),
	          "status %#x: %s", p.status, tail);
}

Test(cpython, subprocess_and_os_private)
{
	cpython_modules(false);
}

Test(cpython, subprocess_and_os_keeper)
{
	cpython_modules(true);
}
