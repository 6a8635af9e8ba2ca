/* store-argv.c: a command line as the state database stores it in a snapshot: a JSON array of
 * strings, each sanitized to valid UTF-8 */
#include <jansson.h>
#include <stdio.h>

#include "snapshot/snapshot.h"
#include "store/store-argv.h"

/* Strings of valid UTF-8 as JSON strings, escaped as jansson's compact dump escapes them (the rows
 * stored before were written by it): '"' and '\\' with a backslash, the control characters with
 * their short escapes or as \u00XX, every other byte as it is. */
static const char json_short_escape[0x20] = {
        ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
};

static size_t json_string_size(const char *s) {
        size_t n = 2;
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                n += *c == '"' || *c == '\\' || (*c < 0x20 && json_short_escape[*c]) ? 2 : *c < 0x20 ? 6 : 1;
        return n;
}

static char *json_string_put(char *out, const char *s) {
        *out++ = '"';
        for (const unsigned char *c = (const unsigned char *) s; *c; c++) {
                if (*c == '"' || *c == '\\' || (*c < 0x20 && json_short_escape[*c])) {
                        *out++ = '\\';
                        *out++ = *c < 0x20 ? json_short_escape[*c] : (char) *c;
                } else if (*c < 0x20)
                        out += sprintf(out, "\\u%04X", *c);
                else
                        *out++ = (char) *c;
        }
        *out++ = '"';
        return out;
}

static bool strv_utf8_valid(char * const *l) {
        for (size_t i = 0; l && l[i]; i++)
                if (!snapshot_utf8_valid(l[i]))
                        return false;
        return true;
}

/* A copy of l with every string sanitized. */
static char **strv_sanitize(char * const *l) {
        size_t n = strv_length(l);
        _cleanup_strv_free_ char **copy = calloc(n + 1, sizeof(char *));
        for (size_t i = 0; copy && i < n; i++)
                if (!(copy[i] = snapshot_utf8_sanitize(l[i])))
                        return NULL;
        return TAKE_PTR(copy);
}

int store_argv_to_json(char * const *argv, char **ret) {
        _cleanup_strv_free_ char **valid = NULL;
        if (!strv_utf8_valid(argv)) {
                valid = strv_sanitize(argv);
                if (!valid)
                        return -ENOMEM;
                argv = valid;
        }
        size_t size = 3; /* [ ] NUL */
        for (size_t i = 0; argv && argv[i]; i++)
                size += json_string_size(argv[i]) + 1;
        char *text = malloc(size), *out = text;
        if (!text)
                return -ENOMEM;
        *out++ = '[';
        for (size_t i = 0; argv && argv[i]; i++) {
                if (i > 0)
                        *out++ = ',';
                out = json_string_put(out, argv[i]);
        }
        *out++ = ']';
        *out = 0;
        *ret = text;
        return 0;
}

int store_argv_from_json(Process *p, const char *text) {
        json_error_t e;
        json_t *a = text ? json_loads(text, 0, &e) : NULL;
        if (!a || !json_is_array(a)) {
                json_decref(a);
                return -EBADMSG;
        }
        size_t n = json_array_size(a);
        _cleanup_strv_free_ char **argv = calloc(n + 1, sizeof(char *));
        int r = argv ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *v = json_string_value(json_array_get(a, i));
                r = !v ? -EBADMSG : !(argv[i] = strdup(v)) ? -ENOMEM : 0;
        }
        json_decref(a);
        if (r >= 0 && n > 0)
                r = process_set_argv(p, argv);
        return r;
}
