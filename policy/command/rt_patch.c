#include "rt_patch.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rt_parse.h"

/* ---- Output: counts what it needs, writes what fits, NUL-terminates. */

struct rt_patch_out {
	char *buf;
	size_t size;
	size_t len;
};

static void
rt_patch_put(struct rt_patch_out *o, const char *s, size_t n)
{
	if (o->len < o->size) {
		size_t room = o->size - o->len;
		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static void
rt_patch_puts(struct rt_patch_out *o, const char *s)
{
	rt_patch_put(o, s, strlen(s));
}

static size_t
rt_patch_finish(struct rt_patch_out *o)
{
	if (o->size > 0)
		o->buf[o->len < o->size ? o->len : o->size - 1] = '\0';
	return o->len;
}

static const char *
rt_patch_why(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return why;
}

/* ---- Lines: [start, end) without the '\n'; the next line starts after it. */

static size_t
rt_patch_line_end(const char *t, size_t len, size_t from)
{
	const char *nl = memchr(t + from, '\n', len - from);
	return nl ? (size_t)(nl - t) : len;
}

static size_t
rt_patch_next_line(const char *t, size_t len, size_t from)
{
	size_t end = rt_patch_line_end(t, len, from);
	return end < len ? end + 1 : len;
}

static unsigned
rt_patch_line_number(const char *t, size_t offset)
{
	unsigned n = 1;
	for (size_t i = 0; i < offset; i++)
		n += t[i] == '\n';
	return n;
}

static bool
rt_patch_starts(const char *s, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);
	return n >= p && memcmp(s, prefix, p) == 0;
}

static bool
rt_patch_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool
rt_patch_is_word(char c)
{
	return rt_patch_is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
rt_patch_is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool
rt_patch_has_indent(const char *s, size_t n, size_t indent)
{
	if (n < indent)
		return false;
	for (size_t i = 0; i < indent; i++)
		if (s[i] != ' ')
			return false;
	return true;
}

/* "# >>> roundtrim 0.1.0 >>> ..." after exactly indent spaces. */
static bool
rt_patch_is_begin(const char *s, size_t n, size_t indent)
{
	if (!rt_patch_has_indent(s, n, indent))
		return false;
	s += indent, n -= indent;
	size_t p = strlen(RT_PATCH_BEGIN_PREFIX);
	if (!rt_patch_starts(s, n, RT_PATCH_BEGIN_PREFIX) || n == p || !rt_patch_is_digit(s[p]))
		return false;
	while (p < n && (rt_patch_is_digit(s[p]) || s[p] == '.'))
		p++;
	return rt_patch_starts(s + p, n - p, " >>>");
}

static bool
rt_patch_is_end(const char *s, size_t n, size_t indent)
{
	return rt_patch_has_indent(s, n, indent) && n - indent == strlen(RT_PATCH_END_MARKER) &&
	       memcmp(s + indent, RT_PATCH_END_MARKER, n - indent) == 0;
}

/* The next block in [from, to): 1 and its bytes [*start, *end) (through the end marker's '\n'),
 * 0 when there is none, -1 when a begin marker at *start has no end marker (another begin marker
 * comes first, or the region ends). */
static int
rt_patch_find_block(const char *t, size_t len, size_t from, size_t to, size_t indent, size_t *start,
                    size_t *end)
{
	for (size_t at = from; at < to; at = rt_patch_next_line(t, len, at)) {
		size_t e = rt_patch_line_end(t, len, at);
		if (!rt_patch_is_begin(t + at, e - at, indent))
			continue;
		*start = at;
		for (size_t l = rt_patch_next_line(t, len, at); l < to;
		     l = rt_patch_next_line(t, len, l)) {
			size_t le = rt_patch_line_end(t, len, l);
			if (rt_patch_is_begin(t + l, le - l, indent))
				return -1;
			if (rt_patch_is_end(t + l, le - l, indent)) {
				*end = rt_patch_next_line(t, len, l);
				return 1;
			}
		}
		return -1;
	}
	return 0;
}

/* ---- What a file is. */

/* #! *(/usr)?/bin/(env +)?(ba)?sh followed by a blank or the end of the line. */
static bool
rt_patch_sh_shebang(const char *s, size_t n)
{
	size_t i = 2;
	if (!rt_patch_starts(s, n, "#!"))
		return false;
	while (i < n && s[i] == ' ')
		i++;
	if (rt_patch_starts(s + i, n - i, "/usr"))
		i += 4;
	if (!rt_patch_starts(s + i, n - i, "/bin/"))
		return false;
	i += 5;
	if (rt_patch_starts(s + i, n - i, "env ")) {
		i += 4;
		while (i < n && s[i] == ' ')
			i++;
	}
	if (rt_patch_starts(s + i, n - i, "ba"))
		i += 2;
	if (!rt_patch_starts(s + i, n - i, "sh"))
		return false;
	i += 2;
	return i == n || rt_patch_is_blank(s[i]) || s[i] == '\r';
}

static const char *
rt_patch_find(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(s + i, needle, k) == 0)
			return s + i;
	return NULL;
}

/* A word python[0-9.]* and a blank, later "-m", blanks and "nvflare." (the shell version's
 * ^[^#]*\bpython[0-9.]*[[:space:]].*-m[[:space:]]+nvflare\. on the code before any '#'). */
static bool
rt_patch_starts_nvflare(const char *s, size_t n)
{
	for (size_t i = 0; i + 6 <= n; i++) {
		if (memcmp(s + i, "python", 6) != 0 || (i > 0 && rt_patch_is_word(s[i - 1])))
			continue;
		size_t j = i + 6;
		while (j < n && (rt_patch_is_digit(s[j]) || s[j] == '.'))
			j++;
		if (j >= n || !rt_patch_is_blank(s[j]))
			continue;
		for (size_t k = j; k + 2 < n; k++) {
			if (s[k] != '-' || s[k + 1] != 'm' || !rt_patch_is_blank(s[k + 2]))
				continue;
			size_t m = k + 2;
			while (m < n && rt_patch_is_blank(s[m]))
				m++;
			if (rt_patch_starts(s + m, n - m, "nvflare."))
				return true;
		}
	}
	return false;
}

static enum rt_patch_site
rt_patch_site_of(const char *s, size_t n)
{
	static const struct {
		const char *name;
		enum rt_patch_site site;
	} sites[] = {{"client.", RT_PATCH_SITE_CLIENT},
	             {"server.", RT_PATCH_SITE_SERVER},
	             {"relay.", RT_PATCH_SITE_RELAY},
	             {"{~~type~~}.", RT_PATCH_SITE_EVERY}};
	static const char app[] = "nvflare.private.fed.app.";
	const char *p = rt_patch_find(s, n, app);
	if (!p)
		return RT_PATCH_SITE_NONE;
	p += strlen(app);
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		if (rt_patch_starts(p, (size_t)(s + n - p), sites[i].name))
			return sites[i].site;
	return RT_PATCH_SITE_NONE;
}

/* "docker run" or "podman run", as words. */
static bool
rt_patch_runs_container(const char *s, size_t n)
{
	static const char *const tools[] = {"docker", "podman"};
	for (size_t t = 0; t < 2; t++) {
		for (const char *p = s; (p = rt_patch_find(p, (size_t)(s + n - p), tools[t]));) {
			const char *q = p + 6;
			bool word = (p == s || !rt_patch_is_word(p[-1])) && q < s + n &&
			            rt_patch_is_blank(*q);
			while (q < s + n && rt_patch_is_blank(*q))
				q++;
			if (word && rt_patch_starts(q, (size_t)(s + n - q), "run") &&
			    (q + 3 == s + n || !rt_patch_is_word(q[3])))
				return true;
			p++;
		}
	}
	return false;
}

/* The facts of one line outside the blocks, from its code (what precedes any '#'). */
static void
rt_patch_scan_line(struct rt_patch_file *f, const char *t, size_t start, size_t end)
{
	const char *hash = memchr(t + start, '#', end - start);
	size_t n = hash ? (size_t)(hash - (t + start)) : end - start;
	const char *s = t + start;
	if (rt_patch_starts_nvflare(s, n)) {
		f->nvflare = true;
		if (f->site == RT_PATCH_SITE_NONE)
			f->site = rt_patch_site_of(s, n);
	}
	if (rt_patch_runs_container(s, n))
		f->container = true;
	if (rt_patch_find(s, n, "sub_start.sh"))
		f->runs_sub_start = true;
	if (!f->preload_line && rt_patch_find(s, n, "libroundtrim.so"))
		f->preload_line = rt_patch_line_number(t, start);
}

static void
rt_patch_refuse(struct rt_patch_file *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	f->kind = RT_PATCH_REFUSED;
}

/* Scans lines [from, r->end): blocks at r->indent, stray end markers, facts outside blocks.
 * False (and the file refused) when a block has no end or an end marker no beginning. */
static bool
rt_patch_scan_region(struct rt_patch_file *f, struct rt_patch_region *r, const char *t, size_t len,
                     size_t from)
{
	size_t at = from;
	while (at < r->end) {
		size_t bstart, bend;
		int found = rt_patch_find_block(t, len, at, r->end, r->indent, &bstart, &bend);
		if (found < 0) {
			rt_patch_refuse(
			    f, "roundtrim block at line %u has no end marker; fix it by hand",
			    rt_patch_line_number(t, bstart));
			return false;
		}
		size_t stop = found ? bstart : r->end;
		for (; at < stop; at = rt_patch_next_line(t, len, at)) {
			size_t e = rt_patch_line_end(t, len, at);
			if (rt_patch_is_end(t + at, e - at, r->indent)) {
				rt_patch_refuse(
				    f,
				    "roundtrim end marker at line %u has no begin marker; "
				    "fix it by hand",
				    rt_patch_line_number(t, at));
				return false;
			}
			rt_patch_scan_line(f, t, at, e > r->end ? r->end : e);
		}
		if (!found)
			break;
		r->blocks++;
		f->blocks++;
		at = bend;
	}
	return true;
}

/* The first line, printable, at most 60 bytes, for a message. */
static void
rt_patch_first_line(const char *t, size_t len, char *out, size_t size)
{
	size_t n = rt_patch_line_end(t, len, 0);
	if (n > 60) {
		n = 60;
		while (n > 0 && ((unsigned char)t[n] & 0xc0) == 0x80)
			n--; /* not inside a UTF-8 sequence */
	}
	if (n >= size)
		n = size - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)t[i] < 0x20 || t[i] == 0x7f ? '?' : t[i];
	out[n] = '\0';
}

