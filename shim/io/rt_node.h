/* rt_node: what stands at a path or behind a descriptor, read into the facts that
 * policy/rt_file_rules judges before the library makes or opens a file there. */
#ifndef RT_NODE_H
#define RT_NODE_H

#include "rt_file_rules.h"

#include <stdbool.h>
#include <sys/stat.h>

struct rt_file_facts rt_node_facts(const struct stat *st);
/* What is at path, relative to dirfd, the last component not followed; exists is false when
 * nothing is there (or it cannot be read). */
struct rt_file_facts rt_node_at(int dirfd, const char *path);
/* Whether the descriptor is what the facts described when they were read (no swap between). */
bool rt_node_is(int fd, mode_t type, unsigned uid);

#endif
