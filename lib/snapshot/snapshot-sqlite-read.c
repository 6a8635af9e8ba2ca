/* snapshot-sqlite-read.c: reads the SQLite snapshot file, treating it as hostile: opened as
 * snapshot-sqlite-open.c checks it, then every table read with every value's type checked */
#include "snapshot/snapshot-sqlite-read.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <strings.h>

#include "core/sqlite-util.h"
#include "snapshot/snapshot-fd.h"
#include "snapshot/snapshot-sqlite-open.h"
#include "snapshot/snapshot-units.h"
#include "snapshot/snapshot-validate.h"

static const char *value_type_name(int type) {
        switch (type) {
        case SQLITE_INTEGER:
                return "an integer";
        case SQLITE_FLOAT:
                return "a real number";
        case SQLITE_TEXT:
                return "text";
        case SQLITE_BLOB:
                return "a blob";
        default:
                return "null";
        }
}

typedef struct Row {
        sqlite3_stmt *st;
        const char *where; /* "filters[3]" */
        char **error;
} Row;

static int type_error(const Row *row, int i, const char *expected, bool nullable) {
        return snapshot_error(row->error, "%s.%s: expected %s%s, got %s", row->where, sqlite3_column_name(row->st, i),
                              expected, nullable ? " or null" : "", value_type_name(sqlite3_column_type(row->st, i)));
}

static int col_int(const Row *row, int i, int64_t min, int64_t max, bool nullable, int64_t *ret) {
        int type = sqlite3_column_type(row->st, i);
        *ret = 0;
        if (type == SQLITE_NULL && nullable)
                return 0;
        if (type != SQLITE_INTEGER)
                return type_error(row, i, "an integer", nullable);
        int64_t v = sqlite3_column_int64(row->st, i);
        if (v < min || v > max)
                return snapshot_error(row->error, "%s.%s: %" PRId64 " is out of range %" PRId64 "..%" PRId64, row->where,
                                      sqlite3_column_name(row->st, i), v, min, max);
        *ret = v;
        return 0;
}

static int col_id(const Row *row, int i, bool nullable, uint64_t *ret) {
        int64_t v;
        int r = col_int(row, i, 1, INT64_MAX, nullable, &v);
        *ret = (uint64_t) v;
        return r;
}

static int col_bool(const Row *row, int i, bool *ret) {
        int64_t v;
        int r = col_int(row, i, 0, 1, false, &v);
        *ret = v != 0;
        return r;
}

/* Text without NUL bytes, at most max bytes; NULL for null when nullable. */
static int col_text(const Row *row, int i, size_t max, bool nullable, const char **ret) {
        int type = sqlite3_column_type(row->st, i);
        *ret = NULL;
        if (type == SQLITE_NULL && nullable)
                return 0;
        if (type != SQLITE_TEXT)
                return type_error(row, i, "text", nullable);
        const char *s = (const char *) sqlite3_column_text(row->st, i);
        size_t n = (size_t) sqlite3_column_bytes(row->st, i);
        if (!s)
                return -ENOMEM;
        if (strlen(s) != n)
                return snapshot_error(row->error, "%s.%s: contains a NUL byte", row->where, sqlite3_column_name(row->st, i));
        if (n > max)
                return snapshot_error(row->error, "%s.%s: %zu bytes, more than the limit of %zu", row->where,
                                      sqlite3_column_name(row->st, i), n, max);
        *ret = s;
        return 0;
}

static int col_blob(const Row *row, int i, size_t max, const uint8_t **ret, size_t *ret_size) {
        if (sqlite3_column_type(row->st, i) != SQLITE_BLOB)
                return type_error(row, i, "a blob", false);
        *ret = sqlite3_column_blob(row->st, i);
        *ret_size = (size_t) sqlite3_column_bytes(row->st, i);
        if (*ret_size > max)
                return snapshot_error(row->error, "%s.%s: %zu bytes, more than the limit of %zu", row->where,
                                      sqlite3_column_name(row->st, i), *ret_size, max);
        return 0;
}

