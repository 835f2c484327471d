/* rt_proto: the FIFO line protocol (round, trim, gc-rounds N, stats).
 * Owns line framing in a fixed buffer, so that a flooding writer cannot grow memory. */
#ifndef RT_PROTO_H
#define RT_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define RT_PROTO_LINE_MAX 64 /* longest accepted line, newline excluded */

enum rt_proto_kind {
	RT_PROTO_ROUND,
	RT_PROTO_TRIM,
	RT_PROTO_GC_ROUNDS, /* arg holds N */
	RT_PROTO_STATS,
	RT_PROTO_EMPTY,     /* an empty line: the library's own wake-up, ignored */
	RT_PROTO_UNKNOWN,   /* a line that is no command, or a command with a bad argument */
	RT_PROTO_OVERSIZED, /* a line longer than RT_PROTO_LINE_MAX, discarded whole */
};

struct rt_proto_cmd {
	enum rt_proto_kind kind;
	uint64_t arg;
	const char
	    *line; /* the line as received (truncated for OVERSIZED); valid during the call */
};

typedef void (*rt_proto_fn)(void *ctx, const struct rt_proto_cmd *cmd);

struct rt_proto {
	char line[RT_PROTO_LINE_MAX + 1];
	size_t len;
	int oversized; /* discarding until the next newline */
};

void rt_proto_init(struct rt_proto *proto);

/* Feeds bytes as read from the FIFO; calls fn once per complete line. */
void rt_proto_feed(struct rt_proto *proto, const char *bytes, size_t n, rt_proto_fn fn, void *ctx);

const char *rt_proto_kind_name(enum rt_proto_kind kind);

#endif