static const char *const rt_patch_template_keys[] = {"sub_start_sh", "sub_start_cln_sh",
                                                     "sub_start_svr_sh"};

/* The key a top-level line starts ("key:" then a blank or the end), or NULL. */
static const char *
rt_patch_template_key(const char *s, size_t n, size_t *after)
{
	for (size_t k = 0; k < sizeof(rt_patch_template_keys) / sizeof(rt_patch_template_keys[0]);
	     k++) {
		size_t kl = strlen(rt_patch_template_keys[k]);
		if (n > kl && memcmp(s, rt_patch_template_keys[k], kl) == 0 && s[kl] == ':' &&
		    (kl + 1 == n || rt_patch_is_blank(s[kl + 1]))) {
			*after = kl + 1;
			return rt_patch_template_keys[k];
		}
	}
	return NULL;
}

/* A literal block scalar's header: '|', at most one of '-'/'+' and one digit 1-9 in either
 * order, then blanks and an optional comment. *explicit_indent gets the digit, or 0. */
static bool
rt_patch_literal_header(const char *s, size_t n, size_t *explicit_indent)
{
	size_t i = 0;
	*explicit_indent = 0;
	while (i < n && rt_patch_is_blank(s[i]))
		i++;
	if (i == n || s[i++] != '|')
		return false;
	bool chomp = false;
	for (int k = 0; k < 2 && i < n; k++, i++) {
		if ((s[i] == '-' || s[i] == '+') && !chomp)
			chomp = true;
		else if (s[i] >= '1' && s[i] <= '9' && !*explicit_indent)
			*explicit_indent = (size_t)(s[i] - '0');
		else
			break;
	}
	if (i < n && !rt_patch_is_blank(s[i]))
		return false;
	while (i < n && rt_patch_is_blank(s[i]))
		i++;
	return i == n || s[i] == '#';
}

