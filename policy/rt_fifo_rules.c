#include "rt_fifo_rules.h"

const char *
rt_fifo_dir_refusal(const struct rt_file_facts *dir, unsigned uid)
{
	if (!dir->exists)
		return 0;
	if (dir->is_symlink)
		return "the directory is a symbolic link";
	if (!dir->is_dir)
		return "the directory is not a directory";
	if (dir->uid != uid)
		return "the directory belongs to another user";
	if (dir->mode & 022)
		return "the directory is writable by group or others";
	return 0;
}

enum rt_fifo_verdict
rt_fifo_node_verdict(const struct rt_file_facts *node, unsigned uid, const char **why)
{
	*why = 0;
	if (!node->exists)
		return RT_FIFO_CREATE;
	if (node->is_symlink)
		*why = "the path is a symbolic link";
	else if (!node->is_fifo)
		*why = "the path exists and is not a FIFO";
	else if (node->uid != uid)
		*why = "the FIFO belongs to another user";
	return *why ? RT_FIFO_REFUSE : RT_FIFO_REPLACE;
}
