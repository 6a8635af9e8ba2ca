/* snapshot-json-read.c: the snapshot JSON format, versions 1 and 2, read: every document treated as
 * hostile, parsed within a memory limit of its own */
#include "snapshot/snapshot-json-read.h"

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

#include "snapshot/snapshot-json-fast.h"
#include "snapshot/snapshot-json-fields.h"
#include "snapshot/snapshot-units.h"
#include "snapshot/snapshot-validate.h"

/* Reading. Every object is first checked against a table of its fields (snapshot-json-fields.h):
 * each must be present with its type (null only where allowed) and integers in range, and nothing
 * else may be there. Then the values are taken without further type checks. */

static const char *json_type_name(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        case JSON_REAL:
                return "a real number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        case JSON_NULL:
        default:
                return "null";
        }
}

static const char *const field_kind_names[] = {
        [FIELD_INTEGER] = "an integer",
        [FIELD_BOOLEAN] = "a boolean",
        [FIELD_STRING] = "a string",
        [FIELD_ARRAY] = "an array",
        [FIELD_OBJECT] = "an object",
};

static bool field_kind_matches(FieldKind kind, const json_t *v) {
        switch (kind) {
        case FIELD_INTEGER:
                return json_is_integer(v);
        case FIELD_BOOLEAN:
                return json_is_boolean(v);
        case FIELD_STRING:
                return json_is_string(v);
        case FIELD_ARRAY:
                return json_is_array(v);
        case FIELD_OBJECT:
                return json_is_object(v);
        }
        return false;
}

/* "where.name", or "name" at the top. */
#define FIELD_FMT "%s%s%s"
#define FIELD_ARGS(where, name) (where), *(where) ? "." : "", (name)

static int check_field(const char *where, const FieldSpec *spec, const json_t *v, char **error) {
        if (!v && spec->optional)
                return 0;
        if (!v)
                return snapshot_error(error, FIELD_FMT ": missing", FIELD_ARGS(where, spec->name));
        if (json_is_null(v) && spec->nullable)
                return 0;
        if (!field_kind_matches(spec->kind, v))
                return snapshot_error(error, FIELD_FMT ": expected %s%s, got %s", FIELD_ARGS(where, spec->name),
                                      field_kind_names[spec->kind], spec->nullable ? " or null" : "", json_type_name(v));
        if (spec->kind == FIELD_INTEGER && (json_integer_value(v) < spec->min || json_integer_value(v) > spec->max))
                return snapshot_error(error, FIELD_FMT ": %" JSON_INTEGER_FORMAT " is out of range %" PRId64 "..%" PRId64,
                                      FIELD_ARGS(where, spec->name), json_integer_value(v), spec->min, spec->max);
        return 0;
}

/* A key from the document, safe to print: at most 32 printable ASCII characters. */
static int check_object(const char *where, const json_t *obj, const FieldSpec *specs, size_t n, char **error) {
        const char *key;
        json_t *v;
        int r;

        if (!json_is_object(obj))
                return snapshot_error(error, "%s: expected an object, got %s", *where ? where : "snapshot",
                                      json_type_name(obj));
        for (size_t i = 0; i < n; i++)
                if ((r = check_field(where, &specs[i], json_object_get(obj, specs[i].name), error)) < 0)
                        return r;
        json_object_foreach((json_t *) obj, key, v) {
                size_t i = 0;
                while (i < n && !streq(specs[i].name, key))
                        i++;
                if (i == n) {
                        char k[SNAPSHOT_ERROR_NAME_MAX];
                        return snapshot_error(error, "%s: unknown field %s", *where ? where : "snapshot",
                                              snapshot_error_name(key, k));
                }
        }
        return 0;
}

#define CHECK_OBJECT(where, obj, specs, error) check_object((where), (obj), (specs), ELEMENTSOF(specs), (error))

static uint64_t get_id(const json_t *obj, const char *key) {
        const json_t *v = json_object_get(obj, key);
        return json_is_integer(v) ? (uint64_t) json_integer_value(v) : 0;
}

static int64_t get_int(const json_t *obj, const char *key) {
        return json_integer_value(json_object_get(obj, key));
}

static const char *get_string(const json_t *obj, const char *key) {
        return json_string_value(json_object_get(obj, key));
}

static bool get_bool(const json_t *obj, const char *key) {
        return json_is_true(json_object_get(obj, key));
}

