#include <criterion/criterion.h>

#include "rt_fifo_rules.h"

#define UID 1000

static struct rt_file_facts
own_dir(void)
{
	return (struct rt_file_facts){.exists = true, .is_dir = true, .uid = UID, .mode = 0700};
}

static struct rt_file_facts
own_fifo(void)
{
	return (struct rt_file_facts){.exists = true, .is_fifo = true, .uid = UID, .mode = 0600};
}

static void
expect_dir_refused(struct rt_file_facts dir, const char *why)
{
	const char *got = rt_fifo_dir_refusal(&dir, UID);
	cr_assert_not_null(got);
	cr_assert_str_eq(got, why);
}

static void
expect_node(struct rt_file_facts node, enum rt_fifo_verdict want, const char *want_why)
{
	const char *why = "stale";
	cr_assert_eq(rt_fifo_node_verdict(&node, UID, &why), want);
	if (want_why)
		cr_assert_str_eq(why, want_why);
	else
		cr_assert_null(why);
}

Test(fifo_dir, acceptable)
{
	struct rt_file_facts dir = own_dir();
	cr_assert_null(rt_fifo_dir_refusal(&dir, UID));
	dir.mode = 0755;
	cr_assert_null(rt_fifo_dir_refusal(&dir, UID));
	struct rt_file_facts missing = {
	    .exists = false, .is_symlink = true, .uid = 0, .mode = 0777};
	cr_assert_null(rt_fifo_dir_refusal(&missing, UID));
}

Test(fifo_dir, symlink)
{
	struct rt_file_facts dir = own_dir();
	dir.is_symlink = true;
	expect_dir_refused(dir, "the directory is a symbolic link");
}

Test(fifo_dir, not_a_directory)
{
	struct rt_file_facts dir = own_dir();
	dir.is_dir = false;
	expect_dir_refused(dir, "the directory is not a directory");
}

Test(fifo_dir, foreign_owner)
{
	struct rt_file_facts dir = own_dir();
	dir.uid = 0;
	expect_dir_refused(dir, "the directory belongs to another user");
}

Test(fifo_dir, writable_by_others)
{
	static const unsigned modes[] = {0720, 0702, 0777, 01777, 0770};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct rt_file_facts dir = own_dir();
		dir.mode = modes[i];
		expect_dir_refused(dir, "the directory is writable by group or others");
	}
}

Test(fifo_node, missing)
{
	expect_node((struct rt_file_facts){.exists = false}, RT_FIFO_CREATE, NULL);
}

Test(fifo_node, own_fifo_is_replaced)
{
	expect_node(own_fifo(), RT_FIFO_REPLACE, NULL);
}

Test(fifo_node, symlink)
{
	struct rt_file_facts node = own_fifo();
	node.is_symlink = true;
	expect_node(node, RT_FIFO_REFUSE, "the path is a symbolic link");
}

Test(fifo_node, not_a_fifo)
{
	struct rt_file_facts node = own_fifo();
	node.is_fifo = false;
	expect_node(node, RT_FIFO_REFUSE, "the path exists and is not a FIFO");
	node.is_dir = true;
	expect_node(node, RT_FIFO_REFUSE, "the path exists and is not a FIFO");
}

Test(fifo_node, foreign_fifo)
{
	struct rt_file_facts node = own_fifo();
	node.uid = 0;
	expect_node(node, RT_FIFO_REFUSE, "the FIFO belongs to another user");
}
