/* snapshot-json.c: writes the snapshot JSON format, version 1 */
#include "snapshot-json.h"

#include <jansson.h>
#include <time.h>


/* json_object_set_new() and json_array_append_new() take the reference even on failure; an
 * allocation failure anywhere makes the whole document NULL at the end. */
static json_t *json_uint(uint64_t v) {
        return json_integer((json_int_t) v);
}

static json_t *json_id_or_null(uint64_t id) {
        return id ? json_uint(id) : json_null();
}

static json_t *json_string_or_null(const char *s) {
        return s ? json_string(s) : json_null();
}

static int format_rfc3339(uint64_t usec, char *buf, size_t len) {
        time_t sec = (time_t) (usec / 1000000);
        struct tm tm;
        if (!gmtime_r(&sec, &tm))
                return -EINVAL;
        size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
        if (n == 0 || (size_t) snprintf(buf + n, len - n, ".%06uZ", (unsigned) (usec % 1000000)) >= len - n)
                return -EINVAL;
        return 0;
}

static json_t *program_to_json(const Filter *flt) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < flt->len; i++) {
                const struct sock_filter *x = &flt->insns[i];
                json_array_append_new(a, json_pack("[iiiI]", x->code, x->jt, x->jf, (json_int_t) x->k));
        }
        return a;
}

static json_t *filter_to_json(const Filter *flt) {
        char digest[PROG_DIGEST_STRING_MAX];
        return json_pack("{s:o, s:o, s:I, s:o, s:s, s:b, s:b, s:o, s:s}",
                         "id", json_uint(flt->id),
                         "parent", json_id_or_null(flt->parent_id),
                         "length", (json_int_t) flt->len,
                         "program", program_to_json(flt),
                         "digest", prog_digest_to_string(flt->digest, digest),
                         "log", flt->log,
                         "wait_killable_recv", flt->wait_killable_recv,
                         "listener", json_id_or_null(flt->listener_id),
                         "identity", identity_kind_to_string(flt->identity));
}

static json_t *argv_to_json(char * const *argv) {
        json_t *a = json_array();
        for (size_t i = 0; a && argv && argv[i]; i++)
                json_array_append_new(a, json_string(argv[i]));
        return a;
}

static json_t *thread_to_json(const Task *t) {
        return json_pack("{s:i, s:s, s:o}",
                         "tid", (int) t->tid,
                         "mode", task_mode_to_string(t->mode),
                         "filter", json_id_or_null(t->filter_id));
}

static json_t *process_to_json(const Process *p) {
        json_t *threads = json_array();
        for (size_t i = 0; threads && i < p->n_threads; i++)
                json_array_append_new(threads, thread_to_json(&p->threads[i]));
        return json_pack("{s:i, s:i, s:o, s:s, s:o, s:o, s:I, s:I, s:b, s:o}",
                         "pid", (int) p->pid,
                         "ppid", (int) p->ppid,
                         "start_time", json_uint(p->start_time),
                         "comm", p->comm,
                         "exe", json_string_or_null(p->exe),
                         "argv", argv_to_json(p->argv),
                         "uid", (json_int_t) p->uid,
                         "gid", (json_int_t) p->gid,
                         "no_new_privs", p->no_new_privs,
                         "threads", threads);
}

static json_t *listener_to_json(const Listener *l) {
        json_t *holders = json_array();
        for (size_t i = 0; holders && i < l->n_holders; i++)
                json_array_append_new(holders, json_pack("{s:i, s:i}", "pid", (int) l->holders[i].pid,
                                                         "fd", l->holders[i].fd));
        return json_pack("{s:o, s:o, s:o}", "id", json_uint(l->id), "filter", json_uint(l->filter_id),
                         "holders", holders);
}

#define ARRAY_OF(items, n, to_json)                                             \
        ({                                                                      \
                json_t *_a = json_array();                                      \
                for (size_t _i = 0; _a && _i < (n); _i++)                       \
                        json_array_append_new(_a, to_json((items)[_i]));        \
                _a;                                                             \
        })

static json_t *forest_to_json(const Forest *f) {
        char created[64];
        if (format_rfc3339(f->created_at_usec, created, sizeof(created)) < 0)
                return NULL;
        return json_pack("{s:s, s:i, s:s, s:{s:s?, s:s?, s:s?}, s:{s:s?, s:s}, s:i, s:o, s:o, s:o}",
                         "format", SNAPSHOT_FORMAT_NAME,
                         "version", SNAPSHOT_FORMAT_VERSION,
                         "created_at", created,
                         "host", "kernel", f->host.kernel, "arch", f->host.arch, "hostname", f->host.hostname,
                         "source", "backend", f->backend, "identity", identity_kind_to_string(f->identity),
                         "root", (int) f->root,
                         "filters", ARRAY_OF(f->filters, f->n_filters, filter_to_json),
                         "processes", ARRAY_OF(f->processes, f->n_processes, process_to_json),
                         "listeners", ARRAY_OF(f->listeners, f->n_listeners, listener_to_json));
}

int snapshot_json_format(const Forest *f, SnapshotJsonFlags flags, char **ret) {
        if (!f->linked)
                return -EINVAL;
        _cleanup_(json_decrefp) json_t *doc = forest_to_json(f);
        if (!doc)
                return -ENOMEM;
        size_t jflags = (flags & SNAPSHOT_JSON_PRETTY) ? JSON_INDENT(2) : JSON_COMPACT;
        char *s = json_dumps(doc, jflags | JSON_ENSURE_ASCII);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int snapshot_json_write(const Forest *f, FILE *out, SnapshotJsonFlags flags) {
        _cleanup_free_ char *s = NULL;
        int r = snapshot_json_format(f, flags, &s);
        if (r < 0)
                return r;
        if (fputs(s, out) < 0 || fputc('\n', out) < 0 || fflush(out) != 0)
                return -EIO;
        return 0;
}
