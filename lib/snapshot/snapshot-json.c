/* snapshot-json.c: the snapshot JSON format, versions 1 and 2: the writer (the reader is
 * snapshot-json-read.c) */
#include "snapshot/snapshot-json.h"

#include <jansson.h>
#include <stddef.h>

#include "snapshot/snapshot-units.h"

/* Writing
 *
 * Objects are built with json_object_set_new_nocheck() (the keys are ours, and ASCII): it and
 * json_array_append_new() take the reference even on failure, and return -1 for a NULL value, so
 * an allocation failure anywhere makes the element NULL.
 *
 * A compact document is not built whole: a 10,000-task snapshot is some 1.5 million jansson
 * values, and allocating and freeing them cost more than the rest of the export together. The
 * head (every field but the three arrays) is one small document, and each element of the arrays
 * is built, dumped and freed in turn, into one buffer; only the commas and brackets that join
 * them are written here, exactly as jansson writes them with JSON_COMPACT. So are the filters'
 * programs, arrays of small non-negative integers that need no encoding: as jansson values
 * (five a BPF instruction) they took 80% of the export. Everything with a string in it goes
 * through jansson. The pretty form is for people and small: it is built whole and dumped with
 * JSON_INDENT. tests/test-snapshot.c checks that the two forms read back the same. */
static json_t *json_uint(uint64_t v) {
        return json_integer((json_int_t) v);
}

static json_t *json_id_or_none(uint64_t id) {
        return id ? json_uint(id) : json_null();
}

/* What the kernel reports need not be UTF-8; JSON strings must be. */
static json_t *json_text(const char *s) {
        if (!s)
                return json_null();
        if (snapshot_utf8_valid(s))
                return json_string(s);
        _cleanup_free_ char *clean = snapshot_utf8_sanitize(s);
        return clean ? json_string(clean) : NULL;
}

/* Our own ASCII strings (digests, enum names). */
static json_t *json_ascii(const char *s) {
        return s ? json_string_nocheck(s) : NULL;
}

/* Set key to v (taken) in o; false when either is NULL or out of memory. */
static bool set(json_t *o, const char *key, json_t *v) {
        return json_object_set_new_nocheck(o, key, v) == 0;
}

static bool append(json_t *a, json_t *v) {
        return json_array_append_new(a, v) == 0;
}

/* o, or NULL (and o freed) when any of the sets failed. */
static json_t *object_or_null(json_t *o, bool ok) {
        if (ok)
                return o;
        json_decref(o);
        return NULL;
}

static json_t *insn_to_json(const struct sock_filter *x) {
        json_t *a = json_array();
        bool ok = append(a, json_integer(x->code)) && append(a, json_integer(x->jt)) &&
                  append(a, json_integer(x->jf)) && append(a, json_integer((json_int_t) x->k));
        return object_or_null(a, ok);
}

static json_t *program_to_json(const Filter *flt) {
        json_t *a = json_array();
        bool ok = a;
        for (size_t i = 0; ok && i < flt->len; i++)
                ok = append(a, insn_to_json(&flt->insns[i]));
        return object_or_null(a, ok);
}

static json_t *filter_to_json(const Filter *flt) {
        char digest[PROG_DIGEST_STRING_MAX];
        json_t *o = json_object();
        bool ok = set(o, "id", json_uint(flt->id)) && set(o, "parent", json_id_or_none(flt->parent_id)) &&
                  set(o, "length", json_integer((json_int_t) flt->len)) && set(o, "program", program_to_json(flt)) &&
                  set(o, "digest", json_ascii(prog_digest_to_string(flt->digest, digest))) &&
                  set(o, "log", json_boolean(flt->log)) &&
                  set(o, "wait_killable_recv", json_boolean(flt->wait_killable_recv)) &&
                  set(o, "listener", json_id_or_none(flt->listener_id)) &&
                  set(o, "identity", json_ascii(identity_kind_to_string(flt->identity)));
        return object_or_null(o, ok);
}

static json_t *argv_to_json(char * const *argv) {
        json_t *a = json_array();
        bool ok = a;
        for (size_t i = 0; ok && argv && argv[i]; i++)
                ok = append(a, json_text(argv[i]));
        return object_or_null(a, ok);
}

/* A thread's own no_new_privs is written only where it differs from its process's. */
static json_t *thread_to_json(const Process *p, const Task *t) {
        json_t *o = json_object();
        bool ok = set(o, "tid", json_integer(t->tid)) && set(o, "mode", json_ascii(task_mode_to_string(t->mode))) &&
                  set(o, "filter", json_id_or_none(t->filter_id));
        if (ok && task_no_new_privs_differs(p, t))
                ok = set(o, "no_new_privs", json_boolean(task_no_new_privs(p, t)));
        return object_or_null(o, ok);
}

