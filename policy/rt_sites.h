/* rt_sites: which call sites grow, round after round (ROUNDTRIM_SITES). Owns the sampling rule
 * (byte gaps drawn from the exponential law, a sample's unbiased weight and its variance), when a
 * site grew, the top K, the sites file's lines (writers here, readers in command/rt_sites_read.c),
 * its path beside the stats file, and the growth table's rules across rounds. */
#ifndef RT_SITES_H
#define RT_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Native frames kept per sample, innermost first, and Python frames (innermost first). */
#define RT_SITES_FRAMES_MAX 32
#define RT_SITES_PY_MAX 4
/* Sites written per action round: those that grew, largest growth first. */
#define RT_SITES_TOP 10
/* A site grew when its growth is this many standard deviations of the sampling noise. */
#define RT_SITES_GROWTH_Z 2.0
#define RT_SITES_LINE_MAX 16384
#define RT_SITES_TEXT_MAX 256

/* --- Sampling: each byte asked for is sampled with probability 1/S, so the bytes between two
 * samples follow the exponential law of mean S (a Poisson process over the bytes), and an
 * allocation of s bytes is sampled with probability 1 - exp(-s/S). */

/* xorshift64*: the next number of a thread's own generator; state must not be 0. */
uint64_t rt_sites_random(uint64_t *state);
/* A seed that is never 0, from anything (splitmix64). */
uint64_t rt_sites_seed(uint64_t entropy);
/* The bytes until the next sample: -S ln(U) for U uniform in (0, 1] taken from random's top 53
 * bits; at least 1. */
uint64_t rt_sites_gap(uint64_t random, uint64_t mean);
/* What a sampled allocation of size bytes stands for: size / (1 - exp(-size/S)), the inverse of
 * its chance of being sampled (the Horvitz-Thompson estimator; jemalloc's heap profiles unbias
 * the same way). Near S for small blocks, near size for blocks much larger than S. */
double rt_sites_weight(uint64_t size, uint64_t mean);
/* That estimate's variance, estimated from the sample itself: w (w - size). */
double rt_sites_noise(uint64_t size, uint64_t mean);

/* Approximations of exp(-x) for x >= 0 and of ln(x) for x > 0 to about 1e-12 relative, without
 * libm (the library links none). */
double rt_sites_exp_neg(double x);
double rt_sites_ln(double x);

/* --- A round: what each site holds and how it changed since the last action round. */

struct rt_sites_change {
	uint32_t site;
	double live;  /* estimated live bytes now */
	double delta; /* live now minus live at the last action round */
	double var;   /* variance of delta: of the samples taken since, and of those freed since */
};

/* A site's estimates at an action round, against those it carries from the last one: live, the
 * variance of the samples taken since (new_var) and of the older ones still live (old_var).
 * Returns its change; *prev_live and *prev_var become this round's, for the next. */
struct rt_sites_change rt_sites_change_of(uint32_t site, double live, double new_var,
                                          double old_var, double *prev_live, double *prev_var);
/* Whether delta is growth: positive and at least RT_SITES_GROWTH_Z standard deviations. */
bool rt_sites_grew(double delta, double var);
/* Moves the sites that grew to the front, largest delta first (ties: lower site first), and
 * returns how many, at most k. */
size_t rt_sites_top(struct rt_sites_change *c, size_t n, size_t k);

/* The sites file of a stats file: NAME.jsonl becomes NAME.sites.jsonl, any other NAME becomes
 * NAME.sites.jsonl too; %p stays. False when it does not fit. */
bool rt_sites_path(char *out, size_t size, const char *stats);
/* Whether path names a sites file (ends in ".sites.jsonl"). */
bool rt_sites_is_path(const char *path);

/* --- The sites file: JSON lines of two kinds. A site line defines a site the first time a round
 * line names it; a round line, one per action round, lists the sites that grew. */