/* Reading the tables */

typedef struct Reader {
        sqlite3 *db;
        SnapshotBuilder b;
        Process **processes; /* by position */
        size_t n_processes;
        Listener **listeners; /* by position */
        size_t n_listeners;
        SnapshotSqliteOptional optional; /* which optional last columns the file has */
        char **error;
} Reader;

static void reader_deinit(Reader *rd) {
        snapshot_builder_deinit(&rd->b);
        free(rd->processes);
        free(rd->listeners);
        sqlite3_close_v2(rd->db);
}

static int prepare(Reader *rd, const char *sql, sqlite3_stmt **ret) {
        int rc = sqlite3_prepare_v2(rd->db, sql, -1, ret, NULL);
        return rc == SQLITE_OK ? 0 : snapshot_sqlite_error(rd->db, rc, rd->error, "preparing a query");
}

/* Step to the next row: 1, 0 at the end, or an error naming the table. */
static int step(Reader *rd, sqlite3_stmt *st, const char *table) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        char what[64];
        snprintf(what, sizeof(what), "reading %s", table);
        return snapshot_sqlite_error(rd->db, rc, rd->error, what);
}

static int check_position(Reader *rd, const char *table, int64_t position, size_t expected) {
        if (position != (int64_t) expected)
                return snapshot_error(rd->error, "%s: position %" PRId64 " where %zu was expected (positions are 0, 1, "
                                      "2, ... without gaps)", table, position, expected);
        return 0;
}

static const struct {
        const char *sql, *what;
        size_t max;
} count_queries[] = {
        { "SELECT count(*) FROM filters", "filters", SNAPSHOT_MAX_FILTERS },
        { "SELECT count(*) FROM processes", "processes", SNAPSHOT_MAX_PROCESSES },
        { "SELECT count(*) FROM threads", "threads", SNAPSHOT_MAX_TASKS },
        { "SELECT count(*) FROM listeners", "listeners", SNAPSHOT_MAX_LISTENERS },
        { "SELECT count(*) FROM holders", "holders", SNAPSHOT_MAX_HOLDERS },
};

static int check_counts(Reader *rd, size_t counts[static ELEMENTSOF(count_queries)]) {
        for (size_t i = 0; i < ELEMENTSOF(count_queries); i++) {
                _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
                int r = prepare(rd, count_queries[i].sql, &st);
                if (r < 0 || (r = step(rd, st, count_queries[i].what)) < 0)
                        return r;
                int64_t n = sqlite3_column_int64(st, 0);
                if (n < 0 || (uint64_t) n > count_queries[i].max)
                        return snapshot_error(rd->error, "%s: %" PRId64 " rows, more than the limit of %zu",
                                              count_queries[i].what, n, count_queries[i].max);
                counts[i] = (size_t) n;
        }
        return 0;
}

