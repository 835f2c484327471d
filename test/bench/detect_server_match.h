/* detect_server_match: replaying a trace through policy/rt_detect_server (the server role's
 * detector) and scoring it by detect_match's rule, for its unit tests and detect_eval --server.
 * Owns only the replay: the truth, the inputs and the matching are detect_match's. */
#ifndef DETECT_SERVER_MATCH_H
#define DETECT_SERVER_MATCH_H

#include "detect_match.h"
#include "rt_detect_server.h"

/* As dm_replay, with the server's detector (which never asks for the live heap). */
static inline void
dm_server_replay(const struct dm_trace *trace, const struct dm_truth *truth,
                 const struct rt_detect_server_params *params, unsigned inputs, uint64_t every_us,
                 struct dm_result *res)
{
	struct rt_detect_server d;
	rt_detect_server_init(&d, params);
	memset(res, 0, sizeof(*res));
	res->detections = calloc(trace->n + 1, sizeof(*res->detections));
	uint64_t last_fed = 0;
	for (size_t i = 0; i < trace->n; i++) {
		struct rt_reading r = trace->readings[i];
		if (every_us && last_fed && r.t_us - last_fed < every_us && i + 1 < trace->n)
			continue;
		last_fed = r.t_us;
		dm_keep_inputs(&r, inputs, false);
		if (rt_detect_server_feed(&d, &r) == RT_DETECT_BOUNDARY) {
			struct dm_detection *det = &res->detections[res->ndetections++];
			det->t_us = r.t_us;
			det->boundary_us = d.boundary_us;
			det->basis = RT_DETECT_BY_COUNTS;
			det->confidence_permille = d.confidence_permille;
		}
	}
	dm_score(truth, trace->n ? trace->readings[trace->n - 1].t_us : 0, res);
}

#endif
