#include <criterion/criterion.h>
#include <string.h>

#include "rt_path.h"

#define SENTINEL "untouched"

static void
expect_expand(const char *tmpl, int pid, const char *want)
{
	char out[128];
	cr_assert(rt_path_expand(out, sizeof(out), tmpl, pid), "%s", tmpl);
	cr_assert_str_eq(out, want);
}

static void
expect_split(const char *path, const char *dir, const char *base)
{
	char d[64], b[64];
	cr_assert(rt_path_split(path, d, sizeof(d), b, sizeof(b)), "%s", path);
	cr_assert_str_eq(d, dir);
	cr_assert_str_eq(b, base);
}

Test(path, template_valid)
{
	cr_assert(rt_path_template_valid("/run/%p.fifo"));
	cr_assert(rt_path_template_valid("/run/100%%.log"));
	cr_assert(rt_path_template_valid("/"));
	cr_assert(rt_path_template_valid("/a/%%p"));
	cr_assert_not(rt_path_template_valid("/run/%d.fifo"));
	cr_assert_not(rt_path_template_valid("/run/%"));
	cr_assert_not(rt_path_template_valid("/run/%%%"));
	cr_assert_not(rt_path_template_valid("run/%p.fifo"));
	cr_assert_not(rt_path_template_valid("./run"));
	cr_assert_not(rt_path_template_valid(""));
}

Test(path, template_per_pid)
{
	cr_assert(rt_path_template_per_pid("/run/%p.fifo"));
	cr_assert(rt_path_template_per_pid("/run/%%%p.fifo"));
	cr_assert_not(rt_path_template_per_pid("/run/%%p.fifo"));
	cr_assert_not(rt_path_template_per_pid("/run/shared.fifo"));
	cr_assert_not(rt_path_template_per_pid("/run/p"));
}

Test(path, expand)
{
	expect_expand("/run/%p.fifo", 1234, "/run/1234.fifo");
	expect_expand("/run/%p/%p", 7, "/run/7/7");
	expect_expand("/run/100%%", 1, "/run/100%");
	expect_expand("/a/%%p", 99, "/a/%p");
	expect_expand("/a/%%%p", 99, "/a/%99");
	expect_expand("/plain", 5, "/plain");
	expect_expand("/run/%p", 4194304, "/run/4194304");
}

Test(path, expand_refuses_invalid)
{
	char out[64] = SENTINEL;
	cr_assert_not(rt_path_expand(out, sizeof(out), "/run/%x", 1));
	cr_assert_not(rt_path_expand(out, sizeof(out), "/run/%", 1));
	cr_assert_not(rt_path_expand(out, sizeof(out), "run/%p", 1));
	cr_assert_not(rt_path_expand(out, sizeof(out), "", 1));
	cr_assert_str_eq(out, SENTINEL);
}

Test(path, expand_overflow)
{
	/* "/run/1234.fifo" is 14 bytes and needs 15 with the NUL. */
	char out[15];
	cr_assert(rt_path_expand(out, 15, "/run/%p.fifo", 1234));
	cr_assert_str_eq(out, "/run/1234.fifo");
	cr_assert_not(rt_path_expand(out, 14, "/run/%p.fifo", 1234));
	cr_assert_not(rt_path_expand(out, 8, "/run/%p.fifo", 1234));
	cr_assert_not(rt_path_expand(out, 0, "/run/%p.fifo", 1234));
	cr_assert(rt_path_expand(out, 2, "/", 1));
	cr_assert_str_eq(out, "/");
	cr_assert_not(rt_path_expand(out, 1, "/", 1));
}

Test(path, split)
{
	expect_split("/run/user/1000/rt.fifo", "/run/user/1000", "rt.fifo");
	expect_split("/rt.fifo", "/", "rt.fifo");
	expect_split("/a/b", "/a", "b");
}

Test(path, split_refuses)
{
	char d[8], b[8];
	cr_assert_not(rt_path_split("/run/", d, sizeof(d), b, sizeof(b)));
	cr_assert_not(rt_path_split("/", d, sizeof(d), b, sizeof(b)));
	cr_assert_not(rt_path_split("rt.fifo", d, sizeof(d), b, sizeof(b)));
	/* Too small for the directory, then for the base name. */
	cr_assert_not(rt_path_split("/1234567/x", d, sizeof(d), b, sizeof(b)));
	cr_assert_not(rt_path_split("/x/12345678", d, sizeof(d), b, sizeof(b)));
	cr_assert(rt_path_split("/123456/1234567", d, sizeof(d), b, sizeof(b)));
	cr_assert_str_eq(d, "/123456");
	cr_assert_str_eq(b, "1234567");
}

Test(path, default_fifo)
{
	char out[128];
	cr_assert(rt_path_default_fifo(out, sizeof(out), "/run/user/1000", 1000));
	cr_assert_str_eq(out, "/run/user/1000/roundtrim/%p.fifo");
	cr_assert(rt_path_template_valid(out));
	cr_assert(rt_path_template_per_pid(out));
	cr_assert(rt_path_default_fifo(out, sizeof(out), NULL, 1000));
	cr_assert_str_eq(out, "/tmp/roundtrim-1000/%p.fifo");
	cr_assert(rt_path_default_fifo(out, sizeof(out), "", 0));
	cr_assert_str_eq(out, "/tmp/roundtrim-0/%p.fifo");
	cr_assert(rt_path_default_fifo(out, sizeof(out), "run/user/5", 5));
	cr_assert_str_eq(out, "/tmp/roundtrim-5/%p.fifo");
	/* A '%' in the directory would turn into a template directive. */
	cr_assert(rt_path_default_fifo(out, sizeof(out), "/run/%p", 6));
	cr_assert_str_eq(out, "/tmp/roundtrim-6/%p.fifo");
}

