#include "rt_target.h"

#include "rt_config.h"
#include "rt_file_rules.h"
#include "rt_path.h"

#include <string.h>

#define RT_TARGET_DELETED " (deleted)"

bool
rt_target_fifo_status(const char *link, char *status, size_t size)
{
	size_t len = strlen(link), deleted = sizeof(RT_TARGET_DELETED) - 1;
	if (link[0] != '/' ||
	    (len > deleted && strcmp(link + len - deleted, RT_TARGET_DELETED) == 0))
		return false;
	return rt_path_status_for_fifo(status, size, link);
}

bool
rt_target_status_is_of(const struct rt_status_record *st, int pid)
{
	return st->pid == pid;
}

bool
rt_target_selected(const struct rt_status_record *st, const char *globs)
{
	return !globs || rt_config_match(globs, st->program);
}

bool
rt_target_answered(enum rt_proto_kind kind, const struct rt_status_record *before,
                   const struct rt_status_record *now, bool *acted)
{
	*acted = now->actions > before->actions;
	if (kind == RT_PROTO_TRIM)
		return *acted;
	return now->rounds > before->rounds;
}

bool
rt_target_is_worker_comm(const char *comm)
{
	size_t len = strlen(RT_FILE_WORKER_THREAD);
	return strncmp(comm, RT_FILE_WORKER_THREAD, len) == 0 &&
	       (comm[len] == '\0' || comm[len] == '\n');
}
