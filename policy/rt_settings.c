#include "rt_settings.h"

#include "rt_path.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Buffers of rt_config: a path template must expand for every pid into one, a list fit one. */
#define RT_SETTINGS_TEXT_MAX 512
/* The largest pid Linux hands out (PID_MAX_LIMIT): a template must expand for every pid. */
#define RT_SETTINGS_PID_MAX 4194304

static const char *const rt_on_words[] = {"on", "1", "true", "yes", NULL};
static const char *const rt_off_words[] = {"off", "0", "false", "no", NULL};
static const char *const *const rt_switch_words[] = {rt_off_words, rt_on_words};

/* NVFlare's own words: cuda_empty_cache takes only true/false, profile also 1/0, yes/no. */
static const char *const rt_true_words[] = {"true", NULL};
static const char *const rt_false_words[] = {"false", NULL};
/* Indexed by enum rt_cuda_where: NVFlare's two words, and one of ours. */
static const char *const rt_waiting_words[] = {"waiting", NULL};
static const char *const *const rt_cuda_words[] = {rt_false_words, rt_true_words, rt_waiting_words};
_Static_assert(sizeof(rt_cuda_words) / sizeof(rt_cuda_words[0]) == RT_CUDA_WHERE_COUNT,
               "a place a word");
static const char *const rt_profile_on_words[] = {"true", "1", "yes", NULL};
static const char *const rt_profile_off_words[] = {"false", "0", "no", NULL};
static const char *const *const rt_profile_words[] = {rt_profile_off_words, rt_profile_on_words};

/* Indexed by enum rt_role: no word selects the first, which is what unset means. */
static const char *const rt_no_words[] = {NULL};
static const char *const rt_client_words[] = {"client", NULL};
static const char *const rt_server_words[] = {"server", NULL};
static const char *const *const rt_role_words[] = {rt_no_words, rt_client_words, rt_server_words};
_Static_assert(sizeof(rt_role_words) / sizeof(rt_role_words[0]) == RT_ROLE_COUNT, "a role a word");

/* NVFlare's recommended cleanup for its processes: a client every round with two arenas, the
 * server every fifth with four (roundtrim(7), ROUNDTRIM_ROLE). */
const struct rt_role_row rt_roles[RT_ROLE_COUNT] = {
    [RT_ROLE_NONE] = {.gc_rounds = 0, .arena_max = 0},
    [RT_ROLE_CLIENT] = {.gc_rounds = 1, .arena_max = 2},
    [RT_ROLE_SERVER] = {.gc_rounds = 5, .arena_max = 4},
};

/* Indexed by enum rt_python_where: off, on (the main thread first, then a thread of the
 * library's), or the main thread only. */
static const char *const rt_main_words[] = {"main", NULL};
static const char *const *const rt_python_words[] = {rt_off_words, rt_on_words, rt_main_words};
_Static_assert(sizeof(rt_python_words) / sizeof(rt_python_words[0]) == RT_PYTHON_WHERE_COUNT,
               "a place a word");

/* Indexed by enum rt_glibc_action. */
static const char *const rt_release_words[] = {"release", NULL};
static const char *const rt_trim_words[] = {"trim", NULL};
static const char *const *const rt_glibc_words[] = {rt_release_words, rt_trim_words};

/* Indexed by enum rt_jemalloc_action. */
static const char *const rt_purge_words[] = {"purge", NULL};
static const char *const rt_decay_words[] = {"decay", NULL};
static const char *const *const rt_jemalloc_words[] = {rt_purge_words, rt_decay_words};

#define RT_WORDS(w) .kind = RT_KIND_WORDS, .words = (w), .nwords = sizeof(w) / sizeof((w)[0])

