#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rt_child.h"
#include "rt_config.h"
#include "rt_triggers.h"

struct env_var {
	const char *name;
	const char *value;
};

#define DIAG_MAX 32
#define DIAG_LINE 2048

struct diags {
	size_t n;
	char lines[DIAG_MAX][DIAG_LINE];
};

/* A NULL-terminated list of variables, as a compound literal. */
#define ENV(...) ((const struct env_var[]){__VA_ARGS__, {NULL, NULL}})

static struct rt_config cfg;
static struct diags diags;
/* How many variables rt_config_read asked for, to see where it stops. */
static unsigned lookups;

static const char *
lookup(void *ctx, const char *name)
{
	const struct env_var *vars = ctx;
	lookups++;
	for (; vars && vars->name; vars++) {
		if (strcmp(vars->name, name) == 0)
			return vars->value;
	}
	return NULL;
}

static void
collect(void *ctx, const char *line)
{
	struct diags *d = ctx;
	cr_assert_lt(d->n, DIAG_MAX, "too many diagnostics");
	cr_assert_lt(strlen(line), DIAG_LINE);
	snprintf(d->lines[d->n++], DIAG_LINE, "%s", line);
}

static struct rt_platform
platform(const char *program)
{
	return (struct rt_platform){
	    .sigrtmin = 34, .sigrtmax = 64, .uid = 1000, .program = program};
}

static void
read_for(const struct env_var *vars, const struct rt_platform *p)
{
	memset(&cfg, 0xa5, sizeof(cfg));
	memset(&diags, 0, sizeof(diags));
	lookups = 0;
	rt_config_read(&cfg, p, lookup, (void *)vars, collect, &diags);
}

static void
read_env(const struct env_var *vars)
{
	struct rt_platform p = platform("python3");
	read_for(vars, &p);
}

static void
expect_no_diag(void)
{
	cr_assert_eq(diags.n, 0, "unexpected diagnostic: %s", diags.n ? diags.lines[0] : "");
}

static void
expect_diag(const char *line)
{
	cr_assert_eq(diags.n, 1, "want 1 diagnostic, got %zu (%s)", diags.n,
	             diags.n ? diags.lines[0] : "");
	cr_assert_str_eq(diags.lines[0], line);
}

static void
expect_diags2(const char *first, const char *second)
{
	cr_assert_eq(diags.n, 2, "want 2 diagnostics, got %zu", diags.n);
	cr_assert_str_eq(diags.lines[0], first);
	cr_assert_str_eq(diags.lines[1], second);
}

/* Reads ROUNDTRIM_GC_ROUNDS=value alone and checks the diagnostic it gives. */
static void
expect_bad_gc_rounds(const char *value, const char *line)
{
	read_env(ENV({"ROUNDTRIM_GC_ROUNDS", value}));
	expect_diag(line);
	cr_assert_eq(cfg.gc_rounds, 1);
}

Test(config, defaults)
{
	read_env(NULL);
	expect_no_diag();
	cr_assert_not(cfg.disabled);
	cr_assert(cfg.matched);
	cr_assert_eq(cfg.gc_rounds, 1);
	cr_assert_not(cfg.cuda_empty_cache);
	cr_assert_not(cfg.profile);
	cr_assert(cfg.python);
	cr_assert_eq(cfg.role, RT_ROLE_NONE);
	cr_assert_eq(cfg.arena_max, 0);
	cr_assert_eq(cfg.signal, 0);
	cr_assert_str_eq(cfg.fifo, "/tmp/roundtrim-1000/%p.fifo");
	cr_assert_str_eq(cfg.log, "");
	cr_assert_str_eq(cfg.stats, "");
	cr_assert_str_eq(cfg.match, "*");
	cr_assert_eq(cfg.jemalloc, RT_JEMALLOC_PURGE);
	cr_assert_eq(cfg.trim_pad, 0);
}

Test(config, every_variable_valid)
{
	read_env(ENV({"ROUNDTRIM_MATCH", "python*"}, {"ROUNDTRIM_ROLE", "server"},
	             {"ROUNDTRIM_GC_ROUNDS", "7"}, {"ROUNDTRIM_CUDA_EMPTY_CACHE", "true"},
	             {"ROUNDTRIM_PROFILE", "yes"}, {"ROUNDTRIM_SIGNAL", "USR2"},
	             {"ROUNDTRIM_FIFO", "/run/rt/%p.fifo"}, {"ROUNDTRIM_LOG", "/var/log/rt-%p.log"},
	             {"ROUNDTRIM_STATS", "/tmp/rt-%p.jsonl"}, {"ROUNDTRIM_JEMALLOC", "decay"},
	             {"ROUNDTRIM_TRIM_PAD", "4096"}, {"ROUNDTRIM_PYTHON", "off"},
	             {"ROUNDTRIM_DISABLE", "0"}));
	expect_no_diag();
	cr_assert_not(cfg.disabled);
	cr_assert(cfg.matched);
	cr_assert_str_eq(cfg.match, "python*");
	cr_assert_eq(cfg.role, RT_ROLE_SERVER);
	cr_assert_eq(cfg.arena_max, 4);
	cr_assert_eq(cfg.gc_rounds, 7);
	cr_assert(cfg.cuda_empty_cache);
	cr_assert(cfg.profile);
	cr_assert_eq(cfg.signal, 12);
	cr_assert_str_eq(cfg.fifo, "/run/rt/%p.fifo");
	cr_assert_str_eq(cfg.log, "/var/log/rt-%p.log");
	cr_assert_str_eq(cfg.stats, "/tmp/rt-%p.jsonl");
	cr_assert_eq(cfg.jemalloc, RT_JEMALLOC_DECAY);
	cr_assert_eq(cfg.trim_pad, 4096);
	cr_assert_not(cfg.python);
}

/* From the environment to the triggers' units, the settings' only conversion. */
/* ROUNDTRIM_CHILD_START in nanoseconds: a minute unless set, 0 at once, never for never; a bad
 * value is said in the setting's own unit. */
