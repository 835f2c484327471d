#include <criterion/criterion.h>

#include "rt_file_rules.h"

#define UID 1000

static struct rt_file_facts
own_dir(void)
{
	return (struct rt_file_facts){.exists = true, .is_dir = true, .uid = UID, .mode = 0700};
}

static struct rt_file_facts
shared_tmp(void)
{
	return (struct rt_file_facts){.exists = true, .is_dir = true, .uid = 0, .mode = 01777};
}

static struct rt_file_facts
own_fifo(void)
{
	return (struct rt_file_facts){.exists = true, .is_fifo = true, .uid = UID, .mode = 0600};
}

static struct rt_file_facts
own_file(void)
{
	return (struct rt_file_facts){.exists = true, .is_regular = true, .uid = UID, .mode = 0600};
}

static void
expect_dir_refused(enum rt_file_kind kind, struct rt_file_facts dir, const char *why)
{
	const char *got = rt_file_dir_refusal(kind, &dir, UID);
	cr_assert_not_null(got);
	cr_assert_str_eq(got, why);
}

static void
expect_node(enum rt_file_kind kind, struct rt_file_facts dir, struct rt_file_facts node,
            enum rt_file_verdict want, const char *want_why)
{
	const char *why = "stale";
	cr_assert_eq(rt_file_node_verdict(kind, &dir, &node, UID, &why), want);
	if (want_why)
		cr_assert_str_eq(why, want_why);
	else
		cr_assert_null(why);
}

Test(file_dir, fifo_directory_of_our_own)
{
	struct rt_file_facts dir = own_dir();
	cr_assert_null(rt_file_dir_refusal(RT_FILE_FIFO, &dir, UID));
	dir.mode = 0755;
	cr_assert_null(rt_file_dir_refusal(RT_FILE_STATUS, &dir, UID));
	struct rt_file_facts missing = {
	    .exists = false, .is_symlink = true, .uid = 0, .mode = 0777};
	cr_assert_null(rt_file_dir_refusal(RT_FILE_FIFO, &missing, UID));
}

Test(file_dir, fifo_directory_refusals)
{
	struct rt_file_facts dir = own_dir();
	dir.is_symlink = true;
	expect_dir_refused(RT_FILE_FIFO, dir, "the directory is a symbolic link");
	dir = own_dir();
	dir.is_dir = false;
	expect_dir_refused(RT_FILE_FIFO, dir, "the directory is not a directory");
	dir = own_dir();
	dir.uid = UID + 1;
	expect_dir_refused(RT_FILE_STATUS, dir, "the directory belongs to another user");
	dir = own_dir();
	dir.mode = 0720;
	expect_dir_refused(RT_FILE_FIFO, dir, "the directory is writable by group or others");
	dir.mode = 0702;
	expect_dir_refused(RT_FILE_FIFO, dir, "the directory is writable by group or others");
}

Test(file_dir, output_directory_may_be_shared_but_must_exist)
{
	struct rt_file_facts dir = shared_tmp();
	cr_assert_null(rt_file_dir_refusal(RT_FILE_OUTPUT, &dir, UID));
	dir.exists = false;
	expect_dir_refused(RT_FILE_OUTPUT, dir, "the directory does not exist");
	dir = shared_tmp();
	dir.is_dir = false;
	expect_dir_refused(RT_FILE_OUTPUT, dir, "the directory is not a directory");
}

Test(file_node, missing_is_created)
{
	struct rt_file_facts none = {.exists = false};
	expect_node(RT_FILE_FIFO, own_dir(), none, RT_FILE_CREATE, NULL);
	expect_node(RT_FILE_STATUS, own_dir(), none, RT_FILE_CREATE, NULL);
	expect_node(RT_FILE_OUTPUT, shared_tmp(), none, RT_FILE_CREATE, NULL);
}

Test(file_node, symlinks_are_never_followed)
{
	struct rt_file_facts link = {.exists = true, .is_symlink = true, .uid = UID};
	expect_node(RT_FILE_FIFO, own_dir(), link, RT_FILE_REFUSE, "the path is a symbolic link");
	expect_node(RT_FILE_STATUS, own_dir(), link, RT_FILE_REFUSE, "the path is a symbolic link");
	expect_node(RT_FILE_OUTPUT, own_dir(), link, RT_FILE_REFUSE, "the path is a symbolic link");
}

Test(file_node, fifo)
{
	expect_node(RT_FILE_FIFO, own_dir(), own_fifo(), RT_FILE_REPLACE, NULL);
	struct rt_file_facts node = own_fifo();
	node.uid = UID + 1;
	expect_node(RT_FILE_FIFO, own_dir(), node, RT_FILE_REFUSE,
	            "the FIFO belongs to another user");
	expect_node(RT_FILE_FIFO, own_dir(), own_file(), RT_FILE_REFUSE,
	            "the path exists and is not a FIFO");
}