static json_t *threads_to_json(const Process *p) {
        json_t *a = json_array();
        bool ok = a;
        for (size_t i = 0; ok && i < p->n_threads; i++)
                ok = append(a, thread_to_json(p, &p->threads[i]));
        return object_or_null(a, ok);
}

/* {"mode": ..., "filters": N} of a leader that exited while its threads live on. */
static json_t *exited_leader_to_json(const Task *t) {
        json_t *o = json_object();
        bool ok = set(o, "mode", json_ascii(task_mode_to_string(t->mode))) && set(o, "filters", json_integer(t->filter_count));
        return object_or_null(o, ok);
}

/* {"unit": ..., "user_unit": ..., "machine": ...} (version 2), each a name or null. */
static json_t *units_to_json(const Process *p) {
        json_t *o = json_object();
        bool ok = set(o, "unit", json_text(p->unit)) && set(o, "user_unit", json_text(p->user_unit)) &&
                  set(o, "machine", json_text(p->machine));
        return object_or_null(o, ok);
}

static json_t *process_to_json(const Process *p) {
        json_t *o = json_object();
        bool ok = set(o, "pid", json_integer(p->pid)) && set(o, "ppid", json_integer(p->ppid)) &&
                  set(o, "start_time", json_uint(p->start_time)) && set(o, "comm", json_text(p->comm)) &&
                  set(o, "exe", json_text(p->exe)) && set(o, "argv", argv_to_json(p->argv)) &&
                  set(o, "uid", json_integer((json_int_t) p->uid)) && set(o, "gid", json_integer((json_int_t) p->gid)) &&
                  set(o, "no_new_privs", json_boolean(p->no_new_privs)) && set(o, "threads", threads_to_json(p));
        if (ok && p->has_exited_leader)
                ok = set(o, "exited_leader", exited_leader_to_json(&p->exited_leader));
        if (ok && process_has_units(p))
                ok = set(o, "units", units_to_json(p));
        return object_or_null(o, ok);
}

static json_t *holder_to_json(const ListenerHolder *h) {
        json_t *o = json_object();
        bool ok = set(o, "pid", json_integer(h->pid)) && set(o, "fd", json_integer(h->fd));
        return object_or_null(o, ok);
}

static json_t *listener_to_json(const Listener *l) {
        json_t *holders = json_array(), *o = json_object();
        bool ok = holders;
        for (size_t i = 0; ok && i < l->n_holders; i++)
                ok = append(holders, holder_to_json(&l->holders[i]));
        if (!ok)
                json_decref(TAKE_PTR(holders));
        ok = set(o, "id", json_uint(l->id)) && set(o, "filter", json_uint(l->filter_id)) && set(o, "holders", holders);
        return object_or_null(o, ok);
}

static json_t *snapshot_info_to_json(const SnapshotInfo *i) {
        json_t *o = json_object();
        bool ok = set(o, "name", json_text(i->name)) && set(o, "taken_by_uid", json_integer((json_int_t) i->taken_by_uid)) &&
                  set(o, "consistency", json_ascii(snapshot_consistency_to_string(i->consistency)));
        return object_or_null(o, ok);
}

static json_t *host_to_json(const HostInfo *h) {
        json_t *o = json_object();
        bool ok = set(o, "kernel", json_text(h->kernel)) && set(o, "arch", json_text(h->arch)) &&
                  set(o, "hostname", json_text(h->hostname));
        return object_or_null(o, ok);
}

static json_t *source_to_json(const Forest *f) {
        json_t *o = json_object();
        bool ok = set(o, "backend", json_text(f->backend)) &&
                  set(o, "identity", json_ascii(identity_kind_to_string(f->identity)));
        return object_or_null(o, ok);
}

#define ARRAY_OF(items, n, to_json)                                             \
        ({                                                                      \
                json_t *_a = json_array();                                      \
                bool _ok = _a;                                                  \
                for (size_t _i = 0; _ok && _i < (n); _i++)                      \
                        _ok = append(_a, to_json((items)[_i]));                 \
                object_or_null(_a, _ok);                                        \
        })

