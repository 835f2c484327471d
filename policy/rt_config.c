#include "rt_config.h"

#include "rt_child.h"
#include "rt_parse.h"
#include "rt_path.h"
#include "rt_report.h"
#include "rt_settings.h"
#include "rt_sites.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* No signal by default: the FIFO needs none, the command never sends one, and an unhandled
 * signal kills a process that does not carry the library (roundtrim(7), ENVIRONMENT). */
#define RT_CONFIG_SIGNAL_OFF_TEXT "none (no signal trigger)"
/* How much of a bad value a diagnostic quotes, so that a huge value cannot flood the log. */
#define RT_CONFIG_QUOTE_MAX 64
#define RT_CONFIG_QUOTED_SIZE (RT_CONFIG_QUOTE_MAX * 4 + sizeof("..."))
#define RT_CONFIG_DIAG_SIZE 1024

struct rt_config_reader {
	const struct rt_platform *platform;
	rt_lookup_fn lookup;
	void *lookup_ctx;
	rt_diag_fn diag;
	void *diag_ctx;
	enum rt_role role; /* once read: a server ignores NVFlare's client-only twins */
};

/* Writes at most max bytes of value, escaped (policy/rt_report) and "..." when there is more;
 * out must hold max * 4 + 4 bytes (RT_CONFIG_QUOTED_SIZE for RT_CONFIG_QUOTE_MAX). */
static void
rt_config_quote(char *out, const char *value, size_t max)
{
	rt_report_escape(out, max * 4 + 4, value, max, true);
}

static void
rt_config_diag(const struct rt_config_reader *r, const char *name, const char *value,
               const char *problem, const char *fallback)
{
	char quoted[RT_CONFIG_QUOTED_SIZE];
	char line[RT_CONFIG_DIAG_SIZE];
	rt_config_quote(quoted, value, RT_CONFIG_QUOTE_MAX);
	snprintf(line, sizeof(line), "roundtrim: %s=\"%s\" is %s; using %s", name, quoted, problem,
	         fallback);
	r->diag(r->diag_ctx, line);
}

static const char *
rt_config_get(const struct rt_config_reader *r, const char *name)
{
	return r->lookup(r->lookup_ctx, name);
}

/* Whether the user already chose glibc's arena limit: a non-empty MALLOC_ARENA_MAX (glibc ignores
 * an empty one), or a glibc.malloc.arena_max=VALUE entry among GLIBC_TUNABLES' colon-separated
 * name=value pairs. */
static bool
rt_config_arena_max_set_by_user(const struct rt_config_reader *r)
{
	static const char key[] = "glibc.malloc.arena_max=";
	const char *arena_max = rt_config_get(r, "MALLOC_ARENA_MAX");
	if (arena_max && arena_max[0])
		return true;
	const char *entry = rt_config_get(r, "GLIBC_TUNABLES");
	for (; entry; entry = strchr(entry, ':'), entry = entry ? entry + 1 : NULL) {
		const char *value = entry + sizeof(key) - 1;
		if (strncmp(entry, key, sizeof(key) - 1) == 0 && *value && *value != ':')
			return true;
	}
	return false;
}

static struct rt_setting_platform
rt_config_setting_platform(const struct rt_config_reader *r)
{
	return (struct rt_setting_platform){r->platform->sigrtmin, r->platform->sigrtmax};
}

/* The twin's text, or NULL when it is unset or this process does not read it. */
static const char *
rt_config_twin(const struct rt_config_reader *r, const struct rt_setting *s)
{
	if (!s->twin || (s->twin_client_only && r->role == RT_ROLE_SERVER))
		return NULL;
	return rt_config_get(r, s->twin);
}

/* The value of a scalar setting, by its row (policy/rt_settings): the variable wins over its
 * NVFlare twin when both are set; when the winner is bad the other one is used if it is good,
 * else bad_value (bad_text, when not NULL, names what is used). Unset everywhere yields
 * unset_value, silently. The twin is read as NVFlare reads it. */
