/* The library's output files. Each is opened at start-up and lifted above the
 * floor at once (rt_fd); later it is only written (rt_record), named and unlinked. The stats and
 * log files of a per-process template (%p) are opened unnamed (O_TMPFILE) and get their name
 * with their first line, so that a process that never reports leaves no empty file
 * (roundtrim(7), FILES). An unnamed file is also held by a mapping without access: its inode
 * lives only as long as something refers to it, and the check before each use (rt_fd: device
 * and inode) holds only while no other file can have that number. */
#include "rt_outputs.h"
#include "rt_config.h"
#include "rt_fd.h"
#include "rt_file_rules.h"
#include "rt_io.h"
#include "rt_node.h"
#include "rt_out.h"
#include "rt_path.h"
#include "rt_record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct rt_output {
	struct rt_fd fd;
	char path[RT_CONFIG_PATH_MAX];
	/* O_TMPFILE: named with its first line (given to the program's user meanwhile,
	 * rt_outputs_give_to); read by the program's threads too. */
	atomic_bool unnamed;
	/* An unnamed file's reference that the program cannot close: with the descriptor as its
	 * only one, a program that closed it would free the inode, and the next file made in
	 * that directory could get its number (ext4 gives it at once) and pass the check. */
	void *hold;
	bool made_at_start; /* named empty (no O_TMPFILE there): removed if unused */
	bool per_process;   /* its template has %p */
	atomic_bool written;
	bool lost;      /* it could not be named: each record meant for it is lost, and counted */
	bool loss_said; /* its first lost record was said on stderr */
	size_t len;     /* for a file rewritten in place: the longest content written */
};

static struct {
	struct rt_output stats, log, prom, trace, sites;
	atomic_int owner; /* the pid that opened these files: only it removes them */
} rt_o = {
    .stats = {.fd = RT_FD_NONE("stats file")},
    .log = {.fd = RT_FD_NONE("log file")},
    .prom = {.fd = RT_FD_NONE("Prometheus file")},
    .trace = {.fd = RT_FD_NONE("trace file")},
    .sites = {.fd = RT_FD_NONE("sites file")},
};

static struct rt_fd *const rt_outputs_all[] = {
    &rt_o.stats.fd, &rt_o.log.fd, &rt_o.prom.fd, &rt_o.trace.fd, &rt_o.sites.fd,
};

static struct rt_output *const rt_outputs_each[] = {
    &rt_o.stats, &rt_o.log, &rt_o.prom, &rt_o.trace, &rt_o.sites,
};
#define RT_OUTPUTS_COUNT (sizeof(rt_outputs_each) / sizeof(rt_outputs_each[0]))

/* An unnamed file (O_TMPFILE) in dirfd, held (out->hold; a mapping needs it readable), or -1:
 * where it cannot be held, the caller makes it named at once. */
static int
rt_outputs_open_unnamed(struct rt_output *out, int dirfd, int mode)
{
	int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | mode | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	void *hold = mmap(NULL, 1, PROT_NONE, MAP_PRIVATE, fd, 0);
	if (hold == MAP_FAILED) {
		close(fd);
		return -1;
	}
	out->hold = hold;
	atomic_store(&out->unnamed, true);
	return fd;
}

static void
rt_outputs_release_hold(struct rt_output *out)
{
	if (out->hold)
		munmap(out->hold, 1);
	out->hold = NULL;
}

/* Opens a stats or log file: an existing one for appending, a missing per-process one unnamed
 * (named by its first line), a missing shared one (no %p: several processes append to it) at
 * once. A file rewritten in place (the Prometheus file) the same way, but emptied and not for
 * appending: with O_APPEND, pwrite(2) appends whatever its offset (pwrite(2), BUGS). */
