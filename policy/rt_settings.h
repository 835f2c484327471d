/* rt_settings: the one list of the library's settings, and the roles' table. Each row holds the
 * variable, its NVFlare twin, its value rule, default, one line of documentation and the option. */
#ifndef RT_SETTINGS_H
#define RT_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_parse.h"

/* The values of the WORDS settings that name a choice: a word's index in its row. */
enum rt_role { RT_ROLE_NONE, RT_ROLE_CLIENT, RT_ROLE_SERVER, RT_ROLE_COUNT };
enum rt_jemalloc_action { RT_JEMALLOC_PURGE, RT_JEMALLOC_DECAY };
enum rt_glibc_action { RT_GLIBC_RELEASE, RT_GLIBC_TRIM };
/* ROUNDTRIM_PYTHON: where the Python steps may run. */
enum rt_python_where {
	RT_PYTHON_WHERE_OFF,
	RT_PYTHON_WHERE_ON,   /* the main thread first, then a thread of the library's */
	RT_PYTHON_WHERE_MAIN, /* the main thread only */
	RT_PYTHON_WHERE_COUNT
};
/* ROUNDTRIM_CUDA_EMPTY_CACHE: whether the Python steps empty PyTorch's CUDA cache, and whether the
 * library's thread may too, while the main thread waits in a C call. */
enum rt_cuda_where {
	RT_CUDA_WHERE_OFF,
	RT_CUDA_WHERE_ON,      /* `true`: in the steps of the main thread or of an API call */
	RT_CUDA_WHERE_WAITING, /* also on the library's thread (rt_python_cuda_off_main) */
	RT_CUDA_WHERE_COUNT
};

enum rt_setting_id {
	RT_SETTING_DISABLE,
	RT_SETTING_MATCH,
	RT_SETTING_ROLE,
	RT_SETTING_GC_ROUNDS,
	RT_SETTING_CUDA_EMPTY_CACHE,
	RT_SETTING_PROFILE,
	RT_SETTING_PYTHON,
	RT_SETTING_SIGNAL,
	RT_SETTING_FIFO,
	RT_SETTING_LOG,
	RT_SETTING_STATS,
	RT_SETTING_PROM,
	RT_SETTING_JEMALLOC,
	RT_SETTING_GLIBC,
	RT_SETTING_TRIM_PAD,
	RT_SETTING_AUTO,
	RT_SETTING_INTERVAL,
	RT_SETTING_PRESSURE,
	RT_SETTING_RSS_LIMIT,
	RT_SETTING_TRACE,
	RT_SETTING_SITES,
	RT_SETTING_SAMPLE_BYTES,
	RT_SETTING_SHARED_TABLE,
	RT_SETTING_CHILD_START,
	RT_SETTING_COUNT,
};

enum rt_setting_kind {
	RT_KIND_WORDS,  /* one of a list of words; words[v] spells value v */
	RT_KIND_NUMBER, /* decimal digits, 0 to max */
	RT_KIND_SIGNAL, /* a signal name or number, or "none" */
	RT_KIND_PATH,   /* an absolute path template (%p, %%), or off_word for none */
	RT_KIND_GLOBS,  /* comma-separated fnmatch(3) patterns */
	/* With off_word meaning 0 (off): */
	RT_KIND_DURATION, /* a number and its unit (ms, s, m, h), in ms, up to max */
	RT_KIND_SIZE,     /* bytes, or with K, M, G, T, up to max */
	RT_KIND_PERCENT,  /* 1 to 100 */
};

/* How NVFlare itself reads the twin (roundtrim(7), ENVIRONMENT). */
enum rt_twin_rule {
	RT_TWIN_NONE,
	RT_TWIN_PYTHON_INT,   /* int(value): blanks, a sign, 5_0; <= 0 turns the cleanup off */
	RT_TWIN_TRUE,         /* value.lower() == "true"; anything else is false, silently */
	RT_TWIN_ONE_TRUE_YES, /* value.lower() in ("1", "true", "yes"); else false, silently */
};

