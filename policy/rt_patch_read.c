/* The reader of NVFlare's signature.json for `roundtrim patch`, with json-c: kept out of the
 * library, which never reads it. */
#include "rt_patch.h"

#include <json-c/json.h>
#include <string.h>

enum rt_patch_signature
rt_patch_read_signature(const char *json_text, const char *file_name)
{
	if (!json_text)
		return RT_PATCH_SIGNATURE_UNREADABLE;
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return RT_PATCH_SIGNATURE_UNREADABLE;
	size_t len = strlen(json_text);
	json_object *obj = json_tokener_parse_ex(tok, json_text, (int)len);
	size_t used = (size_t)json_tokener_get_parse_end(tok);
	/* NVFlare writes one object: file and folder names to base64 signatures. */
	bool whole = obj && json_tokener_get_error(tok) == json_tokener_success &&
	             strspn(json_text + used, " \t\r\n") == len - used &&
	             json_object_is_type(obj, json_type_object);
	json_tokener_free(tok);
	enum rt_patch_signature result = RT_PATCH_SIGNATURE_UNREADABLE;
	if (whole)
		result = json_object_object_get_ex(obj, file_name, NULL) ? RT_PATCH_SIGNATURE_LISTS
		                                                         : RT_PATCH_SIGNATURE_OMITS;
	json_object_put(obj);
	return result;
}
