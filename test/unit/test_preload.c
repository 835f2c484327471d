#include <criterion/criterion.h>
#include <string.h>

#include "rt_preload.h"

Test(preload, names_the_library)
{
	cr_assert(rt_preload_names_library("/usr/local/lib/libroundtrim.so"));
	cr_assert(rt_preload_names_library("libroundtrim.so"));
	cr_assert(rt_preload_names_library("/usr/lib/x86_64-linux-gnu/libroundtrim.so.0"));
	cr_assert(rt_preload_names_library("/opt/libroundtrim.so.0.1.10"));
	cr_assert_not(rt_preload_names_library("/opt/libroundtrim.so.bak"));
	cr_assert_not(rt_preload_names_library("/opt/libroundtrim.so."));
	cr_assert_not(rt_preload_names_library("/opt/libroundtrim.so.0."));
	cr_assert_not(rt_preload_names_library("/opt/libroundtrim.so..1"));
	cr_assert_not(rt_preload_names_library("/opt/libroundtrim.so/other.so"));
	cr_assert_not(rt_preload_names_library("/opt/mylibroundtrim.so"));
	cr_assert_not(rt_preload_names_library("/usr/lib/libjemalloc.so.2"));
	cr_assert_not(rt_preload_names_library(""));
}

Test(preload, maps_lines)
{
	cr_assert(rt_preload_maps_line_has_library(
	    "7f1c2a400000-7f1c2a402000 r--p 00000000 fe:01 1234567                    "
	    "/work/build/libroundtrim.so\n"));
	cr_assert(rt_preload_maps_line_has_library(
	    "7f1c2a400000-7f1c2a402000 r-xp 00002000 fe:01 1234567 /a b/libroundtrim.so.0 "
	    "(deleted)"));
	cr_assert_not(rt_preload_maps_line_has_library(
	    "7f1c2a400000-7f1c2a402000 r--p 00000000 fe:01 1234567 /usr/lib/libc.so.6\n"));
	/* The name as some other file's directory, or in an anonymous mapping's name. */
	cr_assert_not(rt_preload_maps_line_has_library(
	    "7f1c2a400000-7f1c2a402000 r--p 00000000 fe:01 1 /libroundtrim.so/x.so\n"));
	cr_assert_not(rt_preload_maps_line_has_library(
	    "7ffd3c000000-7ffd3c021000 rw-p 00000000 00:00 0                          [stack]\n"));
	cr_assert_not(rt_preload_maps_line_has_library("garbage"));
	cr_assert_not(rt_preload_maps_line_has_library(""));
}

Test(preload, has_the_library)
{
	cr_assert(rt_preload_has_library("/b/libroundtrim.so"));
	cr_assert(rt_preload_has_library("/a/libasan.so /b/libroundtrim.so.0"));
	cr_assert(rt_preload_has_library("libroundtrim.so:/a.so"));
	cr_assert_not(rt_preload_has_library("/a/libasan.so  /b/libroundtrim.so.bak"));
	cr_assert_not(rt_preload_has_library(""));
	cr_assert_not(rt_preload_has_library(NULL));
}

static void
expect_without(const char *ld_preload, const char *want)
{
	char out[128];
	cr_assert(rt_preload_without_library(out, sizeof(out), ld_preload), "%s", ld_preload);
	cr_assert_str_eq(out, want, "%s", ld_preload ? ld_preload : "(null)");
}

Test(preload, without_the_library)
{
	expect_without(NULL, "");
	expect_without("", "");
	expect_without("/b/libroundtrim.so", "");
	expect_without("/b/libroundtrim.so:/usr/lib/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2");
	/* ld.so splits on blanks too; the rest comes back joined by ':'. */
	expect_without("/a/libasan.so /b/libroundtrim.so.0  :/c/libx.so",
	               "/a/libasan.so:/c/libx.so");
	expect_without("::/a.so::", "/a.so");
	char small[4];
	cr_assert_not(rt_preload_without_library(small, sizeof(small), "/a.so"));
}

Test(preload, with_the_library_first)
{
	char out[128];
	cr_assert(rt_preload_with_library(out, sizeof(out), "/b/libroundtrim.so", NULL));
	cr_assert_str_eq(out, "/b/libroundtrim.so");
	cr_assert(rt_preload_with_library(out, sizeof(out), "/b/libroundtrim.so",
	                                  "/j/libjemalloc.so.2 /old/libroundtrim.so"));
	cr_assert_str_eq(out, "/b/libroundtrim.so:/j/libjemalloc.so.2");
	cr_assert_not(rt_preload_with_library(out, 10, "/b/libroundtrim.so", NULL));
	cr_assert_not(rt_preload_with_library(out, 20, "/b/libroundtrim.so", "/j.so"));
}

Test(preload, paths_it_can_carry)
{
	cr_assert(rt_preload_path_valid("/usr/local/lib/libroundtrim.so"));
	cr_assert(rt_preload_path_valid("/opt/rt-0.1+x@y,z=w/libroundtrim.so"));
	cr_assert_not(rt_preload_path_valid("lib/libroundtrim.so"));
	cr_assert_not(rt_preload_path_valid("/a b/libroundtrim.so"));
	cr_assert_not(rt_preload_path_valid("/a:b/libroundtrim.so"));
	cr_assert_not(rt_preload_path_valid("/a$b/libroundtrim.so"));
	cr_assert_not(rt_preload_path_valid("/a'b/libroundtrim.so"));
	cr_assert_not(rt_preload_path_valid(""));
	const char *bad[] = {"/opt/\"/libroundtrim.so", "/opt/`/libroundtrim.so",
	                     "/opt/\\/libroundtrim.so", "/opt/\n/libroundtrim.so"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(rt_preload_path_valid(bad[i]), "%s", bad[i]);
}