static uint64_t
rt_config_scalar(const struct rt_config_reader *r, enum rt_setting_id id, uint64_t unset_value,
                 uint64_t bad_value, const char *bad_text)
{
	const struct rt_setting *s = &rt_settings[id];
	const struct rt_setting_platform platform = rt_config_setting_platform(r);
	const char *text = rt_config_get(r, s->name);
	const char *twin_text = rt_config_twin(r, s);
	uint64_t value = 0, twin_value = 0;
	enum rt_parse_result res = RT_PARSE_OK, twin_res = RT_PARSE_OK;
	if (twin_text)
		twin_res = rt_setting_parse_twin(s, twin_text, &twin_value);
	if (!text) {
		if (!twin_text)
			return unset_value;
		if (twin_res == RT_PARSE_OK)
			return twin_value;
	} else if ((res = rt_setting_parse(s, text, &platform, &value)) == RT_PARSE_OK) {
		return value;
	}
	char fallback[RT_CONFIG_QUOTED_SIZE + 64];
	if (text && twin_text && twin_res == RT_PARSE_OK) {
		char quoted[RT_CONFIG_QUOTED_SIZE];
		rt_config_quote(quoted, twin_text, RT_CONFIG_QUOTE_MAX);
		snprintf(fallback, sizeof(fallback), "%s=%s", s->twin, quoted);
		rt_config_diag(r, s->name, text, rt_parse_result_text(res), fallback);
		return twin_value;
	}
	if (bad_text)
		snprintf(fallback, sizeof(fallback), "%s", bad_text);
	else
		rt_setting_value_text(s, bad_value, fallback, sizeof(fallback));
	if (text)
		rt_config_diag(r, s->name, text, rt_parse_result_text(res), fallback);
	if (twin_text && twin_res != RT_PARSE_OK)
		rt_config_diag(r, s->twin, twin_text, rt_parse_result_text(twin_res), fallback);
	return bad_value;
}

/* The value of a scalar setting that is its row's default when unset or bad. */
static uint64_t
rt_config_value(const struct rt_config_reader *r, enum rt_setting_id id)
{
	const uint64_t def = rt_settings[id].default_value;
	return rt_config_scalar(r, id, def, def, NULL);
}

/* A path template setting: unset yields def (NULL: the row's default) silently, its off word
 * yields "" (none), a bad template yields def with a diagnostic that calls it def_text. */
static void
rt_config_path(const struct rt_config_reader *r, enum rt_setting_id id, char *out, const char *def,
               const char *def_text)
{
	const struct rt_setting *s = &rt_settings[id];
	if (!def)
		def = s->default_string ? s->default_string : "";
	const struct rt_setting_platform platform = rt_config_setting_platform(r);
	const char *text = rt_config_get(r, s->name);
	uint64_t unused;
	enum rt_parse_result res;
	if (!text) {
		text = def;
	} else if (rt_setting_is_off(s, text)) {
		text = "";
	} else if ((res = rt_setting_parse(s, text, &platform, &unused)) != RT_PARSE_OK) {
		rt_config_diag(r, s->name, text, rt_parse_result_text(res), def_text);
		text = def;
	}
	snprintf(out, RT_CONFIG_PATH_MAX, "%s", text);
}

static void
rt_config_default_fifo(const struct rt_config_reader *r, char *out)
{
	const struct rt_setting_platform platform = rt_config_setting_platform(r);
	uint64_t unused;
	/* An XDG_RUNTIME_DIR too long for a FIFO path falls back to the /tmp location. */
	if (!rt_path_default_fifo(out, RT_CONFIG_PATH_MAX, rt_config_get(r, "XDG_RUNTIME_DIR"),
	                          r->platform->uid) ||
	    rt_setting_parse(&rt_settings[RT_SETTING_FIFO], out, &platform, &unused) != RT_PARSE_OK)
		rt_path_default_fifo(out, RT_CONFIG_PATH_MAX, NULL, r->platform->uid);
}

static void
rt_config_signal(const struct rt_config_reader *r, struct rt_config *cfg)
{
	const struct rt_setting *s = &rt_settings[RT_SETTING_SIGNAL];
	const struct rt_setting_platform platform = rt_config_setting_platform(r);
	const char *text = rt_config_get(r, s->name);
	uint64_t sig = 0;
	cfg->signal = 0;
	if (!text)
		return;
	enum rt_parse_result res = rt_setting_parse(s, text, &platform, &sig);
	if (res == RT_PARSE_OK) {
		cfg->signal = (int)sig;
		return;
	}
	rt_config_diag(r, s->name, text, rt_parse_result_text(res), RT_CONFIG_SIGNAL_OFF_TEXT);
}

