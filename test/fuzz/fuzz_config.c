/* Fuzzes rt_config_read: the environment as the library reads it at load.
 *
 * Input: records separated by NUL bytes (no environment string can hold one):
 *   NAME=VALUE   a variable; the first record with a name wins, as with getenv(3)
 *   @rtmin=N  @rtmax=N  @uid=N  @program=TEXT   the platform, mapped into what Linux gives:
 *                SIGRTMIN 32..40, SIGRTMAX from SIGRTMIN+8 to 127 (MIPS), any uid, a program
 *                name of up to 63 bytes (the shim's buffer); defaults 34, 64, 1000, python3.
 * Beyond the sanitizers' checks: every diagnostic is one printable line that the shim writes
 * whole, names a variable that is set, at most once, and says what is used instead; nothing is
 * said past a disabled or non-matching start; the configuration's strings end inside their
 * buffers and are templates the worker can expand for any pid; every number stays in its
 * documented range; the same environment read twice gives the same bytes and lines. */
#include "fuzz.h"

#include "rt_config.h"
#include "rt_path.h"
#include "rt_report.h"
#include "rt_settings.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Every variable rt_config_read may ask for: each setting's and twin's name (policy/rt_settings,
 * the one list), and the few of glibc's and the desktop's it consults. It asking for another one
 * breaks an invariant (add it to config.dict too, for the fuzzer to try it). */
static const char *const fuzz_other_names[] = {"MALLOC_ARENA_MAX", "GLIBC_TUNABLES",
                                               "XDG_RUNTIME_DIR"};
#define FUZZ_NAMES_MAX (2 * RT_SETTING_COUNT + sizeof(fuzz_other_names) / sizeof(char *))
static const char *fuzz_names[FUZZ_NAMES_MAX];
static size_t fuzz_name_count;
#define FUZZ_NAMES fuzz_name_count

/* Settings first, in the table's order: their indexes are the table's. */
static void
fuzz_names_init(void)
{
	if (fuzz_name_count)
		return;
	for (size_t i = 0; i < RT_SETTING_COUNT; i++)
		fuzz_names[fuzz_name_count++] = rt_settings[i].name;
	for (size_t i = 0; i < RT_SETTING_COUNT; i++)
		if (rt_settings[i].twin)
			fuzz_names[fuzz_name_count++] = rt_settings[i].twin;
	for (size_t i = 0; i < sizeof(fuzz_other_names) / sizeof(char *); i++)
		fuzz_names[fuzz_name_count++] = fuzz_other_names[i];
}

#define FUZZ_DISABLE RT_SETTING_DISABLE /* indexes in fuzz_names */
#define FUZZ_MATCH RT_SETTING_MATCH

#define FUZZ_VARS_MAX 256
#define FUZZ_PROGRAM_MAX 64            /* rt_shim.program */
#define FUZZ_PID_MAX 4194304           /* PID_MAX_LIMIT */
#define FUZZ_GC_ROUNDS_MAX 1000000000u /* roundtrim(7): 0 to 1000000000 */
#define FUZZ_TRIM_PAD_MAX (1ULL << 40)

struct fuzz_env {
	size_t n;
	const char *name[FUZZ_VARS_MAX];
	size_t name_len[FUZZ_VARS_MAX];
	const char *value[FUZZ_VARS_MAX];
};

struct fuzz_diags {
	size_t n;
	char line[FUZZ_NAMES_MAX][RT_REPORT_LINE_MAX];
	unsigned per_name[FUZZ_NAMES_MAX];
	const struct fuzz_env *env;
};

static int
fuzz_name_index(const char *name, size_t len)
{
	for (size_t i = 0; i < FUZZ_NAMES; i++)
		if (strlen(fuzz_names[i]) == len && memcmp(fuzz_names[i], name, len) == 0)
			return (int)i;
	return -1;
}

static const char *
fuzz_getenv(const struct fuzz_env *env, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < env->n; i++)
		if (env->name_len[i] == len && memcmp(env->name[i], name, len) == 0)
			return env->value[i];
	return NULL;
}

static const char *
fuzz_lookup(void *ctx, const char *name)
{
	FUZZ_CHECK(fuzz_name_index(name, strlen(name)) >= 0,
	           "rt_config_read asks for %s, which fuzz_names lacks", name);
	return fuzz_getenv(ctx, name);
}

