#include "rt_file_rules.h"

#include <stddef.h>

/* Descriptors the library may keep, above the floor: the FIFO, the status file, /proc's statm
 * and smaps_rollup, the stats and log files, and room for more. */
#define RT_FILE_FD_ROOM 64
#define RT_FILE_FD_CEILING 1024

static bool
rt_file_shared_dir(const struct rt_file_facts *dir)
{
	return (dir->mode & 022) != 0;
}

const char *
rt_file_dir_refusal(enum rt_file_kind kind, const struct rt_file_facts *dir, unsigned uid)
{
	if (kind == RT_FILE_OUTPUT) {
		/* Output directories are the user's choice (/var/tmp is fine); the file itself
		 * is checked against them below. The facts follow symbolic links. */
		if (!dir->exists)
			return "the directory does not exist";
		if (!dir->is_dir)
			return "the directory is not a directory";
		return NULL;
	}
	if (!dir->exists)
		return NULL;
	if (dir->is_symlink)
		return "the directory is a symbolic link";
	if (!dir->is_dir)
		return "the directory is not a directory";
	if (dir->uid != uid)
		return "the directory belongs to another user";
	if (rt_file_shared_dir(dir))
		return "the directory is writable by group or others";
	return NULL;
}

enum rt_file_verdict
rt_file_node_verdict(enum rt_file_kind kind, const struct rt_file_facts *dir,
                     const struct rt_file_facts *node, unsigned uid, const char **why)
{
	*why = NULL;
	if (!node->exists)
		return RT_FILE_CREATE;
	if (node->is_symlink) {
		*why = "the path is a symbolic link";
		return RT_FILE_REFUSE;
	}
	switch (kind) {
	case RT_FILE_FIFO:
		if (!node->is_fifo)
			*why = "the path exists and is not a FIFO";
		else if (node->uid != uid)
			*why = "the FIFO belongs to another user";
		return *why ? RT_FILE_REFUSE : RT_FILE_REPLACE;
	case RT_FILE_STATUS:
		if (!node->is_regular)
			*why = "the path exists and is not a regular file";
		else if (node->uid != uid)
			*why = "the file belongs to another user";
		return *why ? RT_FILE_REFUSE : RT_FILE_REPLACE;
	case RT_FILE_OUTPUT:
		if (!node->is_regular)
			*why = "the path exists and is not a regular file";
		/* Another user's file in a directory that others can write is the shape of a
		 * planted file (the attack fs.protected_regular stops where it is on). */
		else if (node->uid != uid && rt_file_shared_dir(dir))
			*why = "the file belongs to another user and its directory is writable by "
			       "others";
		return *why ? RT_FILE_REFUSE : RT_FILE_USE;
	}
	*why = "unknown kind of file";
	return RT_FILE_REFUSE;
}

bool
rt_file_write_fits(uint64_t offset, uint64_t len, uint64_t limit)
{
	return offset <= limit && len <= limit - offset;
}

int
rt_file_fd_floor(uint64_t nofile_limit)
{
	uint64_t top = nofile_limit < RT_FILE_FD_CEILING ? nofile_limit : RT_FILE_FD_CEILING;
	if (top >= 2 * RT_FILE_FD_ROOM)
		return (int)(top - RT_FILE_FD_ROOM);
	/* A tiny limit: the upper half, and never among stdin, stdout and stderr. */
	return top / 2 > 3 ? (int)(top / 2) : 3;
}

enum rt_file_table
rt_file_table_choose(bool unshared, bool keeper, bool shared_accepted)
{
	if (unshared)
		return RT_FILE_TABLE_PRIVATE;
	if (keeper)
		return RT_FILE_TABLE_KEEPER;
	return shared_accepted ? RT_FILE_TABLE_SHARED : RT_FILE_TABLE_NONE;
}

unsigned
rt_file_table_tasks(enum rt_file_table table)
{
	return table == RT_FILE_TABLE_KEEPER ? 2 : 1;
}

const char *
rt_file_table_word(enum rt_file_table table)
{
	switch (table) {
	case RT_FILE_TABLE_PRIVATE:
		return "private";
	case RT_FILE_TABLE_KEEPER:
		return "keeper";
	case RT_FILE_TABLE_SHARED:
		return "shared";
	case RT_FILE_TABLE_NONE:
		break;
	}
	return "none";
}
