#include "rt_procfs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

bool
rt_procfs_statm_rss_kib(const char *text, uint64_t page_size, uint64_t *rss_kib)
{
	uint64_t size, resident;
	if (sscanf(text, "%" SCNu64 " %" SCNu64, &size, &resident) != 2)
		return false;
	*rss_kib = resident * page_size / 1024;
	return true;
}

/* The "Key:   N kB" line's N, if text has it at a line's start. */
static bool
rt_procfs_field(const char *text, const char *key, uint64_t *kib)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line;) {
		if (!strncmp(line, key, klen) && line[klen] == ':')
			return sscanf(line + klen + 1, " %" SCNu64 " kB", kib) == 1;
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return false;
}

bool
rt_procfs_smaps_rollup(const char *text, struct rt_procfs_rss *out)
{
	uint64_t rss, anon, lazyfree;
	if (!rt_procfs_field(text, "Rss", &rss) || !rt_procfs_field(text, "Anonymous", &anon) ||
	    !rt_procfs_field(text, "LazyFree", &lazyfree) || anon > rss || lazyfree > anon)
		return false;
	out->rss_kib = rss;
	out->anon_kib = anon - lazyfree;
	out->file_kib = rss - anon;
	out->lazyfree_kib = lazyfree;
	return true;
}

bool
rt_procfs_stat_threads(const char *text, uint64_t *threads)
{
	const char *end = strrchr(text, ')');
	if (!end)
		return false;
	/* After ")": state (3) ... num_threads (20): skip 17 fields. */
	const char *at = end + 1;
	for (int field = 3; field < 20; field++) {
		at += strspn(at, " ");
		size_t len = strcspn(at, " ");
		if (len == 0)
			return false;
		at += len;
	}
	return sscanf(at, " %" SCNu64, threads) == 1;
}

bool
rt_procfs_stat_alone(const char *text)
{
	uint64_t threads;
	const char *end = strrchr(text, ')');
	if (!end || !rt_procfs_stat_threads(text, &threads))
		return false;
	char state = end[1] == ' ' ? end[2] : '?';
	return threads == 1 || (threads == 2 && state == 'Z');
}