static int read_meta_row(Reader *rd, const Row *row) {
        Forest *f = rd->b.forest;
        const char *format, *created, *kernel, *arch, *hostname, *backend, *identity, *name, *consistency;
        int64_t version, root, uid;
        int r;

        if ((r = col_text(row, 0, SNAPSHOT_MAX_HOST_STRING, false, &format)) < 0)
                return r;
        if (!streq(format, SNAPSHOT_FORMAT_NAME))
                return snapshot_error(rd->error, "meta.format: expected \"%s\": not a sectree snapshot", SNAPSHOT_FORMAT_NAME);
        if ((r = col_int(row, 1, INT64_MIN, INT64_MAX, false, &version)) < 0)
                return r;
        if (version != (int64_t) rd->optional.version)
                return snapshot_error(rd->error, "meta.version: %" PRId64 " is not the file's user_version %u", version,
                                      rd->optional.version);
        if ((r = col_text(row, 2, SNAPSHOT_TIME_MAX + 8, false, &created)) < 0 ||
            (r = col_text(row, 3, SNAPSHOT_MAX_HOST_STRING, true, &kernel)) < 0 ||
            (r = col_text(row, 4, SNAPSHOT_MAX_HOST_STRING, true, &arch)) < 0 ||
            (r = col_text(row, 5, SNAPSHOT_MAX_HOST_STRING, true, &hostname)) < 0 ||
            (r = col_text(row, 6, SNAPSHOT_MAX_HOST_STRING, false, &backend)) < 0 ||
            (r = col_text(row, 7, SNAPSHOT_MAX_HOST_STRING, false, &identity)) < 0 ||
            (r = col_int(row, 8, 0, SNAPSHOT_MAX_PID, false, &root)) < 0 ||
            (r = col_text(row, 9, SNAPSHOT_MAX_NAME, true, &name)) < 0 ||
            (r = col_int(row, 10, 0, SNAPSHOT_MAX_UID, false, &uid)) < 0 ||
            (r = col_text(row, 11, 16, false, &consistency)) < 0)
                return r;
        f->snapshot.consistency = snapshot_consistency_from_string(consistency);
        if (f->snapshot.consistency < 0)
                return snapshot_error(rd->error, "meta.snapshot_consistency: expected one of none, iterator, frozen");
        f->snapshot.taken_by_uid = (uint32_t) uid;
        if (snapshot_info_set_name(&f->snapshot, name) < 0)
                return -ENOMEM;
        if (snapshot_parse_time(created, &f->created_at_usec) < 0)
                return snapshot_error(rd->error, "meta.created_at: expected an RFC 3339 UTC time like "
                                      "2026-12-03T07:20:49.123456Z");
        f->identity = identity_kind_from_string(identity);
        if (f->identity < 0)
                return snapshot_error(rd->error, "meta.source_identity: expected one of exact, inferred");
        f->root = (pid_t) root;
        f->backend = strdup(backend);
        if (!f->backend)
                return -ENOMEM;
        return host_info_set(&f->host, kernel, arch, hostname);
}

static int read_meta(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = prepare(rd, "SELECT format, version, created_at, host_kernel, host_arch, host_hostname, source_backend, "
                        "source_identity, root, snapshot_name, snapshot_taken_by_uid, snapshot_consistency FROM meta", &st);
        if (r < 0 || (r = step(rd, st, "meta")) < 0)
                return r;
        if (r == 0)
                return snapshot_error(rd->error, "meta: no row, expected exactly one");
        if ((r = read_meta_row(rd, &(Row) { st, "meta", rd->error })) < 0 || (r = step(rd, st, "meta")) < 0)
                return r;
        if (r > 0)
                return snapshot_error(rd->error, "meta: more than one row, expected exactly one");
        return 0;
}

static int read_filter_row(Reader *rd, const Row *row, size_t i) {
        struct sock_filter insns[SNAPSHOT_MAX_FILTER_INSNS];
        SnapshotFilterFields x = {};
        const char *digest, *identity;
        const uint8_t *program;
        size_t size;
        int64_t length;
        int r;

        if ((r = col_id(row, 1, false, &x.id)) < 0 || (r = col_id(row, 2, true, &x.parent)) < 0 ||
            (r = col_int(row, 3, 0, INT64_MAX, false, &length)) < 0 ||
            (r = col_blob(row, 4, SNAPSHOT_MAX_FILTER_INSNS * 8, &program, &size)) < 0 ||
            (r = col_text(row, 5, PROG_DIGEST_STRING_MAX, false, &digest)) < 0 ||
            (r = col_bool(row, 6, &x.log)) < 0 || (r = col_bool(row, 7, &x.wait_killable_recv)) < 0 ||
            (r = col_id(row, 8, true, &x.listener)) < 0 || (r = col_text(row, 9, 16, false, &identity)) < 0)
                return r;
        if (size % 8 != 0)
                return snapshot_error(rd->error, "%s.program: %zu bytes, not a whole number of 8-byte instructions",
                                      row->where, size);
        if (prog_digest_from_string(digest, x.digest) < 0)
                return snapshot_error(rd->error, "%s.digest: expected \"sha256:\" and 64 hex digits", row->where);
        x.identity = identity_kind_from_string(identity);
        if (x.identity < 0)
                return snapshot_error(rd->error, "%s.identity: expected one of exact, inferred", row->where);
        prog_from_wire(program, size / PROG_INSN_WIRE_SIZE, insns);
        x.length = (uint64_t) length;
        x.insns = insns;
        x.n_insns = size / 8;
        return snapshot_builder_add_filter(&rd->b, i, &x, rd->error);
}