static int check_array_size(const char *what, const json_t *a, size_t max, char **error) {
        if (json_array_size(a) > max)
                return snapshot_error(error, "%s: %zu entries, more than the limit of %zu", what, json_array_size(a), max);
        return 0;
}

/* Format and version first, so that another document or version says so rather than what else
 * it lacks. */
static int read_format(const json_t *doc, unsigned *ret_version, char **error) {
        if (!json_is_object(doc))
                return snapshot_error(error, "snapshot: expected an object, got %s", json_type_name(doc));
        const json_t *format = json_object_get(doc, "format"), *version = json_object_get(doc, "version");
        if (!json_is_string(format) || !streq(json_string_value(format), SNAPSHOT_FORMAT_NAME))
                return snapshot_error(error, "format: expected \"%s\": not a sectree snapshot", SNAPSHOT_FORMAT_NAME);
        if (!json_is_integer(version))
                return snapshot_error(error, "version: expected an integer, got %s",
                                      version ? json_type_name(version) : "nothing");
        if (json_integer_value(version) < SNAPSHOT_FORMAT_VERSION_1 || json_integer_value(version) > SNAPSHOT_FORMAT_VERSION)
                return snapshot_error(error, "version: %" JSON_INTEGER_FORMAT " is not supported (this reader knows "
                                      "versions %d to %d)", json_integer_value(version), SNAPSHOT_FORMAT_VERSION_1,
                                      SNAPSHOT_FORMAT_VERSION);
        *ret_version = (unsigned) json_integer_value(version);
        return 0;
}

static int read_snapshot_info(Forest *f, const json_t *info, char **error) {
        f->snapshot.consistency = snapshot_consistency_from_string(get_string(info, "consistency"));
        if (f->snapshot.consistency < 0)
                return snapshot_error(error, "snapshot.consistency: expected one of none, iterator, frozen");
        f->snapshot.taken_by_uid = (uint32_t) get_int(info, "taken_by_uid");
        return snapshot_info_set_name(&f->snapshot, get_string(info, "name"));
}

static int read_meta(Forest *f, const json_t *doc, char **error) {
        const json_t *host = json_object_get(doc, "host"), *source = json_object_get(doc, "source"),
                     *info = json_object_get(doc, "snapshot");
        int r;

        if ((r = CHECK_OBJECT("", doc, top_fields, error)) < 0 ||
            (r = CHECK_OBJECT("snapshot", info, snapshot_fields, error)) < 0 ||
            (r = CHECK_OBJECT("host", host, host_fields, error)) < 0 ||
            (r = CHECK_OBJECT("source", source, source_fields, error)) < 0 ||
            (r = read_snapshot_info(f, info, error)) < 0)
                return r;
        if (snapshot_parse_time(get_string(doc, "created_at"), &f->created_at_usec) < 0)
                return snapshot_error(error, "created_at: expected an RFC 3339 UTC time like 2026-12-03T07:20:49.123456Z");
        f->identity = identity_kind_from_string(get_string(source, "identity"));
        if (f->identity < 0)
                return snapshot_error(error, "source.identity: expected one of exact, inferred");
        f->backend = strdup(get_string(source, "backend"));
        if (!f->backend)
                return -ENOMEM;
        f->root = (pid_t) get_int(doc, "root");
        return host_info_set(&f->host, get_string(host, "kernel"), get_string(host, "arch"), get_string(host, "hostname"));
}

static int read_insn(const char *where, size_t j, const json_t *v, struct sock_filter *out, char **error) {
        static const int64_t max[4] = { UINT16_MAX, UINT8_MAX, UINT8_MAX, UINT32_MAX };
        int64_t x[4];

        if (!json_is_array(v) || json_array_size(v) != 4)
                return snapshot_error(error, "%s.program[%zu]: expected [code, jt, jf, k], got %s", where, j,
                                      json_is_array(v) ? "another array" : json_type_name(v));
        for (size_t i = 0; i < 4; i++) {
                const json_t *e = json_array_get(v, i);
                if (!json_is_integer(e))
                        return snapshot_error(error, "%s.program[%zu][%zu]: expected an integer, got %s", where, j, i,
                                              json_type_name(e));
                x[i] = json_integer_value(e);
                if (x[i] < 0 || x[i] > max[i])
                        return snapshot_error(error, "%s.program[%zu][%zu]: %" PRId64 " is out of range 0..%" PRId64, where,
                                              j, i, x[i], max[i]);
        }
        *out = (struct sock_filter) { .code = (uint16_t) x[0], .jt = (uint8_t) x[1], .jf = (uint8_t) x[2],
                                      .k = (uint32_t) x[3] };
        return 0;
}