const struct rt_setting rt_settings[RT_SETTING_COUNT] = {
    [RT_SETTING_DISABLE] =
        {
            .name = "ROUNDTRIM_DISABLE",
            RT_WORDS(rt_switch_words),
            .values = "`on`/`1`/`true`/`yes`, `off`/`0`/`false`/`no`",
            .default_value = 0,
            .default_text = "off",
            .doc = "a pure pass-through: no thread, no file, no output",
        },
    [RT_SETTING_MATCH] =
        {
            .name = "ROUNDTRIM_MATCH",
            .kind = RT_KIND_GLOBS,
            .values = "comma-separated globs on the program name",
            .default_string = "*",
            .default_text = "`*`",
            .doc = "active only in programs named so",
            .option = "--match",
            .option_arg = "GLOBS",
            .patch = true,
        },
    [RT_SETTING_ROLE] =
        {
            .name = "ROUNDTRIM_ROLE",
            RT_WORDS(rt_role_words),
            .values = "`client`, `server`",
            .default_value = RT_ROLE_NONE,
            .default_text = "none",
            .doc = "NVFlare's recommended settings for the role (N, arena cap)",
            .option = "--role",
            .option_arg = "client|server",
            .patch = true,
        },
    [RT_SETTING_GC_ROUNDS] =
        {
            .name = "ROUNDTRIM_GC_ROUNDS",
            .twin = "NVFLARE_CLIENT_MEMORY_GC_ROUNDS",
            .twin_rule = RT_TWIN_PYTHON_INT,
            .twin_client_only = true,
            .kind = RT_KIND_NUMBER,
            .max = 1000000000,
            .values = "0–1000000000 (0: count only)",
            .default_value = 1,
            .default_text = "1, or the role's",
            .doc = "act every N rounds; 0 counts only",
            .option = "--gc-rounds",
            .option_arg = "N",
            .patch = true,
        },
    [RT_SETTING_CUDA_EMPTY_CACHE] =
        {
            .name = "ROUNDTRIM_CUDA_EMPTY_CACHE",
            .twin = "NVFLARE_CUDA_EMPTY_CACHE",
            .twin_rule = RT_TWIN_TRUE,
            .twin_client_only = true,
            RT_WORDS(rt_cuda_words),
            .values = "`true`, `false`, `waiting`",
            .default_value = RT_CUDA_WHERE_OFF,
            .default_text = "`false`",
            .doc = "torch.cuda.empty_cache() in the Python steps; waiting: also from the "
                   "library's thread while the main thread waits (not for programs that "
                   "capture CUDA graphs off their main thread)",
            .option = "--cuda-empty-cache",
            .flag_value = "true",
            .patch = true,
        },
    [RT_SETTING_PROFILE] =
        {
            .name = "ROUNDTRIM_PROFILE",
            .twin = "NVFLARE_CLIENT_MEMORY_PROFILE",
            .twin_rule = RT_TWIN_ONE_TRUE_YES,
            .twin_client_only = true,
            RT_WORDS(rt_profile_words),
            .values = "`true`/`1`/`yes`, `false`/`0`/`no`",
            .default_value = 0,
            .default_text = "`false`",
            .doc = "an [RSS] line per round",
            .option = "--profile",
            .flag_value = "1",
            .patch = true,
        },
    [RT_SETTING_PYTHON] =
        {
            .name = "ROUNDTRIM_PYTHON",
            RT_WORDS(rt_python_words),
            .values = "on/off: the Python steps (gc, CUDA cache); `main`: on the main thread "
                      "only",
            .default_value = RT_PYTHON_WHERE_ON,
            .default_text = "on",
            .doc = "the Python steps of an action round: the main thread first, then a thread of "
                   "the library's",
            .option = "--python",
            .option_arg = "on|off|main",
            .patch = true,
        },
    [RT_SETTING_SIGNAL] =
        {
            .name = "ROUNDTRIM_SIGNAL",
            .kind = RT_KIND_SIGNAL,
            .values = "`USR1`, `USR2`, `RTMIN+n`, `RTMAX-n`, a number, `none`",
            .default_value = 0,
            .default_text = "`none`",
            .doc = "a trigger signal (none by default)",
            .option = "--signal",
            .option_arg = "SIG|none",
            .patch = true,
        },
    [RT_SETTING_FIFO] =
        {
            .name = "ROUNDTRIM_FIFO",
            .kind = RT_KIND_PATH,
            .off_word = "none",
            .values = "absolute path template (`%p` pid, `%%`), `none`",
            .default_text = "`$XDG_RUNTIME_DIR/roundtrim/%p.fifo` or `/tmp/roundtrim-UID/%p.fifo`",
            .doc = "the trigger FIFO; %p is the pid",
            .option = "--fifo",
            .option_arg = "TEMPLATE|none",
            .patch = true,
        },
    [RT_SETTING_LOG] =
        {
            .name = "ROUNDTRIM_LOG",
            .kind = RT_KIND_PATH,
            .off_word = "stderr",
            .values = "path template, `stderr`",
            .default_text = "stderr",
            .doc = "where [RSS] lines go",
            .option = "--log",
            .option_arg = "FILE",
            .patch = true,
        },
    [RT_SETTING_STATS] =
        {
            .name = "ROUNDTRIM_STATS",
            .kind = RT_KIND_PATH,
            .off_word = "none",
            .values = "path template, `none`",
            .default_text = "none",
            .doc = "JSON lines, one per round; %p is the pid",
            .option = "--stats",
            .option_arg = "FILE",
            .patch = true,
        },
    [RT_SETTING_PROM] =
        {
            .name = "ROUNDTRIM_PROM",
            .kind = RT_KIND_PATH,
            .off_word = "none",
            .values = "path template, `none`",
            .default_text = "none",
            .doc = "a Prometheus text file for node_exporter; %p is the pid",
            .option = "--prom",
            .option_arg = "FILE",
            .patch = true,
        },
    [RT_SETTING_JEMALLOC] =
        {
            .name = "ROUNDTRIM_JEMALLOC",
            RT_WORDS(rt_jemalloc_words),
            .values = "`purge`, `decay`",
            .default_value = RT_JEMALLOC_PURGE,
            .default_text = "`purge`",
            .doc = "jemalloc's action",
            .option = "--jemalloc",
            .option_arg = "purge|decay",
            .patch = true,
        },
    [RT_SETTING_GLIBC] =
        {
            .name = "ROUNDTRIM_GLIBC",
            RT_WORDS(rt_glibc_words),
            .values = "`release`, `trim`",
            .default_value = RT_GLIBC_RELEASE,
            .default_text = "`release`",
            .doc = "glibc's action: every arena's free pages and tops, or malloc_trim",
            .option = "--glibc",
            .option_arg = "release|trim",
            .patch = true,
        },
    [RT_SETTING_TRIM_PAD] =
        {
            .name = "ROUNDTRIM_TRIM_PAD",
            .kind = RT_KIND_NUMBER,
            .max = UINT64_C(1) << 40,
            .values = "bytes kept at the top of each arena",
            .default_value = 0,
            .default_text = "0",
            .doc = "malloc_trim's pad",
            .option = "--trim-pad",
            .option_arg = "BYTES",
            .patch = true,
        },
    [RT_SETTING_AUTO] =
        {
            .name = "ROUNDTRIM_AUTO",
            RT_WORDS(rt_switch_words),
            .values = "on/off: detect rounds from the allocation rhythm",
            .default_value = 1,
            .default_text = "on, until a round is announced",
            .doc = "round ends found by the library itself",
            .option = "--auto",
            .option_arg = "on|off",
            .patch = true,
        },
    [RT_SETTING_INTERVAL] =
        {
            .name = "ROUNDTRIM_INTERVAL",
            .kind = RT_KIND_DURATION,
            .max = UINT64_C(30) * 24 * 3600 * 1000,
            .off_word = "off",
            .values = "a duration (`500ms`, `90s`, `5m`, `2h`), `off`",
            .default_value = 0,
            .default_text = "off",
            .doc = "act every interval, if the process allocated since the last action",
            .option = "--interval",
            .option_arg = "DURATION",
            .patch = true,
        },
    [RT_SETTING_PRESSURE] =
        {
            .name = "ROUNDTRIM_PRESSURE",
            .kind = RT_KIND_PERCENT,
            .off_word = "off",
            .values = "1–100 (`%` allowed), `off`",
            .default_value = 0,
            .default_text = "off",
            .doc = "act when memory in use crosses this share of its limit",
            .option = "--pressure",
            .option_arg = "PERCENT",
            .patch = true,
        },
    [RT_SETTING_RSS_LIMIT] =
        {
            .name = "ROUNDTRIM_RSS_LIMIT",
            .kind = RT_KIND_SIZE,
            .max = UINT64_C(1) << 50,
            .off_word = "off",
            .values = "a size (bytes, `K`, `M`, `G`, `T`), `off`",
            .default_value = 0,
            .default_text = "off",
            .doc = "act when the process's RSS crosses it",
            .option = "--rss-limit",
            .option_arg = "SIZE",
            .patch = true,
        },
    [RT_SETTING_TRACE] =
        {
            .name = "ROUNDTRIM_TRACE",
            .kind = RT_KIND_PATH,
            .off_word = "none",
            .values = "path template, `none`",
            .default_text = "none",
            .doc = "the detector's readings, one line each; %p is the pid",
            .option = "--trace",
            .option_arg = "FILE",
        },
    [RT_SETTING_SITES] =
        {
            .name = "ROUNDTRIM_SITES",
            RT_WORDS(rt_switch_words),
            .values = "on/off: sample allocations, report the sites that grow",
            .default_value = 0,
            .default_text = "off",
            .doc = "the growing call sites, each action round, beside the stats file",
            .option = "--sites",
            .flag_value = "on",
            .patch = true,
        },
    [RT_SETTING_SAMPLE_BYTES] =
        {
            .name = "ROUNDTRIM_SAMPLE_BYTES",
            .kind = RT_KIND_SIZE,
            .max = UINT64_C(1) << 40,
            .values = "a size (bytes, `K`, `M`, `G`), at least 1",
            .default_value = UINT64_C(512) * 1024,
            .default_text = "512K",
            .doc = "mean bytes between two sampled allocations",
            .option = "--sample-bytes",
            .option_arg = "SIZE",
            .patch = true,
        },
    [RT_SETTING_SHARED_TABLE] =
        {
            .name = "ROUNDTRIM_SHARED_TABLE",
            RT_WORDS(rt_switch_words),
            .values = "`on`/`1`/`true`/`yes`, `off`/`0`/`false`/`no`",
            .default_value = 0,
            .default_text = "off",
            .doc = "where neither the worker nor a keeper can have a descriptor table of its own, "
                   "run in the program's, with its races",
        },
    [RT_SETTING_CHILD_START] =
        {
            .name = "ROUNDTRIM_CHILD_START",
            .kind = RT_KIND_DURATION,
            .max = UINT64_C(30) * 24 * 3600 * 1000,
            .off_word = "never",
            .off_max = true,
            .values = "a duration (`500ms`, `90s`, `5m`, `2h`; `0` for at once), `never`",
            .default_value = 60 * 1000,
            .default_text = "1m",
            .doc = "how long a fork child must live, still allocating, before the library starts "
                   "in it",
        },
};

