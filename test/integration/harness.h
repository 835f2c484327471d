/* harness: real processes for the integration tests. Owns spawning a child with LD_PRELOAD in
 * its environment only, reading its output with deadlines, and waiting for files to change. */
#ifndef TH_HARNESS_H
#define TH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TH_TIMEOUT_MS 20000

struct th_proc {
	pid_t pid;
	int in_fd;  /* the child's stdin, -1 once closed */
	int out_fd; /* the child's stdout */
	int err_fd; /* the child's stderr */
	char outbuf[8192];
	size_t outlen;
	char errbuf[8192];
	size_t errlen;
	int status;
	bool reaped;
};

/* test/workloads/probe (or another workload) under the library, its FIFO and status file. */
struct th_probe {
	struct th_proc proc;
	char fifo[4096];
	char status[4096];
};

/* The library and the project's programs. */
const char *th_lib(void);
const char *th_workload(const char *name);
/* A shared library of the system's (FILE in the multiarch or lib64 directory), or NULL when
 * absent; the path lives until the thread's next call. */
const char *th_system_lib(const char *file);
/* Debian's jemalloc, or NULL when absent. */
const char *th_jemalloc(void);
/* A fresh 0700 directory under /tmp, removed by th_cleanup. */
const char *th_tmpdir(void);
void th_cleanup(void);

/* test/tools/noshare: runs its arguments where unshare(2) is refused, as in a container. */
const char *th_noshare(void);
/* Whether the test runner has TH_DESCRIPTORS=keeper in its environment: then th_spawn runs every
 * child under th_noshare(), and the library under test holds its descriptors in its keeper
 * (make check runs the descriptor, stress, fork and privilege tests once so). */
bool th_keeper_mode(void);

/* make check-asan (the runtime behind the library, TH_PRELOAD_AFTER): ASan options that every
 * child of this test gets after make's, for what ASan's runtime itself cannot do in the test's
 * setting (the caller says why); nothing in other builds. */
void th_asan_options(const char *options);
/* Descriptors the library keeps in the program's table in a sanitizer build (make check-asan,
 * check-ubsan, check-tsan): its runtime's report file (shim/io/rt_files.c says why); 0 else. */
int th_report_descriptors(void);
/* Under ASan or TSan their allocator serves behind the library's wrappers: the library calls it
 * unknown, takes no allocator action and says so in one line on stderr in every process. */
bool th_allocator_unknown(void);
/* The action a round takes where the wrappers hand the blocks to glibc: "glibc_release", or
 * "none" where th_allocator_unknown(). */
const char *th_release_action(void);
/* Fails the test unless line (a stats record) names that action. */
void th_expect_release(const char *line);

/* Spawns argv with the test runner's environment, minus every LD_PRELOAD, ROUNDTRIM_* and
 * NVFLARE_* variable, plus the NAME=VALUE strings of env (NULL-terminated, may be NULL). */
void th_spawn(struct th_proc *p, const char *const argv[], const char *const env[]);
/* Reads one line of stdout (without newline); false on EOF or after timeout_ms. */
bool th_read_line(struct th_proc *p, char *line, size_t size, int timeout_ms);
void th_write(struct th_proc *p, const char *text);
void th_close_stdin(struct th_proc *p);
/* Waits for exit; false on timeout (then kills the child). */
bool th_wait(struct th_proc *p, int timeout_ms);
/* Waits until the child's stderr so far contains needle; copies it all into buf. */
bool th_wait_stderr(struct th_proc *p, const char *needle, char *buf, size_t size, int timeout_ms);
/* Everything the child wrote on stderr until it closed it (call after th_wait). */
size_t th_read_stderr(struct th_proc *p, char *buf, size_t size);
/* Kills and reaps the child if still running. */
void th_kill(struct th_proc *p);

