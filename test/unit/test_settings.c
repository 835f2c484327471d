/* The settings table is the one list of settings: its rows are well formed, and roundtrim(7)'s
 * ENVIRONMENT and README's configuration table say what the rows say. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rt_config.h"
#include "rt_path.h"
#include "rt_settings.h"

static const struct rt_setting_platform platform = {34, 64};

Test(settings, rows_are_well_formed)
{
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++) {
		const struct rt_setting *s = &rt_settings[i];
		cr_assert_not_null(s->name, "row %u has no name", i);
		cr_assert_eq(strncmp(s->name, "ROUNDTRIM_", 10), 0, "%s", s->name);
		cr_assert(s->values && s->default_text && s->doc, "%s lacks its words", s->name);
		cr_assert_eq(rt_setting_named(s->name), s, "%s twice", s->name);
		cr_assert_eq(!!s->twin, s->twin_rule != RT_TWIN_NONE, "%s", s->name);
		if (s->kind == RT_KIND_PATH)
			cr_assert_not_null(s->off_word, "%s", s->name);
		if (s->kind == RT_KIND_WORDS)
			cr_assert_gt(s->nwords, 1, "%s", s->name);
		if (!s->option)
			continue;
		cr_assert_eq(strncmp(s->option, "--", 2), 0, "%s", s->option);
		cr_assert_eq(rt_setting_with_option(s->option), s, "%s twice", s->option);
		/* An option takes an argument or is a flag with a value the library takes. */
		cr_assert_neq(!!s->option_arg, !!s->flag_value, "%s", s->option);
		uint64_t v;
		if (s->flag_value)
			cr_assert_eq(rt_setting_parse(s, s->flag_value, &platform, &v), RT_PARSE_OK,
			             "%s", s->option);
	}
}

Test(settings, lookups)
{
	cr_assert_eq(rt_setting_named("ROUNDTRIM_GC_ROUNDS"), &rt_settings[RT_SETTING_GC_ROUNDS]);
	cr_assert_null(rt_setting_named("ROUNDTRIM_NOPE"));
	cr_assert_eq(rt_setting_with_option("--signal"), &rt_settings[RT_SETTING_SIGNAL]);
	cr_assert_null(rt_setting_with_option("--nope"));
}