static int read_filters(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = prepare(rd, "SELECT position, id, parent, length, program, digest, log, wait_killable_recv, listener, "
                        "identity FROM filters ORDER BY position", &st);
        for (size_t i = 0; r >= 0 && (r = step(rd, st, "filters")) > 0; i++) {
                char where[48];
                snprintf(where, sizeof(where), "filters[%zu]", i);
                Row row = { st, where, rd->error };
                int64_t position;
                if ((r = col_int(&row, 0, 0, INT64_MAX, false, &position)) < 0 ||
                    (r = check_position(rd, "filters", position, i)) < 0 || (r = read_filter_row(rd, &row, i)) < 0)
                        return r;
        }
        return r;
}

/* argv: every argument followed by a NUL. */
static int decode_argv(Process *p, const Row *row, const uint8_t *blob, size_t size) {
        size_t n = 0;
        if (size == 0)
                return 0;
        if (blob[size - 1] != 0)
                return snapshot_error(row->error, "%s.argv: does not end in a NUL byte", row->where);
        for (size_t i = 0; i < size; i++)
                n += blob[i] == 0;
        p->argv = calloc(n + 1, sizeof(char *));
        if (!p->argv)
                return -ENOMEM;
        const char *s = (const char *) blob;
        for (size_t j = 0; j < n; j++, s += strlen(s) + 1) {
                p->argv[j] = strdup(s);
                if (!p->argv[j])
                        return -ENOMEM;
        }
        return 0;
}

/* processes.exited_leader_mode, exited_leader_filters (columns 10, 11): both NULL for none. */
static int read_exited_leader(Reader *rd, const Row *row, Process *p) {
        const char *mode_string;
        int64_t filters;
        int r;

        if (sqlite3_column_type(row->st, 10) == SQLITE_NULL && sqlite3_column_type(row->st, 11) == SQLITE_NULL)
                return 0;
        if ((r = col_text(row, 10, 16, false, &mode_string)) < 0 ||
            (r = col_int(row, 11, 0, SNAPSHOT_MAX_PATH_INSNS, false, &filters)) < 0)
                return r;
        TaskMode mode = task_mode_from_string(mode_string);
        if (mode < 0)
                return snapshot_error(rd->error, "%s.exited_leader.mode: expected one of disabled, strict, filter",
                                      row->where);
        process_set_exited_leader(p, mode, (unsigned) filters);
        return 0;
}

