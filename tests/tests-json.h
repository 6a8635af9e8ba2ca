/* tests-json.h: JSON accessors that fail the test on a missing field or a wrong type, for tests
 * that read the JSON output of sectreectl and sectreed */
#pragma once

#include <glib.h>
#include <jansson.h>

/* The field key of object o; fails the test (printing o) if there is none. */
json_t *jget(json_t *o, const char *key);
/* The field key of o, which must be an integer / a string / an array. */
json_int_t jint(json_t *o, const char *key);
const char *jstr(json_t *o, const char *key);
json_t *jarr(json_t *o, const char *key);
/* An id field: null (0) or a positive integer. */
json_int_t jid(json_t *o, const char *key);

/* o is an object with exactly these keys (NULL-terminated), in any order. */
void tests_json_assert_keys(json_t *o, const char *const *keys);
#define ASSERT_KEYS(o, ...) tests_json_assert_keys((o), (const char *const[]) { __VA_ARGS__, NULL })

/* out is one JSON object and a newline (jansson rejects anything after the document); what names
 * the output in the failure message. Returns the object (a new reference). */
json_t *tests_json_parse_document(const char *out, const char *what);