/* Finds the sub_start keys of an NVFlare master template: false when there is none (not a
 * template); true with the regions, or with the file refused. */
static bool
rt_patch_identify_template(const char *t, size_t len, struct rt_patch_file *f)
{
	size_t key_line[RT_PATCH_REGIONS_MAX];
	for (size_t at = 0; at < len; at = rt_patch_next_line(t, len, at)) {
		size_t e = rt_patch_line_end(t, len, at), after, explicit_indent;
		const char *key = rt_patch_template_key(t + at, e - at, &after);
		if (!key)
			continue;
		unsigned line = rt_patch_line_number(t, at);
		for (unsigned i = 0; i < f->nregions; i++) {
			if (f->regions[i].key == key) {
				rt_patch_refuse(f, "%s appears twice (lines %zu and %u)", key,
				                key_line[i], line);
				return true;
			}
		}
		if (!rt_patch_literal_header(t + at + after, e - at - after, &explicit_indent)) {
			rt_patch_refuse(f, "%s (line %u) is not a literal block scalar (|)", key,
			                line);
			return true;
		}
		/* The scalar's first line: its indentation is the scalar's, and it is a #! line. */
		size_t first = rt_patch_next_line(t, len, at);
		size_t first_end = rt_patch_line_end(t, len, first);
		size_t spaces = 0;
		while (first + spaces < first_end && t[first + spaces] == ' ')
			spaces++;
		size_t indent = explicit_indent ? explicit_indent : spaces;
		if (first == len || indent == 0 || spaces < indent ||
		    !rt_patch_sh_shebang(t + first + indent, first_end - first - indent)) {
			rt_patch_refuse(f, "%s (line %u) does not start with a sh or bash #! line",
			                key, line);
			return true;
		}
		if (t[first_end - 1] == '\r' || first_end == len) {
			rt_patch_refuse(f, "%s (line %u): its #! line %s", key, line,
			                first_end == len ? "ends the file" : "ends in CR LF");
			return true;
		}
		/* It ends at the first line that is neither blank nor indented as much. */
		size_t end = first_end + 1;
		while (end < len) {
			size_t le = rt_patch_line_end(t, len, end), sp = 0;
			while (end + sp < le && t[end + sp] == ' ')
				sp++;
			if (end + sp < le && sp < indent)
				break;
			end = rt_patch_next_line(t, len, end);
		}
		if (f->nregions == RT_PATCH_REGIONS_MAX) /* cannot happen: each key once */
			break;
		key_line[f->nregions] = line;
		f->regions[f->nregions++] = (struct rt_patch_region){
		    .insert = first_end + 1, .end = end, .indent = indent, .key = key};
	}
	if (f->nregions == 0)
		return false;
	f->kind = RT_PATCH_TEMPLATE;
	for (unsigned i = 0; i < f->nregions; i++)
		if (!rt_patch_scan_region(f, &f->regions[i], t, len, f->regions[i].insert))
			return true;
	/* Rendered for every site, whatever a line says: the role is not the template's. */
	f->site = RT_PATCH_SITE_EVERY;
	return true;
}