Test(file_node, status)
{
	expect_node(RT_FILE_STATUS, own_dir(), own_file(), RT_FILE_REPLACE, NULL);
	expect_node(RT_FILE_STATUS, own_dir(), own_fifo(), RT_FILE_REFUSE,
	            "the path exists and is not a regular file");
	struct rt_file_facts node = own_file();
	node.uid = 0;
	expect_node(RT_FILE_STATUS, own_dir(), node, RT_FILE_REFUSE,
	            "the file belongs to another user");
}

Test(file_node, output)
{
	expect_node(RT_FILE_OUTPUT, shared_tmp(), own_file(), RT_FILE_USE, NULL);
	struct rt_file_facts foreign = own_file();
	foreign.uid = UID + 7;
	expect_node(RT_FILE_OUTPUT, shared_tmp(), foreign, RT_FILE_REFUSE,
	            "the file belongs to another user and its directory is writable by others");
	/* Another user's file in a directory only its owner writes: that owner chose it. */
	struct rt_file_facts private_dir = own_dir();
	private_dir.mode = 0755;
	expect_node(RT_FILE_OUTPUT, private_dir, foreign, RT_FILE_USE, NULL);
	struct rt_file_facts dir_node = {.exists = true, .is_dir = true, .uid = UID};
	expect_node(RT_FILE_OUTPUT, shared_tmp(), dir_node, RT_FILE_REFUSE,
	            "the path exists and is not a regular file");
	expect_node(RT_FILE_OUTPUT, shared_tmp(), own_fifo(), RT_FILE_REFUSE,
	            "the path exists and is not a regular file");
}

Test(file_fd_floor, typical_limits)
{
	cr_assert_eq(rt_file_fd_floor(1024), 960);
	cr_assert_eq(rt_file_fd_floor(1048576), 960);
	cr_assert_eq(rt_file_fd_floor(UINT64_MAX), 960);
	cr_assert_eq(rt_file_fd_floor(4096), 960);
	cr_assert_eq(rt_file_fd_floor(256), 192);
	cr_assert_eq(rt_file_fd_floor(128), 64);
}

Test(file_fd_floor, tiny_limits_stay_above_stdio)
{
	cr_assert_eq(rt_file_fd_floor(100), 50);
	cr_assert_eq(rt_file_fd_floor(8), 4);
	cr_assert_eq(rt_file_fd_floor(4), 3);
	cr_assert_eq(rt_file_fd_floor(0), 3);
	for (uint64_t limit = 0; limit < 3000; limit++) {
		int floor = rt_file_fd_floor(limit);
		cr_assert_geq(floor, 3);
		cr_assert_lt(floor, 1024);
		if (limit >= 8)
			cr_assert_lt((uint64_t)floor, limit, "limit %lu", (unsigned long)limit);
	}
}

Test(file_write_fits, within_the_file_size_limit_only)
{
	cr_assert(rt_file_write_fits(0, 100, UINT64_MAX));
	cr_assert(rt_file_write_fits(UINT64_MAX - 100, 100, UINT64_MAX));
	cr_assert(rt_file_write_fits(4000, 96, 4096), "up to the limit itself");
	cr_assert_not(rt_file_write_fits(4000, 97, 4096), "one byte past it");
	cr_assert_not(rt_file_write_fits(4096, 1, 4096), "at the limit (SIGXFSZ)");
	cr_assert_not(rt_file_write_fits(5000, 0, 4096), "a file already past it");
	cr_assert(rt_file_write_fits(0, 0, 0));
	cr_assert_not(rt_file_write_fits(0, 1, 0));
}

/* The worker's own table first; the keeper's where unshare is refused; the program's only where
 * the user accepts its races. */
Test(file_table, first_that_can_be_had)
{
	cr_assert_eq(rt_file_table_choose(true, true, true), RT_FILE_TABLE_PRIVATE);
	cr_assert_eq(rt_file_table_choose(true, false, false), RT_FILE_TABLE_PRIVATE);
	cr_assert_eq(rt_file_table_choose(false, true, true), RT_FILE_TABLE_KEEPER);
	cr_assert_eq(rt_file_table_choose(false, true, false), RT_FILE_TABLE_KEEPER);
	cr_assert_eq(rt_file_table_choose(false, false, true), RT_FILE_TABLE_SHARED);
	cr_assert_eq(rt_file_table_choose(false, false, false), RT_FILE_TABLE_NONE);
}

Test(file_table, tasks_and_words)
{
	cr_assert_eq(rt_file_table_tasks(RT_FILE_TABLE_PRIVATE), 1);
	cr_assert_eq(rt_file_table_tasks(RT_FILE_TABLE_KEEPER), 2);
	cr_assert_eq(rt_file_table_tasks(RT_FILE_TABLE_SHARED), 1);
	cr_assert_str_eq(rt_file_table_word(RT_FILE_TABLE_PRIVATE), "private");
	cr_assert_str_eq(rt_file_table_word(RT_FILE_TABLE_KEEPER), "keeper");
	cr_assert_str_eq(rt_file_table_word(RT_FILE_TABLE_SHARED), "shared");
	cr_assert_str_eq(rt_file_table_word(RT_FILE_TABLE_NONE), "none");
}
