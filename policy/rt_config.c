#include "rt_config.h"

#include "rt_parse.h"
#include "rt_path.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define RT_CONFIG_GC_ROUNDS_MAX 1000000000u
#define RT_CONFIG_TRIM_PAD_MAX (1ULL << 40)
#define RT_CONFIG_SIGNAL_DEFAULT_OFFSET 8
#define RT_CONFIG_SIGNAL_DEFAULT_TEXT "SIGRTMIN+8"
/* The largest pid Linux hands out (PID_MAX_LIMIT): a template must expand for every pid. */
#define RT_CONFIG_PID_MAX 4194304
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
};

/* How a scalar variable's text becomes a value: a decimal number up to max when words is NULL,
 * else value v when the text is one of words[v] (first spelling is how v is written). */
struct rt_config_rule {
	const char *const *const *words;
	uint64_t nwords;
	uint64_t max;
};

static const char *const rt_config_on_words[] = {"on", "1", "true", "yes", NULL};
static const char *const rt_config_off_words[] = {"off", "0", "false", "no", NULL};
static const char *const *const rt_config_switch_words[] = {rt_config_off_words,
                                                            rt_config_on_words};
static const struct rt_config_rule rt_config_switch_rule = {rt_config_switch_words, 2, 0};

/* NVFlare's own rules: cuda_empty_cache takes only true/false, profile also 1/0 and yes/no. */
static const char *const rt_config_true_words[] = {"true", NULL};
static const char *const rt_config_false_words[] = {"false", NULL};
static const char *const *const rt_config_truth_words[] = {rt_config_false_words,
                                                           rt_config_true_words};
static const struct rt_config_rule rt_config_truth_rule = {rt_config_truth_words, 2, 0};

static const char *const rt_config_profile_on_words[] = {"true", "1", "yes", NULL};
static const char *const rt_config_profile_off_words[] = {"false", "0", "no", NULL};
static const char *const *const rt_config_profile_words[] = {rt_config_profile_off_words,
                                                             rt_config_profile_on_words};
static const struct rt_config_rule rt_config_profile_rule = {rt_config_profile_words, 2, 0};

/* Indexed by enum rt_jemalloc_action. */
static const char *const rt_config_purge_words[] = {"purge", NULL};
static const char *const rt_config_decay_words[] = {"decay", NULL};
static const char *const *const rt_config_jemalloc_words[] = {rt_config_purge_words,
                                                              rt_config_decay_words};
static const struct rt_config_rule rt_config_jemalloc_rule = {rt_config_jemalloc_words, 2, 0};

/* Indexed by enum rt_role; no word selects RT_ROLE_NONE, which is what unset means. */
static const char *const rt_config_no_words[] = {NULL};
static const char *const rt_config_client_words[] = {"client", NULL};
static const char *const rt_config_server_words[] = {"server", NULL};
static const char *const *const rt_config_role_words[] = {
    rt_config_no_words, rt_config_client_words, rt_config_server_words};
static const struct rt_config_rule rt_config_role_rule = {rt_config_role_words, 3, 0};

static const struct rt_config_rule rt_config_gc_rounds_rule = {NULL, 0, RT_CONFIG_GC_ROUNDS_MAX};
static const struct rt_config_rule rt_config_trim_pad_rule = {NULL, 0, RT_CONFIG_TRIM_PAD_MAX};

/* Writes at most max bytes of value, escaped so that the line stays one printable line
 * whatever the value holds, and "..." when there is more; out must hold max * 4 + 4 bytes
 * (RT_CONFIG_QUOTED_SIZE for RT_CONFIG_QUOTE_MAX). */