void
rt_patch_identify(const char *text, size_t len, struct rt_patch_file *f)
{
	char first[64];
	memset(f, 0, sizeof(*f));
	if (len == 0) {
		rt_patch_refuse(f, "is empty");
		return;
	}
	if (memchr(text, '\0', len)) {
		rt_patch_refuse(f, "not a text file");
		return;
	}
	size_t e1 = rt_patch_line_end(text, len, 0);
	rt_patch_first_line(text, len, first, sizeof(first));
	if (rt_patch_starts(text, e1, "#!")) {
		if (!rt_patch_sh_shebang(text, e1)) {
			rt_patch_refuse(f, "not a sh or bash script (first line: %s)", first);
			return;
		}
		if (text[e1 - 1] == '\r') {
			rt_patch_refuse(f, "has CR LF line ends, with which the script cannot run");
			return;
		}
		if (e1 == len) {
			rt_patch_refuse(f, "has nothing after its #! line, not even a newline");
			return;
		}
		f->kind = RT_PATCH_LAUNCHER;
		f->nregions = 1;
		f->regions[0] = (struct rt_patch_region){.insert = e1 + 1, .end = len};
		rt_patch_scan_region(f, &f->regions[0], text, len, e1 + 1);
		return;
	}
	if (!rt_patch_identify_template(text, len, f))
		rt_patch_refuse(f,
		                "not a sh or bash script (first line: %s), nor NVFlare's "
		                "master_template.yml (no top-level sub_start_sh key)",
		                first);
}

const char *
rt_patch_refusal(const struct rt_patch_file *f, bool force, enum rt_role role, char *why,
                 size_t size)
{
	if (f->kind == RT_PATCH_REFUSED)
		return rt_patch_why(why, size, "%s", f->why);
	if (f->preload_line)
		return rt_patch_why(why, size,
		                    "already loads libroundtrim.so outside a roundtrim block (line "
		                    "%u); remove those lines first",
		                    f->preload_line);
	if (!force && f->container)
		return rt_patch_why(
		    why, size,
		    "runs NVFlare in a container (docker run), where a block here does "
		    "not reach: give the container the library and the variables "
		    "(docker run -e); --force patches it anyway");
	if (!force && !f->nvflare)
		return rt_patch_why(
		    why, size, "%s",
		    f->runs_sub_start ? "starts no NVFlare process itself (no 'python3 ... -m "
		                        "nvflare.' line): patch the sub_start.sh it runs; --force "
		                        "patches this one anyway"
		                      : "starts no NVFlare process (no 'python3 ... -m nvflare.' "
		                        "line); --force patches any sh/bash launcher");
	if (role == RT_ROLE_NONE)
		return NULL;
	switch (f->site) {
	case RT_PATCH_SITE_EVERY:
		return rt_patch_why(
		    why, size,
		    "NVFlare renders it for servers, clients and relays alike: leave "
		    "--role out (--arena-max applies to them all), or patch each "
		    "kit's sub_start.sh with its role");
	case RT_PATCH_SITE_RELAY:
		return rt_patch_why(why, size,
		                    "starts an NVFlare relay, which has no role: leave --role out");
	case RT_PATCH_SITE_CLIENT:
	case RT_PATCH_SITE_SERVER: {
		enum rt_role fits =
		    f->site == RT_PATCH_SITE_CLIENT ? RT_ROLE_CLIENT : RT_ROLE_SERVER;
		if (role != fits)
			return rt_patch_why(why, size, "starts an NVFlare %s: --role %s, not %s",
			                    rt_role_name(fits), rt_role_name(fits),
			                    rt_role_name(role));
		return NULL;
	}
	case RT_PATCH_SITE_NONE:
		break;
	}
	return NULL;
}

const char *
rt_patch_undo_refusal(const struct rt_patch_file *f, char *why, size_t size)
{
	return f->kind == RT_PATCH_REFUSED ? rt_patch_why(why, size, "%s", f->why) : NULL;
}

/* ---- The settings and the block. */

/* The MALLOC_ARENA_MAX the block sets: --arena-max's, else the role's; 0 for none. */
static unsigned
rt_patch_arena_cap(enum rt_role role, unsigned arena_max)
{
	return arena_max ? arena_max : rt_roles[role].arena_max;
}