static int read_process_row(Reader *rd, const Row *row, size_t i) {
        const char *comm, *exe;
        const uint8_t *argv;
        size_t argv_size;
        int64_t pid, ppid, start_time, uid, gid;
        bool nnp;
        Process *p;
        int r;

        if ((r = col_int(row, 1, 1, SNAPSHOT_MAX_PID, false, &pid)) < 0 ||
            (r = col_int(row, 2, 0, SNAPSHOT_MAX_PID, false, &ppid)) < 0 ||
            (r = col_int(row, 3, 0, INT64_MAX, false, &start_time)) < 0 ||
            (r = col_text(row, 4, 64, false, &comm)) < 0 || (r = col_text(row, 5, SNAPSHOT_MAX_PATH, true, &exe)) < 0 ||
            (r = col_blob(row, 6, SNAPSHOT_MAX_ARGV_BYTES, &argv, &argv_size)) < 0 ||
            (r = col_int(row, 7, 0, UINT32_MAX, false, &uid)) < 0 || (r = col_int(row, 8, 0, UINT32_MAX, false, &gid)) < 0 ||
            (r = col_bool(row, 9, &nnp)) < 0)
                return r;
        if ((r = snapshot_builder_add_process(&rd->b, i, (pid_t) pid, &p, rd->error)) < 0)
                return r;
        rd->processes[i] = p;
        p->ppid = (pid_t) ppid;
        p->start_time = (uint64_t) start_time;
        p->uid = (uid_t) uid;
        p->gid = (gid_t) gid;
        p->no_new_privs = nnp;
        if ((r = snapshot_builder_set_comm(p, i, comm, rd->error)) < 0 || (r = process_set_exe(p, exe)) < 0)
                return r;
        if (rd->optional.exited_leader && (r = read_exited_leader(rd, row, p)) < 0)
                return r;
        return decode_argv(p, row, argv, argv_size);
}

static int read_processes(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = prepare(rd, rd->optional.exited_leader
                                    ? "SELECT position, pid, ppid, start_time, comm, exe, argv, uid, gid, no_new_privs, "
                                      "exited_leader_mode, exited_leader_filters FROM processes ORDER BY position"
                                    : "SELECT position, pid, ppid, start_time, comm, exe, argv, uid, gid, no_new_privs FROM "
                                      "processes ORDER BY position",
                        &st);
        for (size_t i = 0; r >= 0 && (r = step(rd, st, "processes")) > 0; i++) {
                char where[48];
                snprintf(where, sizeof(where), "processes[%zu]", i);
                Row row = { st, where, rd->error };
                int64_t position;
                if (i >= rd->n_processes)
                        return snapshot_error(rd->error, "processes: more rows than counted");
                if ((r = col_int(&row, 0, 0, INT64_MAX, false, &position)) < 0 ||
                    (r = check_position(rd, "processes", position, i)) < 0 || (r = read_process_row(rd, &row, i)) < 0)
                        return r;
        }
        return r;
}

/* Rows of a nested table (threads of processes, holders of listeners), ordered by
 * (parent, position): the parent must be a position of the outer table, the positions inside
 * one parent 0, 1, 2, ... */
typedef struct Nested {
        const char *outer, *inner; /* "processes", "threads" */
        size_t n_outer;
        int64_t parent;
        size_t next;
} Nested;

static int nested_next(Reader *rd, Nested *n, const Row *row, size_t *ret_parent, size_t *ret_position) {
        int64_t parent, position;
        int r;

        if ((r = col_int(row, 0, 0, INT64_MAX, false, &parent)) < 0 ||
            (r = col_int(row, 1, 0, INT64_MAX, false, &position)) < 0)
                return r;
        if ((uint64_t) parent >= n->n_outer)
                return snapshot_error(rd->error, "%s: row for %s %" PRId64 ", which is not a position in %s (0..%zu)",
                                      n->inner, n->outer, parent, n->outer, n->n_outer);
        if (parent != n->parent) {
                n->parent = parent;
                n->next = 0;
        }
        if (position != (int64_t) n->next)
                return snapshot_error(rd->error, "%s[%" PRId64 "].%s: position %" PRId64 " where %zu was expected "
                                      "(positions are 0, 1, 2, ... without gaps)", n->outer, parent, n->inner, position,
                                      n->next);
        *ret_parent = (size_t) parent;
        *ret_position = n->next++;
        return 0;
}