/* ROUNDTRIM_SITES and ROUNDTRIM_SAMPLE_BYTES: the records go beside the stats file, so there is
 * none without one; a mean of 0 bytes would sample every byte of every allocation. */
static void
rt_config_sites(const struct rt_config_reader *r, struct rt_config *cfg)
{
	const struct rt_setting *bytes_row = &rt_settings[RT_SETTING_SAMPLE_BYTES];
	const struct rt_setting_platform platform = rt_config_setting_platform(r);
	cfg->sample_bytes = rt_config_value(r, RT_SETTING_SAMPLE_BYTES);
	if (cfg->sample_bytes == 0) {
		char fallback[32];
		rt_setting_value_text(bytes_row, bytes_row->default_value, fallback,
		                      sizeof(fallback));
		rt_config_diag(r, bytes_row->name, rt_config_get(r, bytes_row->name), "zero",
		               fallback);
		cfg->sample_bytes = bytes_row->default_value;
	}
	cfg->sites[0] = '\0';
	if (!rt_config_value(r, RT_SETTING_SITES))
		return;
	const char *name = rt_settings[RT_SETTING_SITES].name;
	uint64_t unused;
	if (!cfg->stats[0]) {
		rt_config_diag(r, name, rt_config_get(r, name),
		               "set without ROUNDTRIM_STATS (its records go beside the stats file)",
		               "off");
	} else if (!rt_sites_path(cfg->sites, sizeof(cfg->sites), cfg->stats) ||
	           rt_setting_parse(&rt_settings[RT_SETTING_STATS], cfg->sites, &platform,
	                            &unused) != RT_PARSE_OK) {
		cfg->sites[0] = '\0';
		rt_config_diag(r, name, rt_config_get(r, name),
		               "set, but the sites file beside ROUNDTRIM_STATS would be too long",
		               "off");
	}
}

