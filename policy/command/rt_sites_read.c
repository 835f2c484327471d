/* The reader of the sites file's lines, for the command and the tests: json-c, strict about
 * every field its writer puts. Kept out of the library, which only writes. */
#include "rt_sites.h"

#include "rt_json_read.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool
rt_sites_int(json_object *obj, const char *key, int64_t min, int64_t max, int64_t *out)
{
	return rt_json_i64(obj, key, out) && *out >= min && *out <= max;
}

/* "0x..." as the writer puts addresses and offsets. */
static bool
rt_sites_hex(json_object *obj, const char *key, uint64_t *out)
{
	char text[32], *end;
	if (!rt_json_str(obj, key, text, sizeof(text)) || strncmp(text, "0x", 2) || !text[2] ||
	    strspn(text + 2, "0123456789abcdef") != strlen(text + 2))
		return false;
	errno = 0;
	*out = strtoull(text + 2, &end, 16);
	return errno == 0 && *end == '\0';
}

static json_object *
rt_sites_array(json_object *obj, const char *key, size_t max)
{
	json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_array) ||
	    json_object_array_length(v) > max)
		return NULL;
	return v;
}

static bool
rt_sites_read_site(json_object *obj, struct rt_sites_site_read *out)
{
	struct rt_sites_site *s = &out->s;
	int64_t pid, site;
	if (!rt_sites_int(obj, "pid", 0, INT32_MAX, &pid) ||
	    !rt_sites_int(obj, "site", 0, UINT32_MAX, &site))
		return false;
	s->pid = (int)pid;
	s->site = (uint32_t)site;
	json_object *frames = rt_sites_array(obj, "frames", RT_SITES_FRAMES_MAX);
	json_object *python = rt_sites_array(obj, "python", RT_SITES_PY_MAX);
	if (!frames || !python)
		return false;
	s->nframes = (unsigned)json_object_array_length(frames);
	for (unsigned i = 0; i < s->nframes; i++) {
		json_object *f = json_object_array_get_idx(frames, i);
		struct rt_sites_frame *fr = &s->frames[i];
		fr->module = out->modules[i];
		if (!json_object_is_type(f, json_type_object) ||
		    !rt_sites_hex(f, "addr", &fr->addr) ||
		    !rt_json_str(f, "module", out->modules[i], sizeof(out->modules[i])) ||
		    !rt_sites_hex(f, "offset", &fr->offset))
			return false;
	}
	s->npy = (unsigned)json_object_array_length(python);
	for (unsigned i = 0; i < s->npy; i++) {
		json_object *f = json_object_array_get_idx(python, i);
		struct rt_sites_pyframe *py = &s->py[i];
		int64_t line;
		py->function = out->functions[i];
		py->file = out->files[i];
		if (!json_object_is_type(f, json_type_object) ||
		    !rt_json_str(f, "function", out->functions[i], sizeof(out->functions[i])) ||
		    !rt_json_str(f, "file", out->files[i], sizeof(out->files[i])) ||
		    !rt_sites_int(f, "line", 0, UINT32_MAX, &line))
			return false;
		py->line = (uint32_t)line;
	}
	return true;
}

static bool
rt_sites_read_round(json_object *obj, struct rt_sites_round *r)
{
	int64_t pid;
	if (!rt_sites_int(obj, "pid", 0, INT32_MAX, &pid) ||
	    !rt_json_u64(obj, "round", &r->round) || !rt_json_u64(obj, "since", &r->since) ||
	    !rt_json_unix_us(obj, "unix_time", &r->unix_time_us) ||
	    !rt_json_u64(obj, "sample_bytes", &r->sample_bytes) ||
	    !rt_json_u64(obj, "samples", &r->samples) ||
	    !rt_json_u64(obj, "live_bytes", &r->live_bytes) ||
	    !rt_json_u64(obj, "dropped", &r->dropped))
		return false;
	r->pid = (int)pid;
	json_object *grew = rt_sites_array(obj, "grew", RT_SITES_TOP);
	if (!grew)
		return false;
	r->ngrew = json_object_array_length(grew);
	for (size_t i = 0; i < r->ngrew; i++) {
		json_object *g = json_object_array_get_idx(grew, i);
		struct rt_sites_change *c = &r->grew[i];
		int64_t site;
		uint64_t live, delta, sd;
		if (!json_object_is_type(g, json_type_object) ||
		    !rt_sites_int(g, "site", 0, UINT32_MAX, &site) ||
		    !rt_json_u64(g, "live_bytes", &live) ||
		    !rt_json_u64(g, "delta_bytes", &delta) || !rt_json_u64(g, "sd_bytes", &sd))
			return false;
		c->site = (uint32_t)site;
		c->live = (double)live;
		c->delta = (double)delta;
		c->var = (double)sd * (double)sd;
	}
	return true;
}

enum rt_sites_line
rt_sites_read_line(const char *line, struct rt_sites_read *out)
{
	memset(out, 0, sizeof(*out));
	json_object *obj = rt_json_read_object(line);
	if (!obj)
		return out->kind = RT_SITES_LINE_BAD;
	json_object *unused;
	if (json_object_object_get_ex(obj, "frames", &unused))
		out->kind =
		    rt_sites_read_site(obj, &out->site) ? RT_SITES_LINE_SITE : RT_SITES_LINE_BAD;
	else if (json_object_object_get_ex(obj, "grew", &unused))
		out->kind =
		    rt_sites_read_round(obj, &out->round) ? RT_SITES_LINE_ROUND : RT_SITES_LINE_BAD;
	else
		out->kind = RT_SITES_LINE_BAD;
	json_object_put(obj);
	return out->kind;
}