enum rt_parse_result
rt_patch_parse_arena_max(const char *text, unsigned *out)
{
	uint64_t v = 0;
	enum rt_parse_result r = rt_parse_u64(text, INT_MAX, &v);
	if (r == RT_PARSE_OK && v == 0)
		r = RT_PARSE_GARBAGE; /* glibc's minimum is 1: 0 would be ignored */
	*out = r == RT_PARSE_OK ? (unsigned)v : 0;
	return r;
}

size_t
rt_patch_settings(const char *const values[RT_SETTING_COUNT], unsigned arena_max,
                  char arena_text[24], struct rt_patch_setting out[RT_PATCH_SETTINGS_MAX])
{
	size_t n = 0;
	const char *match = values[RT_SETTING_MATCH];
	out[n++] = (struct rt_patch_setting){rt_settings[RT_SETTING_MATCH].name,
	                                     match ? match : RT_PATCH_DEFAULT_MATCH, false};
	for (unsigned id = 0; id < RT_SETTING_COUNT; id++)
		if (id != RT_SETTING_MATCH && values[id] && rt_settings[id].patch)
			out[n++] =
			    (struct rt_patch_setting){rt_settings[id].name, values[id], false};

	enum rt_role role = RT_ROLE_NONE;
	uint64_t word;
	const struct rt_setting_platform platform = {34, 64};
	if (values[RT_SETTING_ROLE] &&
	    rt_setting_parse(&rt_settings[RT_SETTING_ROLE], values[RT_SETTING_ROLE], &platform,
	                     &word) == RT_PARSE_OK)
		role = (enum rt_role)word;
	/* NVFlare's sub_start.sh exports MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-4} after the block:
	 * the block sets it first, so the script keeps it, and the role's cap, which the library
	 * would apply only with MALLOC_ARENA_MAX unset, is not lost to the script's 4. */
	unsigned cap = rt_patch_arena_cap(role, arena_max);
	if (cap) {
		snprintf(arena_text, 24, "%u", cap);
		out[n++] =
		    (struct rt_patch_setting){"MALLOC_ARENA_MAX", arena_text, arena_max == 0};
	}
	return n;
}

/* Kept as they are by the shell, outside quotes and after NAME=. */
static bool
rt_patch_plain(const char *v)
{
	if (!*v)
		return false;
	for (; *v; v++)
		if (!rt_patch_is_word(*v) && !strchr("./:,+=@%-", *v))
			return false;
	return true;
}

const char *
rt_patch_setting_refusal(const struct rt_patch_setting *s)
{
	const char *c = s->name;
	if (!*c || rt_patch_is_digit(*c))
		return "not a shell variable name";
	for (; *c; c++)
		if (!rt_patch_is_word(*c))
			return "not a shell variable name";
	for (c = s->value; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f)
			return "holds a control character, which would break the block's lines";
	if (s->default_only && !rt_patch_plain(s->value))
		return "a default must be plain: letters, digits and . / : , + = @ % _ -";
	return NULL;
}

static void
rt_patch_quote(struct rt_patch_out *o, const char *v)
{
	if (rt_patch_plain(v)) {
		rt_patch_puts(o, v);
		return;
	}
	rt_patch_put(o, "'", 1);
	for (; *v; v++) {
		if (*v == '\'')
			rt_patch_puts(o, "'\\''");
		else
			rt_patch_put(o, v, 1);
	}
	rt_patch_put(o, "'", 1);
}

size_t
rt_patch_block(const char *version, const char *lib, const struct rt_patch_setting *settings,
               size_t nsettings, char *out, size_t size)
{
	struct rt_patch_out o = {out, size, 0};
	/* The begin marker is recognised by its version: digits and dots. */
	bool version_ok = rt_patch_is_digit(version[0]);
	for (const char *c = version; *c; c++)
		version_ok = version_ok && (rt_patch_is_digit(*c) || *c == '.');
	rt_patch_puts(&o, RT_PATCH_BEGIN_PREFIX);
	rt_patch_puts(&o, version_ok ? version : "0");
	rt_patch_puts(&o, " >>> added by `roundtrim patch`; undo: `roundtrim patch --undo FILE`\n");
	rt_patch_puts(&o, "export LD_PRELOAD=\"");
	rt_patch_puts(&o, lib);
	rt_patch_puts(&o, "${LD_PRELOAD:+:$LD_PRELOAD}\"\n");
	for (size_t i = 0; i < nsettings; i++) {
		const struct rt_patch_setting *s = &settings[i];
		rt_patch_puts(&o, "export ");
		rt_patch_puts(&o, s->name);
		if (s->default_only) {
			rt_patch_puts(&o, "=\"${");
			rt_patch_puts(&o, s->name);
			rt_patch_puts(&o, ":-");
			rt_patch_puts(&o, s->value);
			rt_patch_puts(&o, "}\"\n");
		} else {
			rt_patch_puts(&o, "=");
			rt_patch_quote(&o, s->value);
			rt_patch_puts(&o, "\n");
		}
	}
	rt_patch_puts(&o, RT_PATCH_END_MARKER "\n");
	return rt_patch_finish(&o);
}

