/* Fuzzes rt_proto_feed: what writers put into the FIFO, as the worker's reads cut it.
 *
 * Input: 4 bytes that seed the chunk sizes, then the stream. The stream is fed three ways: whole,
 * one byte at a time, and in seeded chunks of 0 to 2 * RT_PROTO_LINE_MAX + 2 bytes (empty reads
 * included). Beyond the sanitizers' checks: every command's line ends within RT_PROTO_LINE_MAX
 * + 1 bytes; the three feedings give the same commands and leave the same partial line, and the
 * commands are those of a reference split of the stream at '\n'; the parser never holds more
 * than RT_PROTO_LINE_MAX bytes and allocates nothing, however long a line runs. */
#include "fuzz.h"

#include "rt_proto.h"

#include <sanitizer/allocator_interface.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define FUZZ_GC_ROUNDS_MAX 1000000000u /* roundtrim(7), FIFO: gc-rounds N */

struct fuzz_cmd {
	enum rt_proto_kind kind;
	uint64_t arg;
	char line[RT_PROTO_LINE_MAX + 1];
};

struct fuzz_seq {
	size_t n;
	size_t cap;
	struct fuzz_cmd *cmd;
};

/* Allocations made by this thread while rt_proto_feed runs. */
static __thread bool fuzz_in_feed;
static size_t fuzz_feed_allocs;

static void
fuzz_on_malloc(const volatile void *ptr, size_t size)
{
	(void)ptr;
	(void)size;
	if (fuzz_in_feed)
		fuzz_feed_allocs++;
}

static void
fuzz_on_free(const volatile void *ptr)
{
	(void)ptr;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	__sanitizer_install_malloc_and_free_hooks(fuzz_on_malloc, fuzz_on_free);
	return 0;
}

static void
fuzz_record(void *ctx, const struct rt_proto_cmd *cmd)
{
	struct fuzz_seq *seq = ctx;
	FUZZ_CHECK(seq->n < seq->cap, "more commands than newlines (%zu)", seq->cap);
	FUZZ_CHECK(cmd->line && memchr(cmd->line, '\0', RT_PROTO_LINE_MAX + 1) != NULL,
	           "a %s line that does not end within %d bytes", rt_proto_kind_name(cmd->kind),
	           RT_PROTO_LINE_MAX + 1);
	FUZZ_CHECK(cmd->kind <= RT_PROTO_OVERSIZED, "kind %d", (int)cmd->kind);
	FUZZ_CHECK(cmd->kind == RT_PROTO_GC_ROUNDS ? cmd->arg <= FUZZ_GC_ROUNDS_MAX : cmd->arg == 0,
	           "%s with argument %llu", rt_proto_kind_name(cmd->kind),
	           (unsigned long long)cmd->arg);
	struct fuzz_cmd *c = &seq->cmd[seq->n++];
	c->kind = cmd->kind;
	c->arg = cmd->arg;
	memcpy(c->line, cmd->line, strlen(cmd->line) + 1);
}

static void
fuzz_feed(struct rt_proto *proto, const unsigned char *bytes, size_t n, struct fuzz_seq *seq)
{
	fuzz_in_feed = true;
	rt_proto_feed(proto, (const char *)bytes, n, fuzz_record, seq);
	fuzz_in_feed = false;
	FUZZ_CHECK(fuzz_feed_allocs == 0, "rt_proto_feed allocated %zu times", fuzz_feed_allocs);
	FUZZ_CHECK(proto->len <= RT_PROTO_LINE_MAX, "%zu bytes held", proto->len);
}

