/* tests-json.c: JSON accessors that fail the test on a missing field or a wrong type */
#include "tests-json.h"

json_t *jget(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        if (!v) {
                g_autofree char *dump = json_dumps(o, JSON_COMPACT);
                g_error("no field '%s' in %s", key, dump);
        }
        return v;
}

json_int_t jint(json_t *o, const char *key) {
        json_t *v = jget(o, key);
        g_assert_true(json_is_integer(v));
        return json_integer_value(v);
}

const char *jstr(json_t *o, const char *key) {
        json_t *v = jget(o, key);
        g_assert_true(json_is_string(v));
        return json_string_value(v);
}

json_t *jarr(json_t *o, const char *key) {
        json_t *v = jget(o, key);
        g_assert_true(json_is_array(v));
        return v;
}

json_int_t jid(json_t *o, const char *key) {
        json_t *v = jget(o, key);
        if (json_is_null(v))
                return 0;
        g_assert_true(json_is_integer(v));
        g_assert_cmpint(json_integer_value(v), >, 0);
        return json_integer_value(v);
}

void tests_json_assert_keys(json_t *o, const char *const *keys) {
        size_t n = 0;
        g_assert_true(json_is_object(o));
        for (; keys[n]; n++)
                jget(o, keys[n]);
        if (json_object_size(o) != n) {
                g_autofree char *dump = json_dumps(o, JSON_COMPACT);
                g_error("expected %zu fields, got %zu: %s", n, json_object_size(o), dump);
        }
}

json_t *tests_json_parse_document(const char *out, const char *what) {
        json_error_t error;
        g_assert_true(g_str_has_suffix(out, "\n"));
        json_t *doc = json_loads(out, 0, &error);
        if (!doc)
                g_error("%s: not one JSON document (%s at %d): %s", what, error.text, error.position, out);
        g_assert_true(json_is_object(doc));
        return doc;
}