Test(settings, parse_by_kind)
{
	uint64_t v;
	const struct rt_setting *gc = &rt_settings[RT_SETTING_GC_ROUNDS];
	cr_assert_eq(rt_setting_parse(gc, "7", &platform, &v), RT_PARSE_OK);
	cr_assert_eq(v, 7);
	cr_assert_eq(rt_setting_parse(gc, "2000000000", &platform, &v), RT_PARSE_OVERFLOW);
	cr_assert_eq(rt_setting_parse(gc, " 5", &platform, &v), RT_PARSE_GARBAGE);
	const struct rt_setting *role = &rt_settings[RT_SETTING_ROLE];
	cr_assert_eq(rt_setting_parse(role, "CLIENT", &platform, &v), RT_PARSE_OK);
	cr_assert_eq(v, 1);
	const struct rt_setting *fifo = &rt_settings[RT_SETTING_FIFO];
	cr_assert_eq(rt_setting_parse(fifo, "NONE", &platform, &v), RT_PARSE_OK);
	cr_assert_eq(rt_setting_parse(fifo, "rel/%p", &platform, &v), RT_PARSE_RELATIVE);
	cr_assert_eq(rt_setting_parse(fifo, "/a/%d", &platform, &v), RT_PARSE_TEMPLATE);
	cr_assert_eq(rt_setting_parse(fifo, "", &platform, &v), RT_PARSE_EMPTY);
	const struct rt_setting *sig = &rt_settings[RT_SETTING_SIGNAL];
	cr_assert_eq(rt_setting_parse(sig, "RTMIN+8", &platform, &v), RT_PARSE_OK);
	cr_assert_eq(v, 42);
	cr_assert_eq(rt_setting_parse(sig, "FOO", &platform, &v), RT_PARSE_GARBAGE);
	const struct rt_setting *interval = &rt_settings[RT_SETTING_INTERVAL];
	cr_assert_eq(rt_setting_parse(interval, "90s", &platform, &v), RT_PARSE_OK);
	cr_assert_eq(v, 90000);
	cr_assert_eq(rt_setting_parse(interval, "0s", &platform, &v), RT_PARSE_GARBAGE,
	             "0 would be off without a word");
	cr_assert_eq(rt_setting_parse(&rt_settings[RT_SETTING_RSS_LIMIT], "0", &platform, &v),
	             RT_PARSE_GARBAGE);
	const struct rt_setting *match = &rt_settings[RT_SETTING_MATCH];
	cr_assert_eq(rt_setting_parse(match, "", &platform, &v), RT_PARSE_EMPTY);
	cr_assert_eq(rt_setting_parse(match, "a,,b", &platform, &v), RT_PARSE_EMPTY_ITEM);
	char text[32];
	rt_setting_value_text(role, 2, text, sizeof(text));
	cr_assert_str_eq(text, "server");
	rt_setting_value_text(gc, 12, text, sizeof(text));
	cr_assert_str_eq(text, "12");
	/* A duration as the setting accepts it, in its largest whole unit. */
	const struct rt_setting *child = &rt_settings[RT_SETTING_CHILD_START];
	rt_setting_value_text(child, 60000, text, sizeof(text));
	cr_assert_str_eq(text, "1m");
	rt_setting_value_text(child, 1500, text, sizeof(text));
	cr_assert_str_eq(text, "1500ms");
	rt_setting_value_text(child, UINT64_MAX, text, sizeof(text));
	cr_assert_str_eq(text, "never");
	rt_setting_value_text(child, 0, text, sizeof(text));
	cr_assert_str_eq(text, "0s");
	cr_assert_eq(rt_setting_parse(child, "never", &platform, &v), RT_PARSE_OK);
	cr_assert_eq(v, UINT64_MAX);
	cr_assert_eq(rt_setting_parse(child, "0", &platform, &v), RT_PARSE_OK);
	cr_assert_eq(v, 0);
	rt_setting_value_text(interval, 7200000, text, sizeof(text));
	cr_assert_str_eq(text, "2h");
}

/* A number in the largest of units (a NULL-ended list, each unit factor times the one before)
 * that writes it exactly. */
static void
in_units(uint64_t v, const char *const *units, const uint64_t *factors, char *out, size_t size)
{
	unsigned u = 0;
	while (units[u + 1] && v % factors[u + 1] == 0) {
		v /= factors[u + 1];
		u++;
	}
	snprintf(out, size, "%" PRIu64 "%s", v, units[u]);
}

/* The FIFO's default, found at start-up: under $XDG_RUNTIME_DIR, else under /tmp by uid. */
static void
fifo_default_text(char *out, size_t size)
{
	char xdg[128], tmp[128];
	cr_assert(rt_path_default_fifo(xdg, sizeof(xdg), "/XDG", 0));
	cr_assert(rt_path_default_fifo(tmp, sizeof(tmp), NULL, 4242));
	cr_assert_eq(strncmp(xdg, "/XDG/", 5), 0, "%s", xdg);
	char *uid = strstr(tmp, "4242");
	cr_assert_not_null(uid, "%s", tmp);
	snprintf(out, size, "$XDG_RUNTIME_DIR%s or %.*sUID%s", xdg + 4, (int)(uid - tmp), tmp,
	         uid + 4);
}

/* How the documentation writes a row's default, from its value alone. */
static void
default_text_of(const struct rt_setting *s, char *out, size_t size)
{
	static const char *const size_units[] = {"", "K", "M", "G", "T", NULL};
	static const uint64_t size_factors[] = {1, 1024, 1024, 1024, 1024};
	static const char *const duration_units[] = {"ms", "s", "m", "h", NULL};
	static const uint64_t duration_factors[] = {1, 1000, 60, 60};
	const uint64_t v = s->default_value;
	if (s->kind == RT_KIND_GLOBS || s->kind == RT_KIND_PATH) {
		cr_assert_eq(v, 0, "%s: a text's default is its string", s->name);
		if (s == &rt_settings[RT_SETTING_FIFO])
			fifo_default_text(out, size);
		else
			snprintf(out, size, "%s",
			         s->default_string ? s->default_string : s->off_word);
		return;
	}
	cr_assert_null(s->default_string, "%s: a value's default is its number", s->name);
	if (s->kind == RT_KIND_WORDS) {
		cr_assert_lt(v, s->nwords, "%s", s->name);
		snprintf(out, size, "%s", s->words[v][0] ? s->words[v][0] : "none");
	} else if (v == 0 && (s->kind == RT_KIND_SIGNAL || s->off_word)) {
		snprintf(out, size, "%s", s->kind == RT_KIND_SIGNAL ? "none" : s->off_word);
	} else if (s->kind == RT_KIND_SIZE) {
		in_units(v, size_units, size_factors, out, size);
	} else if (s->kind == RT_KIND_DURATION) {
		in_units(v, duration_units, duration_factors, out, size);
	} else {
		snprintf(out, size, "%" PRIu64 "%s", v, s->kind == RT_KIND_PERCENT ? "%" : "");
	}
}

