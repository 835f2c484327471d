/* The reader of NVFlare's signature.json for `roundtrim patch`, with json-c: kept out of the
 * library, which never reads it. */
#include "rt_json_read.h"
#include "rt_patch.h"

#include <json-c/json.h>

enum rt_patch_signature
rt_patch_read_signature(const char *json_text, const char *file_name)
{
	if (!json_text)
		return RT_PATCH_SIGNATURE_UNREADABLE;
	/* NVFlare writes one object: file and folder names to base64 signatures. */
	json_object *obj = rt_json_read_object(json_text);
	enum rt_patch_signature result = RT_PATCH_SIGNATURE_UNREADABLE;
	if (obj)
		result = json_object_object_get_ex(obj, file_name, NULL) ? RT_PATCH_SIGNATURE_LISTS
		                                                         : RT_PATCH_SIGNATURE_OMITS;
	json_object_put(obj);
	return result;
}