const char *
rt_role_name(enum rt_role role)
{
	const char *word = role < RT_ROLE_COUNT ? rt_role_words[role][0] : NULL;
	return word ? word : "none";
}

const struct rt_setting *
rt_setting_named(const char *name)
{
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++)
		if (!strcmp(rt_settings[i].name, name))
			return &rt_settings[i];
	return NULL;
}

const struct rt_setting *
rt_setting_with_option(const char *option)
{
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++)
		if (rt_settings[i].option && !strcmp(rt_settings[i].option, option))
			return &rt_settings[i];
	return NULL;
}

/* It must be absolute, use '%' only in %p and %%, and expand for any pid into a buffer. */
static enum rt_parse_result
rt_setting_path(const char *tmpl)
{
	char expanded[RT_SETTINGS_TEXT_MAX];
	if (tmpl[0] == '\0')
		return RT_PARSE_EMPTY;
	if (tmpl[0] != '/')
		return RT_PARSE_RELATIVE;
	if (!rt_path_template_valid(tmpl))
		return RT_PARSE_TEMPLATE;
	if (strlen(tmpl) >= RT_SETTINGS_TEXT_MAX ||
	    !rt_path_expand(expanded, sizeof(expanded), tmpl, RT_SETTINGS_PID_MAX))
		return RT_PARSE_TOO_LONG;
	return RT_PARSE_OK;
}