static void
rt_config_quote(char *out, const char *value, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t w = 0;
	size_t i;
	for (i = 0; value[i] && i < max; i++) {
		unsigned char c = (unsigned char)value[i];
		if (c == '"' || c == '\\') {
			out[w++] = '\\';
			out[w++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			out[w++] = '\\';
			out[w++] = 'x';
			out[w++] = hex[c >> 4];
			out[w++] = hex[c & 0xf];
		} else {
			out[w++] = (char)c;
		}
	}
	if (value[i]) {
		memcpy(out + w, "...", 3);
		w += 3;
	}
	out[w] = '\0';
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

static enum rt_parse_result
rt_config_parse(const struct rt_config_rule *rule, const char *text, uint64_t *out)
{
	if (!rule->words)
		return rt_parse_u64(text, rule->max, out);
	if (text[0] == '\0')
		return RT_PARSE_EMPTY;
	for (uint64_t v = 0; v < rule->nwords; v++) {
		if (rt_parse_word_in(text, rule->words[v])) {
			*out = v;
			return RT_PARSE_OK;
		}
	}
	return RT_PARSE_GARBAGE;
}

static void
rt_config_value_text(char *out, size_t size, const struct rt_config_rule *rule, uint64_t value)
{
	if (rule->words)
		snprintf(out, size, "%s", rule->words[value][0]);
	else
		snprintf(out, size, "%" PRIu64, value);
}

/* The value of a scalar setting that has the name `name` and, where NVFlare already defines the
 * same setting, the name `twin` (NULL when none): name wins when both are set; when the winner
 * is bad the other one is used if it is good, else bad_value (or bad_text, when not NULL, names
 * what is used). Unset everywhere yields unset_value, silently. */
static uint64_t
rt_config_scalar(const struct rt_config_reader *r, const char *name, const char *twin,
                 const struct rt_config_rule *rule, uint64_t unset_value, uint64_t bad_value,
                 const char *bad_text)
{
	const char *text = rt_config_get(r, name);
	const char *twin_text = twin ? rt_config_get(r, twin) : NULL;
	if (!text) {
		if (!twin_text)
			return unset_value;
		/* Only the twin is set: it is the winner and has no twin of its own. */
		text = twin_text;
		name = twin;
		twin_text = NULL;
	}
	uint64_t value;
	enum rt_parse_result res = rt_config_parse(rule, text, &value);
	if (res == RT_PARSE_OK)
		return value;
	uint64_t twin_value;
	enum rt_parse_result twin_res =
	    twin_text ? rt_config_parse(rule, twin_text, &twin_value) : RT_PARSE_OK;
	char fallback[RT_CONFIG_QUOTED_SIZE + 64];
	if (twin_text && twin_res == RT_PARSE_OK) {
		char quoted[RT_CONFIG_QUOTED_SIZE];
		rt_config_quote(quoted, twin_text, RT_CONFIG_QUOTE_MAX);
		snprintf(fallback, sizeof(fallback), "%s=%s", twin, quoted);
		rt_config_diag(r, name, text, rt_parse_result_text(res), fallback);
		return twin_value;
	}
	if (bad_text)
		snprintf(fallback, sizeof(fallback), "%s", bad_text);
	else
		rt_config_value_text(fallback, sizeof(fallback), rule, bad_value);
	rt_config_diag(r, name, text, rt_parse_result_text(res), fallback);
	if (twin_text)
		rt_config_diag(r, twin, twin_text, rt_parse_result_text(twin_res), fallback);
	return bad_value;
}

/* Why a path template cannot be used, or NULL when it can: it must be absolute, use '%' only in
 * %p and %%, and expand for any pid into a path buffer. */
static const char *
rt_config_path_problem(const char *tmpl)
{
	char expanded[RT_CONFIG_PATH_MAX];
	if (tmpl[0] == '\0')
		return "empty";
	if (tmpl[0] != '/')
		return "not an absolute path";
	if (!rt_path_template_valid(tmpl))
		return "not a valid template ('%' must start %p or %%)";
	if (strlen(tmpl) >= RT_CONFIG_PATH_MAX ||
	    !rt_path_expand(expanded, sizeof(expanded), tmpl, RT_CONFIG_PID_MAX))
		return "too long";
	return NULL;
}

/* A path template setting: unset yields def silently, the word off_word yields "" (none), a bad
 * template yields def with a diagnostic that calls it def_text. */
static void
rt_config_path(const struct rt_config_reader *r, const char *name, const char *off_word, char *out,
               const char *def, const char *def_text)
{
	const char *const off_words[] = {off_word, NULL};
	const char *text = rt_config_get(r, name);
	const char *problem = NULL;
	if (!text) {
		text = def;
	} else if (rt_parse_word_in(text, off_words)) {
		text = "";
	} else if ((problem = rt_config_path_problem(text))) {
		rt_config_diag(r, name, text, problem, def_text);
		text = def;
	}
	snprintf(out, RT_CONFIG_PATH_MAX, "%s", text);
}

static void
rt_config_default_fifo(const struct rt_config_reader *r, char *out)
{
	/* An XDG_RUNTIME_DIR too long for a FIFO path falls back to the /tmp location. */
	if (!rt_path_default_fifo(out, RT_CONFIG_PATH_MAX, rt_config_get(r, "XDG_RUNTIME_DIR"),
	                          r->platform->uid) ||
	    rt_config_path_problem(out))
		rt_path_default_fifo(out, RT_CONFIG_PATH_MAX, NULL, r->platform->uid);
}

static const char *
rt_config_match_problem(const char *globs)
{
	size_t len = strlen(globs);
	if (len == 0)
		return "empty";
	if (len >= RT_CONFIG_MATCH_MAX)
		return "too long";
	if (globs[0] == ',' || globs[len - 1] == ',' || strstr(globs, ",,"))
		return "a list with an empty pattern";
	return NULL;
}

static void
rt_config_signal(const struct rt_config_reader *r, struct rt_config *cfg)
{
	const struct rt_platform *p = r->platform;
	const char *text = rt_config_get(r, "ROUNDTRIM_SIGNAL");
	int def = p->sigrtmin + RT_CONFIG_SIGNAL_DEFAULT_OFFSET;
	cfg->signal = def;
	if (!text)
		return;
	enum rt_parse_result res = rt_parse_signal(text, p->sigrtmin, p->sigrtmax, &cfg->signal);
	if (res == RT_PARSE_OK)
		return;
	rt_config_diag(r, "ROUNDTRIM_SIGNAL", text, rt_parse_result_text(res),
	               RT_CONFIG_SIGNAL_DEFAULT_TEXT);
	cfg->signal = def;
}

void
rt_config_read(struct rt_config *cfg, const struct rt_platform *platform, rt_lookup_fn lookup,
               void *lookup_ctx, rt_diag_fn diag, void *diag_ctx)
{
	const struct rt_config_reader reader = {platform, lookup, lookup_ctx, diag, diag_ctx};
	const struct rt_config_reader *r = &reader;

	memset(cfg, 0, sizeof(*cfg));
	/* A value that is neither on nor off still shows the user meant to turn roundtrim off. */
	cfg->disabled =
	    rt_config_scalar(r, "ROUNDTRIM_DISABLE", NULL, &rt_config_switch_rule, 0, 1, NULL) != 0;
	if (cfg->disabled)
		return;

	const char *match = rt_config_get(r, "ROUNDTRIM_MATCH");
	const char *problem = match ? rt_config_match_problem(match) : NULL;
	if (problem)
		rt_config_diag(r, "ROUNDTRIM_MATCH", match, problem, "*");
	/* A plain copy, not snprintf: this runs in every program the library is preloaded into,
	 * and printf's code is cold in a short one (make bench, figure 5). The length is checked. */
	const char *globs = match && !problem ? match : "*";
	memcpy(cfg->match, globs, strlen(globs) + 1);
	cfg->matched = rt_config_match(cfg->match, platform->program);
	/* Quiet for the rest: short-lived programs that do not match must not print anything. */
	if (!cfg->matched)
		return;

	cfg->role = (enum rt_role)rt_config_scalar(r, "ROUNDTRIM_ROLE", NULL, &rt_config_role_rule,
	                                           RT_ROLE_NONE, RT_ROLE_NONE, "no role");
	uint32_t def_gc_rounds = cfg->role == RT_ROLE_SERVER ? 5 : 1;
	unsigned def_arena_max = cfg->role == RT_ROLE_SERVER   ? 4
	                         : cfg->role == RT_ROLE_CLIENT ? 2
	                                                       : 0;
	cfg->arena_max = rt_config_arena_max_set_by_user(r) ? 0 : def_arena_max;

	cfg->gc_rounds = (uint32_t)rt_config_scalar(
	    r, "ROUNDTRIM_GC_ROUNDS", "NVFLARE_CLIENT_MEMORY_GC_ROUNDS", &rt_config_gc_rounds_rule,
	    def_gc_rounds, def_gc_rounds, NULL);
	cfg->cuda_empty_cache =
	    rt_config_scalar(r, "ROUNDTRIM_CUDA_EMPTY_CACHE", "NVFLARE_CUDA_EMPTY_CACHE",
	                     &rt_config_truth_rule, 0, 0, NULL) != 0;
	cfg->profile = rt_config_scalar(r, "ROUNDTRIM_PROFILE", "NVFLARE_CLIENT_MEMORY_PROFILE",
	                                &rt_config_profile_rule, 0, 0, NULL) != 0;

	rt_config_signal(r, cfg);

	char def_fifo[RT_CONFIG_PATH_MAX];
	/* Escaped like a value: XDG_RUNTIME_DIR may hold a newline, which would split the line. */
	char def_fifo_quoted[RT_CONFIG_PATH_MAX * 4 + 4];
	char def_fifo_text[sizeof(def_fifo_quoted) + sizeof("the default ")];
	rt_config_default_fifo(r, def_fifo);
	rt_config_quote(def_fifo_quoted, def_fifo, RT_CONFIG_PATH_MAX);
	snprintf(def_fifo_text, sizeof(def_fifo_text), "the default %s", def_fifo_quoted);
	rt_config_path(r, "ROUNDTRIM_FIFO", "none", cfg->fifo, def_fifo, def_fifo_text);
	rt_config_path(r, "ROUNDTRIM_LOG", "stderr", cfg->log, "", "stderr");
	rt_config_path(r, "ROUNDTRIM_STATS", "none", cfg->stats, "", "no stats file");

	cfg->jemalloc = (enum rt_jemalloc_action)rt_config_scalar(
	    r, "ROUNDTRIM_JEMALLOC", NULL, &rt_config_jemalloc_rule, RT_JEMALLOC_PURGE,
	    RT_JEMALLOC_PURGE, NULL);
	cfg->trim_pad =
	    rt_config_scalar(r, "ROUNDTRIM_TRIM_PAD", NULL, &rt_config_trim_pad_rule, 0, 0, NULL);
	cfg->python =
	    rt_config_scalar(r, "ROUNDTRIM_PYTHON", NULL, &rt_config_switch_rule, 1, 1, NULL) != 0;
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

const char *
rt_role_name(enum rt_role role)
{
	switch (role) {
	case RT_ROLE_CLIENT:
		return "client";
	case RT_ROLE_SERVER:
		return "server";
	case RT_ROLE_NONE:
		break;
	}
	return "none";
}