/* Waits until the file at path holds a line containing needle; copies that line into line. */
bool th_wait_line(const char *path, const char *needle, char *line, size_t size, int timeout_ms);
/* Waits for the next change in the directory of path (a write, a new file): true when one came. */
bool th_wait_change(const char *path, int timeout_ms);
/* Whether a path exists; waits for it to appear (or with gone=true, disappear). */
bool th_wait_path(const char *path, bool gone, int timeout_ms);
/* The unsigned number after "key": in a JSON line, or after key= in a text line; -1 if absent. */
int64_t th_field(const char *line, const char *key);
/* How many entries a directory has, "." and ".." aside. */
int th_entries_in(const char *dir);
/* The lowest descriptor the library keeps in a child of the test runner (same RLIMIT_NOFILE). */
int th_fd_floor(void);
/* Reads a whole small file into buf; returns its length or -1. */
ssize_t th_read_file(const char *path, char *buf, size_t size);
/* Writes text to path (a new file or one truncated); fails the test when it cannot. */
void th_write_file(const char *path, const char *text);
/* "NAME=TMPDIR/FILE" in th_tmpdir(), for an environment: four live at once. */
const char *th_env_in_tmp(const char *name, const char *file);
/* Fails the test unless haystack holds needle, showing both. */
void th_expect_in(const char *haystack, const char *needle);
/* A pid as text, for argv: four live at once per thread. */
const char *th_pid_text(pid_t pid);
/* How many times needle occurs in text, without overlap. */
int th_count_in(const char *text, const char *needle);
/* Counts lines of a file that contain needle. */
int th_count_lines(const char *path, const char *needle);
/* Writes text to a FIFO without blocking forever; false if nobody reads it. */
bool th_fifo_write(const char *path, const char *text, size_t len);

/* Makes a memory cgroup of the test's own below the runner's (v1, where the memory controller
 * is mounted on its own; else v2), named name-PID, with limit in bytes as its memory limit
 * unless NULL; its directory in dir. False where none can be made (not root, no controller). */
bool th_make_cgroup(char *dir, size_t size, const char *name, const char *limit);

/* Makes a pids cgroup of the test's own below the runner's (v1 where the pids controller is
 * mounted on its own, else v2, turning the controller on for the runner's cgroup's children),
 * named name-PID, with pids.max at max; its directory in dir. False where none can be made. */
bool th_make_pids_cgroup(char *dir, size_t size, const char *name, int max);
/* Removes a cgroup made by a test once its tasks are gone. */
void th_remove_cgroup(const char *dir);

/* Runs argv to completion with th_spawn's environment plus env, stdin closed; copies what it
 * wrote on stdout and stderr into out and err (NUL-terminated, truncated). Returns its exit
 * status, or -1 when it did not exit normally within TH_TIMEOUT_MS. */
int th_run(const char *const argv[], const char *const env[], char *out, size_t out_size, char *err,
           size_t err_size);

/* Starts probe ARGS with the library, ROUNDTRIM_FIFO in th_tmpdir() and one more NAME=VALUE
 * (NULL: ROUNDTRIM_GC_ROUNDS=0, count only); waits for the probe's first line (copied into
 * line) and for its status file. */
void th_start_probe(struct th_probe *run, const char *const args[], const char *extra, char *line,
                    size_t size);
/* The same with any number of NAME=VALUE (NULL-terminated) instead of the one. */
void th_start_probe_env(struct th_probe *run, const char *const args[], const char *const extra[],
                        char *line, size_t size);
/* The thread of pid whose comm is name, or -1. */
pid_t th_thread_named(pid_t pid, const char *name);
/* The thread of pid whose descriptor table holds the library's files: its keeper
 * ("roundtrim-fds") where it runs one, else its worker ("roundtrim"); -1 when neither runs. */
pid_t th_fd_holder(pid_t pid);
/* The same for any workload of the project: preload is LD_PRELOAD's value (NULL: the library),
 * fifo_dir the FIFO's directory (NULL: th_tmpdir()). "noshare:NAME" runs NAME where unshare(2)
 * fails, so that the library's worker shares the program's descriptor table and its keeper holds
 * the library's descriptors; "nokeeper:NAME" where no task of the process can have a table of
 * its own either (with ROUNDTRIM_SHARED_TABLE=1 the library shares the program's). */
void th_start_workload(struct th_probe *run, const char *workload, const char *preload,
                       const char *fifo_dir, const char *const args[], const char *const extra[],
                       char *line, size_t size);
/* Waits until the probe's status file says it counted `rounds`; copies the status into line. */
void th_wait_rounds(struct th_probe *run, long rounds, char *line, size_t size);

#endif