struct rt_setting {
	const char *name;
	const char *twin; /* NVFlare's variable for the same setting, or NULL */
	enum rt_twin_rule twin_rule;
	bool twin_client_only; /* NVFlare reads the twin in clients only: a server ignores it */
	enum rt_setting_kind kind;
	const char *const *const *words; /* WORDS */
	unsigned nwords;
	uint64_t max;         /* NUMBER, DURATION (ms), SIZE (bytes) */
	const char *off_word; /* PATH: the word that means none; DURATION, SIZE, PERCENT: 0 */
	bool off_max;         /* the off word is UINT64_MAX, and 0 a value like any other */
	const char *values;   /* what is accepted, for people */
	/* The value when the variable is unset: a word's index, a number, a signal, ms, bytes or a
	 * percentage (0: the off word); for GLOBS and PATH the text default_string, where NULL is
	 * PATH's off word (but the FIFO's default is found at start-up: rt_path_default_fifo). */
	uint64_t default_value;
	const char *default_string;
	const char *default_text; /* the default for people, from the value (test_settings.c) */
	const char *doc;          /* one line */
	const char *option;       /* the command's option, or NULL */
	const char *option_arg;   /* its argument's name, or NULL for a flag */
	const char *flag_value;   /* a flag's value */
	bool patch;               /* `roundtrim patch` offers it too */
};

extern const struct rt_setting rt_settings[RT_SETTING_COUNT];

/* What ROUNDTRIM_ROLE sets: NVFlare's recommendations for its processes of that role. */
struct rt_role_row {
	uint32_t gc_rounds; /* N, unless ROUNDTRIM_GC_ROUNDS says; 0: that setting's default */
	unsigned arena_max; /* glibc's arena cap, unless the user chose one; 0: none */
};

/* Indexed by enum rt_role. */
extern const struct rt_role_row rt_roles[RT_ROLE_COUNT];

/* "none", "client", "server": ROUNDTRIM_ROLE's words. */
const char *rt_role_name(enum rt_role role);

/* NULL when there is none. */
const struct rt_setting *rt_setting_named(const char *name);
const struct rt_setting *rt_setting_with_option(const char *option);

/* The platform facts that value rules depend on. */
struct rt_setting_platform {
	int sigrtmin;
	int sigrtmax;
};

/* Whether text is a valid value for the setting itself (not its twin); RT_PARSE_OK, else the
 * problem, which rt_parse_result_text words. *value gets the number, word index or signal. */
enum rt_parse_result rt_setting_parse(const struct rt_setting *s, const char *text,
                                      const struct rt_setting_platform *p, uint64_t *value);
/* Whether text is a PATH setting's word for none ("none", "stderr"), in any case. */
bool rt_setting_is_off(const struct rt_setting *s, const char *text);
/* The value that the command's option sets, into out: the flag's value when arg is NULL, a
 * path template made absolute against cwd (rt_path_absolute; with cwd NULL a relative one is
 * refused), else arg itself; RT_PARSE_OK when rt_setting_parse accepts it, else the problem. */
enum rt_parse_result rt_setting_option_value(const struct rt_setting *s, const char *arg,
                                             const char *cwd, const struct rt_setting_platform *p,
                                             char *out, size_t size);
/* The twin's text read as NVFlare reads it, as a value of the setting. */
enum rt_parse_result rt_setting_parse_twin(const struct rt_setting *s, const char *text,
                                           uint64_t *value);
/* The value that the setting's off word stands for: 0, or UINT64_MAX with off_max. */
uint64_t rt_setting_off_value(const struct rt_setting *s);
/* How a value of a WORDS or NUMBER setting is written. */
void rt_setting_value_text(const struct rt_setting *s, uint64_t value, char *out, size_t size);

#endif