/* ---- Applying and removing. */

static void
rt_patch_put_indented(struct rt_patch_out *o, const char *block, size_t indent)
{
	size_t len = strlen(block);
	for (size_t at = 0; at < len;) {
		size_t next = rt_patch_next_line(block, len, at);
		for (size_t i = 0; i < indent; i++)
			rt_patch_put(o, " ", 1);
		rt_patch_put(o, block + at, next - at);
		at = next;
	}
}

/* Whether text[start, end) is block with every line indented. */
static bool
rt_patch_block_equals(const char *t, size_t start, size_t end, const char *block, size_t indent)
{
	size_t blen = strlen(block), at = start;
	for (size_t b = 0; b < blen;) {
		size_t next = rt_patch_next_line(block, blen, b);
		size_t n = next - b;
		if (end - at < indent + n || !rt_patch_has_indent(t + at, indent, indent) ||
		    memcmp(t + at + indent, block + b, n) != 0)
			return false;
		at += indent + n;
		b = next;
	}
	return at == end;
}

static enum rt_patch_change
rt_patch_rewrite(const char *t, size_t len, const struct rt_patch_file *f, const char *block,
                 char *out, size_t size, size_t *out_len)
{
	struct rt_patch_out o = {out, size, 0};
	size_t at = 0;
	bool had = false;
	for (unsigned i = 0; i < f->nregions; i++) {
		const struct rt_patch_region *r = &f->regions[i];
		size_t bs, be;
		bool placed = false;
		while (rt_patch_find_block(t, len, at > r->insert ? at : r->insert, r->end,
		                           r->indent, &bs, &be) == 1) {
			rt_patch_put(&o, t + at, bs - at);
			if (block && !placed)
				rt_patch_put_indented(&o, block, r->indent);
			placed = had = true;
			at = be;
		}
		if (block && !placed) {
			rt_patch_put(&o, t + at, r->insert - at);
			rt_patch_put_indented(&o, block, r->indent);
			at = r->insert;
		}
	}
	rt_patch_put(&o, t + at, len - at);
	*out_len = rt_patch_finish(&o);
	if (!block)
		return had ? RT_PATCH_REMOVED : RT_PATCH_ABSENT;
	return had ? RT_PATCH_REPLACED : RT_PATCH_ADDED;
}

enum rt_patch_change
rt_patch_apply(const char *text, size_t len, const struct rt_patch_file *f, const char *block,
               char *out, size_t size, size_t *out_len)
{
	bool same = f->nregions > 0;
	for (unsigned i = 0; same && i < f->nregions; i++) {
		const struct rt_patch_region *r = &f->regions[i];
		size_t bs, be;
		same =
		    r->blocks == 1 &&
		    rt_patch_find_block(text, len, r->insert, r->end, r->indent, &bs, &be) == 1 &&
		    rt_patch_block_equals(text, bs, be, block, r->indent);
	}
	if (same) {
		struct rt_patch_out o = {out, size, 0};
		rt_patch_put(&o, text, len);
		*out_len = rt_patch_finish(&o);
		return RT_PATCH_SAME;
	}
	return rt_patch_rewrite(text, len, f, block, out, size, out_len);
}

enum rt_patch_change
rt_patch_remove(const char *text, size_t len, const struct rt_patch_file *f, char *out, size_t size,
                size_t *out_len)
{
	return rt_patch_rewrite(text, len, f, NULL, out, size, out_len);
}

const char *
rt_patch_change_text(enum rt_patch_change change, bool dry_run)
{
	switch (change) {
	case RT_PATCH_ADDED:
		return dry_run ? "would be patched" : "patched";
	case RT_PATCH_REPLACED:
		return dry_run ? "roundtrim block would be updated" : "roundtrim block updated";
	case RT_PATCH_SAME:
		return "already patched; nothing changed";
	case RT_PATCH_REMOVED:
		return dry_run ? "roundtrim block would be removed" : "roundtrim block removed";
	case RT_PATCH_ABSENT:
		return "not patched; nothing to undo";
	}
	return "";
}

const char *
rt_patch_change_note(const struct rt_patch_file *f, enum rt_patch_change change)
{
	if (f->kind != RT_PATCH_TEMPLATE || change == RT_PATCH_SAME || change == RT_PATCH_ABSENT)
		return NULL;
	return "kits provisioned from now on carry the change; kits made before are as they were";
}

/* ---- The diff. */

/* A text walked line by line: the line number and the offset where it starts. */
struct rt_patch_cursor {
	const char *t;
	size_t len;
	size_t line;
	size_t at;
};

static void
rt_patch_seek(struct rt_patch_cursor *c, size_t line)
{
	while (c->line < line && c->at < c->len) {
		c->at = rt_patch_next_line(c->t, c->len, c->at);
		c->line++;
	}
}

