/* fl_server: a federated-learning server's round, the aggregation rhythm for round detection.
 * Each round, K client updates arrive at random times (each client trains for a random time
 * after the round starts). An update is received in chunks, copied into one block per layer of
 * the model, and kept; each arrival also leaves a small metrics record that the server keeps
 * for good. Once the K-th update is in, the server averages them into a new global model, frees
 * the updates and the old model, serialises the new one for broadcast in chunks and drops the
 * chunks: live heap climbs through the round and falls at its end. Prints "start T", then
 * "boundary R T" after each round's broadcast (T: CLOCK_MONOTONIC microseconds).
 *
 * usage: fl_server [--clients K] [--mib M] [--layers L] [--chunk-kib C] [--train MIN:MAX]
 *                  [--rounds R] [--duration S] [--seed S] */
#include "options.h"
#include "workload.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct server_opts {
	int clients;
	long mib;
	int layers;
	long chunk_kib;
	struct wl_range train;
	int rounds;
	double duration;
	uint64_t seed;
};

static struct server_opts opts = {5, 24, 8, 256, {0.6, 3.0}, 20, 0, 1};

struct model {
	float **layer;
	size_t *floats; /* per layer */
	int layers;
};

static void
model_alloc(struct model *m, const size_t *floats)
{
	m->layers = opts.layers;
	m->layer = malloc((size_t)opts.layers * sizeof(*m->layer));
	m->floats = malloc((size_t)opts.layers * sizeof(*m->floats));
	for (int l = 0; l < opts.layers; l++) {
		m->floats[l] = floats[l];
		m->layer[l] = malloc(floats[l] * sizeof(float));
	}
}

static void
model_free(struct model *m)
{
	for (int l = 0; l < m->layers; l++)
		free(m->layer[l]);
	free(m->layer);
	free(m->floats);
}

/* Receives one update: chunks come off the "socket" and are copied into the layers. */
static void
receive(struct model *update, const size_t *floats, uint64_t *rng)
{
	size_t chunk = (size_t)opts.chunk_kib * 1024;
	/* Message headers and small protocol objects, gone once the message is parsed. */
	void *headers[64];
	for (int i = 0; i < 64; i++) {
		headers[i] = malloc(64 + wl_next(rng) % 960);
		memset(headers[i], i, 64);
	}
	model_alloc(update, floats);
	for (int l = 0; l < update->layers; l++) {
		size_t bytes = update->floats[l] * sizeof(float);
		for (size_t off = 0; off < bytes; off += chunk) {
			size_t n = bytes - off < chunk ? bytes - off : chunk;
			unsigned char *buf = malloc(n);
			memset(buf, (int)(wl_next(rng) & 0xff), n);
			memcpy((unsigned char *)update->layer[l] + off, buf, n);
			free(buf);
		}
	}
	for (int i = 0; i < 64; i++)
		free(headers[i]);
}

static void
aggregate(struct model *global, struct model *updates, int k, const size_t *floats)
{
	struct model next;
	model_alloc(&next, floats);
	for (int l = 0; l < next.layers; l++) {
		for (size_t j = 0; j < next.floats[l]; j++) {
			float sum = 0;
			for (int c = 0; c < k; c++)
				sum += updates[c].layer[l][j];
			next.layer[l][j] = sum / (float)k;
		}
	}
	for (int c = 0; c < k; c++)
		model_free(&updates[c]);
	model_free(global);
	*global = next;
}

static void
broadcast(const struct model *global)
{
	size_t chunk = (size_t)opts.chunk_kib * 1024;
	for (int l = 0; l < global->layers; l++) {
		size_t bytes = global->floats[l] * sizeof(float);
		for (size_t off = 0; off < bytes; off += chunk) {
			size_t n = bytes - off < chunk ? bytes - off : chunk;
			unsigned char *buf = malloc(n);
			memcpy(buf, (unsigned char *)global->layer[l] + off, n);
			free(buf);
		}
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int
usage(void)
{
	fprintf(stderr, "usage: fl_server [--clients K] [--mib M] [--layers L] [--chunk-kib C] "
	                "[--train MIN:MAX] [--rounds R] [--duration S] [--seed S]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const struct wl_option options[] = {
	    {"clients", WL_OPT_INT, &opts.clients},
	    {"mib", WL_OPT_LONG, &opts.mib},
	    {"layers", WL_OPT_INT, &opts.layers},
	    {"chunk-kib", WL_OPT_LONG, &opts.chunk_kib},
	    {"train", WL_OPT_RANGE, &opts.train},
	    {"rounds", WL_OPT_INT, &opts.rounds},
	    {"duration", WL_OPT_DOUBLE, &opts.duration},
	    {"seed", WL_OPT_U64, &opts.seed},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options))
		return usage();
	if (opts.clients < 1 || opts.mib < 1 || opts.layers < 1 || opts.chunk_kib < 1 ||
	    opts.rounds < 0 || opts.duration < 0)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint64_t rng = wl_seed(opts.seed);
	/* Layer sizes: random shares of the model, as a real network's layers differ. */
	size_t *floats = malloc((size_t)opts.layers * sizeof(*floats));
	double *share = malloc((size_t)opts.layers * sizeof(*share)), total = 0;
	for (int l = 0; l < opts.layers; l++)
		total += share[l] = 0.2 + wl_unit(&rng);
	for (int l = 0; l < opts.layers; l++)
		floats[l] =
		    1 + (size_t)((double)opts.mib * 1024 * 1024 / sizeof(float) * share[l] / total);
	free(share);
	struct model global;
	model_alloc(&global, floats);
	for (int l = 0; l < global.layers; l++)
		memset(global.layer[l], 0, global.floats[l] * sizeof(float));
	struct model *updates = malloc((size_t)opts.clients * sizeof(*updates));
	double *arrive = malloc((size_t)opts.clients * sizeof(*arrive));
	/* Per-client metrics the server keeps for the whole run: its slow, honest growth. */
	size_t metrics_cap = 1024, nmetrics = 0;
	void **metrics = malloc(metrics_cap * sizeof(*metrics));

	uint64_t started = wl_now_us();
	wl_print_start();
	for (int r = 1; opts.rounds == 0 || r <= opts.rounds; r++) {
		if (opts.duration > 0 && wl_now_us() - started >= (uint64_t)(opts.duration * 1e6))
			break;
		uint64_t round_start = wl_now_us();
		for (int c = 0; c < opts.clients; c++)
			arrive[c] = wl_uniform(&rng, opts.train);
		qsort(arrive, (size_t)opts.clients, sizeof(*arrive), cmp_double);
		for (int c = 0; c < opts.clients; c++) {
			wl_sleep_until_us(round_start + (uint64_t)(arrive[c] * 1e6));
			receive(&updates[c], floats, &rng);
			if (nmetrics == metrics_cap) {
				metrics_cap *= 2;
				metrics = realloc(metrics, metrics_cap * sizeof(*metrics));
			}
			metrics[nmetrics] = malloc(256);
			memset(metrics[nmetrics++], c, 256);
		}
		aggregate(&global, updates, opts.clients, floats);
		broadcast(&global);
		wl_print_boundary(r, wl_now_us());
	}
	/* The next round's wait, so that the last boundary is followed by quiet as the others. */
	wl_sleep_s(opts.train.min);
	return 0;
}
