/* json-out.c: --json output: the records of the API as JSON values, and printing documents */
#include "json-out.h"

#include "ctl-log.h"
#include "output.h"

static JsonMode json_mode = JSON_MODE_AUTO;

static const char *const json_mode_table[_JSON_MODE_MAX] = {
        [JSON_MODE_OFF] = "off",
        [JSON_MODE_AUTO] = "auto",
        [JSON_MODE_PRETTY] = "pretty",
        [JSON_MODE_SHORT] = "short",
};

JsonMode json_mode_from_string(const char *s) {
        for (JsonMode m = 0; m < _JSON_MODE_MAX; m++)
                if (streq(json_mode_table[m], s))
                        return m;
        return _JSON_MODE_INVALID;
}

void json_output_set_mode(JsonMode m) {
        json_mode = m;
}

static int json_print(json_t *doc, size_t flags) {
        if (!doc)
                return log_oom();
        errno = 0; /* what a failed write says, below */
        if (json_dumpf(doc, stdout, flags) < 0 || fputc('\n', stdout) == EOF)
                return ctl_error_errno(stdio_errno(), "Failed to write the JSON output: %m");
        return output_flush();
}

int json_print_document(json_t *doc) {
        bool pretty = json_mode == JSON_MODE_PRETTY || (json_mode == JSON_MODE_AUTO && output_is_tty());
        return json_print(doc, pretty ? JSON_INDENT(2) : JSON_COMPACT);
}

int json_print_line(json_t *doc) {
        return json_print(doc, json_mode == JSON_MODE_PRETTY ? JSON_INDENT(2) : JSON_COMPACT);
}

json_t *json_id_or_null(uint64_t id) {
        return id ? json_integer((json_int_t) id) : json_null();
}

int json_set(json_t *o, const char *key, json_t *v) {
        return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

json_t *json_task_record(const TaskRecord *t) {
        return json_pack("{s:I, s:I, s:I, s:s, s:s, s:o, s:I, s:b}",
                         "tid", (json_int_t) t->tid, "tgid", (json_int_t) t->tgid, "ppid", (json_int_t) t->ppid,
                         "comm", t->comm, "mode", t->mode, "filter", json_id_or_null(t->head),
                         "depth", (json_int_t) t->depth, "stale", t->stale);
}

json_t *json_strv(char * const *l) {
        json_t *a = json_array();
        for (size_t i = 0; a && l && l[i]; i++)
                if (json_array_append_new(a, json_string(l[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

json_t *json_filter_record(const FilterRecord *f) {
        return json_pack("{s:I, s:o, s:I, s:s, s:I, s:o}",
                         "id", (json_int_t) f->id, "parent", json_id_or_null(f->parent),
                         "length", (json_int_t) f->length, "digest", f->digest, "tasks", (json_int_t) f->tasks,
                         "flags", json_strv(f->flags));
}

json_t *json_program(const struct sock_filter *insns, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
                json_t *x = json_pack("[i, i, i, I]", insns[i].code, insns[i].jt, insns[i].jf, (json_int_t) insns[i].k);
                if (json_array_append_new(a, x) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}