static size_t
rt_patch_count_lines(const char *t, size_t from, size_t to)
{
	size_t n = 0;
	for (size_t at = from; at < to; at = rt_patch_next_line(t, to, at))
		n++;
	return n;
}

/* The number of lines of a block that starts at the cursor, or 0 when none starts there. */
static size_t
rt_patch_block_lines(const struct rt_patch_cursor *c)
{
	size_t e = rt_patch_line_end(c->t, c->len, c->at), indent = 0, bs, be;
	while (c->at + indent < e && c->t[c->at + indent] == ' ')
		indent++;
	if (!rt_patch_is_begin(c->t + c->at, e - c->at, indent) ||
	    rt_patch_find_block(c->t, c->len, c->at, c->len, indent, &bs, &be) != 1)
		return 0;
	return rt_patch_count_lines(c->t, bs, be);
}

static bool
rt_patch_same_lines(const struct rt_patch_cursor *a, const struct rt_patch_cursor *b, size_t n)
{
	struct rt_patch_cursor x = *a, y = *b;
	rt_patch_seek(&x, a->line + n);
	rt_patch_seek(&y, b->line + n);
	return x.at - a->at == y.at - b->at &&
	       memcmp(a->t + a->at, b->t + b->at, x.at - a->at) == 0;
}

/* Lines [line, line + count) of each text that differ. */
struct rt_patch_hunk_change {
	size_t old_line, old_count, new_line, new_count;
};

#define RT_PATCH_DIFF_CHANGES 16
#define RT_PATCH_DIFF_CONTEXT 3

/* The start of the line that ends at end (exclusive of nothing: end is after its '\n' or the
 * text's end), not before from. */
static size_t
rt_patch_line_start_before(const char *t, size_t from, size_t end)
{
	size_t s = end - 1; /* its last byte, '\n' or not */
	while (s > from && t[s - 1] != '\n')
		s--;
	return s;
}

/* The rest of both texts as one change, less the lines they end with in common. */
static struct rt_patch_hunk_change
rt_patch_rest_change(const struct rt_patch_cursor *o, const struct rt_patch_cursor *n)
{
	size_t oe = o->len, ne = n->len;
	while (oe > o->at && ne > n->at) {
		size_t os = rt_patch_line_start_before(o->t, o->at, oe);
		size_t ns = rt_patch_line_start_before(n->t, n->at, ne);
		if (oe - os != ne - ns || memcmp(o->t + os, n->t + ns, oe - os) != 0)
			break;
		oe = os, ne = ns;
	}
	return (struct rt_patch_hunk_change){o->line, rt_patch_count_lines(o->t, o->at, oe),
	                                     n->line, rt_patch_count_lines(n->t, n->at, ne)};
}

static size_t
rt_patch_diff_changes(const char *old, size_t old_len, const char *new_text, size_t new_len,
                      struct rt_patch_hunk_change *changes)
{
	struct rt_patch_cursor o = {old, old_len, 0, 0}, n = {new_text, new_len, 0, 0};
	size_t count = 0;
	while (o.at < old_len || n.at < new_len) {
		size_t ob = o.at < old_len ? rt_patch_block_lines(&o) : 0;
		size_t nb = n.at < new_len ? rt_patch_block_lines(&n) : 0;
		struct rt_patch_hunk_change c = {o.line, ob, n.line, nb};
		if (!ob && !nb) {
			if (o.at < old_len && n.at < new_len && rt_patch_same_lines(&o, &n, 1)) {
				rt_patch_seek(&o, o.line + 1);
				rt_patch_seek(&n, n.line + 1);
				continue;
			}
			c = rt_patch_rest_change(&o, &n);
		} else if (ob && nb && ob == nb && rt_patch_same_lines(&o, &n, ob)) {
			rt_patch_seek(&o, o.line + ob);
			rt_patch_seek(&n, n.line + nb);
			continue;
		} else if (count == RT_PATCH_DIFF_CHANGES - 1) {
			c = rt_patch_rest_change(&o, &n); /* the last slot takes all the rest */
		}
		changes[count++] = c;
		rt_patch_seek(&o, o.line + c.old_count);
		rt_patch_seek(&n, n.line + c.new_count);
		if (c.old_count + c.new_count == 0 || count == RT_PATCH_DIFF_CHANGES)
			break;
	}
	return count;
}

static void
rt_patch_diff_line(struct rt_patch_out *out, char mark, struct rt_patch_cursor *c)
{
	size_t next = rt_patch_next_line(c->t, c->len, c->at);
	rt_patch_put(out, &mark, 1);
	rt_patch_put(out, c->t + c->at, next - c->at);
	if (next == c->len && c->t[next - 1] != '\n')
		rt_patch_puts(out, "\n\\ No newline at end of file\n");
	c->at = next;
	c->line++;
}