/* Each row's default text says its default value: the text, less its backquotes, is what the
 * value writes, alone or followed by ", " and a note (the role's, until a round is announced). */
Test(settings, default_texts_say_the_default_values)
{
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++) {
		const struct rt_setting *s = &rt_settings[i];
		char want[256], text[256];
		default_text_of(s, want, sizeof(want));
		size_t n = 0;
		for (const char *c = s->default_text; *c && n + 1 < sizeof(text); c++)
			if (*c != '`')
				text[n++] = *c;
		text[n] = '\0';
		size_t len = strlen(want);
		cr_assert(strncmp(text, want, len) == 0 &&
		              (text[len] == '\0' || strncmp(text + len, ", ", 2) == 0),
		          "%s: its default is %s, its text says \"%s\"", s->name, want,
		          s->default_text);
		/* And the text, read by the row's rule, gives the value back (a role's "none" is
		 * no word: the variable unset). */
		uint64_t parsed;
		if (s->kind == RT_KIND_PATH || s->kind == RT_KIND_GLOBS ||
		    (s->kind == RT_KIND_WORDS && !s->words[s->default_value][0]))
			continue;
		cr_assert_eq(rt_setting_parse(s, want, &platform, &parsed), RT_PARSE_OK, "%s: %s",
		             s->name, want);
		cr_assert_eq(parsed, s->default_value, "%s: %s", s->name, want);
	}
}

/* What each role sets: NVFlare's recommendations, and the no-role's N is GC_ROUNDS' default. */
Test(settings, roles)
{
	cr_assert_eq(rt_roles[RT_ROLE_NONE].arena_max, 0);
	cr_assert_eq(rt_roles[RT_ROLE_NONE].gc_rounds, 0, "no role: the setting's own default");
	cr_assert_eq(rt_roles[RT_ROLE_CLIENT].gc_rounds, 1);
	cr_assert_eq(rt_roles[RT_ROLE_CLIENT].arena_max, 2);
	cr_assert_eq(rt_roles[RT_ROLE_SERVER].gc_rounds, 5);
	cr_assert_eq(rt_roles[RT_ROLE_SERVER].arena_max, 4);
	uint64_t v;
	for (unsigned role = 0; role < RT_ROLE_COUNT; role++) {
		const char *name = rt_role_name((enum rt_role)role);
		if (role == RT_ROLE_NONE) {
			cr_assert_str_eq(name, "none");
			continue;
		}
		cr_assert_eq(rt_setting_parse(&rt_settings[RT_SETTING_ROLE], name, &platform, &v),
		             RT_PARSE_OK, "%s", name);
		cr_assert_eq(v, role, "%s", name);
	}
}

/* The lines of a file, whole, for the documentation checks. */
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* README's configuration table: one row per setting, `NAME` | values | default | `TWIN` |
 * what, exactly as the row says. */