static int read_thread_row(Reader *rd, const Row *row, size_t p, size_t j) {
        const char *mode_string;
        int64_t tid;
        uint64_t filter;
        int r;

        if ((r = col_int(row, 2, 1, SNAPSHOT_MAX_PID, false, &tid)) < 0 ||
            (r = col_text(row, 3, 16, false, &mode_string)) < 0 || (r = col_id(row, 4, true, &filter)) < 0)
                return r;
        TaskMode mode = task_mode_from_string(mode_string);
        if (mode < 0)
                return snapshot_error(rd->error, "%s.mode: expected one of disabled, strict, filter", row->where);
        r = snapshot_builder_add_thread(&rd->b, rd->processes[p], p, j, (pid_t) tid, mode, filter, rd->error);
        if (r < 0 || !rd->optional.thread_nnp || sqlite3_column_type(row->st, 5) == SQLITE_NULL)
                return r; /* no own value: the process's */
        bool nnp;
        if ((r = col_bool(row, 5, &nnp)) < 0)
                return r;
        task_set_no_new_privs(&rd->processes[p]->threads[rd->processes[p]->n_threads - 1], nnp);
        return 0;
}

static int read_threads(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        Nested n = { "processes", "threads", rd->n_processes, -1, 0 };
        char where[80];
        size_t p, j;

        int r = prepare(rd, rd->optional.thread_nnp ? "SELECT process, position, tid, mode, filter, no_new_privs FROM threads "
                                             "ORDER BY process, position"
                                           : "SELECT process, position, tid, mode, filter FROM threads ORDER BY process, "
                                             "position",
                        &st);
        while (r >= 0 && (r = step(rd, st, "threads")) > 0) {
                Row row = { st, "threads", rd->error };
                if ((r = nested_next(rd, &n, &row, &p, &j)) < 0)
                        return r;
                snprintf(where, sizeof(where), "processes[%zu].threads[%zu]", p, j);
                row.where = where;
                if ((r = read_thread_row(rd, &row, p, j)) < 0)
                        return r;
        }
        return r;
}

static int read_listeners(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = prepare(rd, "SELECT position, id, filter FROM listeners ORDER BY position", &st);
        for (size_t i = 0; r >= 0 && (r = step(rd, st, "listeners")) > 0; i++) {
                char where[48];
                snprintf(where, sizeof(where), "listeners[%zu]", i);
                Row row = { st, where, rd->error };
                int64_t position;
                uint64_t id, filter;
                if (i >= rd->n_listeners)
                        return snapshot_error(rd->error, "listeners: more rows than counted");
                if ((r = col_int(&row, 0, 0, INT64_MAX, false, &position)) < 0 ||
                    (r = check_position(rd, "listeners", position, i)) < 0 || (r = col_id(&row, 1, false, &id)) < 0 ||
                    (r = col_id(&row, 2, false, &filter)) < 0 ||
                    (r = snapshot_builder_add_listener(&rd->b, i, id, filter, &rd->listeners[i], rd->error)) < 0)
                        return r;
        }
        return r;
}

static int read_holders(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        Nested n = { "listeners", "holders", rd->n_listeners, -1, 0 };
        char where[80];
        size_t l, j;

        int r = prepare(rd, "SELECT listener, position, pid, fd FROM holders ORDER BY listener, position", &st);
        while (r >= 0 && (r = step(rd, st, "holders")) > 0) {
                Row row = { st, "holders", rd->error };
                int64_t pid, fd;
                if ((r = nested_next(rd, &n, &row, &l, &j)) < 0)
                        return r;
                snprintf(where, sizeof(where), "listeners[%zu].holders[%zu]", l, j);
                row.where = where;
                if ((r = col_int(&row, 2, 1, SNAPSHOT_MAX_PID, false, &pid)) < 0 ||
                    (r = col_int(&row, 3, 0, INT32_MAX, false, &fd)) < 0 ||
                    (r = snapshot_builder_add_holder(&rd->b, rd->listeners[l], l, j, (pid_t) pid, (int) fd, rd->error)) < 0)
                        return r;
        }
        return r;
}