Test(path, default_fifo_too_small)
{
	char out[128];
	size_t need = strlen("/tmp/roundtrim-1000/%p.fifo") + 1;
	cr_assert(rt_path_default_fifo(out, need, NULL, 1000));
	cr_assert_not(rt_path_default_fifo(out, need - 1, NULL, 1000));
	cr_assert_not(rt_path_default_fifo(out, 20, "/run/user/1000", 1000));
}

Test(path, stale_candidates_only_for_per_pid_fifo_names)
{
	int pid = 0;
	bool aside = true;
	cr_assert(rt_path_stale_candidate("/tmp/roundtrim-0/%p.fifo", "1234.fifo", &pid, &aside));
	cr_assert_eq(pid, 1234);
	cr_assert_not(aside);
	cr_assert(rt_path_stale_candidate("/tmp/r/%p.fifo", "55.fifo.exec", &pid, &aside));
	cr_assert_eq(pid, 55);
	cr_assert(aside);
	cr_assert(rt_path_stale_candidate("/tmp/r/%p.fifo", "56.status.exec", &pid, &aside));
	cr_assert(aside);
	cr_assert_not(
	    rt_path_stale_candidate("/tmp/r/%p.fifo", "56.status.tmp.exec", &pid, &aside));
	cr_assert(
	    rt_path_stale_candidate("/run/user/1000/roundtrim/%p.fifo", "77.status", &pid, &aside));
	cr_assert_eq(pid, 77);
	cr_assert(rt_path_stale_candidate("/tmp/r/%p.fifo", "9.status.tmp", &pid, &aside));
	cr_assert_not(rt_path_stale_candidate("/tmp/r/%p.fifo", "9.fifo.bak", &pid, &aside));
	cr_assert_not(rt_path_stale_candidate("/tmp/r/%p.fifo", "abc.fifo", &pid, &aside));
	cr_assert_not(rt_path_stale_candidate("/tmp/r/%p.fifo", ".fifo", &pid, &aside));
	cr_assert_not(rt_path_stale_candidate("/tmp/r/%p.fifo", "0.fifo", &pid, &aside));
	cr_assert_not(rt_path_stale_candidate("/tmp/r/%p.fifo", "99999999999.fifo", &pid, &aside));
	cr_assert_not(rt_path_stale_candidate("/tmp/r/job-%p.fifo", "12.fifo", &pid, &aside));
	cr_assert_not(rt_path_stale_candidate("/tmp/r/fixed.fifo", "12.fifo", &pid, &aside));
}

Test(path, exec_aside_adds_a_suffix)
{
	char out[32];
	cr_assert(rt_path_exec_aside(out, sizeof(out), "/tmp/r/12.fifo"));
	cr_assert_str_eq(out, "/tmp/r/12.fifo.exec");
	cr_assert_not(rt_path_exec_aside(out, strlen("/tmp/r/12.fifo.exec"), "/tmp/r/12.fifo"));
}

static void
expect_absolute(const char *cwd, const char *path, const char *want)
{
	char out[64];
	cr_assert(rt_path_absolute(out, sizeof(out), cwd, path), "%s in %s", path, cwd);
	cr_assert_str_eq(out, want);
}

Test(path, absolute_doubles_the_percent_signs_of_the_directory_only)
{
	expect_absolute("/home/a", "stats-%p.jsonl", "/home/a/stats-%p.jsonl");
	expect_absolute("/tmp/50%", "s.%p", "/tmp/50%%/s.%p");
	expect_absolute("/%p", "x", "/%%p/x");
	expect_absolute("/", "x.jsonl", "/x.jsonl");
	expect_absolute("/home/a", "/var/log/x", "/var/log/x");
	/* The template that comes out expands to the directory itself. */
	char tmpl[64], path[64];
	cr_assert(rt_path_absolute(tmpl, sizeof(tmpl), "/tmp/%p%%", "f-%p"));
	cr_assert(rt_path_expand(path, sizeof(path), tmpl, 12));
	cr_assert_str_eq(path, "/tmp/%p%%/f-12");
}

Test(path, absolute_keeps_empty_and_refuses_what_it_cannot_do)
{
	char out[16] = SENTINEL;
	expect_absolute("/a", "", "");
	cr_assert_not(rt_path_absolute(out, sizeof(out), "relative", "x"));
	cr_assert_not(rt_path_absolute(out, sizeof(out), NULL, "x"));
	cr_assert_not(rt_path_absolute(out, sizeof(out), "/a/long/directory", "name"));
	cr_assert_not(rt_path_absolute(out, 9, "/a", "123456"));
	cr_assert(rt_path_absolute(out, 9, "/a", "12345"));
	cr_assert_str_eq(out, "/a/12345");
	/* A doubled '%' that would not fit. */
	cr_assert_not(rt_path_absolute(out, 4, "/a%", "b"));
}
