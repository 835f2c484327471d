#include "rt_sites.h"

#include "rt_report.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_SITES_LN2 0.69314718055994530942

uint64_t
rt_sites_random(uint64_t *state)
{
	uint64_t s = *state;
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	*state = s;
	return s * UINT64_C(2685821657736338717);
}

uint64_t
rt_sites_seed(uint64_t entropy)
{
	uint64_t z = entropy + UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return z ? z : 1;
}

/* 2^k for an integer k within the normal range of doubles, from its bits. */
static double
rt_sites_pow2(int k)
{
	uint64_t bits = (uint64_t)(k + 1023) << 52;
	double d;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

double
rt_sites_exp_neg(double x)
{
	if (x <= 0)
		return 1.0;
	if (x > 700)
		return 0.0;
	/* exp(-x) = 2^-k exp(-r), with x = k ln2 + r and 0 <= r < ln2: the series in r converges
	 * fast (r^18/18! < 1e-17). */
	int k = (int)(x / RT_SITES_LN2);
	double r = x - k * RT_SITES_LN2;
	if (r < 0) {
		k--;
		r += RT_SITES_LN2;
	}
	double term = 1.0, sum = 1.0;
	for (int n = 1; n < 20; n++) {
		term *= -r / n;
		sum += term;
	}
	return sum * rt_sites_pow2(-k);
}

double
rt_sites_ln(double x)
{
	if (x <= 0)
		return -1e308;
	uint64_t bits;
	memcpy(&bits, &x, sizeof(bits));
	int e = (int)((bits >> 52) & 0x7ff);
	if (e == 0) /* subnormal: scale into the normal range first */
		return rt_sites_ln(x * rt_sites_pow2(60)) - 60 * RT_SITES_LN2;
	e -= 1023;
	bits = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
	double m;
	memcpy(&m, &bits, sizeof(m)); /* x = m 2^e, 1 <= m < 2 */
	if (m > 1.4142135623730951) {
		m /= 2;
		e++;
	}
	/* ln m = 2 atanh(t), t = (m - 1)/(m + 1), |t| < 0.172: t^(2n+1) falls by 0.0295 a term. */
	double t = (m - 1) / (m + 1), t2 = t * t, power = t, sum = 0;
	for (int n = 0; n < 12; n++) {
		sum += power / (2 * n + 1);
		power *= t2;
	}
	return 2 * sum + e * RT_SITES_LN2;
}

uint64_t
rt_sites_gap(uint64_t random, uint64_t mean)
{
	/* U in (0, 1]: never 0, so the logarithm is finite. */
	double u = (double)((random >> 11) + 1) / 9007199254740992.0;
	double gap = -rt_sites_ln(u) * (double)mean;
	if (gap < 1)
		return 1;
	if (gap > 1e18)
		return UINT64_C(1000000000000000000);
	return (uint64_t)gap;
}

/* 1 - exp(-x), without the cancellation of the subtraction for small x. */
static double
rt_sites_chance(double x)
{
	if (x >= 0.5)
		return 1.0 - rt_sites_exp_neg(x);
	double term = x, sum = x;
	for (int n = 2; n < 20; n++) {
		term *= -x / n;
		sum += term;
	}
	return sum;
}

double
rt_sites_weight(uint64_t size, uint64_t mean)
{
	if (size == 0 || mean == 0)
		return (double)size;
	return (double)size / rt_sites_chance((double)size / (double)mean);
}

double
rt_sites_noise(uint64_t size, uint64_t mean)
{
	double w = rt_sites_weight(size, mean);
	double v = w * (w - (double)size);
	return v > 0 ? v : 0;
}

struct rt_sites_change
rt_sites_change_of(uint32_t site, double live, double new_var, double old_var, double *prev_live,
                   double *prev_var)
{
	/* The variance of the change: of the samples taken since the last report, and of those it
	 * counted that are gone now. */
	double freed_var = *prev_var - old_var;
	struct rt_sites_change c = {
	    .site = site,
	    .live = live,
	    .delta = live - *prev_live,
	    .var = new_var + (freed_var > 0 ? freed_var : 0),
	};
	*prev_live = live;
	*prev_var = new_var + old_var;
	return c;
}

bool
rt_sites_grew(double delta, double var)
{
	return delta > 0 && delta * delta >= RT_SITES_GROWTH_Z * RT_SITES_GROWTH_Z * var;
}

static int
rt_sites_change_cmp(const void *a, const void *b)
{
	const struct rt_sites_change *x = a, *y = b;
	bool gx = rt_sites_grew(x->delta, x->var), gy = rt_sites_grew(y->delta, y->var);
	if (gx != gy)
		return gx ? -1 : 1;
	if (gx && x->delta != y->delta)
		return x->delta > y->delta ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

size_t
rt_sites_top(struct rt_sites_change *c, size_t n, size_t k)
{
	qsort(c, n, sizeof(*c), rt_sites_change_cmp);
	size_t grown = 0;
	while (grown < n && grown < k && rt_sites_grew(c[grown].delta, c[grown].var))
		grown++;
	return grown;
}

static bool
rt_sites_ends_with(const char *s, const char *suffix)
{
	size_t len = strlen(s), n = strlen(suffix);
	return len >= n && strcmp(s + len - n, suffix) == 0;
}

bool
rt_sites_path(char *out, size_t size, const char *stats)
{
	size_t len = strlen(stats);
	if (rt_sites_ends_with(stats, ".jsonl"))
		len -= strlen(".jsonl");
	int n = snprintf(out, size, "%.*s.sites.jsonl", (int)len, stats);
	return n > 0 && (size_t)n < size;
}

bool
rt_sites_is_path(const char *path)
{
	return rt_sites_ends_with(path, ".sites.jsonl");
}

bool
rt_sites_is_runtime(const char *module)
{
	static const char *const runtime[] = {"libc.so.", "libc-", "ld-linux", "libstdc++.so.",
	                                      "libgcc_s.so."};
	const char *base = strrchr(module, '/');
	base = base ? base + 1 : module;
	for (size_t i = 0; i < sizeof(runtime) / sizeof(runtime[0]); i++)
		if (!strncmp(base, runtime[i], strlen(runtime[i])))
			return true;
	return false;
}

unsigned
rt_sites_where(const struct rt_sites_site *s)
{
	for (unsigned i = 0; i < s->nframes; i++)
		if (!rt_sites_is_runtime(s->frames[i].module))
			return i;
	return 0;
}

/* --- Writers. A line that does not fit is cut short: the caller's buffer is RT_SITES_LINE_MAX,
 * which holds every frame with a module path of RT_SITES_TEXT_MAX. */

struct rt_sites_out {
	char *buf;
	size_t size, len;
};

static void rt_sites_put(struct rt_sites_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
rt_sites_put(struct rt_sites_out *o, const char *fmt, ...)
{
	if (o->len + 1 >= o->size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->size ? o->len + (size_t)n : o->size - 1;
}

/* A JSON string, escaped, at most RT_SITES_TEXT_MAX - 1 bytes of it. */
static void
rt_sites_put_string(struct rt_sites_out *o, const char *s)
{
	char text[RT_SITES_TEXT_MAX], escaped[RT_SITES_TEXT_MAX * 6];
	snprintf(text, sizeof(text), "%s", s ? s : "");
	rt_report_json_string(escaped, sizeof(escaped), text);
	rt_sites_put(o, "\"%s\"", escaped);
}

size_t
rt_sites_site_json(char *buf, size_t size, const struct rt_sites_site *s)
{
	struct rt_sites_out o = {buf, size, 0};
	if (size)
		buf[0] = '\0';
	rt_sites_put(&o, "{\"pid\":%d,\"site\":%" PRIu32 ",\"frames\":[", s->pid, s->site);
	for (unsigned i = 0; i < s->nframes && i < RT_SITES_FRAMES_MAX; i++) {
		const struct rt_sites_frame *f = &s->frames[i];
		rt_sites_put(&o, "%s{\"addr\":\"0x%" PRIx64 "\",\"module\":", i ? "," : "",
		             f->addr);
		rt_sites_put_string(&o, f->module);
		rt_sites_put(&o, ",\"offset\":\"0x%" PRIx64 "\"}", f->offset);
	}
	rt_sites_put(&o, "],\"python\":[");
	for (unsigned i = 0; i < s->npy && i < RT_SITES_PY_MAX; i++) {
		rt_sites_put(&o, "%s{\"function\":", i ? "," : "");
		rt_sites_put_string(&o, s->py[i].function);
		rt_sites_put(&o, ",\"file\":");
		rt_sites_put_string(&o, s->py[i].file);
		rt_sites_put(&o, ",\"line\":%" PRIu32 "}", s->py[i].line);
	}
	rt_sites_put(&o, "]}\n");
	return o.len;
}

static uint64_t
rt_sites_bytes(double v)
{
	return v <= 0 ? 0 : v >= 1.8e19 ? UINT64_MAX : (uint64_t)(v + 0.5);
}

static double
rt_sites_sqrt(double v)
{
	if (v <= 0)
		return 0;
	/* Newton from above (v itself, or 1 below it), which only descends: no libm. */
	double x = v >= 1 ? v : 1;
	for (int i = 0; i < 200; i++) {
		double next = 0.5 * (x + v / x);
		if (next >= x)
			break;
		x = next;
	}
	return x;
}

size_t
rt_sites_round_json(char *buf, size_t size, const struct rt_sites_round *r)
{
	struct rt_sites_out o = {buf, size, 0};
	if (size)
		buf[0] = '\0';
	rt_sites_put(
	    &o,
	    "{\"pid\":%d,\"round\":%" PRIu64 ",\"since\":%" PRIu64 ",\"unix_time\":%" PRId64
	    ".%06" PRId64 ",\"sample_bytes\":%" PRIu64 ",\"samples\":%" PRIu64
	    ",\"live_bytes\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"grew\":[",
	    r->pid, r->round, r->since, r->unix_time_us / 1000000, r->unix_time_us % 1000000,
	    r->sample_bytes, r->samples, r->live_bytes, r->dropped);
	for (size_t i = 0; i < r->ngrew && i < RT_SITES_TOP; i++) {
		const struct rt_sites_change *c = &r->grew[i];
		rt_sites_put(&o,
		             "%s{\"site\":%" PRIu32 ",\"live_bytes\":%" PRIu64
		             ",\"delta_bytes\":%" PRIu64 ",\"sd_bytes\":%" PRIu64 "}",
		             i ? "," : "", c->site, rt_sites_bytes(c->live),
		             rt_sites_bytes(c->delta), rt_sites_bytes(rt_sites_sqrt(c->var)));
	}
	rt_sites_put(&o, "]}\n");
	return o.len;
}

/* --- The growth table. */

void
rt_sites_trend_init(struct rt_sites_trend *t, int pid, uint32_t site)
{
	*t = (struct rt_sites_trend){.pid = pid, .site = site};
}

void
rt_sites_trend_grew(struct rt_sites_trend *t, uint64_t since, uint64_t round, double delta,
                    double live)
{
	t->streak = t->rounds_grown && t->last_round == since ? t->streak + 1 : 1;
	if (t->streak > t->longest)
		t->longest = t->streak;
	if (!t->rounds_grown)
		t->first_round = round;
	t->rounds_grown++;
	t->last_round = round;
	t->total_delta += delta;
	t->last_live = live;
}

double
rt_sites_trend_per_round(const struct rt_sites_trend *t, uint64_t rounds)
{
	return rounds ? t->total_delta / (double)rounds : 0;
}

bool
rt_sites_trend_persistent(const struct rt_sites_trend *t)
{
	return t->longest > 2;
}

int
rt_sites_trend_cmp(const struct rt_sites_trend *a, const struct rt_sites_trend *b)
{
	bool pa = rt_sites_trend_persistent(a), pb = rt_sites_trend_persistent(b);
	if (pa != pb)
		return pa ? -1 : 1;
	if (a->total_delta != b->total_delta)
		return a->total_delta > b->total_delta ? -1 : 1;
	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	return (a->site > b->site) - (a->site < b->site);
}