Test(config, child_start_in_nanoseconds)
{
	read_env(ENV({"ROUNDTRIM_GC_ROUNDS", "1"}));
	cr_assert_eq(cfg.child_start_ns, UINT64_C(60) * 1000 * 1000 * 1000);
	read_env(ENV({"ROUNDTRIM_CHILD_START", "1500ms"}));
	expect_no_diag();
	cr_assert_eq(cfg.child_start_ns, UINT64_C(1500) * 1000 * 1000);
	read_env(ENV({"ROUNDTRIM_CHILD_START", "never"}));
	expect_no_diag();
	cr_assert_eq(cfg.child_start_ns, RT_CHILD_START_NEVER);
	read_env(ENV({"ROUNDTRIM_CHILD_START", "0s"}));
	expect_no_diag();
	cr_assert_eq(cfg.child_start_ns, 0);
	read_env(ENV({"ROUNDTRIM_CHILD_START", "0"}));
	expect_no_diag();
	cr_assert_eq(cfg.child_start_ns, 0);
	read_env(ENV({"ROUNDTRIM_CHILD_START", "5"}));
	expect_diag("roundtrim: ROUNDTRIM_CHILD_START=\"5\" is not a valid value; using 1m");
	cr_assert_eq(cfg.child_start_ns, UINT64_C(60) * 1000 * 1000 * 1000);
	/* Elsewhere 0 stays the off word's, said with the word. */
	read_env(ENV({"ROUNDTRIM_INTERVAL", "0s"}));
	expect_diag("roundtrim: ROUNDTRIM_INTERVAL=\"0s\" is not a valid value; using off");
}

Test(config, trigger_settings_reach_the_triggers_in_their_units)
{
	read_env(ENV({"ROUNDTRIM_INTERVAL", "90s"}, {"ROUNDTRIM_PRESSURE", "85%"},
	             {"ROUNDTRIM_RSS_LIMIT", "1025"}));
	expect_no_diag();
	struct rt_triggers_params p, defaults;
	rt_triggers_config_params(&p, &cfg);
	rt_triggers_default_params(&defaults);
	cr_assert_eq(p.interval_us, UINT64_C(90) * 1000 * 1000);
	cr_assert_eq(p.pressure_permille, 850);
	cr_assert_eq(p.rss_limit_kib, 2);
	cr_assert_eq(p.repeat_us, defaults.repeat_us);
	cr_assert_eq(p.watch_tick_us, defaults.watch_tick_us);

	read_env(ENV({"ROUNDTRIM_INTERVAL", "off"}));
	rt_triggers_config_params(&p, &cfg);
	cr_assert_eq(p.interval_us, 0);
	cr_assert_eq(p.pressure_permille, 0);
	cr_assert_eq(p.rss_limit_kib, 0);
}

/* ROUNDTRIM_DISABLE */

Test(config, disable_on_words)
{
	static const char *const on[] = {"1", "true", "TRUE", "yes", "Yes", "on", "ON"};
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		/* Nothing else is read: the bad values below must stay silent. */
		read_env(ENV({"ROUNDTRIM_DISABLE", on[i]}, {"ROUNDTRIM_GC_ROUNDS", "x"},
		             {"ROUNDTRIM_MATCH", ",,"}));
		cr_assert(cfg.disabled, "ROUNDTRIM_DISABLE=%s", on[i]);
		cr_assert_not(cfg.matched);
		expect_no_diag();
		cr_assert_eq(lookups, 1);
	}
}

Test(config, disable_off_words)
{
	static const char *const off[] = {"0", "false", "FALSE", "no", "No", "off", "OFF"};
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		read_env(ENV({"ROUNDTRIM_DISABLE", off[i]}));
		cr_assert_not(cfg.disabled, "ROUNDTRIM_DISABLE=%s", off[i]);
		cr_assert(cfg.matched);
		expect_no_diag();
	}
}

Test(config, disable_bad_value_fails_safe)
{
	read_env(ENV({"ROUNDTRIM_DISABLE", "maybe"}, {"ROUNDTRIM_GC_ROUNDS", "x"}));
	cr_assert(cfg.disabled);
	cr_assert_not(cfg.matched);
	expect_diag("roundtrim: ROUNDTRIM_DISABLE=\"maybe\" is not a valid value; using on");
}

Test(config, disable_empty_fails_safe)
{
	read_env(ENV({"ROUNDTRIM_DISABLE", ""}));
	cr_assert(cfg.disabled);
	expect_diag("roundtrim: ROUNDTRIM_DISABLE=\"\" is empty; using on");
}

/* ROUNDTRIM_MATCH */

Test(config, match_lists)
{
	read_env(ENV({"ROUNDTRIM_MATCH", "torchrun,python3"}));
	cr_assert(cfg.matched);
	cr_assert_str_eq(cfg.match, "torchrun,python3");
	read_env(ENV({"ROUNDTRIM_MATCH", "py[tx]hon?"}));
	cr_assert(cfg.matched);
	read_env(ENV({"ROUNDTRIM_MATCH", "python"}));
	cr_assert_not(cfg.matched);
	expect_no_diag();
}

Test(config, not_matched_is_silent)
{
	struct rt_platform p = platform("sleep");
	read_for(ENV({"ROUNDTRIM_MATCH", "python*,torchrun"}, {"ROUNDTRIM_ROLE", "bogus"},
	             {"ROUNDTRIM_GC_ROUNDS", "-3"}, {"ROUNDTRIM_CUDA_EMPTY_CACHE", "maybe"},
	             {"ROUNDTRIM_PROFILE", "maybe"}, {"ROUNDTRIM_SIGNAL", "KILL"},
	             {"ROUNDTRIM_FIFO", "relative"}, {"ROUNDTRIM_LOG", "relative"},
	             {"ROUNDTRIM_STATS", "relative"}, {"ROUNDTRIM_JEMALLOC", "x"},
	             {"ROUNDTRIM_TRIM_PAD", "x"}, {"ROUNDTRIM_PYTHON", "x"}),
	         &p);
	cr_assert_not(cfg.matched);
	cr_assert_not(cfg.disabled);
	expect_no_diag();
	/* ROUNDTRIM_DISABLE and ROUNDTRIM_MATCH only. */
	cr_assert_eq(lookups, 2);
}

Test(config, match_empty)
{
	read_env(ENV({"ROUNDTRIM_MATCH", ""}));
	expect_diag("roundtrim: ROUNDTRIM_MATCH=\"\" is empty; using *");
	cr_assert_str_eq(cfg.match, "*");
	cr_assert(cfg.matched);
}

Test(config, match_empty_elements)
{
	static const char *const bad[] = {",python3", "python3,", "sleep,,python3", ","};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[256];
		snprintf(want, sizeof(want),
		         "roundtrim: ROUNDTRIM_MATCH=\"%s\" is a list with an empty pattern; "
		         "using *",
		         bad[i]);
		read_env(ENV({"ROUNDTRIM_MATCH", bad[i]}));
		expect_diag(want);
		cr_assert_str_eq(cfg.match, "*");
		cr_assert(cfg.matched);
	}
}