static int read_filter(SnapshotBuilder *b, size_t i, const json_t *obj, char **error) {
        struct sock_filter insns[SNAPSHOT_MAX_FILTER_INSNS];
        char where[64];
        int r;

        snprintf(where, sizeof(where), "filters[%zu]", i);
        if ((r = CHECK_OBJECT(where, obj, filter_fields, error)) < 0)
                return r;
        const json_t *program = json_object_get(obj, "program");
        size_t n = json_array_size(program);
        if (n > SNAPSHOT_MAX_FILTER_INSNS)
                return snapshot_error(error, "%s.program: %zu instructions, more than the limit of %d", where, n,
                                      SNAPSHOT_MAX_FILTER_INSNS);
        for (size_t j = 0; j < n; j++)
                if ((r = read_insn(where, j, json_array_get(program, j), &insns[j], error)) < 0)
                        return r;

        SnapshotFilterFields x = {
                .id = get_id(obj, "id"), .parent = get_id(obj, "parent"), .listener = get_id(obj, "listener"),
                .length = (uint64_t) get_int(obj, "length"), .insns = insns, .n_insns = n,
                .log = get_bool(obj, "log"), .wait_killable_recv = get_bool(obj, "wait_killable_recv"),
                .identity = identity_kind_from_string(get_string(obj, "identity")),
        };
        if (prog_digest_from_string(get_string(obj, "digest"), x.digest) < 0)
                return snapshot_error(error, "%s.digest: expected \"sha256:\" and 64 hex digits", where);
        if (x.identity < 0)
                return snapshot_error(error, "%s.identity: expected one of exact, inferred", where);
        return snapshot_builder_add_filter(b, i, &x, error);
}

static int read_argv(Process *p, const char *where, const json_t *argv, char **error) {
        size_t n = json_array_size(argv);
        if (n == 0)
                return 0;
        if (n > SNAPSHOT_MAX_ARGV_BYTES / 2) /* every argument takes at least its NUL... and a comma */
                return snapshot_error(error, "%s.argv: %zu entries, more than the limit of %u", where, n,
                                      SNAPSHOT_MAX_ARGV_BYTES / 2);
        p->argv = calloc(n + 1, sizeof(char *));
        if (!p->argv)
                return -ENOMEM;
        for (size_t j = 0; j < n; j++) {
                const json_t *s = json_array_get(argv, j);
                if (!json_is_string(s))
                        return snapshot_error(error, "%s.argv[%zu]: expected a string, got %s", where, j,
                                              json_type_name(s));
                p->argv[j] = strdup(json_string_value(s));
                if (!p->argv[j])
                        return -ENOMEM;
        }
        return 0;
}

static int read_threads(SnapshotBuilder *b, Process *p, size_t i, const json_t *threads, size_t *n_tasks,
                        char **error) {
        char where[80];
        int r;

        for (size_t j = 0; j < json_array_size(threads); j++) {
                const json_t *obj = json_array_get(threads, j);
                if (++*n_tasks > SNAPSHOT_MAX_TASKS)
                        return snapshot_error(error, "processes[%zu].threads[%zu]: more than the limit of %d threads in "
                                              "all processes", i, j, SNAPSHOT_MAX_TASKS);
                snprintf(where, sizeof(where), "processes[%zu].threads[%zu]", i, j);
                if ((r = CHECK_OBJECT(where, obj, thread_fields, error)) < 0)
                        return r;
                TaskMode mode = task_mode_from_string(get_string(obj, "mode"));
                if (mode < 0)
                        return snapshot_error(error, "%s.mode: expected one of disabled, strict, filter", where);
                r = snapshot_builder_add_thread(b, p, i, j, (pid_t) get_int(obj, "tid"), mode, get_id(obj, "filter"),
                                                error);
                if (r < 0)
                        return r;
                if (json_object_get(obj, "no_new_privs")) /* else: the process's */
                        task_set_no_new_privs(&p->threads[p->n_threads - 1], get_bool(obj, "no_new_privs"));
        }
        return 0;
}

