/* The library's files as one set. Everything is opened at start-up by the thread that starts
 * the library, before the program can juggle descriptors around it (rt_fifo, rt_procread,
 * rt_outputs open their own); here they are listed, handed to a table of the library's own,
 * closed and forgotten together. */
#include "rt_files.h"
#include "rt_fd.h"
#include "rt_fifo.h"
#include "rt_outputs.h"
#include "rt_procread.h"
#include "rt_record.h"

#ifdef RT_SANITIZER_REPORTS
#include <sanitizer/common_interface_defs.h>
#endif

#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define RT_FILES_MAX 16

static struct {
	/* The descriptors live in the library's own table only, the worker's or the keeper's
	 * (rt_files_went_private). */
	atomic_bool private_table;
	/* Sanitizer builds only: the runtime's report file, in both tables. */
	atomic_int sanitizer_reports;
} rt_f = {
    .sanitizer_reports = -1,
};

/* Every descriptor the library keeps, for the worker's table and the starter's. */
static size_t
rt_files_all(struct rt_fd **all)
{
	struct rt_fd *const *(*const parts[])(size_t *) = {rt_fifo_fds, rt_procread_fds,
	                                                   rt_outputs_fds};
	size_t n = 0;
	for (size_t p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
		size_t k;
		struct rt_fd *const *fds = parts[p](&k);
		for (size_t i = 0; i < k && n < RT_FILES_MAX; i++)
			all[n++] = fds[i];
	}
	return n;
}

/* Sanitizer builds only (make check-asan, check-ubsan and check-tsan define
 * RT_SANITIZER_REPORTS, the runtime's log_path). The runtime opens its report file at its first
 * report, in the reporting thread's descriptor table: once the worker has a table of its own,
 * that number is valid in one of the two only, and what the other side reports is lost or
 * written into one of the program's descriptors. The file is opened here instead, before the
 * worker starts, at a low number as the runtime would have it (the program's table holds
 * nothing of the library's up there), and handed to the runtime; the worker keeps its copy
 * (rt_files_numbers). The symbolizer's pipes, made at the first report too, cannot be handed
 * over: after a report, one from the other table may still send its symbolizer requests
 * astray (the first report fails those targets anyway). */
static void
rt_files_open_sanitizer_reports(const char *program)
{
	(void)program;
#ifdef RT_SANITIZER_REPORTS
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s.%s.%d", RT_SANITIZER_REPORTS, program, (int)getpid());
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		__sanitizer_set_report_fd((void *)(intptr_t)fd);
	atomic_store(&rt_f.sanitizer_reports, fd);
#endif
}

void
rt_files_open(const struct rt_config *cfg, const char *program, bool forked)
{
	rt_files_open_sanitizer_reports(program);
	rt_procread_open();
	rt_outputs_open(cfg);
	if (cfg->pressure_percent)
		rt_procread_open_pressure();
	rt_fifo_open(cfg->fifo, forked);
}

size_t
rt_files_numbers(int *out, size_t size)
{
	struct rt_fd *all[RT_FILES_MAX];
	size_t count = rt_files_all(all), n = 0;
	for (size_t i = 0; i < count && n < size; i++) {
		int fd = atomic_load(&all[i]->fd);
		if (fd >= 0)
			out[n++] = fd;
	}
	int reports = atomic_load(&rt_f.sanitizer_reports);
	if (reports >= 0 && n < size)
		out[n++] = reports;
	return n;
}

void
rt_files_close(void)
{
	struct rt_fd *all[RT_FILES_MAX];
	size_t count = rt_files_all(all);
	rt_files_remove();
	for (size_t i = 0; i < count; i++)
		rt_fd_close(all[i]);
	rt_outputs_drop_holds();
}

void
rt_files_went_private(void)
{
	/* The worker or the keeper has its own copies now: the starter's go, before the program
	 * runs on. */
	struct rt_fd *all[RT_FILES_MAX];
	size_t count = rt_files_all(all);
	atomic_store(&rt_f.private_table, true);
	for (size_t i = 0; i < count; i++)
		rt_fd_close_copy(all[i]);
	rt_outputs_drop_holds();
}

void
rt_files_forget_parent(void)
{
	/* In a table of the library's own the parent's descriptors never reached this child's. */
	if (atomic_load(&rt_f.private_table)) {
		struct rt_fd *all[RT_FILES_MAX];
		size_t count = rt_files_all(all);
		for (size_t i = 0; i < count; i++)
			atomic_store(&all[i]->fd, -1);
		atomic_store(&rt_f.private_table, false);
	}
	rt_fifo_forget_parent();
	rt_procread_forget_parent();
	rt_outputs_forget_parent();
	rt_record_forget_parent();
	/* Not closed: the child's runtime closes the parent's report file itself, at its first
	 * report, as it does in every fork child. */
	atomic_store(&rt_f.sanitizer_reports, -1);
}

void
rt_files_remove(void)
{
	rt_fifo_remove();
	rt_outputs_remove();
}
