/* noshare [--no-keeper] [--setns] [--mount] PROGRAM ARGS...: runs PROGRAM under a seccomp filter
 * (libseccomp) that refuses what Docker's, podman's and Kubernetes' RuntimeDefault profiles
 * refuse a process without CAP_SYS_ADMIN, for it and every process it starts: unshare(2) fails with
 * EPERM, clone3 with ENOSYS (glibc falls back to clone), clone with a namespace flag with EPERM;
 * and, as those profiles do without CAP_SYS_PTRACE, pidfd_getfd, kcmp and process_madvise with
 * EPERM (setns and mount, CAP_SYS_ADMIN's, too). So the library's worker cannot take a descriptor
 * table of its own, nor borrow the program's stderr (roundtrim(7), DESCRIPTORS). With
 * --no-keeper, a clone of a thread that does not share the descriptor table fails with EPERM
 * too, so that no task of the process can have a table of its own. With --setns, setns(2) is
 * left to the kernel, as a profile that grants it would (the program's own namespace switches);
 * with --mount, mount(2) and umount2(2). */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const unsigned long noshare_namespaces[] = {
    CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
    CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
};

/* Refused outright by those profiles to a process without the capability that includes them. */
static const int noshare_refused[] = {
    SCMP_SYS(pidfd_getfd), SCMP_SYS(kcmp),  SCMP_SYS(process_madvise),
    SCMP_SYS(setns),       SCMP_SYS(mount), SCMP_SYS(umount2),
};

int
main(int argc, char **argv)
{
	int first = 1;
	bool no_keeper = argc > first && !strcmp(argv[first], "--no-keeper");
	first += no_keeper;
	bool allow_setns = argc > first && !strcmp(argv[first], "--setns");
	first += allow_setns;
	bool allow_mount = argc > first && !strcmp(argv[first], "--mount");
	first += allow_mount;
	if (argc <= first) {
		fprintf(stderr,
		        "usage: noshare [--no-keeper] [--setns] [--mount] PROGRAM ARGS...\n");
		return 2;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc = ctx ? 0 : -ENOMEM;
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	for (size_t i = 0; !rc && i < sizeof(noshare_refused) / sizeof(noshare_refused[0]); i++)
		if ((!allow_setns || noshare_refused[i] != SCMP_SYS(setns)) &&
		    (!allow_mount || (noshare_refused[i] != SCMP_SYS(mount) &&
		                      noshare_refused[i] != SCMP_SYS(umount2))))
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), noshare_refused[i], 0);
	for (size_t i = 0; !rc && i < sizeof(noshare_namespaces) / sizeof(noshare_namespaces[0]);
	     i++)
		rc = seccomp_rule_add(
		    ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, noshare_namespaces[i], noshare_namespaces[i]));
	if (!rc && no_keeper)
		rc = seccomp_rule_add(
		    ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_FILES, CLONE_THREAD));
	/* Inherited by every child and kept across execve (no_new_privs, which an unprivileged
	 * filter needs, comes with it). */
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc) {
		fprintf(stderr, "noshare: seccomp: %s\n", strerror(-rc));
		return 1;
	}
	execv(argv[first], argv + first);
	perror("noshare: exec");
	return 127;
}