static void
fuzz_diag(void *ctx, const char *line)
{
	struct fuzz_diags *d = ctx;
	static const char head[] = "roundtrim: ";
	size_t len = strnlen(line, RT_REPORT_LINE_MAX);
	/* rt_main_diag writes up to RT_REPORT_LINE_MAX bytes and then the newline. */
	FUZZ_CHECK(len < RT_REPORT_LINE_MAX, "a diagnostic of %zu bytes or more", len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];
		FUZZ_CHECK(c >= 0x20 && c != 0x7f, "byte 0x%02x at %zu of diagnostic: %s", c, i,
		           line);
	}
	FUZZ_CHECK(strncmp(line, head, sizeof(head) - 1) == 0, "diagnostic: %s", line);
	const char *name = line + sizeof(head) - 1;
	const char *eq = strchr(name, '=');
	FUZZ_CHECK(eq && eq[1] == '"', "diagnostic names no variable: %s", line);
	int index = fuzz_name_index(name, (size_t)(eq - name));
	FUZZ_CHECK(index >= 0, "diagnostic names an unknown variable: %s", line);
	FUZZ_CHECK(fuzz_getenv(d->env, fuzz_names[index]), "diagnostic for an unset variable: %s",
	           line);
	FUZZ_CHECK(d->per_name[index]++ == 0, "a second diagnostic for %s: %s", fuzz_names[index],
	           line);
	FUZZ_CHECK(strstr(eq, "; using ") != NULL, "diagnostic says nothing of a fallback: %s",
	           line);
	memcpy(d->line[d->n++], line, len + 1);
}

static bool
fuzz_is_word(const char *text, const char *const *words)
{
	for (; *words; words++) {
		size_t i = 0;
		while (text[i] && (*words)[i] &&
		       (text[i] | ((text[i] >= 'A' && text[i] <= 'Z') ? 0x20 : 0)) == (*words)[i])
			i++;
		if (!text[i] && !(*words)[i])
			return true;
	}
	return false;
}

/* A plain decimal within max, as the manual describes the numbers; -1 otherwise. */
static int64_t
fuzz_decimal(const char *text, uint64_t max)
{
	uint64_t v = 0;
	if (!text || !*text)
		return -1;
	for (; *text; text++) {
		if (*text < '0' || *text > '9')
			return -1;
		v = v * 10 + (uint64_t)(*text - '0');
		if (v > max)
			return -1;
	}
	return (int64_t)v;
}

static void
fuzz_check_template(const char *what, const char *tmpl, size_t size)
{
	char out[RT_CONFIG_PATH_MAX];
	FUZZ_CHECK(memchr(tmpl, '\0', size) != NULL, "%s is not NUL-terminated", what);
	if (!tmpl[0])
		return;
	FUZZ_CHECK(tmpl[0] == '/' && rt_path_template_valid(tmpl) &&
	               rt_path_expand(out, sizeof(out), tmpl, FUZZ_PID_MAX),
	           "%s=\"%s\" cannot be expanded", what, tmpl);
}

static unsigned long
fuzz_number(const char *text)
{
	unsigned long v = 0;
	for (; *text >= '0' && *text <= '9'; text++)
		v = v * 10 + (unsigned long)(*text - '0');
	return v;
}

/* Splits the input into env (pointing into buf) and the platform; program gets the name. */
static void
fuzz_decode(char *buf, size_t size, struct fuzz_env *env, struct rt_platform *p, char *program)
{
	unsigned long rtmin = 2, rtmax = 64 - 34 - 8;
	snprintf(program, FUZZ_PROGRAM_MAX, "python3");
	p->uid = 1000;
	for (char *rec = buf; rec < buf + size; rec += strlen(rec) + 1) {
		char *eq = strchr(rec, '=');
		if (!eq)
			continue;
		if (strncmp(rec, "@rtmin=", 7) == 0)
			rtmin = fuzz_number(eq + 1);
		else if (strncmp(rec, "@rtmax=", 7) == 0)
			rtmax = fuzz_number(eq + 1);
		else if (strncmp(rec, "@uid=", 5) == 0)
			p->uid = (unsigned)fuzz_number(eq + 1);
		else if (strncmp(rec, "@program=", 9) == 0)
			snprintf(program, FUZZ_PROGRAM_MAX, "%s", eq + 1);
		else if (env->n < FUZZ_VARS_MAX) {
			env->name[env->n] = rec;
			env->name_len[env->n] = (size_t)(eq - rec);
			env->value[env->n] = eq + 1;
			env->n++;
		}
	}
	p->sigrtmin = 32 + (int)(rtmin % 9);
	p->sigrtmax = p->sigrtmin + 8 + (int)(rtmax % (unsigned long)(127 - p->sigrtmin - 8 + 1));
	p->program = program;
}