/* Every field before the arrays, in the order of schema/snapshot-v1.md. */
static json_t *head_to_json(const Forest *f) {
        char created[SNAPSHOT_TIME_MAX];
        if (snapshot_format_time(f->created_at_usec, created, sizeof(created)) < 0)
                return NULL;
        json_t *o = json_object();
        bool ok = set(o, "format", json_ascii(SNAPSHOT_FORMAT_NAME)) &&
                  set(o, "version", json_integer(snapshot_format_version_of(f))) && set(o, "created_at", json_ascii(created)) &&
                  set(o, "snapshot", snapshot_info_to_json(&f->snapshot)) && set(o, "host", host_to_json(&f->host)) &&
                  set(o, "source", source_to_json(f)) && set(o, "root", json_integer(f->root));
        return object_or_null(o, ok);
}

static json_t *snapshot_document_json(const Forest *f) {
        json_t *o = head_to_json(f);
        bool ok = set(o, "filters", ARRAY_OF(f->filters, f->n_filters, filter_to_json)) &&
                  set(o, "processes", ARRAY_OF(f->processes, f->n_processes, process_to_json)) &&
                  set(o, "listeners", ARRAY_OF(f->listeners, f->n_listeners, listener_to_json));
        return object_or_null(o, ok);
}

/* A growing NUL-terminated buffer that json_dump_callback() appends to. */
typedef struct JsonBuffer {
        char *data;
        size_t size, allocated;
} JsonBuffer;

static int buffer_append(const char *s, size_t n, void *userdata) {
        JsonBuffer *b = userdata;
        if (b->size + n + 2 > b->allocated) { /* room for a final newline and the NUL */
                size_t want = b->allocated * 2 > b->size + n + 2 ? b->allocated * 2 : b->size + n + 2;
                char *p = realloc(b->data, want);
                if (!p)
                        return -1;
                b->data = p;
                b->allocated = want;
        }
        memcpy(b->data + b->size, s, n);
        b->size += n;
        b->data[b->size] = 0;
        return 0;
}

#define DUMP_FLAGS (JSON_COMPACT | JSON_ENSURE_ASCII)

/* Dump v (taken) compactly into b. */
static int buffer_dump(JsonBuffer *b, json_t *v) {
        if (!v)
                return -ENOMEM;
        int r = json_dump_callback(v, buffer_append, b, DUMP_FLAGS);
        json_decref(v);
        return r < 0 ? -ENOMEM : 0;
}

static int buffer_puts(JsonBuffer *b, const char *s) {
        return buffer_append(s, strlen(s), b) < 0 ? -ENOMEM : 0;
}

#define DUMP_ARRAY(b, key, items, n, to_json)                                                   \
        ({                                                                                      \
                int _r = buffer_puts((b), ",\"" key "\":[");                                    \
                for (size_t _i = 0; _r >= 0 && _i < (n); _i++)                                  \
                        if ((_r = _i > 0 ? buffer_puts((b), ",") : 0) >= 0)                     \
                                _r = buffer_dump((b), to_json((items)[_i]));                    \
                _r >= 0 ? buffer_puts((b), "]") : _r;                                           \
        })