static int read_exited_leader(Process *p, const char *where, const json_t *obj, char **error) {
        char at[80];
        int r;

        snprintf(at, sizeof(at), "%s.exited_leader", where);
        if ((r = CHECK_OBJECT(at, obj, exited_leader_fields, error)) < 0)
                return r;
        TaskMode mode = task_mode_from_string(get_string(obj, "mode"));
        if (mode < 0)
                return snapshot_error(error, "%s.mode: expected one of disabled, strict, filter", at);
        process_set_exited_leader(p, mode, (unsigned) get_int(obj, "filters"));
        return 0;
}

/* processes[i].units: names, each checked before it is taken (snapshot_unit_name_valid()). */
static int read_units(Process *p, const char *where, const json_t *obj, unsigned version, char **error) {
        static const char *const keys[] = { "unit", "user_unit", "machine" };
        char at[80];
        int r;

        snprintf(at, sizeof(at), "%s.units", where);
        if (version < SNAPSHOT_FORMAT_VERSION_UNITS)
                return snapshot_error(error, "%s: not a field of format version %u (units came with version %d)", at,
                                      version, SNAPSHOT_FORMAT_VERSION_UNITS);
        if ((r = CHECK_OBJECT(at, obj, units_fields, error)) < 0)
                return r;
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                const char *s = get_string(obj, keys[k]);
                if (!snapshot_unit_name_valid(s))
                        return snapshot_error(error, "%s.%s: not a name (1 to %d bytes of UTF-8 without control "
                                              "characters)", at, keys[k], SNAPSHOT_MAX_UNIT);
        }
        return process_set_units(p, get_string(obj, "unit"), get_string(obj, "user_unit"), get_string(obj, "machine"));
}

static int read_process(SnapshotBuilder *b, size_t i, const json_t *obj, size_t *n_tasks, char **error) {
        char where[64];
        Process *p;
        int r;

        snprintf(where, sizeof(where), "processes[%zu]", i);
        if ((r = CHECK_OBJECT(where, obj, process_fields, error)) < 0 ||
            (r = snapshot_builder_add_process(b, i, (pid_t) get_int(obj, "pid"), &p, error)) < 0)
                return r;
        p->ppid = (pid_t) get_int(obj, "ppid");
        p->start_time = (uint64_t) get_int(obj, "start_time");
        p->uid = (uid_t) get_int(obj, "uid");
        p->gid = (gid_t) get_int(obj, "gid");
        p->no_new_privs = get_bool(obj, "no_new_privs");
        if ((r = snapshot_builder_set_comm(p, i, get_string(obj, "comm"), error)) < 0 ||
            (r = process_set_exe(p, get_string(obj, "exe"))) < 0 ||
            (r = read_argv(p, where, json_object_get(obj, "argv"), error)) < 0)
                return r;
        r = read_threads(b, p, i, json_object_get(obj, "threads"), n_tasks, error);
        if (r >= 0 && json_object_get(obj, "exited_leader"))
                r = read_exited_leader(p, where, json_object_get(obj, "exited_leader"), error);
        if (r >= 0 && json_object_get(obj, "units"))
                r = read_units(p, where, json_object_get(obj, "units"), b->version, error);
        return r;
}

static int read_listener(SnapshotBuilder *b, size_t i, const json_t *obj, size_t *n_holders, char **error) {
        char where[80];
        Listener *l;
        int r;

        snprintf(where, sizeof(where), "listeners[%zu]", i);
        if ((r = CHECK_OBJECT(where, obj, listener_fields, error)) < 0 ||
            (r = snapshot_builder_add_listener(b, i, get_id(obj, "id"), get_id(obj, "filter"), &l, error)) < 0)
                return r;
        const json_t *holders = json_object_get(obj, "holders");
        for (size_t j = 0; j < json_array_size(holders); j++) {
                const json_t *h = json_array_get(holders, j);
                if (++*n_holders > SNAPSHOT_MAX_HOLDERS)
                        return snapshot_error(error, "listeners[%zu].holders[%zu]: more than the limit of %d holders in "
                                              "all listeners", i, j, SNAPSHOT_MAX_HOLDERS);
                snprintf(where, sizeof(where), "listeners[%zu].holders[%zu]", i, j);
                if ((r = CHECK_OBJECT(where, h, holder_fields, error)) < 0 ||
                    (r = snapshot_builder_add_holder(b, l, i, j, (pid_t) get_int(h, "pid"), (int) get_int(h, "fd"),
                                                     error)) < 0)
                        return r;
        }
        return 0;
}

