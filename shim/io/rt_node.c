/* What is at a path, for the rules of policy/rt_file_rules: read without following a symbolic
 * link, and read again through the descriptor once it is open. */
#include "rt_node.h"

#include <fcntl.h>

struct rt_file_facts
rt_node_facts(const struct stat *st)
{
	struct rt_file_facts f = {
	    .exists = true,
	    .is_symlink = S_ISLNK(st->st_mode),
	    .is_dir = S_ISDIR(st->st_mode),
	    .is_fifo = S_ISFIFO(st->st_mode),
	    .is_regular = S_ISREG(st->st_mode),
	    .uid = st->st_uid,
	    .mode = st->st_mode & 07777,
	};
	return f;
}

struct rt_file_facts
rt_node_at(int dirfd, const char *path)
{
	struct stat st;
	struct rt_file_facts none = {.exists = false};
	if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return none;
	return rt_node_facts(&st);
}

bool
rt_node_is(int fd, mode_t type, unsigned uid)
{
	struct stat st;
	return fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == type && st.st_uid == uid;
}
