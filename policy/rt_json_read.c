#include "rt_json_read.h"

#include <stdbool.h>
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