static void
fuzz_check_bool(const char *what, const bool *b)
{
	unsigned char byte;
	memcpy(&byte, b, 1);
	FUZZ_CHECK(byte <= 1, "%s holds %u", what, byte);
}

static void
fuzz_check_matched(const struct rt_config *cfg, const struct fuzz_env *env,
                   const struct rt_platform *p)
{
	static const char *const none[] = {"none", NULL};
	fuzz_check_bool("cuda_empty_cache", &cfg->cuda_empty_cache);
	fuzz_check_bool("profile", &cfg->profile);
	fuzz_check_bool("python", &cfg->python);
	fuzz_check_bool("python_main_only", &cfg->python_main_only);
	FUZZ_CHECK(cfg->role <= RT_ROLE_SERVER, "role %d", (int)cfg->role);
	FUZZ_CHECK(cfg->jemalloc <= RT_JEMALLOC_DECAY, "jemalloc %d", (int)cfg->jemalloc);

	uint32_t role_rounds = cfg->role == RT_ROLE_SERVER ? 5 : 1;
	FUZZ_CHECK(cfg->gc_rounds <= FUZZ_GC_ROUNDS_MAX, "gc_rounds %u", cfg->gc_rounds);
	const char *gc = fuzz_getenv(env, "ROUNDTRIM_GC_ROUNDS");
	int64_t gc_value = fuzz_decimal(gc, FUZZ_GC_ROUNDS_MAX);
	if (gc_value >= 0)
		FUZZ_CHECK(cfg->gc_rounds == gc_value, "gc_rounds %u for \"%s\"", cfg->gc_rounds,
		           gc);
	if (!gc && !fuzz_getenv(env, "NVFLARE_CLIENT_MEMORY_GC_ROUNDS"))
		FUZZ_CHECK(cfg->gc_rounds == role_rounds, "gc_rounds %u unset", cfg->gc_rounds);
	FUZZ_CHECK(cfg->trim_pad <= FUZZ_TRIM_PAD_MAX, "trim_pad %llu",
	           (unsigned long long)cfg->trim_pad);

	unsigned role_arenas = cfg->role == RT_ROLE_SERVER   ? 4
	                       : cfg->role == RT_ROLE_CLIENT ? 2
	                                                     : 0;
	const char *arena_max = fuzz_getenv(env, "MALLOC_ARENA_MAX");
	FUZZ_CHECK(cfg->arena_max == 0 || cfg->arena_max == role_arenas, "arena_max %u",
	           cfg->arena_max);
	if (arena_max && arena_max[0])
		FUZZ_CHECK(cfg->arena_max == 0, "arena_max %u over MALLOC_ARENA_MAX",
		           cfg->arena_max);
	if (!arena_max && !fuzz_getenv(env, "GLIBC_TUNABLES"))
		FUZZ_CHECK(cfg->arena_max == role_arenas, "arena_max %u", cfg->arena_max);

	const char *sig = fuzz_getenv(env, "ROUNDTRIM_SIGNAL");
	if (!sig || fuzz_is_word(sig, none))
		FUZZ_CHECK(cfg->signal == 0, "signal %d without one asked for", cfg->signal);
	if (cfg->signal != 0)
		FUZZ_CHECK(cfg->signal <= p->sigrtmax &&
		               (cfg->signal == SIGUSR1 || cfg->signal == SIGUSR2 ||
		                cfg->signal >= p->sigrtmin),
		           "signal %d with SIGRTMIN %d, SIGRTMAX %d", cfg->signal, p->sigrtmin,
		           p->sigrtmax);

	fuzz_check_template("fifo", cfg->fifo, sizeof(cfg->fifo));
	fuzz_check_template("log", cfg->log, sizeof(cfg->log));
	fuzz_check_template("stats", cfg->stats, sizeof(cfg->stats));
	fuzz_check_template("prom", cfg->prom, sizeof(cfg->prom));
	const char *fifo = fuzz_getenv(env, "ROUNDTRIM_FIFO");
	FUZZ_CHECK(cfg->fifo[0] || (fifo && fuzz_is_word(fifo, none)), "no FIFO for \"%s\"", fifo);
	if (!fuzz_getenv(env, "ROUNDTRIM_LOG"))
		FUZZ_CHECK(!cfg->log[0], "log \"%s\" unset", cfg->log);
	if (!fuzz_getenv(env, "ROUNDTRIM_STATS"))
		FUZZ_CHECK(!cfg->stats[0], "stats \"%s\" unset", cfg->stats);
}

