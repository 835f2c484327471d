#include <criterion/criterion.h>

#include "rt_procfs.h"

Test(procfs, statm)
{
	uint64_t kib;
	cr_assert(rt_procfs_statm_rss_kib("765 444 416 5 0 123 0\n", 4096, &kib));
	cr_assert_eq(kib, 444 * 4);
	cr_assert_not(rt_procfs_statm_rss_kib("", 4096, &kib));
}

Test(procfs, smaps_rollup_splits_rss)
{
	static const char text[] = "55cb448e8000-7ffd20bf9000 ---p 00000000 00:00 0  [rollup]\n"
	                           "Rss:                9640 kB\nPss:   214 kB\n"
	                           "Anonymous:          8112 kB\nKSM:  0 kB\n"
	                           "LazyFree:           2000 kB\nSwap:  0 kB\n";
	struct rt_procfs_rss r;
	cr_assert(rt_procfs_smaps_rollup(text, &r));
	cr_assert_eq(r.rss_kib, 9640);
	cr_assert_eq(r.anon_kib, 6112, "LazyFree is not counted as in use");
	cr_assert_eq(r.file_kib, 1528);
	cr_assert_eq(r.lazyfree_kib, 2000);
	cr_assert_not(rt_procfs_smaps_rollup("Rss: 5 kB\n", &r));
	cr_assert_not(rt_procfs_smaps_rollup("Rss: 5 kB\nAnonymous: 6 kB\nLazyFree: 0 kB\n", &r));
}
