#include "rt_json_read.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

json_object *
rt_json_read_object(const char *text)
{
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return NULL;
	size_t len = strlen(text);
	json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
	size_t used = (size_t)json_tokener_get_parse_end(tok);
	bool whole = obj && json_tokener_get_error(tok) == json_tokener_success &&
	             strspn(text + used, " \t\r\n") == len - used &&
	             json_object_is_type(obj, json_type_object);
	json_tokener_free(tok);
	if (!whole) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

bool
rt_json_u64(json_object *obj, const char *key, uint64_t *out)
{
	json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	errno = 0;
	*out = json_object_get_uint64(v);
	return errno == 0 && (json_object_get_int64(v) >= 0 || *out > INT64_MAX);
}

bool
rt_json_i64(json_object *obj, const char *key, int64_t *out)
{
	json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_int64(v);
	return true;
}

bool
rt_json_str(json_object *obj, const char *key, char *out, size_t size)
{
	json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return false;
	int n = snprintf(out, size, "%s", json_object_get_string(v));
	return n >= 0 && (size_t)n < size;
}

bool
rt_json_unix_us(json_object *obj, const char *key, int64_t *out)
{
	json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return false;
	const char *text = json_object_get_string(v);
	long long sec = 0, micro = 0;
	int used = 0;
	const char *dot = strchr(text, '.');
	if (dot && strlen(dot + 1) == 6 && sscanf(text, "%lld.%6lld%n", &sec, &micro, &used) == 2 &&
	    text[used] == '\0') {
		*out = sec * 1000000 + micro;
		return true;
	}
	if (!dot && sscanf(text, "%lld%n", &sec, &used) == 1 && text[used] == '\0') {
		*out = sec * 1000000;
		return true;
	}
	return false;
}