/* units (version 2): rows by process position, each a position of processes, once. */
static int read_units_row(Reader *rd, const Row *row, int64_t *last) {
        const char *unit, *user_unit, *machine;
        int64_t position;
        int r;

        if ((r = col_int(row, 0, 0, (int64_t) rd->n_processes - 1, false, &position)) < 0)
                return r;
        if (position <= *last)
                return snapshot_error(rd->error, "units: process %" PRId64 " twice", position);
        *last = position;
        char where[48];
        snprintf(where, sizeof(where), "processes[%" PRId64 "].units", position);
        Row named = { row->st, where, rd->error };
        if ((r = col_text(&named, 1, SNAPSHOT_MAX_UNIT, true, &unit)) < 0 ||
            (r = col_text(&named, 2, SNAPSHOT_MAX_UNIT, true, &user_unit)) < 0 ||
            (r = col_text(&named, 3, SNAPSHOT_MAX_UNIT, true, &machine)) < 0)
                return r;
        if (!snapshot_unit_name_valid(unit) || !snapshot_unit_name_valid(user_unit) || !snapshot_unit_name_valid(machine))
                return snapshot_error(rd->error, "%s: not a name (1 to %d bytes of UTF-8 without control characters)",
                                      where, SNAPSHOT_MAX_UNIT);
        return process_set_units(rd->processes[position], unit, user_unit, machine);
}

static int read_units(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int64_t last = -1;
        if (rd->optional.version < SNAPSHOT_FORMAT_VERSION_UNITS)
                return 0;
        int r = prepare(rd, "SELECT process, unit, user_unit, machine FROM units ORDER BY process", &st);
        while (r >= 0 && (r = step(rd, st, "units")) > 0) {
                Row row = { st, "units", rd->error };
                if (rd->n_processes == 0)
                        return snapshot_error(rd->error, "units: a row, and no processes");
                r = read_units_row(rd, &row, &last);
        }
        return r;
}

static int read_tables(Reader *rd) {
        size_t counts[ELEMENTSOF(count_queries)];
        int r;

        /* meta first: a file of another format or version says so before anything else. */
        if ((r = read_meta(rd)) < 0 || (r = check_counts(rd, counts)) < 0)
                return r;
        rd->n_processes = counts[1];
        rd->n_listeners = counts[3];
        rd->processes = calloc(rd->n_processes + 1, sizeof(Process *));
        rd->listeners = calloc(rd->n_listeners + 1, sizeof(Listener *));
        if (!rd->processes || !rd->listeners)
                return -ENOMEM;
        if ((r = read_filters(rd)) < 0 || (r = read_processes(rd)) < 0 ||
            (r = read_threads(rd)) < 0 || (r = read_listeners(rd)) < 0 || (r = read_holders(rd)) < 0 ||
            (r = read_units(rd)) < 0)
                return r;
        return 0;
}

int snapshot_sqlite_read_data(const void *data, size_t size, Forest **ret, char **error) {
        _cleanup_(reader_deinit) Reader rd = { .error = error };
        int r;

        if (error)
                *error = NULL;
        if (size > SNAPSHOT_MAX_FILE_SIZE)
                return snapshot_error(error, "snapshot: %zu bytes, more than the limit of %u (64 MiB)", size,
                                      SNAPSHOT_MAX_FILE_SIZE);
        r = snapshot_sqlite_open(data, size, &rd.db, &rd.optional, error);
        if (r < 0)
                return r;
        r = snapshot_builder_init(&rd.b);
        if (r < 0)
                return r;
        r = read_tables(&rd);
        if (r < 0)
                return r;
        return snapshot_builder_finish(&rd.b, ret, error);
}

int snapshot_sqlite_read(const char *path, Forest **ret, char **error) {
        _cleanup_free_ char *data = NULL;
        size_t size;

        if (error)
                *error = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        int r = read_full_fd(fd, SNAPSHOT_MAX_FILE_SIZE, &data, &size);
        if (r == -EFBIG)
                return snapshot_error(error, "snapshot: more than the limit of %u bytes (64 MiB)", SNAPSHOT_MAX_FILE_SIZE);
        if (r < 0)
                return r;
        return snapshot_sqlite_read_data(data, size, ret, error);
}
