/* rt_json_read: a whole JSON object read with json-c, for the command's readers of the
 * library's formats and of NVFlare's files. Kept out of the library, which never reads JSON. */
#ifndef RT_JSON_READ_H
#define RT_JSON_READ_H

#include <json-c/json.h>

/* The object that text holds, blanks aside, or NULL when it holds anything else (another type,
 * trailing text, a cut object). The caller puts it. */
json_object *rt_json_read_object(const char *text);

#endif
