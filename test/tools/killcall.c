/* killcall CALL[,CALL...] PROGRAM ARGS...: runs PROGRAM under a seccomp filter (libseccomp) that
 * kills the process (SCMP_ACT_KILL_PROCESS, with a core dump as the kernel makes one) on each
 * named system call, for it and every process it starts, as systemd's SystemCallFilter= does
 * without SystemCallErrorNumber=. Every other call is allowed. CALL is a name libseccomp knows
 * (seccomp_syscall_resolve_name), or "clone-thread-unshared": clone(2) of a thread that does not
 * share the descriptor table (CLONE_THREAD without CLONE_FILES), the keeper's. */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
killcall_add(scmp_filter_ctx ctx, const char *name)
{
	if (!strcmp(name, "clone-thread-unshared"))
		return seccomp_rule_add(
		    ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_FILES, CLONE_THREAD));
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR) {
		fprintf(stderr, "killcall: no system call %s\n", name);
		return -EINVAL;
	}
	return seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, nr, 0);
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: killcall CALL[,CALL...] PROGRAM ARGS...\n");
		return 2;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc = ctx ? 0 : -ENOMEM;
	char *names = argv[1], *save = NULL;
	for (char *name = strtok_r(names, ",", &save); !rc && name;
	     name = strtok_r(NULL, ",", &save))
		rc = killcall_add(ctx, name);
	/* Inherited by every child and kept across execve (no_new_privs comes with it). */
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc) {
		fprintf(stderr, "killcall: seccomp: %s\n", strerror(-rc));
		return 1;
	}
	execv(argv[2], argv + 2);
	perror("killcall: exec");
	return 127;
}
