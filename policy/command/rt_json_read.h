/* rt_json_read: a whole JSON object and its typed fields read with json-c, for the command's
 * readers of the library's formats and of NVFlare's files. Kept out of the library. */
#ifndef RT_JSON_READ_H
#define RT_JSON_READ_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The object that text holds, blanks aside, or NULL when it holds anything else (another type,
 * trailing text, a cut object). The caller puts it. */
json_object *rt_json_read_object(const char *text);

/* A field of obj, false when it is missing, of another type or out of range. */
bool rt_json_u64(json_object *obj, const char *key, uint64_t *out);
bool rt_json_i64(json_object *obj, const char *key, int64_t *out);
/* A string that fits in size bytes, its terminator included. */
bool rt_json_str(json_object *obj, const char *key, char *out, size_t size);
/* "SECONDS.MICROS" as the library writes a time (a double would lose the microseconds), or
 * whole seconds, in microseconds. */
bool rt_json_unix_us(json_object *obj, const char *key, int64_t *out);

#endif