void
rt_config_read(struct rt_config *cfg, const struct rt_platform *platform, rt_lookup_fn lookup,
               void *lookup_ctx, rt_diag_fn diag, void *diag_ctx)
{
	struct rt_config_reader reader = {platform, lookup,   lookup_ctx,
	                                  diag,     diag_ctx, RT_ROLE_NONE};
	struct rt_config_reader *r = &reader;
	const struct rt_setting_platform setting_platform = rt_config_setting_platform(r);

	memset(cfg, 0, sizeof(*cfg));
	/* A value that is neither on nor off still shows the user meant to turn roundtrim off. */
	cfg->disabled =
	    rt_config_scalar(r, RT_SETTING_DISABLE, rt_settings[RT_SETTING_DISABLE].default_value,
	                     1, NULL) != 0;
	if (cfg->disabled)
		return;

	const struct rt_setting *match_row = &rt_settings[RT_SETTING_MATCH];
	const char *match = rt_config_get(r, match_row->name);
	uint64_t unused;
	enum rt_parse_result res =
	    match ? rt_setting_parse(match_row, match, &setting_platform, &unused) : RT_PARSE_OK;
	if (res != RT_PARSE_OK)
		rt_config_diag(r, match_row->name, match, rt_parse_result_text(res),
		               match_row->default_string);
	/* A plain copy, not snprintf: this runs in every program the library is preloaded into,
	 * and printf's code is cold in a short one (make bench, figure 5). The length is checked.
	 */
	const char *globs = match && res == RT_PARSE_OK ? match : match_row->default_string;
	memcpy(cfg->match, globs, strlen(globs) + 1);
	cfg->matched = rt_config_match(cfg->match, platform->program);
	/* Quiet for the rest: short-lived programs that do not match must not print anything. */
	if (!cfg->matched)
		return;

	const uint64_t no_role = rt_settings[RT_SETTING_ROLE].default_value;
	cfg->role = reader.role =
	    (enum rt_role)rt_config_scalar(r, RT_SETTING_ROLE, no_role, no_role, "no role");
	const struct rt_role_row *role = &rt_roles[cfg->role];
	cfg->arena_max = rt_config_arena_max_set_by_user(r) ? 0 : role->arena_max;

	const uint64_t def_gc_rounds =
	    role->gc_rounds ? role->gc_rounds : rt_settings[RT_SETTING_GC_ROUNDS].default_value;
	cfg->gc_rounds =
	    (uint32_t)rt_config_scalar(r, RT_SETTING_GC_ROUNDS, def_gc_rounds, def_gc_rounds, NULL);
	const uint64_t cuda = rt_config_value(r, RT_SETTING_CUDA_EMPTY_CACHE);
	cfg->cuda_empty_cache = cuda != RT_CUDA_WHERE_OFF;
	cfg->cuda_waiting = cuda == RT_CUDA_WHERE_WAITING;
	cfg->profile = rt_config_value(r, RT_SETTING_PROFILE) != 0;

	rt_config_signal(r, cfg);

	char def_fifo[RT_CONFIG_PATH_MAX];
	/* Escaped like a value: XDG_RUNTIME_DIR may hold a newline, which would split the line. */
	char def_fifo_quoted[RT_CONFIG_PATH_MAX * 4 + 4];
	char def_fifo_text[sizeof(def_fifo_quoted) + sizeof("the default ")];
	rt_config_default_fifo(r, def_fifo);
	rt_config_quote(def_fifo_quoted, def_fifo, RT_CONFIG_PATH_MAX);
	snprintf(def_fifo_text, sizeof(def_fifo_text), "the default %s", def_fifo_quoted);
	rt_config_path(r, RT_SETTING_FIFO, cfg->fifo, def_fifo, def_fifo_text);
	rt_config_path(r, RT_SETTING_LOG, cfg->log, NULL, "stderr");
	rt_config_path(r, RT_SETTING_STATS, cfg->stats, NULL, "no stats file");
	rt_config_path(r, RT_SETTING_PROM, cfg->prom, NULL, "no Prometheus file");

	cfg->jemalloc = (enum rt_jemalloc_action)rt_config_value(r, RT_SETTING_JEMALLOC);
	cfg->glibc = (enum rt_glibc_action)rt_config_value(r, RT_SETTING_GLIBC);
	cfg->trim_pad = rt_config_value(r, RT_SETTING_TRIM_PAD);
	uint64_t python = rt_config_value(r, RT_SETTING_PYTHON);
	cfg->python = python != RT_PYTHON_WHERE_OFF;
	cfg->python_main_only = python == RT_PYTHON_WHERE_MAIN;
	cfg->auto_rounds = rt_config_value(r, RT_SETTING_AUTO) != 0;
	cfg->interval_us = rt_config_value(r, RT_SETTING_INTERVAL) * 1000;
	cfg->pressure_percent = (uint32_t)rt_config_value(r, RT_SETTING_PRESSURE);
	cfg->rss_limit_bytes = rt_config_value(r, RT_SETTING_RSS_LIMIT);
	rt_config_path(r, RT_SETTING_TRACE, cfg->trace, NULL, "no trace file");
	rt_config_sites(r, cfg);
	cfg->shared_table = rt_config_value(r, RT_SETTING_SHARED_TABLE) != 0;
	uint64_t child_start_ms = rt_config_value(r, RT_SETTING_CHILD_START);
	cfg->child_start_ns =
	    child_start_ms == rt_setting_off_value(&rt_settings[RT_SETTING_CHILD_START])
	        ? RT_CHILD_START_NEVER
	        : child_start_ms * 1000 * 1000;
}

bool
rt_config_match(const char *globs, const char *program)
{
	char pattern[RT_CONFIG_MATCH_MAX];
	if (!program)
		program = "";
	for (const char *s = globs;;) {
		size_t len = strcspn(s, ",");
		/* An empty pattern matches nothing; an impossibly long one is skipped likewise. */
		if (len > 0 && len < sizeof(pattern)) {
			memcpy(pattern, s, len);
			pattern[len] = '\0';
			if (fnmatch(pattern, program, 0) == 0)
				return true;
		}
		if (s[len] == '\0')
			return false;
		s += len + 1;
	}
}
