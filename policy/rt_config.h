/* rt_config: the library's configuration, read once from the environment.
 * Owns how the settings' rows (rt_settings) become a configuration: precedence of the
 * ROUNDTRIM_ variable over its NVFlare twin, fallbacks, the role's defaults, diagnostics, and the
 * conversion of values into the units the library works in. */
#ifndef RT_CONFIG_H
#define RT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_settings.h"

#define RT_CONFIG_PATH_MAX 512
#define RT_CONFIG_MATCH_MAX 512

/* Facts about the platform that parsing depends on, passed in so that parsing stays pure. */
struct rt_platform {
	int sigrtmin; /* SIGRTMIN as the C library reports it at run time */
	int sigrtmax;
	unsigned uid;        /* effective uid, for the default FIFO path */
	const char *program; /* basename of argv[0], for ROUNDTRIM_MATCH */
};

struct rt_config {
	bool disabled;         /* ROUNDTRIM_DISABLE: pure pass-through */
	bool matched;          /* program matches ROUNDTRIM_MATCH */
	uint32_t gc_rounds;    /* act on rounds that are multiples of this; 0 = never */
	bool cuda_empty_cache; /* for the Python actions */
	bool cuda_waiting;     /* ROUNDTRIM_CUDA_EMPTY_CACHE=waiting: the library's thread too */
	bool profile;          /* one [RSS] line per round */
	bool python;           /* ROUNDTRIM_PYTHON: Python steps on (issue 4) */
	bool python_main_only; /* ROUNDTRIM_PYTHON=main: never from a thread of ours (issue 24) */
	enum rt_role role;
	unsigned arena_max;             /* 0 = leave glibc's arena limit alone */
	int signal;                     /* 0 = no signal trigger */
	char fifo[RT_CONFIG_PATH_MAX];  /* template with %p; "" = no FIFO */
	char log[RT_CONFIG_PATH_MAX];   /* "" = stderr, else a path template */
	char stats[RT_CONFIG_PATH_MAX]; /* "" = no stats file, else a path template */
	char prom[RT_CONFIG_PATH_MAX];  /* "" = no Prometheus file, else a path template */
	char match[RT_CONFIG_MATCH_MAX];
	enum rt_jemalloc_action jemalloc;
	enum rt_glibc_action glibc;
	uint64_t trim_pad;
	bool auto_rounds;               /* ROUNDTRIM_AUTO: detect rounds until one is announced */
	uint64_t interval_us;           /* 0 = off */
	uint32_t pressure_percent;      /* 0 = off */
	uint64_t rss_limit_bytes;       /* 0 = off */
	char trace[RT_CONFIG_PATH_MAX]; /* "" = no trace file */
	/* ROUNDTRIM_SITES: the sites file's template, beside the stats file's; "" = off. */
	char sites[RT_CONFIG_PATH_MAX];
	uint64_t sample_bytes; /* ROUNDTRIM_SAMPLE_BYTES: mean bytes between two samples */
	/* ROUNDTRIM_SHARED_TABLE: the program's descriptor table, with its races, is accepted
	 * where no table of the library's own can be had (roundtrim(7), DESCRIPTORS). */
	bool shared_table;
	/* ROUNDTRIM_CHILD_START: a fork child's library starts once the child has lived this long
	 * (policy/rt_child); 0: at once; RT_CHILD_START_NEVER: only when it calls the API. */
	uint64_t child_start_ns;
};

/* Returns the value of an environment variable, or NULL when unset. */
typedef const char *(*rt_lookup_fn)(void *ctx, const char *name);
/* Receives one complete diagnostic line (no trailing newline). */
typedef void (*rt_diag_fn)(void *ctx, const char *line);

/* Fills *cfg from the environment seen through lookup. Every bad value produces exactly one
 * diagnostic line naming the variable, the value and what is used instead. When the program does
 * not match ROUNDTRIM_MATCH (or ROUNDTRIM_DISABLE is on) parsing stops early, silently for the
 * remaining variables, and cfg->matched is false (cfg->disabled true). */
void rt_config_read(struct rt_config *cfg, const struct rt_platform *platform, rt_lookup_fn lookup,
                    void *lookup_ctx, rt_diag_fn diag, void *diag_ctx);

/* Whether a program name matches a comma-separated list of fnmatch(3) globs. */
bool rt_config_match(const char *globs, const char *program);

#endif
