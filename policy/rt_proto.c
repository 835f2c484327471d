#include "rt_proto.h"

#include "rt_parse.h"

#include <string.h>

#define RT_PROTO_GC_ROUNDS_MAX 1000000000u

void
rt_proto_init(struct rt_proto *proto)
{
	proto->len = 0;
	proto->oversized = 0;
	proto->line[0] = '\0';
}

static void
rt_proto_parse_line(char *line, size_t len, struct rt_proto_cmd *cmd)
{
	/* Tolerate CRLF writers (a line typed on some terminals); nothing else is trimmed. */
	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	cmd->kind = RT_PROTO_UNKNOWN;
	cmd->arg = 0;
	cmd->line = line;
	static const char gc_rounds[] = "gc-rounds ";
	/* A NUL byte would end the line early for strcmp: such a line is no command. */
	if (memchr(line, '\0', len))
		return;
	if (len == 0)
		cmd->kind = RT_PROTO_EMPTY;
	else if (strcmp(line, "round") == 0)
		cmd->kind = RT_PROTO_ROUND;
	else if (strcmp(line, "trim") == 0)
		cmd->kind = RT_PROTO_TRIM;
	else if (strcmp(line, "stats") == 0)
		cmd->kind = RT_PROTO_STATS;
	else if (strncmp(line, gc_rounds, sizeof(gc_rounds) - 1) == 0 &&
	         rt_parse_u64(line + sizeof(gc_rounds) - 1, RT_PROTO_GC_ROUNDS_MAX, &cmd->arg) ==
	             RT_PARSE_OK)
		cmd->kind = RT_PROTO_GC_ROUNDS;
}

void
rt_proto_feed(struct rt_proto *proto, const char *bytes, size_t n, rt_proto_fn fn, void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		char c = bytes[i];
		if (c != '\n') {
			if (proto->len < RT_PROTO_LINE_MAX)
				proto->line[proto->len++] = c;
			else
				proto->oversized = 1;
			continue;
		}
		struct rt_proto_cmd cmd;
		proto->line[proto->len] = '\0';
		if (proto->oversized) {
			cmd.kind = RT_PROTO_OVERSIZED;
			cmd.arg = 0;
			cmd.line = proto->line;
		} else {
			rt_proto_parse_line(proto->line, proto->len, &cmd);
		}
		fn(ctx, &cmd);
		rt_proto_init(proto);
	}
}

const char *
rt_proto_kind_name(enum rt_proto_kind kind)
{
	switch (kind) {
	case RT_PROTO_ROUND:
		return "round";
	case RT_PROTO_TRIM:
		return "trim";
	case RT_PROTO_GC_ROUNDS:
		return "gc-rounds";
	case RT_PROTO_STATS:
		return "stats";
	case RT_PROTO_EMPTY:
		return "empty";
	case RT_PROTO_UNKNOWN:
		return "unknown";
	case RT_PROTO_OVERSIZED:
		return "oversized";
	}
	return "unknown";
}