static void
rt_outputs_open_one(struct rt_output *out, const char *tmpl, bool rewritten)
{
	int mode = rewritten ? O_TRUNC : O_APPEND;
	char dir[RT_CONFIG_PATH_MAX], name[NAME_MAX + 1];
	const char *refusal;
	unsigned uid = geteuid();
	int dirfd = -1, fd = -1;
	struct stat st;
	if (!tmpl[0])
		return;
	out->per_process = rt_path_template_per_pid(tmpl);
	if (!rt_path_expand(out->path, sizeof(out->path), tmpl, getpid()) ||
	    !rt_path_split(out->path, dir, sizeof(dir), name, sizeof(name))) {
		rt_warn("%s off: cannot expand %s", out->fd.feature, tmpl);
		goto label_return;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int open_errno = errno;
	/* Where the directory cannot be opened, stat(2) tells the rules what is there (it takes no
	 * descriptor: under EMFILE the directory exists, and the open's error is the cause). */
	struct rt_file_facts dir_facts = {.exists = false};
	if (dirfd >= 0 ? fstat(dirfd, &st) == 0 : stat(dir, &st) == 0)
		dir_facts = rt_node_facts(&st);
	if ((refusal = rt_file_dir_refusal(RT_FILE_OUTPUT, &dir_facts, uid))) {
		rt_warn("%s off: refusing %s: %s", out->fd.feature, out->path, refusal);
		goto label_return;
	}
	if (dirfd < 0) {
		rt_warn("%s off: cannot open %s: %s", out->fd.feature, dir, strerror(open_errno));
		goto label_return;
	}
	struct rt_file_facts node = rt_node_at(dirfd, name);
	switch (rt_file_node_verdict(RT_FILE_OUTPUT, &dir_facts, &node, uid, &refusal)) {
	case RT_FILE_REFUSE:
	case RT_FILE_REPLACE:
		rt_warn("%s off: refusing %s: %s", out->fd.feature, out->path, refusal);
		goto label_return;
	case RT_FILE_USE:
		fd = openat(dirfd, name, O_WRONLY | mode | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 &&
		    (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != node.uid)) {
			rt_warn("%s off: %s changed while it was opened", out->fd.feature,
			        out->path);
			goto label_return;
		}
		break;
	case RT_FILE_CREATE:
		if (rt_path_template_per_pid(tmpl))
			fd = rt_outputs_open_unnamed(out, dirfd, mode);
		if (fd < 0) {
			/* Shared, or a file system without O_TMPFILE. */
			fd = openat(dirfd, name,
			            O_WRONLY | mode | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
			            0600);
			out->made_at_start = fd >= 0 && rt_path_template_per_pid(tmpl);
		}
		break;
	}
	if (fd < 0) {
		rt_warn("%s off: cannot open %s: %s", out->fd.feature, out->path, strerror(errno));
		goto label_return;
	}
	if (!rt_fd_adopt(&out->fd, fd)) {
		rt_warn("%s off: cannot keep %s: %s", out->fd.feature, out->path, strerror(errno));
		rt_outputs_release_hold(out);
	}
	fd = -1;
label_return:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
}

void
rt_outputs_open(const struct rt_config *cfg)
{
	atomic_store(&rt_o.owner, getpid());
	rt_outputs_open_one(&rt_o.log, cfg->log, false);
	rt_outputs_open_one(&rt_o.stats, cfg->stats, false);
	rt_outputs_open_one(&rt_o.prom, cfg->prom, true);
	rt_outputs_open_one(&rt_o.trace, cfg->trace, false);
	rt_outputs_open_one(&rt_o.sites, cfg->sites, false);
}

struct rt_fd *const *
rt_outputs_fds(size_t *n)
{
	*n = sizeof(rt_outputs_all) / sizeof(rt_outputs_all[0]);
	return rt_outputs_all;
}

static void
rt_outputs_forget(struct rt_output *out)
{
	rt_fd_close(&out->fd);
	rt_outputs_release_hold(out);
	out->path[0] = '\0';
	atomic_store(&out->unnamed, false);
	out->made_at_start = out->per_process = out->lost = out->loss_said = false;
	out->len = 0;
	atomic_store(&out->written, false);
}

void
rt_outputs_drop_holds(void)
{
	for (size_t i = 0; i < RT_OUTPUTS_COUNT; i++)
		rt_outputs_release_hold(rt_outputs_each[i]);
}

void
rt_outputs_forget_parent(void)
{
	for (size_t i = 0; i < RT_OUTPUTS_COUNT; i++)
		rt_outputs_forget(rt_outputs_each[i]);
	atomic_store(&rt_o.owner, 0);
}

/* Gives an unnamed output its name. linkat never follows or replaces what is at the path; a
 * name taken meanwhile means another process owns that file. One that cannot be named is lost,
 * with what it holds: counted (`holds`), as each record meant for it from then on. */
static bool
rt_outputs_give_name(struct rt_output *out, int fd, unsigned holds)
{
	if (!atomic_load(&out->unnamed))
		return true;
	if (rt_io_name(fd, out->path) == 0) {
		atomic_store(&out->unnamed, false);
		/* Its name holds the inode now; the mapping would only show in /proc/self/maps. */
		rt_outputs_release_hold(out);
		return true;
	}
	rt_warn("%s off: cannot create %s: %s", out->fd.feature, out->path, strerror(errno));
	rt_fd_close(&out->fd);
	rt_outputs_release_hold(out);
	atomic_store(&out->unnamed, false);
	out->lost = true;
	while (holds--)
		rt_record_lose();
	return false;
}

/* An output has its first content, the record just written: an unnamed one gets its name. */
static bool
rt_outputs_name(struct rt_output *out, int fd)
{
	if (atomic_exchange(&out->written, true))
		return true;
	return rt_outputs_give_name(out, fd, 1);
}

bool
rt_outputs_unnamed(void)
{
	for (size_t i = 0; i < RT_OUTPUTS_COUNT; i++)
		if (atomic_load(&rt_outputs_each[i]->unnamed))
			return true;
	return false;
}

void
rt_outputs_give_to(uid_t uid, gid_t gid)
{
	for (size_t i = 0; i < RT_OUTPUTS_COUNT; i++) {
		struct rt_output *out = rt_outputs_each[i];
		int fd = rt_fd_get(&out->fd);
		if (fd >= 0 && atomic_load(&out->unnamed))
			rt_io_fchown(fd, uid, gid);
	}
}

void
rt_outputs_write_prom(const char *text, size_t len)
{
	int fd = rt_fd_get(&rt_o.prom.fd);
	if (fd < 0) {
		if (rt_o.prom.lost)
			rt_record_lose();
		return;
	}
	int err = rt_record_rewrite(fd, &rt_o.prom.len, text, len);
	if (err)
		rt_record_drop(&rt_o.prom.fd, rt_o.prom.path, &rt_o.prom.loss_said, err);
	else
		rt_outputs_name(&rt_o.prom, fd);
}

enum rt_outputs_put {
	RT_OUTPUTS_PUT_WRITTEN,
	RT_OUTPUTS_PUT_DROPPED, /* the file could not take it: counted, the file stays */
	RT_OUTPUTS_PUT_GONE,    /* no file (never opened, refused, or lost) */
};

/* An unnamed file gets its name with its first whole record. */
static enum rt_outputs_put
rt_outputs_line(struct rt_output *out, const char *line, size_t len)
{
	int fd = rt_fd_get(&out->fd);
	if (fd < 0) {
		if (out->lost)
			rt_record_lose();
		return RT_OUTPUTS_PUT_GONE;
	}
	int err = rt_record_append(fd, line, len);
	if (!err)
		return rt_outputs_name(out, fd) ? RT_OUTPUTS_PUT_WRITTEN : RT_OUTPUTS_PUT_GONE;
	rt_record_drop(&out->fd, out->path, &out->loss_said, err);
	return RT_OUTPUTS_PUT_DROPPED;
}

void
rt_outputs_stats_line(const char *line, size_t len)
{
	rt_outputs_line(&rt_o.stats, line, len);
}

void
rt_outputs_log_line(const char *line, size_t len)
{
	if (rt_outputs_line(&rt_o.log, line, len) == RT_OUTPUTS_PUT_GONE)
		rt_out_stderr(line, len);
}

/* A file lost after it was set up still takes its records: each is counted lost. */
bool
rt_outputs_have_stats(void)
{
	return rt_fd_valid(&rt_o.stats.fd) || rt_o.stats.lost;
}

const char *
rt_outputs_stats_path(void)
{
	return rt_fd_valid(&rt_o.stats.fd) ? rt_o.stats.path : "";
}

bool
rt_outputs_sites_line(const char *line, size_t len)
{
	return rt_outputs_line(&rt_o.sites, line, len) == RT_OUTPUTS_PUT_WRITTEN;
}

bool
rt_outputs_have_sites(void)
{
	return rt_fd_valid(&rt_o.sites.fd);
}

void
rt_outputs_trace_line(const char *line, size_t len)
{
	rt_outputs_line(&rt_o.trace, line, len);
}

bool
rt_outputs_have_trace(void)
{
	return rt_fd_valid(&rt_o.trace.fd) || rt_o.trace.lost;
}

/* A per-process file made empty at start-up, on a file system without O_TMPFILE, and never
 * written: it goes with the process, as if it had never been made. */
static void
rt_outputs_remove_unused(struct rt_output *out)
{
	struct stat ours, there;
	int fd = rt_fd_peek(&out->fd);
	if (!out->made_at_start || atomic_load(&out->written) || fd < 0 || fstat(fd, &ours) != 0 ||
	    ours.st_size != 0 || lstat(out->path, &there) != 0 || there.st_ino != ours.st_ino ||
	    there.st_dev != ours.st_dev)
		return;
	unlink(out->path);
}

void
rt_outputs_remove(void)
{
	if (atomic_load(&rt_o.owner) != getpid())
		return;
	rt_outputs_remove_unused(&rt_o.stats);
	rt_outputs_remove_unused(&rt_o.log);
	rt_outputs_remove_unused(&rt_o.trace);
	rt_outputs_remove_unused(&rt_o.sites);
	rt_outputs_remove_unused(&rt_o.prom);
	/* A per-process Prometheus file would be scraped for ever after the process is gone. */
	if (rt_o.prom.per_process && atomic_load(&rt_o.prom.written))
		unlink(rt_o.prom.path);
}