static void
rt_patch_range(struct rt_patch_out *out, size_t start, size_t count)
{
	char text[48];
	/* An empty range names the line before it. */
	snprintf(text, sizeof(text), "%zu,%zu", count ? start + 1 : start, count);
	rt_patch_puts(out, text);
}

size_t
rt_patch_diff(const char *label, const char *old, size_t old_len, const char *new_text,
              size_t new_len, char *buf, size_t size)
{
	struct rt_patch_out out = {buf, size, 0};
	struct rt_patch_hunk_change ch[RT_PATCH_DIFF_CHANGES];
	size_t count = rt_patch_diff_changes(old, old_len, new_text, new_len, ch);
	if (count == 0)
		return rt_patch_finish(&out);
	size_t old_lines = rt_patch_count_lines(old, 0, old_len);
	rt_patch_puts(&out, "--- ");
	rt_patch_puts(&out, label);
	rt_patch_puts(&out, "\n+++ ");
	rt_patch_puts(&out, label);
	rt_patch_puts(&out, "\n");
	struct rt_patch_cursor o = {old, old_len, 0, 0}, n = {new_text, new_len, 0, 0};
	for (size_t first = 0; first < count;) {
		/* Changes whose contexts touch share a hunk. */
		size_t last = first;
		while (last + 1 < count &&
		       ch[last + 1].old_line - (ch[last].old_line + ch[last].old_count) <=
		           2 * RT_PATCH_DIFF_CONTEXT)
			last++;
		size_t before = ch[first].old_line < RT_PATCH_DIFF_CONTEXT ? ch[first].old_line
		                                                           : RT_PATCH_DIFF_CONTEXT;
		size_t old_end = ch[last].old_line + ch[last].old_count;
		size_t after = old_lines - old_end < RT_PATCH_DIFF_CONTEXT ? old_lines - old_end
		                                                           : RT_PATCH_DIFF_CONTEXT;
		size_t old_start = ch[first].old_line - before,
		       new_start = ch[first].new_line - before;
		size_t new_end = ch[last].new_line + ch[last].new_count;
		rt_patch_puts(&out, "@@ -");
		rt_patch_range(&out, old_start, old_end + after - old_start);
		rt_patch_puts(&out, " +");
		rt_patch_range(&out, new_start, new_end + after - new_start);
		rt_patch_puts(&out, " @@\n");
		rt_patch_seek(&o, old_start);
		rt_patch_seek(&n, new_start);
		for (size_t k = first; k <= last; k++) {
			while (o.line < ch[k].old_line) {
				rt_patch_diff_line(&out, ' ', &o);
				rt_patch_seek(&n, n.line + 1);
			}
			for (size_t i = 0; i < ch[k].old_count; i++)
				rt_patch_diff_line(&out, '-', &o);
			for (size_t i = 0; i < ch[k].new_count; i++)
				rt_patch_diff_line(&out, '+', &n);
		}
		for (size_t i = 0; i < after; i++) {
			rt_patch_diff_line(&out, ' ', &o);
			rt_patch_seek(&n, n.line + 1);
		}
		first = last + 1;
	}
	return rt_patch_finish(&out);
}

/* ---- Signed kits. */

enum rt_patch_kit
rt_patch_kit_verdict(const char *const *names, size_t nnames, enum rt_patch_signature signature)
{
	for (size_t i = 0; i < nnames; i++)
		if (strcmp(names[i], RT_PATCH_SIGNATURE_FILE) == 0)
			return signature == RT_PATCH_SIGNATURE_OMITS ? RT_PATCH_KIT_UNCOVERED
			                                             : RT_PATCH_KIT_SIGNED;
	return RT_PATCH_KIT_UNSIGNED;
}

size_t
rt_patch_kit_message(const char *file_name, const char *start_sh, enum rt_role role,
                     unsigned arena_max, char *buf, size_t size)
{
	struct rt_patch_out o = {buf, size, 0};
	char text[48];
	unsigned cap = rt_patch_arena_cap(role, arena_max);
	rt_patch_puts(&o, "the startup kit is signed (" RT_PATCH_SIGNATURE_FILE " beside it): "
	                  "NVFlare's kit verification (sub_start.sh --verify) fails once ");
	rt_patch_puts(&o, file_name);
	rt_patch_puts(&o, " changes. Start the kit unchanged instead: ");
	if (cap) {
		snprintf(text, sizeof(text), "MALLOC_ARENA_MAX=%u ", cap);
		rt_patch_puts(&o, text);
	}
	rt_patch_puts(&o, "roundtrim run ");
	if (role != RT_ROLE_NONE) {
		rt_patch_puts(&o, "--role ");
		rt_patch_puts(&o, rt_role_name(role));
		rt_patch_puts(&o, " ");
	}
	rt_patch_puts(&o, "--match '" RT_PATCH_DEFAULT_MATCH "' -- ");
	rt_patch_quote(&o, start_sh);
	rt_patch_puts(&o, "; or patch NVFlare's master_template.yml and provision again, which "
	                  "signs the patched script; --force patches it anyway");
	return rt_patch_finish(&o);
}