Test(settings, readme_table_agrees)
{
	char *text = slurp(RT_SOURCE_DIR "/README.md");
	char *table = strstr(text, "| variable | values | default | NVFlare twin | what |\n");
	cr_assert_not_null(table, "README has no configuration table");
	char *end = strstr(table, "\n\n");
	if (end)
		*end = '\0';
	unsigned rows = 0;
	for (char *line = strtok(table, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "| `ROUNDTRIM_", 13))
			continue;
		char name[64];
		cr_assert_eq(sscanf(line, "| `%63[A-Z_]`", name), 1, "%s", line);
		const struct rt_setting *s = rt_setting_named(name);
		cr_assert_not_null(s, "README names %s, which is no setting", name);
		char want[1024];
		snprintf(want, sizeof(want), "| `%s` | %s | %s | %s%s%s | %s |", s->name, s->values,
		         s->default_text, s->twin ? "`" : "", s->twin ? s->twin : "",
		         s->twin ? "`" : "", s->doc);
		cr_assert_str_eq(line, want);
		rows++;
	}
	cr_assert_eq(rows, RT_SETTING_COUNT, "README's table has %u rows", rows);
}

/* roundtrim(7)'s ENVIRONMENT: an entry (.TP, then .B NAME) for every setting and no other,
 * each naming its NVFlare twin. */
Test(settings, man_page_agrees)
{
	char *text = slurp(RT_SOURCE_DIR "/man/roundtrim.7");
	char *env = strstr(text, "\n.SH ENVIRONMENT\n");
	cr_assert_not_null(env);
	char *end = strstr(env + 1, "\n.SH ");
	cr_assert_not_null(end);
	*end = '\0';
	bool seen[RT_SETTING_COUNT] = {false};
	for (char *at = env; (at = strstr(at, "\n.TP\n.B ROUNDTRIM_")) != NULL; at++) {
		char name[64];
		cr_assert_eq(sscanf(at, "\n.TP\n.B %63[A-Z_]", name), 1);
		const struct rt_setting *s = rt_setting_named(name);
		cr_assert_not_null(s, "roundtrim(7) describes %s, which is no setting", name);
		seen[s - rt_settings] = true;
		char *next = strstr(at + 1, "\n.TP\n.B ROUNDTRIM_");
		size_t len = next ? (size_t)(next - at) : strlen(at);
		if (s->twin)
			cr_assert_not_null(memmem(at, len, s->twin, strlen(s->twin)),
			                   "roundtrim(7)'s %s does not name %s", name, s->twin);
	}
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++)
		cr_assert(seen[i], "roundtrim(7) does not describe %s", rt_settings[i].name);
}

static enum rt_parse_result
option_value(enum rt_setting_id id, const char *arg, const char *cwd, char *out, size_t size)
{
	return rt_setting_option_value(&rt_settings[id], arg, cwd, &platform, out, size);
}

/* What the command's run sets for an option: the rows' own words and rules, checked. */
Test(settings, option_values)
{
	char out[600];
	cr_assert_eq(option_value(RT_SETTING_PYTHON, "yes", NULL, out, sizeof(out)), RT_PARSE_OK);
	cr_assert_str_eq(out, "yes");
	cr_assert_eq(option_value(RT_SETTING_PYTHON, "1", NULL, out, sizeof(out)), RT_PARSE_OK);
	cr_assert_eq(option_value(RT_SETTING_ROLE, "CLIENT", NULL, out, sizeof(out)), RT_PARSE_OK);
	cr_assert_eq(option_value(RT_SETTING_GC_ROUNDS, "2000000000", NULL, out, sizeof(out)),
	             RT_PARSE_OVERFLOW);
	cr_assert_eq(option_value(RT_SETTING_GC_ROUNDS, "99999999999", NULL, out, sizeof(out)),
	             RT_PARSE_OVERFLOW);
	cr_assert_eq(option_value(RT_SETTING_SIGNAL, "FOO", NULL, out, sizeof(out)),
	             RT_PARSE_GARBAGE);
	cr_assert_eq(option_value(RT_SETTING_MATCH, "", NULL, out, sizeof(out)), RT_PARSE_EMPTY);
	/* A flag: its own value. */
	cr_assert_eq(option_value(RT_SETTING_PROFILE, NULL, NULL, out, sizeof(out)), RT_PARSE_OK);
	cr_assert_str_eq(out, "1");
	cr_assert_eq(option_value(RT_SETTING_CUDA_EMPTY_CACHE, NULL, NULL, out, sizeof(out)),
	             RT_PARSE_OK);
	cr_assert_str_eq(out, "true");
}