static void
fuzz_check(const struct rt_config *cfg, const struct fuzz_diags *d, const struct fuzz_env *env,
           const struct rt_platform *p)
{
	static const char *const off[] = {"off", "0", "false", "no", NULL};
	const char *disable = fuzz_getenv(env, "ROUNDTRIM_DISABLE");
	fuzz_check_bool("disabled", &cfg->disabled);
	fuzz_check_bool("matched", &cfg->matched);
	FUZZ_CHECK(cfg->disabled == (disable && !fuzz_is_word(disable, off)),
	           "disabled=%d for \"%s\"", cfg->disabled, disable);
	if (cfg->disabled) {
		struct rt_config want;
		memset(&want, 0, sizeof(want));
		want.disabled = true;
		FUZZ_CHECK(memcmp(cfg, &want, sizeof(want)) == 0,
		           "a disabled configuration set more");
		FUZZ_CHECK(d->n == d->per_name[FUZZ_DISABLE],
		           "%zu diagnostics after ROUNDTRIM_DISABLE", d->n);
		return;
	}

	FUZZ_CHECK(memchr(cfg->match, '\0', sizeof(cfg->match)) != NULL, "match not terminated");
	size_t len = strlen(cfg->match);
	FUZZ_CHECK(len > 0 && cfg->match[0] != ',' && cfg->match[len - 1] != ',' &&
	               !strstr(cfg->match, ",,"),
	           "match \"%s\"", cfg->match);
	const char *match = fuzz_getenv(env, "ROUNDTRIM_MATCH");
	FUZZ_CHECK(!strcmp(cfg->match, match && !d->per_name[FUZZ_MATCH] ? match : "*"),
	           "match \"%s\" for \"%s\"", cfg->match, match);
	FUZZ_CHECK(cfg->matched == rt_config_match(cfg->match, p->program), "matched=%d",
	           cfg->matched);
	if (!cfg->matched) {
		struct rt_config want;
		memset(&want, 0, sizeof(want));
		memcpy(want.match, cfg->match, len + 1);
		FUZZ_CHECK(memcmp(cfg, &want, sizeof(want)) == 0,
		           "a non-matching program got more");
		FUZZ_CHECK(d->n == d->per_name[FUZZ_DISABLE] + d->per_name[FUZZ_MATCH],
		           "%zu diagnostics in a non-matching program", d->n);
		return;
	}
	fuzz_check_matched(cfg, env, p);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static struct fuzz_env env;
	static struct fuzz_diags diags[2];
	struct rt_config cfg[2];
	fuzz_names_init();
	char program[FUZZ_PROGRAM_MAX];
	struct rt_platform platform;
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	memset(&env, 0, sizeof(env));
	fuzz_decode(buf, size, &env, &platform, program);

	for (int run = 0; run < 2; run++) {
		memset(&diags[run], 0, sizeof(diags[run]));
		diags[run].env = &env;
		/* Different garbage each time: a field left unset shows as a difference. */
		memset(&cfg[run], run ? 0x5a : 0xa5, sizeof(cfg[run]));
		rt_config_read(&cfg[run], &platform, fuzz_lookup, &env, fuzz_diag, &diags[run]);
	}
	fuzz_check(&cfg[0], &diags[0], &env, &platform);
	FUZZ_CHECK(memcmp(&cfg[0], &cfg[1], sizeof(cfg[0])) == 0, "two reads differ");
	FUZZ_CHECK(diags[0].n == diags[1].n, "two reads said %zu and %zu lines", diags[0].n,
	           diags[1].n);
	for (size_t i = 0; i < diags[0].n; i++)
		FUZZ_CHECK(!strcmp(diags[0].line[i], diags[1].line[i]), "two reads said %s and %s",
		           diags[0].line[i], diags[1].line[i]);
	free(buf);
	return 0;
}