struct rt_sites_frame {
	uint64_t addr;      /* the return address, raw */
	const char *module; /* the object's path; "" when no loaded object holds addr */
	uint64_t offset;    /* addr in the object's own addresses (what addr2line takes) */
};

struct rt_sites_pyframe {
	const char *function; /* the code object's qualified name */
	const char *file;
	uint32_t line; /* the function's first line */
};

struct rt_sites_site {
	int pid;
	uint32_t site;
	unsigned nframes;
	struct rt_sites_frame frames[RT_SITES_FRAMES_MAX];
	unsigned npy;
	struct rt_sites_pyframe py[RT_SITES_PY_MAX];
};

struct rt_sites_round {
	int pid;
	uint64_t round;
	uint64_t since; /* the round of the previous sites report, 0 for the first */
	int64_t unix_time_us;
	uint64_t sample_bytes;
	uint64_t samples;    /* live samples */
	uint64_t live_bytes; /* their estimate, all sites */
	uint64_t dropped;    /* samples not kept (a table full) since the start */
	size_t ngrew;
	struct rt_sites_change grew[RT_SITES_TOP];
};

/* Each returns the length written (lines end in '\n'), truncated to size - 1. */
size_t rt_sites_site_json(char *buf, size_t size, const struct rt_sites_site *s);
size_t rt_sites_round_json(char *buf, size_t size, const struct rt_sites_round *r);

/* Whether a module is the C library, the loader or the C++ runtime: where malloc and operator
 * new are entered, not where a program allocates. */
bool rt_sites_is_runtime(const char *module);
/* The frame that says where a site allocates: the innermost outside the runtime (frame 0 when
 * every frame is in it). */
unsigned rt_sites_where(const struct rt_sites_site *s);

/* --- Readers (command/rt_sites_read.c: the command and the tests link them, the library does
 * not). */

enum rt_sites_line { RT_SITES_LINE_BAD, RT_SITES_LINE_SITE, RT_SITES_LINE_ROUND };

/* A site line read back, with the strings it points to. */
struct rt_sites_site_read {
	struct rt_sites_site s;
	char modules[RT_SITES_FRAMES_MAX][RT_SITES_TEXT_MAX];
	char functions[RT_SITES_PY_MAX][RT_SITES_TEXT_MAX];
	char files[RT_SITES_PY_MAX][RT_SITES_TEXT_MAX];
};

struct rt_sites_read {
	enum rt_sites_line kind;
	struct rt_sites_site_read site;
	struct rt_sites_round round;
};

/* One line of a sites file; trailing blanks and newline allowed. */
enum rt_sites_line rt_sites_read_line(const char *line, struct rt_sites_read *out);

/* --- The growth table: one site of one process across the rounds of its sites file. */

struct rt_sites_trend {
	int pid;
	uint32_t site;
	uint64_t rounds_grown;
	uint64_t streak;                  /* rounds grown in a row, up to the last one it grew in */
	uint64_t longest;                 /* the longest such run */
	uint64_t first_round, last_round; /* rounds it grew in, first and last */
	double total_delta;
	double last_live;
};

void rt_sites_trend_init(struct rt_sites_trend *t, int pid, uint32_t site);
/* The site grew in round `round` of a report whose previous report was round `since`; rounds of
 * one process come in order. Growing in consecutive reports makes a run. */
void rt_sites_trend_grew(struct rt_sites_trend *t, uint64_t since, uint64_t round, double delta,
                         double live);
/* Bytes per round over the `rounds` reports of its process. */
double rt_sites_trend_per_round(const struct rt_sites_trend *t, uint64_t rounds);
/* Growing for more than 2 reports in a row: what a leak looks like, and noise does not. */
bool rt_sites_trend_persistent(const struct rt_sites_trend *t);
/* Order of the table: persistent first, then total growth, then pid and site. */
int rt_sites_trend_cmp(const struct rt_sites_trend *a, const struct rt_sites_trend *b);

#endif