static uint32_t
fuzz_next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* The reference: the command a complete line of raw bytes (newline excluded) must give. */
static void
fuzz_expect(const unsigned char *raw, size_t len, struct fuzz_cmd *c)
{
	static const char gc[] = "gc-rounds ";
	memset(c, 0, sizeof(*c));
	if (len > RT_PROTO_LINE_MAX) {
		c->kind = RT_PROTO_OVERSIZED;
		memcpy(c->line, raw, RT_PROTO_LINE_MAX);
		return;
	}
	if (len > 0 && raw[len - 1] == '\r')
		len--;
	memcpy(c->line, raw, len);
	/* The line is handed on as a C string: it ends at the first NUL byte. A line that holds
	 * one is no command; an empty one is the library's own wake-up. */
	const char *s = c->line;
	c->kind = RT_PROTO_UNKNOWN;
	if (memchr(raw, '\0', len))
		return;
	if (len == 0)
		c->kind = RT_PROTO_EMPTY;
	else if (!strcmp(s, "round"))
		c->kind = RT_PROTO_ROUND;
	else if (!strcmp(s, "trim"))
		c->kind = RT_PROTO_TRIM;
	else if (!strcmp(s, "stats"))
		c->kind = RT_PROTO_STATS;
	else if (!strncmp(s, gc, sizeof(gc) - 1) && s[sizeof(gc) - 1]) {
		uint64_t v = 0;
		const char *d = s + sizeof(gc) - 1;
		for (; *d >= '0' && *d <= '9' && v <= FUZZ_GC_ROUNDS_MAX; d++)
			v = v * 10 + (uint64_t)(*d - '0');
		if (!*d && v <= FUZZ_GC_ROUNDS_MAX) {
			c->kind = RT_PROTO_GC_ROUNDS;
			c->arg = v;
		}
	}
}

static void
fuzz_same(const struct fuzz_seq *a, const struct fuzz_seq *b, const char *how)
{
	FUZZ_CHECK(a->n == b->n, "%zu commands %s, %zu expected", b->n, how, a->n);
	for (size_t i = 0; i < a->n; i++) {
		const struct fuzz_cmd *x = &a->cmd[i], *y = &b->cmd[i];
		FUZZ_CHECK(x->kind == y->kind && x->arg == y->arg && !strcmp(x->line, y->line),
		           "command %zu %s: %s %llu \"%s\", expected %s %llu \"%s\"", i, how,
		           rt_proto_kind_name(y->kind), (unsigned long long)y->arg, y->line,
		           rt_proto_kind_name(x->kind), (unsigned long long)x->arg, x->line);
	}
}

static void
fuzz_same_state(const struct rt_proto *a, const struct rt_proto *b, const char *how)
{
	FUZZ_CHECK(a->len == b->len && a->oversized == b->oversized &&
	               memcmp(a->line, b->line, a->len) == 0,
	           "the partial line differs %s", how);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	uint32_t seed = 0x9e3779b9u;
	if (size >= 4) {
		memcpy(&seed, data, 4);
		seed = seed ? seed : 0x9e3779b9u;
		data += 4;
		size -= 4;
	}
	size_t lines = 0;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';

	struct fuzz_seq want = {0, lines, calloc(lines + 1, sizeof(struct fuzz_cmd))};
	struct fuzz_seq got[3];
	for (int i = 0; i < 3; i++)
		got[i] = (struct fuzz_seq){0, lines, calloc(lines + 1, sizeof(struct fuzz_cmd))};
	struct rt_proto proto[3];

	for (size_t start = 0, i = 0; i < size; i++) {
		if (data[i] != '\n')
			continue;
		fuzz_expect(data + start, i - start, &want.cmd[want.n++]);
		start = i + 1;
	}

	for (int i = 0; i < 3; i++)
		rt_proto_init(&proto[i]);
	fuzz_feed(&proto[0], data, size, &got[0]);
	for (size_t i = 0; i < size; i++)
		fuzz_feed(&proto[1], data + i, 1, &got[1]);
	for (size_t i = 0; i <= size;) {
		size_t n = fuzz_next(&seed) % (2 * RT_PROTO_LINE_MAX + 3);
		n = n < size - i ? n : size - i;
		fuzz_feed(&proto[2], data + i, n, &got[2]);
		i += n ? n : (i == size);
	}

	fuzz_same(&want, &got[0], "fed whole");
	fuzz_same(&want, &got[1], "fed bytewise");
	fuzz_same(&want, &got[2], "fed in chunks");
	fuzz_same_state(&proto[0], &proto[1], "fed bytewise");
	fuzz_same_state(&proto[0], &proto[2], "fed in chunks");

	free(want.cmd);
	for (int i = 0; i < 3; i++)
		free(got[i].cmd);
	return 0;
}