static int read_document(SnapshotBuilder *b, const json_t *doc, char **error) {
        const json_t *filters = json_object_get(doc, "filters"), *processes = json_object_get(doc, "processes"),
                     *listeners = json_object_get(doc, "listeners");
        size_t n_tasks = 0, n_holders = 0;
        int r;

        if ((r = read_format(doc, &b->version, error)) < 0 || (r = read_meta(b->forest, doc, error)) < 0 ||
            (r = check_array_size("filters", filters, SNAPSHOT_MAX_FILTERS, error)) < 0 ||
            (r = check_array_size("processes", processes, SNAPSHOT_MAX_PROCESSES, error)) < 0 ||
            (r = check_array_size("listeners", listeners, SNAPSHOT_MAX_LISTENERS, error)) < 0)
                return r;
        for (size_t i = 0; i < json_array_size(filters); i++)
                if ((r = read_filter(b, i, json_array_get(filters, i), error)) < 0)
                        return r;
        for (size_t i = 0; i < json_array_size(processes); i++)
                if ((r = read_process(b, i, json_array_get(processes, i), &n_tasks, error)) < 0)
                        return r;
        for (size_t i = 0; i < json_array_size(listeners); i++)
                if ((r = read_listener(b, i, json_array_get(listeners, i), &n_holders, error)) < 0)
                        return r;
        return 0;
}

/* jansson builds the whole document in memory, at up to 80 times its size ("[{},{},...]"), in
 * some 1.5 million small blocks for a 10,000-task snapshot: allocating and freeing them one by one
 * took more than half of the read. So while one document is read (parsed, taken into the forest
 * and freed: a window no other jansson value lives through), this thread's jansson allocations
 * come from an arena: they are cut from large chunks, never freed one by one, and all the chunks
 * are freed when the document is. What they ask for counts against a budget, so that a hostile
 * document costs at most SNAPSHOT_MAX_JSON_MEMORY. Outside the window, and on other threads,
 * jansson allocates with malloc() as always (the writer, the tests' own documents). */
#define ARENA_CHUNK_MIN (64u * 1024)
#define ARENA_CHUNK_MAX (8u * 1024 * 1024)
#define ARENA_ALIGN 8u /* what jansson's values need (no long double): a 24-byte integer takes 24 */

typedef struct ArenaChunk ArenaChunk;
struct ArenaChunk {
        ArenaChunk *next;
        size_t size, used;
        _Alignas(ARENA_ALIGN) unsigned char data[];
};

static _Thread_local struct {
        bool active, exhausted, cancelled;
        const atomic_bool *cancel; /* snapshot_json_set_cancel() */
        size_t remaining;   /* of the budget */
        ArenaChunk *chunks; /* the first one is the one cut from */
        size_t next_size;   /* of the next small-block chunk: doubling */
} parse_budget;

static size_t max_memory = SNAPSHOT_MAX_JSON_MEMORY;

void snapshot_json_set_max_memory(size_t bytes) {
        max_memory = bytes ? bytes : SNAPSHOT_MAX_JSON_MEMORY;
}

void snapshot_json_set_cancel(const atomic_bool *flag) {
        parse_budget.cancel = flag;
}

static ArenaChunk *arena_chunk_new(size_t size) {
        ArenaChunk *c = malloc(offsetof(ArenaChunk, data) + size);
        if (c)
                *c = (ArenaChunk) { .size = size };
        return c;
}

static void *arena_alloc(size_t n) {
        n = (n + ARENA_ALIGN - 1) & ~(size_t) (ARENA_ALIGN - 1);
        if (n == 0 || n > parse_budget.remaining) {
                parse_budget.exhausted = n > 0;
                return NULL;
        }
        ArenaChunk *c = parse_budget.chunks;
        if (!c || c->size - c->used < n) {
                /* every few MiB of the document */
                if (parse_budget.cancel && atomic_load(parse_budget.cancel)) {
                        parse_budget.cancelled = true;
                        return NULL;
                }
                if (n > ARENA_CHUNK_MAX / 4) {
                        /* a big array's storage: a chunk of its own, behind the current one */
                        ArenaChunk *big = arena_chunk_new(n);
                        if (!big)
                                return NULL;
                        big->used = n;
                        if (c) {
                                big->next = c->next;
                                c->next = big;
                        } else
                                parse_budget.chunks = big;
                        parse_budget.remaining -= n;
                        return big->data;
                }
                size_t size = parse_budget.next_size;
                if (parse_budget.next_size < ARENA_CHUNK_MAX)
                        parse_budget.next_size *= 2;
                c = arena_chunk_new(size);
                if (!c)
                        return NULL;
                c->next = parse_budget.chunks;
                parse_budget.chunks = c;
        }
        void *p = c->data + c->used;
        c->used += n;
        parse_budget.remaining -= n;
        return p;
}