static enum rt_parse_result
rt_setting_globs(const char *globs)
{
	size_t len = strlen(globs);
	if (len == 0)
		return RT_PARSE_EMPTY;
	if (len >= RT_SETTINGS_TEXT_MAX)
		return RT_PARSE_TOO_LONG;
	if (globs[0] == ',' || globs[len - 1] == ',' || strstr(globs, ",,"))
		return RT_PARSE_EMPTY_ITEM;
	return RT_PARSE_OK;
}

enum rt_parse_result
rt_setting_parse(const struct rt_setting *s, const char *text, const struct rt_setting_platform *p,
                 uint64_t *value)
{
	*value = 0;
	switch (s->kind) {
	case RT_KIND_WORDS:
		if (text[0] == '\0')
			return RT_PARSE_EMPTY;
		for (unsigned v = 0; v < s->nwords; v++) {
			if (rt_parse_word_in(text, s->words[v])) {
				*value = v;
				return RT_PARSE_OK;
			}
		}
		return RT_PARSE_GARBAGE;
	case RT_KIND_NUMBER:
		return rt_parse_u64(text, s->max, value);
	case RT_KIND_SIGNAL: {
		int sig = 0;
		enum rt_parse_result r = rt_parse_signal(text, p->sigrtmin, p->sigrtmax, &sig);
		*value = (uint64_t)sig;
		return r;
	}
	case RT_KIND_PATH: {
		const char *const off[] = {s->off_word, NULL};
		return rt_parse_word_in(text, off) ? RT_PARSE_OK : rt_setting_path(text);
	}
	case RT_KIND_GLOBS:
		return rt_setting_globs(text);
	case RT_KIND_DURATION:
	case RT_KIND_SIZE:
	case RT_KIND_PERCENT: {
		const char *const off[] = {s->off_word, NULL};
		if (rt_parse_word_in(text, off)) {
			*value = rt_setting_off_value(s);
			return RT_PARSE_OK;
		}
		enum rt_parse_result r =
		    s->kind == RT_KIND_DURATION ? rt_parse_duration_ms(text, s->max, value)
		    : s->kind == RT_KIND_SIZE   ? rt_parse_size(text, s->max, value)
		                                : rt_parse_percent(text, value);
		/* Where 0 stands for the off word, a 0 written as a number is a mistake: "0s" would
		 * turn the interval off without a word. */
		return r == RT_PARSE_OK && *value == 0 && s->off_word && !s->off_max
		           ? RT_PARSE_GARBAGE
		           : r;
	}
	}
	return RT_PARSE_GARBAGE;
}