/* The decimal digits of v, as jansson writes an integer ("%lld"). */
static size_t format_uint(uint32_t v, char *out) {
        char tmp[10];
        size_t n = 0;
        do
                tmp[n++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        for (size_t i = 0; i < n; i++)
                out[i] = tmp[n - 1 - i];
        return n;
}

/* [[code,jt,jf,k],...]: 1,000,000 integers in a 10,000-task snapshot with 50-instruction
 * filters. */
static int buffer_program(JsonBuffer *b, const Filter *flt) {
        char line[4 * 11 + 8];
        if (buffer_puts(b, "[") < 0)
                return -ENOMEM;
        for (size_t i = 0; i < flt->len; i++) {
                const struct sock_filter *x = &flt->insns[i];
                size_t n = 0;
                if (i > 0)
                        line[n++] = ',';
                line[n++] = '[';
                n += format_uint(x->code, line + n);
                line[n++] = ',';
                n += format_uint(x->jt, line + n);
                line[n++] = ',';
                n += format_uint(x->jf, line + n);
                line[n++] = ',';
                n += format_uint(x->k, line + n);
                line[n++] = ']';
                if (buffer_append(line, n, b) < 0)
                        return -ENOMEM;
        }
        return buffer_puts(b, "]");
}

/* A filter as filter_to_json() has it: the fields before the program and after it are two small
 * objects, joined around it. */
static int buffer_filter(JsonBuffer *b, const Filter *flt) {
        char digest[PROG_DIGEST_STRING_MAX];
        json_t *before = json_object(), *after = json_object();
        bool ok = set(before, "id", json_uint(flt->id)) && set(before, "parent", json_id_or_none(flt->parent_id)) &&
                  set(before, "length", json_integer((json_int_t) flt->len));
        before = object_or_null(before, ok);
        ok = set(after, "digest", json_ascii(prog_digest_to_string(flt->digest, digest))) &&
             set(after, "log", json_boolean(flt->log)) &&
             set(after, "wait_killable_recv", json_boolean(flt->wait_killable_recv)) &&
             set(after, "listener", json_id_or_none(flt->listener_id)) &&
             set(after, "identity", json_ascii(identity_kind_to_string(flt->identity)));
        after = object_or_null(after, ok);
        if (!before || !after) {
                json_decref(before);
                json_decref(after);
                return -ENOMEM;
        }
        int r = buffer_dump(b, before); /* {"id":1,"parent":null,"length":3} */
        if (r < 0) {
                json_decref(after);
                return r;
        }
        b->size--; /* its } */
        if ((r = buffer_puts(b, ",\"program\":")) < 0 || (r = buffer_program(b, flt)) < 0 ||
            (r = buffer_puts(b, ",")) < 0) {
                json_decref(after);
                return r;
        }
        size_t brace = b->size;
        if ((r = buffer_dump(b, after)) < 0) /* {"digest":...} */
                return r;
        memmove(b->data + brace, b->data + brace + 1, b->size - brace); /* its {, and the NUL */
        b->size--;
        return 0;
}

#define DUMP_FILTERS(b, items, n)                                                               \
        ({                                                                                      \
                int _r = buffer_puts((b), ",\"filters\":[");                                    \
                for (size_t _i = 0; _r >= 0 && _i < (n); _i++)                                  \
                        if ((_r = _i > 0 ? buffer_puts((b), ",") : 0) >= 0)                     \
                                _r = buffer_filter((b), (items)[_i]);                           \
                _r >= 0 ? buffer_puts((b), "]") : _r;                                           \
        })

static int format_compact(const Forest *f, JsonBuffer *b) {
        int r;

        /* "{...,"root":N}" without its closing brace: the head always has fields. */
        if ((r = buffer_dump(b, head_to_json(f))) < 0)
                return r;
        if (b->size < 2 || b->data[b->size - 1] != '}')
                return -EINVAL;
        b->size--;
        if ((r = DUMP_FILTERS(b, f->filters, f->n_filters)) < 0 ||
            (r = DUMP_ARRAY(b, "processes", f->processes, f->n_processes, process_to_json)) < 0 ||
            (r = DUMP_ARRAY(b, "listeners", f->listeners, f->n_listeners, listener_to_json)) < 0)
                return r;
        return buffer_puts(b, "}");
}

int snapshot_json_format_buffer(const Forest *f, SnapshotJsonFlags flags, char **ret, size_t *ret_size) {
        _cleanup_free_ char *data = NULL;
        int r;

        if (!f->linked)
                return -EINVAL;
        if (flags & SNAPSHOT_JSON_PRETTY) {
                _cleanup_(json_decrefp) json_t *doc = snapshot_document_json(f);
                if (!doc || !(data = json_dumps(doc, JSON_INDENT(2) | JSON_ENSURE_ASCII)))
                        return -ENOMEM;
                size_t n = strlen(data);
                char *p = realloc(data, n + 2); /* the room for a newline */
                if (!p)
                        return -ENOMEM;
                data = NULL;
                *ret_size = n;
                *ret = p;
                return 0;
        }
        /* Some 600 bytes a thread with 50-instruction filters: mostly one realloc() at most. */
        JsonBuffer b = { .allocated = 4096 + (f->n_filters + f->n_processes) * 512 };
        b.data = malloc(b.allocated);
        if (!b.data)
                return -ENOMEM;
        r = format_compact(f, &b);
        data = b.data;
        if (r < 0)
                return r;
        *ret_size = b.size;
        *ret = TAKE_PTR(data);
        return 0;
}

int snapshot_json_format(const Forest *f, SnapshotJsonFlags flags, char **ret) {
        size_t size;
        return snapshot_json_format_buffer(f, flags, ret, &size);
}

int snapshot_json_write(const Forest *f, FILE *out, SnapshotJsonFlags flags) {
        _cleanup_free_ char *s = NULL;
        size_t size;
        int r = snapshot_json_format_buffer(f, flags, &s, &size);
        if (r < 0)
                return r;
        if (fwrite(s, 1, size, out) != size || fputc('\n', out) < 0 || fflush(out) != 0)
                return stdio_errno();
        return 0;
}