Test(settings, option_paths_are_made_absolute_but_not_the_off_word)
{
	char out[600];
	cr_assert_eq(option_value(RT_SETTING_FIFO, "NONE", "/home/a", out, sizeof(out)),
	             RT_PARSE_OK);
	cr_assert_str_eq(out, "NONE");
	cr_assert_eq(option_value(RT_SETTING_LOG, "StdErr", "/home/a", out, sizeof(out)),
	             RT_PARSE_OK);
	cr_assert_str_eq(out, "StdErr");
	/* stderr is the log's word, not the stats file's. */
	cr_assert_eq(option_value(RT_SETTING_STATS, "stderr", "/home/a", out, sizeof(out)),
	             RT_PARSE_OK);
	cr_assert_str_eq(out, "/home/a/stderr");
	cr_assert_eq(option_value(RT_SETTING_STATS, "s-%p.jsonl", "/tmp/9%", out, sizeof(out)),
	             RT_PARSE_OK);
	cr_assert_str_eq(out, "/tmp/9%%/s-%p.jsonl");
	cr_assert_eq(option_value(RT_SETTING_FIFO, "/abs/%p.fifo", "/home/a", out, sizeof(out)),
	             RT_PARSE_OK);
	cr_assert_str_eq(out, "/abs/%p.fifo");
	/* Without a directory a relative path stays relative, and is refused. */
	cr_assert_eq(option_value(RT_SETTING_STATS, "s.jsonl", NULL, out, sizeof(out)),
	             RT_PARSE_RELATIVE);
	cr_assert_eq(option_value(RT_SETTING_STATS, "s-%d", "/a", out, sizeof(out)),
	             RT_PARSE_TEMPLATE);
	cr_assert_eq(option_value(RT_SETTING_STATS, "", "/a", out, sizeof(out)), RT_PARSE_EMPTY);
	cr_assert_eq(option_value(RT_SETTING_STATS, "s.jsonl", "/a", out, 4), RT_PARSE_TOO_LONG);
	cr_assert_eq(option_value(RT_SETTING_STATS, "/s.jsonl", NULL, out, 4), RT_PARSE_TOO_LONG);
}

Test(settings, is_off)
{
	cr_assert(rt_setting_is_off(&rt_settings[RT_SETTING_FIFO], "None"));
	cr_assert_not(rt_setting_is_off(&rt_settings[RT_SETTING_FIFO], "stderr"));
	cr_assert(rt_setting_is_off(&rt_settings[RT_SETTING_LOG], "stderr"));
	cr_assert_not(rt_setting_is_off(&rt_settings[RT_SETTING_GC_ROUNDS], "none"));
}

/* roundtrim(1)'s run: an entry (.TP, then the option in bold) for every row with an option,
 * naming its variable, and no option that is not a row's. */
Test(settings, command_page_lists_run_options)
{
	char *text = slurp(RT_SOURCE_DIR "/man/roundtrim.1");
	char *run = strstr(text, "\n.SS run\n");
	cr_assert_not_null(run);
	char *end = strstr(run + 1, "\n.SS ");
	cr_assert_not_null(end);
	*end = '\0';
	bool seen[RT_SETTING_COUNT] = {false};
	for (char *at = run; (at = strstr(at, "\n.TP\n.B")) != NULL; at++) {
		char macro[4], option[64], man_option[64];
		cr_assert_eq(sscanf(at, "\n.TP\n.%3s %63s", macro, man_option), 2);
		/* The page writes each '-' as "\-". */
		size_t w = 0;
		for (const char *c = man_option; *c && w + 1 < sizeof(option); c++)
			if (*c != '\\')
				option[w++] = *c;
		option[w] = '\0';
		const struct rt_setting *s = rt_setting_with_option(option);
		cr_assert_not_null(s, "roundtrim(1)'s run describes %s, which is no setting",
		                   option);
		seen[s - rt_settings] = true;
		char *next = strstr(at + 1, "\n.TP\n");
		size_t len = next ? (size_t)(next - at) : strlen(at);
		cr_assert_not_null(memmem(at, len, s->name, strlen(s->name)), "%s does not name %s",
		                   option, s->name);
	}
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++)
		if (rt_settings[i].option)
			cr_assert(seen[i], "roundtrim(1)'s run lacks %s", rt_settings[i].option);
}