bool
rt_setting_is_off(const struct rt_setting *s, const char *text)
{
	const char *const off[] = {s->off_word, NULL};
	return s->kind == RT_KIND_PATH && rt_parse_word_in(text, off);
}

enum rt_parse_result
rt_setting_option_value(const struct rt_setting *s, const char *arg, const char *cwd,
                        const struct rt_setting_platform *p, char *out, size_t size)
{
	uint64_t unused;
	const char *text = arg ? arg : s->flag_value;
	if (!text || size == 0)
		return RT_PARSE_EMPTY;
	if (s->kind == RT_KIND_PATH && !rt_setting_is_off(s, text) && text[0] != '/' && cwd) {
		if (!rt_path_absolute(out, size, cwd, text))
			return RT_PARSE_TOO_LONG;
	} else {
		int n = snprintf(out, size, "%s", text);
		if (n < 0 || (size_t)n >= size)
			return RT_PARSE_TOO_LONG;
	}
	return rt_setting_parse(s, out, p, &unused);
}

/* NVFlare compares the lower-cased value against its words; "lower()" is ASCII here. */
static bool
rt_setting_nvflare_word(const char *text, const char *const *words)
{
	return rt_parse_word_in(text, words);
}

enum rt_parse_result
rt_setting_parse_twin(const struct rt_setting *s, const char *text, uint64_t *value)
{
	static const char *const true_only[] = {"true", NULL};
	static const char *const one_true_yes[] = {"1", "true", "yes", NULL};
	*value = 0;
	switch (s->twin_rule) {
	case RT_TWIN_PYTHON_INT: {
		int64_t n;
		enum rt_parse_result r = rt_parse_python_int(text, &n);
		if (r != RT_PARSE_OK)
			return r;
		/* NVFlare runs no cleanup for a value <= 0; a value beyond our range acts so
		 * rarely that it is the largest we take. */
		*value = n <= 0 ? 0 : (uint64_t)n > s->max ? s->max : (uint64_t)n;
		return RT_PARSE_OK;
	}
	case RT_TWIN_TRUE:
		*value = rt_setting_nvflare_word(text, true_only);
		return RT_PARSE_OK;
	case RT_TWIN_ONE_TRUE_YES:
		*value = rt_setting_nvflare_word(text, one_true_yes);
		return RT_PARSE_OK;
	case RT_TWIN_NONE:
		break;
	}
	return RT_PARSE_GARBAGE;
}

uint64_t
rt_setting_off_value(const struct rt_setting *s)
{
	return s->off_max ? UINT64_MAX : 0;
}

void
rt_setting_value_text(const struct rt_setting *s, uint64_t value, char *out, size_t size)
{
	if (s->kind == RT_KIND_WORDS && value < s->nwords && s->words[value][0])
		snprintf(out, size, "%s", s->words[value][0]);
	else if (value == rt_setting_off_value(s) && s->off_word && s->kind != RT_KIND_PATH)
		snprintf(out, size, "%s", s->off_word);
	else if (s->kind == RT_KIND_DURATION)
		rt_parse_duration_text(value, out, size);
	else
		snprintf(out, size, "%" PRIu64, value);
}
