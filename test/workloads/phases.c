/* phases: a training loop with two bursts a round, train then evaluate, for round detection.
 * The model and its optimizer state live for the whole run. Each round copies the model into
 * an update, trains for a random number of steps (each step's activations and gradients are
 * allocated, touched and freed), pauses briefly (a checkpoint, a log line), evaluates for a
 * random number of forward-only steps, serialises the update in chunks, drops it and prints
 * "boundary R T"; then it waits a random time for the next round, as a client waits for its
 * server. "start T" comes first (T: CLOCK_MONOTONIC microseconds).
 *
 * usage: phases [--mib M] [--act-mib A] [--train-steps MIN:MAX] [--eval-steps MIN:MAX]
 *               [--step-ms MS] [--gap MIN:MAX] [--pause MIN:MAX] [--rounds R] [--duration S]
 *               [--seed S] */
#include "options.h"
#include "workload.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAYERS 6

struct phases_opts {
	long mib;     /* model size */
	long act_mib; /* one training step's activations */
	struct wl_range train_steps, eval_steps, gap, pause;
	double step_ms;
	int rounds;
	double duration;
	uint64_t seed;
};

static struct phases_opts opts = {8, 12, {20, 40}, {8, 16}, {0.02, 0.25}, {0.8, 3.0}, 4, 20, 0, 1};

static void *
touched(size_t size)
{
	void *p = malloc(size);
	memset(p, 1, size);
	return p;
}

/* One step: blocks per layer of random sizes adding up to about `bytes`, then freed. Training
 * steps also allocate a gradient per layer, freed with the activations. */
static void
step(size_t bytes, int with_grads, size_t layer_bytes, uint64_t *rng)
{
	void *blocks[LAYERS * 16 + LAYERS];
	int n = 0;
	for (int l = 0; l < LAYERS; l++) {
		size_t left = bytes / LAYERS;
		for (int b = 0; b < 16 && left > 0; b++) {
			size_t size = 4096 + wl_next(rng) % (2 * bytes / LAYERS / 16 + 1);
			if (size > left || b == 15)
				size = left;
			blocks[n++] = touched(size);
			left -= size;
		}
		if (with_grads)
			blocks[n++] = touched(layer_bytes);
	}
	wl_sleep_s(opts.step_ms / 1000);
	for (int i = n - 1; i >= 0; i--)
		free(blocks[i]);
}

static int
usage(void)
{
	fprintf(stderr, "usage: phases [--mib M] [--act-mib A] [--train-steps MIN:MAX] "
	                "[--eval-steps MIN:MAX] [--step-ms MS] [--gap MIN:MAX] [--pause MIN:MAX] "
	                "[--rounds R] [--duration S] [--seed S]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const struct wl_option options[] = {
	    {"mib", WL_OPT_LONG, &opts.mib},
	    {"act-mib", WL_OPT_LONG, &opts.act_mib},
	    {"train-steps", WL_OPT_RANGE, &opts.train_steps},
	    {"eval-steps", WL_OPT_RANGE, &opts.eval_steps},
	    {"step-ms", WL_OPT_DOUBLE, &opts.step_ms},
	    {"gap", WL_OPT_RANGE, &opts.gap},
	    {"pause", WL_OPT_RANGE, &opts.pause},
	    {"rounds", WL_OPT_INT, &opts.rounds},
	    {"duration", WL_OPT_DOUBLE, &opts.duration},
	    {"seed", WL_OPT_U64, &opts.seed},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options))
		return usage();
	if (opts.mib < 1 || opts.act_mib < 1 || opts.step_ms < 0 || opts.rounds < 0 ||
	    opts.duration < 0)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint64_t rng = wl_seed(opts.seed);
	size_t layer_bytes = (size_t)opts.mib * 1024 * 1024 / LAYERS;
	void *model[LAYERS], *momentum[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		model[l] = touched(layer_bytes);
		momentum[l] = touched(layer_bytes);
	}
	size_t act = (size_t)opts.act_mib * 1024 * 1024;
	uint64_t started = wl_now_us();
	wl_print_start();
	wl_sleep_s(wl_uniform(&rng, opts.pause));
	for (int r = 1; opts.rounds == 0 || r <= opts.rounds; r++) {
		if (opts.duration > 0 && wl_now_us() - started >= (uint64_t)(opts.duration * 1e6))
			break;
		void *update[LAYERS];
		for (int l = 0; l < LAYERS; l++) {
			update[l] = malloc(layer_bytes);
			memcpy(update[l], model[l], layer_bytes);
		}
		int train = (int)wl_uniform(&rng, opts.train_steps);
		for (int s = 0; s < train; s++) {
			step(act, 1, layer_bytes, &rng);
			for (int l = 0; l < LAYERS; l++)
				memset(momentum[l], s, 4096);
		}
		wl_sleep_s(wl_uniform(&rng, opts.gap));
		int eval = (int)wl_uniform(&rng, opts.eval_steps);
		for (int s = 0; s < eval; s++)
			step(act / 3, 0, layer_bytes, &rng);
		/* Serialise the update for sending, then drop it. */
		for (int l = 0; l < LAYERS; l++) {
			void *wire = malloc(layer_bytes + 64);
			memcpy(wire, update[l], layer_bytes);
			free(wire);
			free(update[l]);
		}
		wl_print_boundary(r, wl_now_us());
		wl_sleep_s(wl_uniform(&rng, opts.pause));
	}
	return 0;
}