Test(config, match_too_long)
{
	char value[RT_CONFIG_MATCH_MAX + 1];
	memset(value, 'a', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	read_env(ENV({"ROUNDTRIM_MATCH", value}));
	char want[256];
	snprintf(want, sizeof(want), "roundtrim: ROUNDTRIM_MATCH=\"%.64s...\" is too long; using *",
	         value);
	expect_diag(want);
	cr_assert_str_eq(cfg.match, "*");
}

Test(config_match, globs)
{
	cr_assert(rt_config_match("*", "python3"));
	cr_assert(rt_config_match("*", ""));
	cr_assert(rt_config_match("python3", "python3"));
	cr_assert_not(rt_config_match("python", "python3"));
	cr_assert(rt_config_match("python*", "python3.11"));
	cr_assert(rt_config_match("sleep,python*", "python3"));
	cr_assert(rt_config_match("python*,sleep", "sleep"));
	cr_assert_not(rt_config_match("python*,sleep", "bash"));
	cr_assert(rt_config_match("?ash", "bash"));
	cr_assert(rt_config_match("[bd]ash", "dash"));
	cr_assert_not(rt_config_match("[bd]ash", "zsh"));
}

Test(config_match, empty_patterns_match_nothing)
{
	cr_assert_not(rt_config_match("", ""));
	cr_assert_not(rt_config_match(",", ""));
	cr_assert(rt_config_match(",,bash", "bash"));
	cr_assert_not(rt_config_match("bash", NULL));
	cr_assert(rt_config_match("*", NULL));
}

/* ROUNDTRIM_ROLE */

Test(config, role_client)
{
	read_env(ENV({"ROUNDTRIM_ROLE", "client"}));
	expect_no_diag();
	cr_assert_eq(cfg.role, RT_ROLE_CLIENT);
	cr_assert_eq(cfg.gc_rounds, 1);
	cr_assert_eq(cfg.arena_max, 2);
}

Test(config, role_server_any_case)
{
	read_env(ENV({"ROUNDTRIM_ROLE", "SeRvEr"}));
	expect_no_diag();
	cr_assert_eq(cfg.role, RT_ROLE_SERVER);
	cr_assert_eq(cfg.gc_rounds, 5);
	cr_assert_eq(cfg.arena_max, 4);
}

Test(config, role_arena_max_set_by_user)
{
	static const char *const roles[] = {"client", "server"};
	for (size_t i = 0; i < 2; i++) {
		read_env(ENV({"ROUNDTRIM_ROLE", roles[i]}, {"MALLOC_ARENA_MAX", "8"}));
		cr_assert_eq(cfg.arena_max, 0, "role %s", roles[i]);
		cr_assert_eq(cfg.role, i == 0 ? RT_ROLE_CLIENT : RT_ROLE_SERVER);
	}
}

Test(config, role_arena_max_from_tunables)
{
	read_env(ENV({"ROUNDTRIM_ROLE", "client"},
	             {"GLIBC_TUNABLES", "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=3"}));
	cr_assert_eq(cfg.arena_max, 0, "the tunable is the user's choice");
	read_env(ENV({"ROUNDTRIM_ROLE", "client"}, {"GLIBC_TUNABLES", "glibc.malloc.arena_max=1"}));
	cr_assert_eq(cfg.arena_max, 0);
}

Test(config, role_arena_max_not_chosen_by_user)
{
	/* glibc ignores these, so the role's cap applies. */
	read_env(ENV({"ROUNDTRIM_ROLE", "client"}, {"MALLOC_ARENA_MAX", ""}));
	cr_assert_eq(cfg.arena_max, 2);
	read_env(ENV({"ROUNDTRIM_ROLE", "client"}, {"GLIBC_TUNABLES", "glibc.malloc.arena_max="}));
	cr_assert_eq(cfg.arena_max, 2);
	read_env(ENV({"ROUNDTRIM_ROLE", "client"},
	             {"GLIBC_TUNABLES", "glibc.malloc.arena_test=2:glibc.malloc.arena_max_x=1"}));
	cr_assert_eq(cfg.arena_max, 2);
}

Test(config, role_bad)
{
	read_env(ENV({"ROUNDTRIM_ROLE", "worker"}));
	expect_diag("roundtrim: ROUNDTRIM_ROLE=\"worker\" is not a valid value; using no role");
	cr_assert_eq(cfg.role, RT_ROLE_NONE);
	cr_assert_eq(cfg.arena_max, 0);
	cr_assert_eq(cfg.gc_rounds, 1);
}

Test(config, role_empty)
{
	read_env(ENV({"ROUNDTRIM_ROLE", ""}));
	expect_diag("roundtrim: ROUNDTRIM_ROLE=\"\" is empty; using no role");
	cr_assert_eq(cfg.role, RT_ROLE_NONE);
}

Test(role_name, names)
{
	cr_assert_str_eq(rt_role_name(RT_ROLE_NONE), "none");
	cr_assert_str_eq(rt_role_name(RT_ROLE_CLIENT), "client");
	cr_assert_str_eq(rt_role_name(RT_ROLE_SERVER), "server");
}

/* gc_rounds */

Test(config, gc_rounds_valid)
{
	static const struct {
		const char *text;
		uint32_t value;
	} cases[] = {{"0", 0}, {"3", 3}, {"0012", 12}, {"1000000000", 1000000000}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		read_env(ENV({"ROUNDTRIM_GC_ROUNDS", cases[i].text}));
		expect_no_diag();
		cr_assert_eq(cfg.gc_rounds, cases[i].value, "%s", cases[i].text);
	}
}

Test(config, gc_rounds_negative)
{
	expect_bad_gc_rounds("-3", "roundtrim: ROUNDTRIM_GC_ROUNDS=\"-3\" is negative; using 1");
}

Test(config, gc_rounds_overflow)
{
	expect_bad_gc_rounds("1000000001",
	                     "roundtrim: ROUNDTRIM_GC_ROUNDS=\"1000000001\" is too large; using 1");
	expect_bad_gc_rounds(
	    "18446744073709551617",
	    "roundtrim: ROUNDTRIM_GC_ROUNDS=\"18446744073709551617\" is too large; using 1");
}

Test(config, gc_rounds_garbage)
{
	expect_bad_gc_rounds(
	    "abc", "roundtrim: ROUNDTRIM_GC_ROUNDS=\"abc\" is not a valid value; using 1");
	expect_bad_gc_rounds(" 3",
	                     "roundtrim: ROUNDTRIM_GC_ROUNDS=\" 3\" is not a valid value; using 1");
	expect_bad_gc_rounds("+3",
	                     "roundtrim: ROUNDTRIM_GC_ROUNDS=\"+3\" is not a valid value; using 1");
	expect_bad_gc_rounds(
	    "0x10", "roundtrim: ROUNDTRIM_GC_ROUNDS=\"0x10\" is not a valid value; using 1");
}

Test(config, gc_rounds_empty)
{
	expect_bad_gc_rounds("", "roundtrim: ROUNDTRIM_GC_ROUNDS=\"\" is empty; using 1");
}

Test(config, gc_rounds_bad_uses_role_default)
{
	read_env(ENV({"ROUNDTRIM_ROLE", "server"}, {"ROUNDTRIM_GC_ROUNDS", "x"}));
	expect_diag("roundtrim: ROUNDTRIM_GC_ROUNDS=\"x\" is not a valid value; using 5");
	cr_assert_eq(cfg.gc_rounds, 5);
}

Test(config, gc_rounds_nvflare_alone)
{
	read_env(ENV({"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "4"}));
	expect_no_diag();
	cr_assert_eq(cfg.gc_rounds, 4);
}

Test(config, gc_rounds_roundtrim_wins)
{
	read_env(ENV({"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "4"}, {"ROUNDTRIM_GC_ROUNDS", "3"}));
	expect_no_diag();
	cr_assert_eq(cfg.gc_rounds, 3);
}

Test(config, gc_rounds_roundtrim_valid_ignores_bad_nvflare)
{
	read_env(ENV({"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "-1"}, {"ROUNDTRIM_GC_ROUNDS", "3"}));
	expect_no_diag();
	cr_assert_eq(cfg.gc_rounds, 3);
}

Test(config, gc_rounds_bad_roundtrim_falls_back_to_nvflare)
{
	read_env(ENV({"ROUNDTRIM_GC_ROUNDS", "-3"}, {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "4"}));
	expect_diag("roundtrim: ROUNDTRIM_GC_ROUNDS=\"-3\" is negative; using "
	            "NVFLARE_CLIENT_MEMORY_GC_ROUNDS=4");
	cr_assert_eq(cfg.gc_rounds, 4);
}

Test(config, gc_rounds_bad_nvflare_alone)
{
	read_env(ENV({"ROUNDTRIM_ROLE", "client"}, {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "lots"}));
	expect_diag("roundtrim: NVFLARE_CLIENT_MEMORY_GC_ROUNDS=\"lots\" is not a valid value; "
	            "using 1");
	cr_assert_eq(cfg.gc_rounds, 1);
}

/* NVFlare reads its twin with Python's int(): what it takes, we take. */
Test(config, gc_rounds_nvflare_twin_as_python_int)
{
	static const struct {
		const char *text;
		uint32_t n;
	} cases[] = {{" 5", 5},
	             {"+5", 5},
	             {"5_0", 50},
	             {"\t7\n", 7},
	             {"007", 7},
	             {"-0", 0},
	             {"2000000000", 1000000000}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		read_env(ENV({"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", cases[i].text}));
		expect_no_diag();
		cr_assert_eq(cfg.gc_rounds, cases[i].n, "%s", cases[i].text);
	}
	static const char *const bad[] = {"5__0", "_5", "5_", "0x5", "5.0", "- 5", "five"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		read_env(ENV({"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", bad[i]}));
		cr_assert_eq(diags.n, 1, "%s", bad[i]);
		cr_assert_eq(cfg.gc_rounds, 1, "%s", bad[i]);
	}
}

/* NVFlare runs no cleanup for a value <= 0: neither do we. */
Test(config, gc_rounds_nvflare_zero_or_less_turns_actions_off)
{
	static const char *const off[] = {"0", "-1", "-100", " -3 "};
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		read_env(ENV({"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", off[i]}));
		expect_no_diag();
		cr_assert_eq(cfg.gc_rounds, 0, "%s", off[i]);
	}
}

/* The NVFLARE_CLIENT_* names (and the CUDA one) are read by NVFlare's clients only. */
Test(config, nvflare_client_twins_do_not_override_a_server)
{
	read_env(ENV({"ROUNDTRIM_ROLE", "server"}, {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "1"},
	             {"NVFLARE_CUDA_EMPTY_CACHE", "true"}, {"NVFLARE_CLIENT_MEMORY_PROFILE", "1"}));
	expect_no_diag();
	cr_assert_eq(cfg.gc_rounds, 5);
	cr_assert_not(cfg.cuda_empty_cache);
	cr_assert_not(cfg.profile);
	read_env(ENV({"ROUNDTRIM_ROLE", "server"}, {"ROUNDTRIM_GC_ROUNDS", "2"}));
	cr_assert_eq(cfg.gc_rounds, 2);
}

Test(config, gc_rounds_both_bad)
{
	read_env(ENV({"ROUNDTRIM_GC_ROUNDS", "x"}, {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", ""}));
	expect_diags2("roundtrim: ROUNDTRIM_GC_ROUNDS=\"x\" is not a valid value; using 1",
	              "roundtrim: NVFLARE_CLIENT_MEMORY_GC_ROUNDS=\"\" is empty; using 1");
	cr_assert_eq(cfg.gc_rounds, 1);
}

/* cuda_empty_cache */

Test(config, cuda_empty_cache_values)
{
	read_env(ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", "TRUE"}));
	expect_no_diag();
	cr_assert(cfg.cuda_empty_cache);
	read_env(ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", "false"}));
	expect_no_diag();
	cr_assert_not(cfg.cuda_empty_cache);
	read_env(ENV({"NVFLARE_CUDA_EMPTY_CACHE", "True"}));
	expect_no_diag();
	cr_assert(cfg.cuda_empty_cache);
}

/* Our own third word: the library's thread may empty the cache too. NVFlare's variable knows
 * only true. */
Test(config, cuda_empty_cache_waiting_is_ours_alone)
{
	read_env(ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", "waiting"}));
	expect_no_diag();
	cr_assert(cfg.cuda_empty_cache);
	cr_assert(cfg.cuda_waiting);
	read_env(ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", "true"}));
	cr_assert(cfg.cuda_empty_cache);
	cr_assert_not(cfg.cuda_waiting);
	read_env(ENV({"NVFLARE_CUDA_EMPTY_CACHE", "waiting"}));
	expect_no_diag();
	cr_assert_not(cfg.cuda_empty_cache);
	cr_assert_not(cfg.cuda_waiting);
}

Test(config, cuda_empty_cache_only_true_false)
{
	/* NVFlare accepts only true and false here; 1 is not a spelling of true. */
	read_env(ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", "1"}));
	expect_diag(
	    "roundtrim: ROUNDTRIM_CUDA_EMPTY_CACHE=\"1\" is not a valid value; using false");
	cr_assert_not(cfg.cuda_empty_cache);
	read_env(ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", ""}));
	expect_diag("roundtrim: ROUNDTRIM_CUDA_EMPTY_CACHE=\"\" is empty; using false");
}

Test(config, cuda_empty_cache_precedence)
{
	read_env(
	    ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", "false"}, {"NVFLARE_CUDA_EMPTY_CACHE", "true"}));
	expect_no_diag();
	cr_assert_not(cfg.cuda_empty_cache);
	read_env(
	    ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", "true"}, {"NVFLARE_CUDA_EMPTY_CACHE", "false"}));
	expect_no_diag();
	cr_assert(cfg.cuda_empty_cache);
}

Test(config, cuda_empty_cache_falls_back_to_nvflare)
{
	read_env(ENV({"ROUNDTRIM_CUDA_EMPTY_CACHE", "yes"}, {"NVFLARE_CUDA_EMPTY_CACHE", "true"}));
	expect_diag("roundtrim: ROUNDTRIM_CUDA_EMPTY_CACHE=\"yes\" is not a valid value; using "
	            "NVFLARE_CUDA_EMPTY_CACHE=true");
	cr_assert(cfg.cuda_empty_cache);
}

/* NVFlare: value.lower() == "true"; anything else is false, and nothing is said. */
Test(config, cuda_empty_cache_nvflare_twin_is_true_or_silently_false)
{
	static const char *const off[] = {"on", "1", "yes", "", " true"};
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		read_env(ENV({"NVFLARE_CUDA_EMPTY_CACHE", off[i]}));
		expect_no_diag();
		cr_assert_not(cfg.cuda_empty_cache, "%s", off[i]);
	}
	read_env(ENV({"NVFLARE_CUDA_EMPTY_CACHE", "TRUE"}));
	cr_assert(cfg.cuda_empty_cache);
}

/* NVFlare: value.lower() in ("1", "true", "yes"); anything else is false, silently. */
Test(config, profile_nvflare_twin_rule)
{
	static const char *const on[] = {"1", "TRUE", "Yes"};
	static const char *const off[] = {"on", "2", "", "no"};
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		read_env(ENV({"NVFLARE_CLIENT_MEMORY_PROFILE", on[i]}));
		expect_no_diag();
		cr_assert(cfg.profile, "%s", on[i]);
	}
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		read_env(ENV({"NVFLARE_CLIENT_MEMORY_PROFILE", off[i]}));
		expect_no_diag();
		cr_assert_not(cfg.profile, "%s", off[i]);
	}
}

/* profile */

Test(config, profile_values)
{
	static const char *const on[] = {"1", "true", "YES"};
	static const char *const off[] = {"0", "False", "no"};
	for (size_t i = 0; i < 3; i++) {
		read_env(ENV({"ROUNDTRIM_PROFILE", on[i]}));
		expect_no_diag();
		cr_assert(cfg.profile, "%s", on[i]);
		read_env(ENV({"NVFLARE_CLIENT_MEMORY_PROFILE", on[i]}));
		expect_no_diag();
		cr_assert(cfg.profile, "%s", on[i]);
		read_env(ENV({"ROUNDTRIM_PROFILE", off[i]}));
		expect_no_diag();
		cr_assert_not(cfg.profile, "%s", off[i]);
	}
}

Test(config, profile_bad)
{
	/* NVFlare's rule has no "on". */
	read_env(ENV({"ROUNDTRIM_PROFILE", "on"}));
	expect_diag("roundtrim: ROUNDTRIM_PROFILE=\"on\" is not a valid value; using false");
	cr_assert_not(cfg.profile);
	read_env(ENV({"ROUNDTRIM_PROFILE", ""}));
	expect_diag("roundtrim: ROUNDTRIM_PROFILE=\"\" is empty; using false");
}

Test(config, profile_precedence)
{
	read_env(ENV({"ROUNDTRIM_PROFILE", "0"}, {"NVFLARE_CLIENT_MEMORY_PROFILE", "1"}));
	expect_no_diag();
	cr_assert_not(cfg.profile);
	read_env(ENV({"ROUNDTRIM_PROFILE", "1"}, {"NVFLARE_CLIENT_MEMORY_PROFILE", "0"}));
	expect_no_diag();
	cr_assert(cfg.profile);
}

Test(config, profile_falls_back_to_nvflare)
{
	read_env(ENV({"ROUNDTRIM_PROFILE", "2"}, {"NVFLARE_CLIENT_MEMORY_PROFILE", "Yes"}));
	expect_diag("roundtrim: ROUNDTRIM_PROFILE=\"2\" is not a valid value; using "
	            "NVFLARE_CLIENT_MEMORY_PROFILE=Yes");
	cr_assert(cfg.profile);
}

/* ROUNDTRIM_SIGNAL */

Test(config, signal_values)
{
	static const struct {
		const char *text;
		int sig;
	} cases[] = {{"USR1", 10}, {"SIGUSR2", 12}, {"rtmin+3", 37}, {"SIGRTMAX-1", 63},
	             {"40", 40},   {"none", 0},     {"NONE", 0},     {"SIGRTMIN", 34}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		read_env(ENV({"ROUNDTRIM_SIGNAL", cases[i].text}));
		expect_no_diag();
		cr_assert_eq(cfg.signal, cases[i].sig, "%s", cases[i].text);
	}
}

Test(config, signal_names_follow_platform)
{
	struct rt_platform p = platform("python3");
	p.sigrtmin = 35;
	read_for(ENV({"ROUNDTRIM_SIGNAL", "RTMIN+8"}), &p);
	cr_assert_eq(cfg.signal, 43);
}

Test(config, signal_bad)
{
	static const struct {
		const char *text;
		const char *line;
	} cases[] = {
	    {"KILL", "roundtrim: ROUNDTRIM_SIGNAL=\"KILL\" is a signal reserved for the system; "
	             "using none (no signal trigger)"},
	    {"33", "roundtrim: ROUNDTRIM_SIGNAL=\"33\" is a signal reserved for the system; "
	           "using none (no signal trigger)"},
	    {"RTMIN+31", "roundtrim: ROUNDTRIM_SIGNAL=\"RTMIN+31\" is too large; using none (no "
	                 "signal trigger)"},
	    {"65",
	     "roundtrim: ROUNDTRIM_SIGNAL=\"65\" is too large; using none (no signal trigger)"},
	    {"-5",
	     "roundtrim: ROUNDTRIM_SIGNAL=\"-5\" is negative; using none (no signal trigger)"},
	    {"wat", "roundtrim: ROUNDTRIM_SIGNAL=\"wat\" is not a valid value; using none (no "
	            "signal trigger)"},
	    {"", "roundtrim: ROUNDTRIM_SIGNAL=\"\" is empty; using none (no signal trigger)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		read_env(ENV({"ROUNDTRIM_SIGNAL", cases[i].text}));
		expect_diag(cases[i].line);
		cr_assert_eq(cfg.signal, 0, "%s", cases[i].text);
	}
}

/* ROUNDTRIM_FIFO */

Test(config, fifo_default_xdg)
{
	read_env(ENV({"XDG_RUNTIME_DIR", "/run/user/1000"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.fifo, "/run/user/1000/roundtrim/%p.fifo");
}

Test(config, fifo_default_relative_xdg)
{
	read_env(ENV({"XDG_RUNTIME_DIR", "run/user"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.fifo, "/tmp/roundtrim-1000/%p.fifo");
}

Test(config, fifo_default_xdg_too_long)
{
	char xdg[RT_CONFIG_PATH_MAX];
	memset(xdg, 'x', sizeof(xdg) - 1);
	xdg[0] = '/';
	xdg[sizeof(xdg) - 1] = '\0';
	read_env(ENV({"XDG_RUNTIME_DIR", xdg}));
	expect_no_diag();
	cr_assert_str_eq(cfg.fifo, "/tmp/roundtrim-1000/%p.fifo");
	/* The template fits (490 + 18 bytes) but its expansion for a 7-digit pid does not. */
	xdg[490] = '\0';
	read_env(ENV({"XDG_RUNTIME_DIR", xdg}));
	expect_no_diag();
	cr_assert_str_eq(cfg.fifo, "/tmp/roundtrim-1000/%p.fifo");
	/* 480 bytes leave room for any pid. */
	xdg[480] = '\0';
	read_env(ENV({"XDG_RUNTIME_DIR", xdg}));
	cr_assert_eq(strlen(cfg.fifo), 480 + strlen("/roundtrim/%p.fifo"));
}

Test(config, fifo_values)
{
	read_env(ENV({"ROUNDTRIM_FIFO", "none"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.fifo, "");
	read_env(ENV({"ROUNDTRIM_FIFO", "/srv/rt/%p-%%.fifo"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.fifo, "/srv/rt/%p-%%.fifo");
	read_env(ENV({"ROUNDTRIM_FIFO", "/srv/rt/shared.fifo"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.fifo, "/srv/rt/shared.fifo");
}

Test(config, fifo_bad)
{
	read_env(ENV({"ROUNDTRIM_FIFO", "rt.fifo"}, {"XDG_RUNTIME_DIR", "/run/user/1000"}));
	expect_diag("roundtrim: ROUNDTRIM_FIFO=\"rt.fifo\" is not an absolute path; using the "
	            "default /run/user/1000/roundtrim/%p.fifo");
	cr_assert_str_eq(cfg.fifo, "/run/user/1000/roundtrim/%p.fifo");
	read_env(ENV({"ROUNDTRIM_FIFO", "/tmp/%d.fifo"}));
	expect_diag("roundtrim: ROUNDTRIM_FIFO=\"/tmp/%d.fifo\" is not a valid template ('%' must "
	            "start %p or %%); using the default /tmp/roundtrim-1000/%p.fifo");
	cr_assert_str_eq(cfg.fifo, "/tmp/roundtrim-1000/%p.fifo");
	read_env(ENV({"ROUNDTRIM_FIFO", ""}));
	expect_diag("roundtrim: ROUNDTRIM_FIFO=\"\" is empty; using the default "
	            "/tmp/roundtrim-1000/%p.fifo");
}

/* Found by test/fuzz/fuzz_config.c: a newline in XDG_RUNTIME_DIR split the line in two. */
Test(config, fifo_default_path_is_escaped_in_the_diagnostic)
{
	read_env(ENV({"ROUNDTRIM_FIFO", "rt.fifo"},
	             {"XDG_RUNTIME_DIR", "/run/user/1000\nroundtrim: forged\x7f"}));
	expect_diag("roundtrim: ROUNDTRIM_FIFO=\"rt.fifo\" is not an absolute path; using the "
	            "default /run/user/1000\\x0aroundtrim: forged\\x7f/roundtrim/%p.fifo");
	cr_assert_str_eq(cfg.fifo, "/run/user/1000\nroundtrim: forged\x7f/roundtrim/%p.fifo");
}

Test(config, fifo_must_expand_for_any_pid)
{
	/* 508 bytes fit the buffer, but "%p" becomes up to 7 digits. */
	char value[509];
	memset(value, 'a', sizeof(value) - 1);
	value[0] = '/';
	memcpy(value + sizeof(value) - 3, "%p", 3);
	cr_assert_eq(strlen(value), 508);
	read_env(ENV({"ROUNDTRIM_FIFO", value}));
	char want[256];
	snprintf(want, sizeof(want),
	         "roundtrim: ROUNDTRIM_FIFO=\"%.64s...\" is too long; using the default "
	         "/tmp/roundtrim-1000/%%p.fifo",
	         value);
	expect_diag(want);
	cr_assert_str_eq(cfg.fifo, "/tmp/roundtrim-1000/%p.fifo");

	/* Four bytes shorter it fits: 502 + 7 digits < 512. */
	value[504] = '\0';
	memcpy(value + 502, "%p", 3);
	read_env(ENV({"ROUNDTRIM_FIFO", value}));
	expect_no_diag();
	cr_assert_str_eq(cfg.fifo, value);
}

/* ROUNDTRIM_LOG and ROUNDTRIM_STATS */

Test(config, log_values)
{
	read_env(ENV({"ROUNDTRIM_LOG", "stderr"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.log, "");
	read_env(ENV({"ROUNDTRIM_LOG", "STDERR"}));
	cr_assert_str_eq(cfg.log, "");
	read_env(ENV({"ROUNDTRIM_LOG", "/var/log/rt.log"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.log, "/var/log/rt.log");
}

Test(config, log_bad)
{
	read_env(ENV({"ROUNDTRIM_LOG", "rt.log"}));
	expect_diag("roundtrim: ROUNDTRIM_LOG=\"rt.log\" is not an absolute path; using stderr");
	cr_assert_str_eq(cfg.log, "");
	read_env(ENV({"ROUNDTRIM_LOG", "/var/log/%"}));
	expect_diag("roundtrim: ROUNDTRIM_LOG=\"/var/log/%\" is not a valid template ('%' must "
	            "start %p or %%); using stderr");
	read_env(ENV({"ROUNDTRIM_LOG", ""}));
	expect_diag("roundtrim: ROUNDTRIM_LOG=\"\" is empty; using stderr");
}

Test(config, stats_values)
{
	read_env(ENV({"ROUNDTRIM_STATS", "none"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.stats, "");
	read_env(ENV({"ROUNDTRIM_STATS", "/tmp/rt-%p.jsonl"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.stats, "/tmp/rt-%p.jsonl");
}

Test(config, stats_bad)
{
	read_env(ENV({"ROUNDTRIM_STATS", "stats.jsonl"}));
	expect_diag("roundtrim: ROUNDTRIM_STATS=\"stats.jsonl\" is not an absolute path; using no "
	            "stats file");
	cr_assert_str_eq(cfg.stats, "");
	read_env(ENV({"ROUNDTRIM_STATS", "/tmp/%s"}));
	expect_diag("roundtrim: ROUNDTRIM_STATS=\"/tmp/%s\" is not a valid template ('%' must "
	            "start %p or %%); using no stats file");
}

/* ROUNDTRIM_JEMALLOC */

Test(config, jemalloc_values)
{
	read_env(ENV({"ROUNDTRIM_JEMALLOC", "DECAY"}));
	expect_no_diag();
	cr_assert_eq(cfg.jemalloc, RT_JEMALLOC_DECAY);
	read_env(ENV({"ROUNDTRIM_JEMALLOC", "purge"}));
	expect_no_diag();
	cr_assert_eq(cfg.jemalloc, RT_JEMALLOC_PURGE);
}

Test(config, jemalloc_bad)
{
	read_env(ENV({"ROUNDTRIM_JEMALLOC", "both"}));
	expect_diag("roundtrim: ROUNDTRIM_JEMALLOC=\"both\" is not a valid value; using purge");
	cr_assert_eq(cfg.jemalloc, RT_JEMALLOC_PURGE);
	read_env(ENV({"ROUNDTRIM_JEMALLOC", ""}));
	expect_diag("roundtrim: ROUNDTRIM_JEMALLOC=\"\" is empty; using purge");
}

/* ROUNDTRIM_TRIM_PAD */

Test(config, trim_pad_values)
{
	read_env(ENV({"ROUNDTRIM_TRIM_PAD", "1099511627776"}));
	expect_no_diag();
	cr_assert_eq(cfg.trim_pad, 1ULL << 40);
	read_env(ENV({"ROUNDTRIM_TRIM_PAD", "0"}));
	expect_no_diag();
	cr_assert_eq(cfg.trim_pad, 0);
}

Test(config, trim_pad_bad)
{
	static const struct {
		const char *text;
		const char *line;
	} cases[] = {
	    {"1099511627777",
	     "roundtrim: ROUNDTRIM_TRIM_PAD=\"1099511627777\" is too large; using 0"},
	    {"-1", "roundtrim: ROUNDTRIM_TRIM_PAD=\"-1\" is negative; using 0"},
	    {"1k", "roundtrim: ROUNDTRIM_TRIM_PAD=\"1k\" is not a valid value; using 0"},
	    {"", "roundtrim: ROUNDTRIM_TRIM_PAD=\"\" is empty; using 0"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		read_env(ENV({"ROUNDTRIM_TRIM_PAD", cases[i].text}));
		expect_diag(cases[i].line);
		cr_assert_eq(cfg.trim_pad, 0);
	}
}

/* ROUNDTRIM_PYTHON */

Test(config, python_values)
{
	static const char *const on[] = {"1", "TRUE", "yes", "on"};
	static const char *const off[] = {"0", "false", "NO", "Off"};
	for (size_t i = 0; i < 4; i++) {
		read_env(ENV({"ROUNDTRIM_PYTHON", off[i]}));
		expect_no_diag();
		cr_assert_not(cfg.python, "%s", off[i]);
		read_env(ENV({"ROUNDTRIM_PYTHON", on[i]}));
		expect_no_diag();
		cr_assert(cfg.python, "%s", on[i]);
		cr_assert_not(cfg.python_main_only, "%s: a thread of ours may run them", on[i]);
	}
}

/* main: on, but only ever on the interpreter's main thread (issue 24). */
Test(config, python_main_only)
{
	static const char *const main_words[] = {"main", "MAIN", "Main"};
	for (size_t i = 0; i < 3; i++) {
		read_env(ENV({"ROUNDTRIM_PYTHON", main_words[i]}));
		expect_no_diag();
		cr_assert(cfg.python, "%s", main_words[i]);
		cr_assert(cfg.python_main_only, "%s", main_words[i]);
	}
	read_env(ENV({"ROUNDTRIM_DISABLE", "0"}));
	cr_assert(cfg.python);
	cr_assert_not(cfg.python_main_only, "the default is the main thread, then ours");
}

Test(config, python_bad)
{
	read_env(ENV({"ROUNDTRIM_PYTHON", "maybe"}));
	expect_diag("roundtrim: ROUNDTRIM_PYTHON=\"maybe\" is not a valid value; using on");
	cr_assert(cfg.python);
	cr_assert_not(cfg.python_main_only);
	read_env(ENV({"ROUNDTRIM_PYTHON", ""}));
	expect_diag("roundtrim: ROUNDTRIM_PYTHON=\"\" is empty; using on");
	cr_assert(cfg.python);
}

Test(config, sites_defaults_off)
{
	read_env(ENV({"ROUNDTRIM_STATS", "/tmp/s-%p.jsonl"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.sites, "");
	cr_assert_eq(cfg.sample_bytes, 512 * 1024);
}

/* On: the sites file goes beside the stats file, with its %p. */
Test(config, sites_beside_the_stats_file)
{
	read_env(ENV({"ROUNDTRIM_STATS", "/tmp/s-%p.jsonl"}, {"ROUNDTRIM_SITES", "yes"},
	             {"ROUNDTRIM_SAMPLE_BYTES", "64K"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.sites, "/tmp/s-%p.sites.jsonl");
	cr_assert_eq(cfg.sample_bytes, 64 * 1024);
	read_env(ENV({"ROUNDTRIM_STATS", "/tmp/stats"}, {"ROUNDTRIM_SITES", "1"},
	             {"ROUNDTRIM_SAMPLE_BYTES", "1"}));
	expect_no_diag();
	cr_assert_str_eq(cfg.sites, "/tmp/stats.sites.jsonl");
	cr_assert_eq(cfg.sample_bytes, 1);
}

Test(config, sites_without_stats_is_off)
{
	read_env(ENV({"ROUNDTRIM_SITES", "on"}));
	expect_diag("roundtrim: ROUNDTRIM_SITES=\"on\" is set without ROUNDTRIM_STATS (its records "
	            "go beside the stats file); using off");
	cr_assert_str_eq(cfg.sites, "");
	read_env(ENV({"ROUNDTRIM_SITES", "on"}, {"ROUNDTRIM_STATS", "none"}));
	cr_assert_eq(diags.n, 1);
	cr_assert_str_eq(cfg.sites, "");
}

Test(config, sites_bad_values)
{
	read_env(ENV({"ROUNDTRIM_STATS", "/tmp/s.jsonl"}, {"ROUNDTRIM_SITES", "sometimes"}));
	expect_diag("roundtrim: ROUNDTRIM_SITES=\"sometimes\" is not a valid value; using off");
	cr_assert_str_eq(cfg.sites, "");
	read_env(ENV({"ROUNDTRIM_SAMPLE_BYTES", "0"}));
	expect_diag("roundtrim: ROUNDTRIM_SAMPLE_BYTES=\"0\" is zero; using 524288");
	cr_assert_eq(cfg.sample_bytes, 512 * 1024);
	read_env(ENV({"ROUNDTRIM_SAMPLE_BYTES", "lots"}));
	cr_assert_eq(diags.n, 1);
	cr_assert_str_eq(diags.lines[0], "roundtrim: ROUNDTRIM_SAMPLE_BYTES=\"lots\" is not a "
	                                 "valid value; using 524288");
	cr_assert_eq(cfg.sample_bytes, 512 * 1024);
	read_env(ENV({"ROUNDTRIM_SAMPLE_BYTES", "2T"}));
	cr_assert_eq(diags.n, 1, "above 1 TiB");
	/* A sites file whose name would not fit: off, said. */
	char stats[RT_CONFIG_PATH_MAX];
	memset(stats, 'a', sizeof(stats));
	stats[0] = '/';
	stats[RT_CONFIG_PATH_MAX - 8] = '\0';
	read_env(ENV({"ROUNDTRIM_STATS", stats}, {"ROUNDTRIM_SITES", "1"}));
	cr_assert_eq(diags.n, 1);
	cr_assert_not_null(strstr(diags.lines[0], "would be too long; using off"), "%s",
	                   diags.lines[0]);
	cr_assert_str_eq(cfg.sites, "");
}

/* Diagnostics in general */

Test(config, one_diagnostic_per_bad_variable)
{
	static const char *const names[] = {
	    "ROUNDTRIM_ROLE",     "ROUNDTRIM_GC_ROUNDS", "ROUNDTRIM_CUDA_EMPTY_CACHE",
	    "ROUNDTRIM_PROFILE",  "ROUNDTRIM_SIGNAL",    "ROUNDTRIM_FIFO",
	    "ROUNDTRIM_LOG",      "ROUNDTRIM_STATS",     "ROUNDTRIM_JEMALLOC",
	    "ROUNDTRIM_TRIM_PAD", "ROUNDTRIM_PYTHON"};
	read_env(ENV({"ROUNDTRIM_ROLE", "bad-0"}, {"ROUNDTRIM_GC_ROUNDS", "bad-1"},
	             {"ROUNDTRIM_CUDA_EMPTY_CACHE", "bad-2"}, {"ROUNDTRIM_PROFILE", "bad-3"},
	             {"ROUNDTRIM_SIGNAL", "bad-4"}, {"ROUNDTRIM_FIFO", "bad-5"},
	             {"ROUNDTRIM_LOG", "bad-6"}, {"ROUNDTRIM_STATS", "bad-7"},
	             {"ROUNDTRIM_JEMALLOC", "bad-8"}, {"ROUNDTRIM_TRIM_PAD", "bad-9"},
	             {"ROUNDTRIM_PYTHON", "bad-10"}));
	size_t n = sizeof(names) / sizeof(names[0]);
	cr_assert_eq(diags.n, n);
	for (size_t i = 0; i < n; i++) {
		char prefix[64];
		snprintf(prefix, sizeof(prefix), "roundtrim: %s=\"bad-%zu\" is ", names[i], i);
		cr_assert_eq(strncmp(diags.lines[i], prefix, strlen(prefix)), 0, "%s",
		             diags.lines[i]);
		cr_assert_not_null(strstr(diags.lines[i], "; using "), "%s", diags.lines[i]);
	}
}

Test(config, diagnostic_escapes_value)
{
	read_env(ENV({"ROUNDTRIM_JEMALLOC", "a\"b\\c\n\x01\x7f\xff"}));
	expect_diag(
	    "roundtrim: ROUNDTRIM_JEMALLOC=\"a\\\"b\\\\c\\x0a\\x01\\x7f\\xff\" is not a valid "
	    "value; using purge");
}

Test(config, diagnostic_truncates_long_value)
{
	char value[100000];
	memset(value, 'x', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	read_env(ENV({"ROUNDTRIM_JEMALLOC", value}));
	char want[256];
	snprintf(want, sizeof(want),
	         "roundtrim: ROUNDTRIM_JEMALLOC=\"%.64s...\" is not a valid "
	         "value; using purge",
	         value);
	expect_diag(want);
}

Test(config, diagnostic_does_not_truncate_64_bytes)
{
	char value[65];
	memset(value, 'y', 64);
	value[64] = '\0';
	read_env(ENV({"ROUNDTRIM_JEMALLOC", value}));
	char want[256];
	snprintf(want, sizeof(want),
	         "roundtrim: ROUNDTRIM_JEMALLOC=\"%s\" is not a valid value; using purge", value);
	expect_diag(want);
}

Test(config, diagnostic_worst_case_is_whole)
{
	/* 64 bytes that each need four characters, and a long default FIFO path. */
	char value[200], xdg[400];
	memset(value, '\x01', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	memset(xdg, 'd', sizeof(xdg) - 1);
	xdg[0] = '/';
	xdg[sizeof(xdg) - 1] = '\0';
	read_env(ENV({"ROUNDTRIM_FIFO", value}, {"XDG_RUNTIME_DIR", xdg}));
	cr_assert_eq(diags.n, 1);
	const char *line = diags.lines[0];
	cr_assert_not_null(strstr(line,
	                          "\\x01\\x01...\" is not an absolute path; using the default "
	                          "/ddd"));
	size_t len = strlen(line);
	cr_assert_str_eq(line + len - strlen("ddd/roundtrim/%p.fifo"), "ddd/roundtrim/%p.fifo");
	cr_assert_eq(strlen(strchr(line, '"')), 1 + 64 * 4 + 3 +
	                                            strlen("\" is not an absolute path; "
	                                                   "using the default ") +
	                                            strlen(cfg.fifo));
}
