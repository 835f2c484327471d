/* The /proc and cgroup files the library reads, opened at start-up and read again through their
 * descriptors (pread at offset 0): nothing is opened later. policy/rt_procfs and
 * policy/rt_pressure read what they hold. */
#include "rt_procread.h"
#include "rt_config.h"
#include "rt_fd.h"
#include "rt_io.h"
#include "rt_out.h"
#include "rt_pages.h"
#include "rt_pressure.h"
#include "rt_procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct {
	struct rt_fd statm, smaps, stat;
	struct rt_fd mem_used, mem_limit, meminfo; /* ROUNDTRIM_PRESSURE's readings */
	enum rt_pressure_source mem_source;
} rt_pr = {
    .statm = RT_FD_NONE("RSS readings"),
    .smaps = RT_FD_NONE("RSS split"),
    .stat = RT_FD_NONE("thread count"),
    .mem_used = RT_FD_NONE("pressure trigger"),
    .mem_limit = RT_FD_NONE("pressure trigger"),
    .meminfo = RT_FD_NONE("pressure trigger"),
};

static struct rt_fd *const rt_procread_all[] = {
    &rt_pr.statm, &rt_pr.smaps, &rt_pr.stat, &rt_pr.mem_used, &rt_pr.mem_limit, &rt_pr.meminfo,
};

bool
rt_procread_slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t len = 0;
	ssize_t n;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return len > 0;
}

static bool
rt_procread_adopt_path(struct rt_fd *f, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 && rt_fd_adopt(f, fd);
}

/* ROUNDTRIM_PRESSURE: the memory cgroup's two files when it has a limit, and /proc/meminfo
 * for the machine when it has none (policy/rt_pressure finds them). */
void
rt_procread_open_pressure(void)
{
	static RT_PAGES_APART char cgroup[4096];
	static RT_PAGES_APART char mountinfo[65536];
	char dir[RT_CONFIG_PATH_MAX], path[RT_CONFIG_PATH_MAX + 64];
	enum rt_pressure_source source = RT_PRESSURE_NONE;
	if (rt_procread_slurp("/proc/self/cgroup", cgroup, sizeof(cgroup)) &&
	    rt_procread_slurp("/proc/self/mountinfo", mountinfo, sizeof(mountinfo)))
		source = rt_pressure_cgroup_dir(cgroup, mountinfo, dir, sizeof(dir));
	/* Read for this once: resident, they would be the library's own memory for good. */
	rt_pages_give_back(cgroup, sizeof(cgroup));
	rt_pages_give_back(mountinfo, sizeof(mountinfo));
	if (source != RT_PRESSURE_NONE) {
		snprintf(path, sizeof(path), "%s/%s", dir, rt_pressure_used_file(source));
		bool used = rt_procread_adopt_path(&rt_pr.mem_used, path);
		snprintf(path, sizeof(path), "%s/%s", dir, rt_pressure_limit_file(source));
		if (used && rt_procread_adopt_path(&rt_pr.mem_limit, path))
			rt_pr.mem_source = source;
	}
	if (!rt_procread_adopt_path(&rt_pr.meminfo, "/proc/meminfo") && !rt_pr.mem_source)
		rt_warn(
		    "pressure trigger off: neither a memory cgroup nor /proc/meminfo can be read");
}

void
rt_procread_open(void)
{
	if (!rt_procread_adopt_path(&rt_pr.statm, "/proc/self/statm"))
		rt_warn("RSS readings off: cannot open /proc/self/statm: %s", strerror(errno));
	/* Read after actions only: it walks every mapping (about 3 ms per GiB resident). */
	rt_procread_adopt_path(&rt_pr.smaps, "/proc/self/smaps_rollup");
	rt_procread_adopt_path(&rt_pr.stat, "/proc/self/stat");
}

struct rt_fd *const *
rt_procread_fds(size_t *n)
{
	*n = sizeof(rt_procread_all) / sizeof(rt_procread_all[0]);
	return rt_procread_all;
}

void
rt_procread_forget_parent(void)
{
	for (size_t i = 0; i < sizeof(rt_procread_all) / sizeof(rt_procread_all[0]); i++)
		rt_fd_close(rt_procread_all[i]);
	rt_pr.mem_source = RT_PRESSURE_NONE;
}

/* The whole of a /proc or cgroup file through its descriptor: false when unreadable. */
static bool
rt_procread_pread(struct rt_fd *f, char *buf, size_t size)
{
	int fd = rt_fd_get(f);
	if (fd < 0)
		return false;
	ssize_t n;
	do
		n = rt_io_pread(fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

bool
rt_procread_memory(uint64_t *used, uint64_t *limit)
{
	char buf[4096];
	bool limited = false;
	uint64_t lim, use;
	if (rt_pr.mem_source && rt_procread_pread(&rt_pr.mem_limit, buf, sizeof(buf)) &&
	    rt_pressure_read_value(buf, &lim, &limited) && limited &&
	    rt_procread_pread(&rt_pr.mem_used, buf, sizeof(buf)) &&
	    rt_pressure_read_value(buf, &use, &limited)) {
		*used = use;
		*limit = lim;
		return true;
	}
	/* No limit on the cgroup: the machine's memory is the limit. */
	return rt_procread_pread(&rt_pr.meminfo, buf, sizeof(buf)) &&
	       rt_pressure_read_meminfo(buf, used, limit);
}

uint64_t
rt_procread_rss_kib(void)
{
	char buf[128];
	uint64_t kib;
	if (!rt_procread_pread(&rt_pr.statm, buf, sizeof(buf)) ||
	    !rt_procfs_statm_rss_kib(buf, (uint64_t)sysconf(_SC_PAGESIZE), &kib))
		return 0;
	return kib;
}

bool
rt_procread_alone(unsigned held)
{
	char buf[1024];
	struct rt_procfs_stat st;
	return rt_procread_pread(&rt_pr.stat, buf, sizeof(buf)) && rt_procfs_stat(buf, &st) &&
	       rt_procfs_stat_alone(&st, held);
}

bool
rt_procread_rss_split(struct rt_procfs_rss *out)
{
	char buf[4096];
	return rt_procread_pread(&rt_pr.smaps, buf, sizeof(buf)) &&
	       rt_procfs_smaps_rollup(buf, out);
}