static void *budget_malloc(size_t n) {
        return parse_budget.active ? arena_alloc(n) : malloc(n);
}

static void budget_free(void *p) {
        if (!parse_budget.active) /* else it is the arena's: freed with all of it */
                free(p);
}

static void budget_install(void) {
        json_set_alloc_funcs(budget_malloc, budget_free);
}

static void arena_begin(void) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, budget_install);
        parse_budget.active = true;
        parse_budget.exhausted = parse_budget.cancelled = false;
        parse_budget.remaining = max_memory;
        parse_budget.chunks = NULL;
        parse_budget.next_size = ARENA_CHUNK_MIN;
}

/* After the document is freed. */
static void arena_end(void) {
        parse_budget.active = false;
        while (parse_budget.chunks) {
                ArenaChunk *c = parse_budget.chunks;
                parse_budget.chunks = c->next;
                free(c);
        }
}

/* What is wrong, without jansson's text: it quotes the input near the error. */
static const char *json_error_what(const json_error_t *e) {
        switch (json_error_code(e)) {
        case json_error_premature_end_of_input:
                return "the document ends too early";
        case json_error_end_of_input_expected:
                return "more after the end of the document";
        case json_error_invalid_utf8:
                return "not valid UTF-8";
        case json_error_null_character:
        case json_error_null_byte_in_key:
                return "a NUL character";
        case json_error_duplicate_key:
                return "a key that appears twice in one object";
        case json_error_numeric_overflow:
                return "a number out of range";
        case json_error_stack_overflow:
                return "nested too deeply";
        default:
                return "not JSON, or a JSON syntax error";
        }
}

/* In the window of arena_begin()..arena_end(). */
static int parse(const char *data, size_t size, json_t **ret, char **error) {
        json_error_t e;

        if (size > SNAPSHOT_MAX_FILE_SIZE)
                return snapshot_error(error, "snapshot: %zu bytes, more than the limit of %u (64 MiB)", size,
                                      SNAPSHOT_MAX_FILE_SIZE);
        *ret = json_loadb(data, size, JSON_REJECT_DUPLICATES, &e);
        if (*ret)
                return 0;
        if (parse_budget.cancelled)
                return -ECANCELED;
        if (parse_budget.exhausted)
                return snapshot_error(error, "JSON: parsing needs more than the limit of %zu KiB of memory (too many "
                                      "values for the document's size)", max_memory >> 10);
        if (json_error_code(&e) == json_error_out_of_memory)
                return -ENOMEM;
        return snapshot_error(error, "JSON: line %d, column %d: %s", e.line, e.column, json_error_what(&e));
}

int snapshot_json_read_tree(const char *data, size_t size, Forest **ret, char **error) {
        _cleanup_(snapshot_builder_deinit) SnapshotBuilder b = {};
        json_t *doc = NULL;
        int r;

        if (error)
                *error = NULL;
        /* The builder copies what it takes: nothing of the document outlives it. */
        arena_begin();
        if ((r = parse(data, size, &doc, error)) >= 0 && (r = snapshot_builder_init(&b)) >= 0)
                r = read_document(&b, doc, error);
        arena_end(); /* doc with it: json_decref() would only walk it to free nothing */
        if (r < 0)
                return r;
        return snapshot_builder_finish(&b, ret, error);
}

/* The fast reader first, for a document whose jansson tree would fit the budget (a smaller
 * budget makes it leave larger documents to jansson, whose limit then speaks); jansson's reader
 * for what the fast one leaves, and for the message of every refusal. */
int snapshot_json_read(const char *data, size_t size, Forest **ret, char **error) {
        if (error)
                *error = NULL;
        if (size <= max_memory / SNAPSHOT_JSON_FAST_MAX_GROWTH) {
                int r = snapshot_json_read_fast(data, size, parse_budget.cancel, ret);
                if (r != SNAPSHOT_JSON_FAST_OTHER)
                        return r;
        }
        return snapshot_json_read_tree(data, size, ret, error);
}
