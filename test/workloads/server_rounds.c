/* server_rounds: a federated server's round in the order NVFlare's server job has it, for the
 * server role's detector (policy/rt_detect_server). Each round the clients train (the server
 * waits, a heartbeat every second), the first client's update arrives (received in 4 KiB pieces
 * and kept, the model sent last round freed), the second's comes with the aggregation (a new
 * model in 4 KiB pieces, the updates and the old model freed: many small objects), the round
 * ends, and after --pause the next model goes out to each client (serialised in 32 KiB chunks
 * joined into one block a client, kept until the next round's first update, as NVFlare keeps its
 * sent messages). So what follows a round's end keeps memory and what begins the next gives it
 * back: the client detector's rule finds the round's end in the wrong place. Prints "start T",
 * "boundary R T" at each round's end (T: CLOCK_MONOTONIC microseconds), then "done" after the
 * last round's wait; with --wait it then waits for its stdin to close.
 *
 * usage: server_rounds [--rounds R] [--train S] [--pause S] [--mib M] [--wait] */
#include "options.h"
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIECE 4096
#define CHUNK (32 * 1024)
#define CLIENTS 2

struct server_opts {
	int rounds;
	double train;
	double pause;
	long mib;
	int wait;
};

static struct server_opts opts = {8, 2.5, 0.8, 8, 0};

/* A model as the deserialiser leaves it: many small pieces. */
struct pieces {
	unsigned char **piece;
	size_t n;
};

static void
pieces_alloc(struct pieces *p, unsigned char fill)
{
	p->n = (size_t)opts.mib * 1024 * 1024 / PIECE;
	p->piece = malloc(p->n * sizeof(*p->piece));
	for (size_t i = 0; i < p->n; i++) {
		p->piece[i] = malloc(PIECE);
		memset(p->piece[i], fill, PIECE);
	}
}

static void
pieces_free(struct pieces *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->piece[i]);
	free(p->piece);
}

/* The new model: each piece the mean of the updates' pieces. */
static void
aggregate(struct pieces *global, struct pieces updates[CLIENTS])
{
	struct pieces next;
	pieces_alloc(&next, 0);
	for (size_t i = 0; i < next.n; i++)
		for (size_t b = 0; b < PIECE; b += 64)
			next.piece[i][b] =
			    (unsigned char)((updates[0].piece[i][b] + updates[1].piece[i][b]) / 2);
	for (int c = 0; c < CLIENTS; c++)
		pieces_free(&updates[c]);
	pieces_free(global);
	*global = next;
}

/* The message for one client: chunks serialised, then joined into one block that is kept. */
static unsigned char *
serialise(const struct pieces *global)
{
	size_t bytes = global->n * PIECE, nchunks = (bytes + CHUNK - 1) / CHUNK;
	unsigned char **chunk = malloc(nchunks * sizeof(*chunk));
	for (size_t c = 0; c < nchunks; c++) {
		chunk[c] = malloc(CHUNK);
		for (size_t off = 0; off < CHUNK; off += PIECE)
			memcpy(chunk[c] + off, global->piece[(c * CHUNK + off) / PIECE], PIECE);
	}
	unsigned char *message = malloc(bytes);
	for (size_t c = 0; c < nchunks; c++) {
		memcpy(message + c * CHUNK, chunk[c], CHUNK);
		free(chunk[c]);
	}
	free(chunk);
	return message;
}

/* The clients' training: the server waits, a heartbeat (a few small objects) every second. */
static void
wait_for_clients(double seconds)
{
	uint64_t until = wl_now_us() + (uint64_t)(seconds * 1e6);
	for (;;) {
		uint64_t now = wl_now_us();
		if (now >= until)
			break;
		wl_sleep_until_us(now + 1000000 < until ? now + 1000000 : until);
		void *beat[8];
		for (int i = 0; i < 8; i++) {
			beat[i] = malloc(256);
			memset(beat[i], i, 256);
		}
		for (int i = 0; i < 8; i++)
			free(beat[i]);
	}
}

static int
usage(void)
{
	fprintf(stderr, "usage: server_rounds [--rounds R] [--train S] [--pause S] [--mib M] "
	                "[--wait]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const struct wl_option options[] = {
	    {"rounds", WL_OPT_INT, &opts.rounds},  {"train", WL_OPT_DOUBLE, &opts.train},
	    {"pause", WL_OPT_DOUBLE, &opts.pause}, {"mib", WL_OPT_LONG, &opts.mib},
	    {"wait", WL_OPT_SET, &opts.wait},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options))
		return usage();
	if (opts.rounds < 1 || opts.train < 0 || opts.pause < 0 || opts.mib < 1)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Start-up: the first model. */
	struct pieces global, updates[CLIENTS];
	pieces_alloc(&global, 1);
	unsigned char *sent[CLIENTS] = {NULL, NULL};
	wl_print_start();
	for (int r = 1; r <= opts.rounds; r++) {
		wait_for_clients(opts.train);
		pieces_alloc(&updates[0], 2);
		for (int c = 0; c < CLIENTS; c++) {
			free(sent[c]);
			sent[c] = NULL;
		}
		wl_sleep_s(opts.pause);
		pieces_alloc(&updates[1], 3);
		aggregate(&global, updates);
		wl_print_boundary(r, wl_now_us());
		wl_sleep_s(opts.pause);
		for (int c = 0; c < CLIENTS; c++)
			sent[c] = serialise(&global);
	}
	wait_for_clients(opts.train);
	puts("done");
	if (opts.wait) {
		char c;
		while (read(0, &c, 1) > 0)
			;
	}
	for (int c = 0; c < CLIENTS; c++)
		free(sent[c]);
	pieces_free(&global);
	return 0;
}
