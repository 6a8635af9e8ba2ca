/* store-snapshot.c: snapshots in the state database (schema/state-002.sql, state-004.sql): written
 * in steps of one transaction each with prepared statements, and the rows read back into a forest
 *
 * Strings are stored as snapshot_utf8_sanitize() makes them (what every export writes anyway), so
 * that the sqlite3 shell shows text; argv is a JSON array of strings. */
#include <sqlite3.h>

#include "core/sqlite-util.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot-units.h"
#include "store/store-argv.h"
#include "store/store-snapshot.h"

typedef enum SnapshotStatement {
        SS_INSERT_SNAPSHOT,
        SS_INSERT_FILTER,
        SS_INSERT_PROCESS,
        SS_INSERT_THREAD,
        SS_INSERT_LISTENER,
        SS_INSERT_HOLDER,
        SS_USAGE,
        SS_COMPLETE,
        SS_DELETE,
        _SS_WRITE_MAX,
} SnapshotStatement;

static const char *const write_sql[_SS_WRITE_MAX] = {
        [SS_INSERT_SNAPSHOT] =
                "INSERT INTO snapshots (name, created_usec, stored_usec, origin, owner_uid, taken_by_uid, root_pid, "
                "backend, identity, consistency, host_kernel, host_arch, host_hostname, processes, threads, filters, "
                "listeners, instructions, bytes, complete) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                "?13, ?14, ?15, ?16, ?17, ?18, ?19, 0) RETURNING id",
        [SS_INSERT_FILTER] =
                "INSERT INTO snapshot_filters (snapshot, id, parent, length, digest, program, log, wait_killable_recv, "
                "listener, identity) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        [SS_INSERT_PROCESS] =
                "INSERT INTO snapshot_processes (snapshot, pid, ppid, start_time, comm, exe, argv, uid, gid, "
                "no_new_privs, exited_leader_mode, exited_leader_filters, unit, user_unit, machine) VALUES (?1, ?2, ?3, "
                "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        [SS_INSERT_THREAD] = "INSERT INTO snapshot_threads (snapshot, tid, pid, mode, filter, no_new_privs) "
                             "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [SS_INSERT_LISTENER] = "INSERT INTO snapshot_listeners (snapshot, id, filter) VALUES (?1, ?2, ?3)",
        [SS_INSERT_HOLDER] =
                "INSERT INTO snapshot_holders (snapshot, listener, position, pid, fd) VALUES (?1, ?2, ?3, ?4, ?5)",
        /* incomplete snapshots count: what is being written is reserved */
        [SS_USAGE] =
                "SELECT count(*), coalesce(sum(threads), 0), coalesce(sum(instructions), 0), coalesce(sum(bytes), 0) "
                "FROM snapshots WHERE owner_uid = ?1",
        [SS_COMPLETE] = "UPDATE snapshots SET complete = 1, stored_usec = ?2 WHERE id = ?1",
        [SS_DELETE] = "DELETE FROM snapshots WHERE id = ?1",
};

#define SNAPSHOT_COLUMNS                                                                                  \
        "id, name, created_usec, stored_usec, origin, owner_uid, taken_by_uid, root_pid, backend, identity, " \
        "consistency, processes, threads, filters, listeners, instructions"

/* A set of statements prepared for one call and finalized after it. */
typedef struct Statements {
        Store *store;
        sqlite3_stmt *st[_SS_WRITE_MAX];
} Statements;

static void statements_done(Statements *s) {
        for (size_t i = 0; i < _SS_WRITE_MAX; i++)
                sqlite3_finalize(s->st[i]);
}

static int prepare(Store *s, const char *sql, sqlite3_stmt **ret) {
        int rc = sqlite3_prepare_v3(store_database(s), sql, -1, 0, ret, NULL);
        return rc == SQLITE_OK ? 0 : store_sqlite_error(s, rc, "prepare a snapshot statement");
}

static int statements_prepare(Statements *s) {
        for (size_t i = 0; i < _SS_WRITE_MAX; i++) {
                int r = prepare(s->store, write_sql[i], &s->st[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Run a statement that returns no row, and reset it. */
static int run(Store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        int r = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : store_sqlite_error(s, rc, what);
        sqlite3_reset(st);
        return r;
}

/* A sanitized copy of a string that may be NULL: 0, or -ENOMEM. */
static int sanitize(const char *s, char **ret) {
        *ret = snapshot_utf8_sanitize(s);
        return s && !*ret ? -ENOMEM : 0;
}

/* s as it is stored: itself when it is valid UTF-8 (almost always: no copy), else a sanitized copy
 * in *to_free. */
static int stored_text(const char *s, char **to_free, const char **ret) {
        if (!s || snapshot_utf8_valid(s)) {
                *ret = s;
                return 0;
        }
        int r = sanitize(s, to_free);
        *ret = *to_free;
        return r;
}

/* Writing */

static size_t count_threads(const Forest *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                n += f->processes[i]->n_threads;
        return n;
}

static uint64_t count_instructions(const Forest *f) {
        uint64_t n = 0;
        for (size_t i = 0; i < f->n_filters; i++)
                n += f->filters[i]->len;
        return n;
}

/* Strings count with what their encoding adds: argv is stored as a JSON array. */
static uint64_t argv_bytes(char * const *argv) {
        uint64_t n = 2;
        for (size_t i = 0; argv && argv[i]; i++)
                n += strlen(argv[i]) + 3;
        return n;
}

static uint64_t strlen_or_0(const char *s) {
        return s ? strlen(s) : 0;
}

#define SNAPSHOT_ROW_BYTES 128

uint64_t store_snapshot_bytes(const Forest *f) {
        uint64_t rows = 1 + f->n_filters + f->n_processes + count_threads(f) + f->n_listeners;
        uint64_t n = 8 * count_instructions(f) + strlen_or_0(f->snapshot.name) + strlen_or_0(f->host.kernel) +
                     strlen_or_0(f->host.arch) + strlen_or_0(f->host.hostname);
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                n += strnlen(p->comm, sizeof(p->comm)) + strlen_or_0(p->exe) + argv_bytes(p->argv) + strlen_or_0(p->unit) +
                     strlen_or_0(p->user_unit) + strlen_or_0(p->machine);
        }
        for (size_t i = 0; i < f->n_listeners; i++)
                rows += f->listeners[i]->n_holders;
        return n + SNAPSHOT_ROW_BYTES * rows;
}

static int check_quota(Statements *s, uid_t owner, const Forest *f, const StoreSnapshotQuota *q) {
        sqlite3_stmt *st = s->st[SS_USAGE];
        sqlite3_bind_int64(st, 1, owner);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                return store_sqlite_error(s->store, rc, "read a snapshot owner's usage");
        }
        uint64_t n = (uint64_t) sqlite3_column_int64(st, 0), threads = (uint64_t) sqlite3_column_int64(st, 1),
                 insns = (uint64_t) sqlite3_column_int64(st, 2), bytes = (uint64_t) sqlite3_column_int64(st, 3);
        sqlite3_reset(st);
        if ((q->snapshots && n + 1 > q->snapshots) || (q->threads && threads + count_threads(f) > q->threads) ||
            (q->instructions && insns + count_instructions(f) > q->instructions) ||
            (q->bytes && bytes + store_snapshot_bytes(f) > q->bytes))
                return -EDQUOT;
        return 0;
}

static int put_snapshot_row(Statements *s, const Forest *f, uid_t owner, bool imported, uint64_t now_usec,
                            uint64_t *ret_id) {
        sqlite3_stmt *st = s->st[SS_INSERT_SNAPSHOT];
        const HostInfo *h = &f->host;
        _cleanup_free_ char *name = NULL, *kernel = NULL, *arch = NULL, *hostname = NULL;
        if (sanitize(f->snapshot.name, &name) < 0 || sanitize(h->kernel, &kernel) < 0 || sanitize(h->arch, &arch) < 0 ||
            sanitize(h->hostname, &hostname) < 0)
                return -ENOMEM;
        bind_text_or_null(st, 1, name);
        bind_u64(st, 2, f->created_at_usec);
        bind_u64(st, 3, now_usec);
        sqlite3_bind_text(st, 4, imported ? "imported" : "created", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, owner);
        sqlite3_bind_int64(st, 6, f->snapshot.taken_by_uid);
        sqlite3_bind_int64(st, 7, f->root);
        bind_text_or_null(st, 8, f->backend);
        sqlite3_bind_text(st, 9, identity_kind_to_string(f->identity), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 10, snapshot_consistency_to_string(f->snapshot.consistency) ?: "none", -1,
                          SQLITE_STATIC);
        bind_text_or_null(st, 11, kernel);
        bind_text_or_null(st, 12, arch);
        bind_text_or_null(st, 13, hostname);
        bind_u64(st, 14, f->n_processes);
        bind_u64(st, 15, count_threads(f));
        bind_u64(st, 16, f->n_filters);
        bind_u64(st, 17, f->n_listeners);
        bind_u64(st, 18, count_instructions(f));
        bind_u64(st, 19, store_snapshot_bytes(f));
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret_id = (uint64_t) sqlite3_column_int64(st, 0);
        int r = rc == SQLITE_ROW ? 0 : store_sqlite_error(s->store, rc, "store a snapshot");
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return r;
}

/* The program as the digest covers it: code le16, jt, jf, k le32. */
static int put_filter(Statements *s, uint64_t id, const Filter *flt) {
        static uint8_t program[PROG_MAX_INSNS * 8];
        char digest[PROG_DIGEST_STRING_MAX];
        sqlite3_stmt *st = s->st[SS_INSERT_FILTER];
        if (flt->len > PROG_MAX_INSNS)
                return -E2BIG;
        prog_to_wire(flt->insns, flt->len, program);
        bind_u64(st, 1, id);
        bind_u64(st, 2, flt->id);
        bind_id_or_null(st, 3, flt->parent_id);
        bind_u64(st, 4, flt->len);
        sqlite3_bind_text(st, 5, prog_digest_to_string(flt->digest, digest), -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 6, program, (int) (flt->len * 8), SQLITE_STATIC);
        sqlite3_bind_int(st, 7, flt->log);
        sqlite3_bind_int(st, 8, flt->wait_killable_recv);
        bind_id_or_null(st, 9, flt->listener_id);
        sqlite3_bind_text(st, 10, identity_kind_to_string(flt->identity), -1, SQLITE_STATIC);
        return run(s->store, st, "store a snapshot's filter");
}

static int put_process(Statements *s, uint64_t id, const Process *p) {
        sqlite3_stmt *st = s->st[SS_INSERT_PROCESS];
        char comm[sizeof(p->comm) + 1];
        _cleanup_free_ char *comm_copy = NULL, *exe_copy = NULL, *argv = NULL;
        const char *valid_comm, *exe;
        memcpy(comm, p->comm, sizeof(p->comm));
        comm[sizeof(p->comm)] = 0;
        if (stored_text(comm, &comm_copy, &valid_comm) < 0 || stored_text(p->exe, &exe_copy, &exe) < 0 ||
            store_argv_to_json(p->argv, &argv) < 0)
                return -ENOMEM;
        bind_u64(st, 1, id);
        sqlite3_bind_int64(st, 2, p->pid);
        sqlite3_bind_int64(st, 3, p->ppid);
        bind_u64(st, 4, p->start_time);
        bind_text_or_null(st, 5, valid_comm);
        bind_text_or_null(st, 6, exe);
        bind_text_or_null(st, 7, argv);
        sqlite3_bind_int64(st, 8, p->uid);
        sqlite3_bind_int64(st, 9, p->gid);
        sqlite3_bind_int(st, 10, p->no_new_privs);
        if (p->has_exited_leader) { /* else both NULL: none recorded */
                sqlite3_bind_text(st, 11, task_mode_to_string(p->exited_leader.mode), -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 12, p->exited_leader.filter_count);
        } else {
                sqlite3_bind_null(st, 11);
                sqlite3_bind_null(st, 12);
        }
        bind_text_or_null(st, 13, p->unit); /* UTF-8 already: snapshot_validate() checked them */
        bind_text_or_null(st, 14, p->user_unit);
        bind_text_or_null(st, 15, p->machine);
        int r = run(s->store, st, "store a snapshot's process");
        sqlite3_clear_bindings(st); /* before the strings are freed */
        return r;
}

static int put_thread(Statements *s, uint64_t id, const Process *p, const Task *t) {
        sqlite3_stmt *st = s->st[SS_INSERT_THREAD];
        bind_u64(st, 1, id);
        sqlite3_bind_int64(st, 2, t->tid);
        sqlite3_bind_int64(st, 3, p->pid);
        sqlite3_bind_text(st, 4, task_mode_to_string(t->mode), -1, SQLITE_STATIC);
        bind_id_or_null(st, 5, t->filter_id);
        if (task_no_new_privs_differs(p, t)) /* else NULL: the process's */
                sqlite3_bind_int(st, 6, task_no_new_privs(p, t));
        else
                sqlite3_bind_null(st, 6);
        return run(s->store, st, "store a snapshot's thread");
}

static int put_listener(Statements *s, uint64_t id, const Listener *l) {
        sqlite3_stmt *st = s->st[SS_INSERT_LISTENER];
        bind_u64(st, 1, id);
        bind_u64(st, 2, l->id);
        bind_u64(st, 3, l->filter_id);
        return run(s->store, st, "store a snapshot's listener");
}

static int put_holder(Statements *s, uint64_t id, const Listener *l, size_t i) {
        sqlite3_stmt *st = s->st[SS_INSERT_HOLDER];
        bind_u64(st, 1, id);
        bind_u64(st, 2, l->id);
        bind_u64(st, 3, i);
        sqlite3_bind_int64(st, 4, l->holders[i].pid);
        sqlite3_bind_int64(st, 5, l->holders[i].fd);
        return run(s->store, st, "store a snapshot's listener holder");
}

/* Writing in steps */

typedef enum WriterPhase {
        WRITE_FILTERS,
        WRITE_PROCESSES, /* each process's row, then its threads' */
        WRITE_LISTENERS, /* each listener's row, then its holders' */
        WRITE_DONE,
} WriterPhase;

struct StoreSnapshotWriter {
        Statements s;
        const Forest *forest;
        uint64_t id;
        WriterPhase phase;
        size_t i, j; /* the element of the phase; the row within it (0: the element's own) */
        bool finished;
};

/* The next row; moves the cursor on. */
static int writer_put_row(StoreSnapshotWriter *w) {
        const Forest *f = w->forest;
        switch (w->phase) {
        case WRITE_FILTERS:
                return put_filter(&w->s, w->id, f->filters[w->i++]);
        case WRITE_PROCESSES: {
                const Process *p = f->processes[w->i];
                size_t j = w->j++;
                if (w->j > p->n_threads)
                        w->i++, w->j = 0;
                return j == 0 ? put_process(&w->s, w->id, p) : put_thread(&w->s, w->id, p, &p->threads[j - 1]);
        }
        case WRITE_LISTENERS: {
                const Listener *l = f->listeners[w->i];
                size_t j = w->j++;
                if (w->j > l->n_holders)
                        w->i++, w->j = 0;
                return j == 0 ? put_listener(&w->s, w->id, l) : put_holder(&w->s, w->id, l, j - 1);
        }
        default:
                return -EINVAL;
        }
}

/* Past the end of its phase: on to the next one that has elements. */
static void writer_advance(StoreSnapshotWriter *w) {
        const Forest *f = w->forest;
        for (;;) {
                size_t n = w->phase == WRITE_FILTERS     ? f->n_filters
                           : w->phase == WRITE_PROCESSES ? f->n_processes
                           : w->phase == WRITE_LISTENERS ? f->n_listeners
                                                         : SIZE_MAX;
                if (w->i < n)
                        return;
                w->phase++;
                w->i = w->j = 0;
        }
}

StoreSnapshotWriter *store_snapshot_writer_free(StoreSnapshotWriter *w) {
        if (!w)
                return NULL;
        if (!w->finished && w->id != 0) {
                sqlite3_stmt *st = w->s.st[SS_DELETE];
                bind_u64(st, 1, w->id);
                if (run(w->s.store, st, "delete an unfinished snapshot") < 0)
                        store_unfinished_remember(w->s.store, w->id);
        }
        statements_done(&w->s);
        free(w);
        return NULL;
}

/* Inside the writer's first transaction: the quota checked, the snapshot's row put, committed. */
static int writer_put_header(StoreSnapshotWriter *w, uid_t owner, bool imported, const StoreSnapshotQuota *quota,
                             uint64_t now_usec) {
        int r;

        if (quota) {
                r = check_quota(&w->s, owner, w->forest, quota);
                if (r < 0)
                        return r;
        }
        r = put_snapshot_row(&w->s, w->forest, owner, imported, now_usec, &w->id);
        if (r < 0)
                return r;
        return store_commit(w->s.store);
}

int store_snapshot_writer_new(Store *store, const Forest *f, uid_t owner, bool imported,
                              const StoreSnapshotQuota *quota, uint64_t now_usec, StoreSnapshotWriter **ret) {
        if (!f->linked)
                return log_error_errno(-EINVAL, "Refusing to store a snapshot that is not linked.");
        _cleanup_(store_snapshot_writer_freep) StoreSnapshotWriter *w = calloc(1, sizeof(StoreSnapshotWriter));
        if (!w)
                return -ENOMEM;
        *w = (StoreSnapshotWriter) { .s = { .store = store }, .forest = f };
        int r = statements_prepare(&w->s);
        if (r < 0)
                return r;
        /* the rows failed writers left, before the quota counts them (remembered again, and the
         * others kept, when the database still refuses) */
        for (uint64_t id; store_unfinished_take(store, &id);) {
                bind_u64(w->s.st[SS_DELETE], 1, id);
                if (run(store, w->s.st[SS_DELETE], "delete an unfinished snapshot") < 0) {
                        store_unfinished_remember(store, id);
                        break;
                }
        }
        r = store_begin(store);
        if (r < 0)
                return r;
        r = writer_put_header(w, owner, imported, quota, now_usec);
        if (r < 0) {
                store_rollback(store);
                w->id = 0;
                return r;
        }
        writer_advance(w);
        *ret = TAKE_PTR(w);
        return 0;
}

/* How many rows are written between two looks at the clock. */
#define WRITER_CLOCK_ROWS 32

/* The transaction of writer_step(): begun, its rows, committed. */
static int writer_transaction(StoreSnapshotWriter *w, size_t max_rows, uint64_t until_usec) {
        int r = store_begin(w->s.store);
        if (r < 0)
                return r;
        for (size_t n = 0; n < max_rows && w->phase != WRITE_DONE; n++) {
                if (until_usec > 0 && n > 0 && n % WRITER_CLOCK_ROWS == 0 && now_usec(CLOCK_MONOTONIC) >= until_usec)
                        break;
                r = writer_put_row(w);
                writer_advance(w);
                if (r < 0)
                        return r;
        }
        return store_commit(w->s.store);
}

/* Up to max_rows rows in one transaction, and none once CLOCK_MONOTONIC has passed until_usec
 * (0: whatever the time). */
static int writer_step(StoreSnapshotWriter *w, size_t max_rows, uint64_t until_usec) {
        int r = writer_transaction(w, max_rows, until_usec);
        if (r < 0) {
                store_rollback(w->s.store);
                return r;
        }
        return w->phase == WRITE_DONE;
}

int store_snapshot_writer_step(StoreSnapshotWriter *w, size_t max_rows) {
        return writer_step(w, max_rows, 0);
}

int store_snapshot_writer_step_until(StoreSnapshotWriter *w, uint64_t until_usec) {
        return writer_step(w, SIZE_MAX, until_usec);
}

int store_snapshot_writer_finish(StoreSnapshotWriter *w, uint64_t *ret_id) {
        if (w->phase != WRITE_DONE)
                return -EBUSY;
        sqlite3_stmt *st = w->s.st[SS_COMPLETE];
        bind_u64(st, 1, w->id);
        bind_u64(st, 2, now_usec(CLOCK_REALTIME));
        int r = run(w->s.store, st, "complete a snapshot");
        if (r < 0)
                return r;
        w->finished = true;
        *ret_id = w->id;
        return 0;
}

int store_snapshot_put(Store *store, const Forest *f, uid_t owner, bool imported, const StoreSnapshotQuota *quota,
                       uint64_t now_usec, uint64_t *ret_id) {
        _cleanup_(store_snapshot_writer_freep) StoreSnapshotWriter *w = NULL;
        int r = store_snapshot_writer_new(store, f, owner, imported, quota, now_usec, &w);
        if (r < 0)
                return r;
        r = store_snapshot_writer_step(w, SIZE_MAX);
        if (r < 0)
                return r;
        return store_snapshot_writer_finish(w, ret_id);
}

int store_snapshot_discard_incomplete(Store *s) {
        char *error = NULL;
        int rc = sqlite3_exec(store_database(s), "DELETE FROM snapshots WHERE NOT complete", NULL, NULL, &error);
        sqlite3_free(error);
        if (rc != SQLITE_OK)
                return store_sqlite_error(s, rc, "delete incomplete snapshots");
        int n = sqlite3_changes(store_database(s));
        if (n > 0)
                log_info("Deleted %d unfinished snapshots: snapshots being taken or imported when sectreed "
                         "stopped, or whose failed write could not be undone then.", n);
        return 0;
}

/* Reading */

void stored_snapshot_done(StoredSnapshot *s) {
        free(s->name);
        free(s->backend);
        free(s->identity);
        free(s->consistency);
        *s = (StoredSnapshot) {};
}

void stored_snapshots_free(StoredSnapshot *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                stored_snapshot_done(&l[i]);
        free(l);
}

static char *column_strdup(sqlite3_stmt *st, int i) {
        const char *v = (const char *) sqlite3_column_text(st, i);
        return v ? strdup(v) : NULL;
}

static int read_snapshot_row(sqlite3_stmt *st, StoredSnapshot *ret) {
        const char *origin = (const char *) sqlite3_column_text(st, 4);
        *ret = (StoredSnapshot) {
                .id = (uint64_t) sqlite3_column_int64(st, 0),
                .name = column_strdup(st, 1),
                .created_usec = (uint64_t) sqlite3_column_int64(st, 2),
                .stored_usec = (uint64_t) sqlite3_column_int64(st, 3),
                .imported = origin && streq(origin, "imported"),
                .owner_uid = (uid_t) sqlite3_column_int64(st, 5),
                .taken_by_uid = (uid_t) sqlite3_column_int64(st, 6),
                .root_pid = (pid_t) sqlite3_column_int64(st, 7),
                .backend = column_strdup(st, 8),
                .identity = column_strdup(st, 9),
                .consistency = column_strdup(st, 10),
                .processes = (uint32_t) sqlite3_column_int64(st, 11),
                .threads = (uint32_t) sqlite3_column_int64(st, 12),
                .filters = (uint32_t) sqlite3_column_int64(st, 13),
                .listeners = (uint32_t) sqlite3_column_int64(st, 14),
                .instructions = (uint64_t) sqlite3_column_int64(st, 15),
        };
        if ((sqlite3_column_type(st, 1) != SQLITE_NULL && !ret->name) || !ret->backend || !ret->identity ||
            !ret->consistency) {
                stored_snapshot_done(ret);
                return -ENOMEM;
        }
        return 0;
}

static void finalizep(sqlite3_stmt **st) {
        sqlite3_finalize(*st);
}
#define _cleanup_finalize_ _cleanup_(finalizep)

/* Prepare sql (a SELECT of the snapshots row ?1) and step to that row: 0 with *st on it,
 * -ENOENT if there is no snapshot id. */
static int select_snapshot_row(Store *s, const char *sql, uint64_t id, sqlite3_stmt **st) {
        int r = prepare(s, sql, st);
        if (r < 0)
                return r;
        bind_u64(*st, 1, id);
        int rc = sqlite3_step(*st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        return rc == SQLITE_ROW ? 0 : store_sqlite_error(s, rc, "read a snapshot");
}

int store_snapshot_get(Store *s, uint64_t id, StoredSnapshot *ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int r = select_snapshot_row(s, "SELECT " SNAPSHOT_COLUMNS " FROM snapshots WHERE id = ?1 AND complete", id, &st);
        return r < 0 ? r : read_snapshot_row(st, ret);
}

int store_snapshot_list(Store *s, StoredSnapshot **ret, size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        StoredSnapshot *l = NULL;
        size_t n = 0, allocated = 0;
        int r = prepare(s, "SELECT " SNAPSHOT_COLUMNS " FROM snapshots WHERE complete ORDER BY id", &st), rc;
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (GROW(l, allocated, n + 1) < 0 || read_snapshot_row(st, &l[n]) < 0) {
                        stored_snapshots_free(l, n);
                        return -ENOMEM;
                }
                n++;
        }
        if (rc != SQLITE_DONE) {
                stored_snapshots_free(l, n);
                return store_sqlite_error(s, rc, "list the snapshots");
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

int store_snapshot_delete(Store *s, uint64_t id) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int r = prepare(s, "DELETE FROM snapshots WHERE id = ?1 AND complete", &st);
        if (r < 0)
                return r;
        bind_u64(st, 1, id);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                return store_sqlite_error(s, rc, "delete a snapshot");
        return sqlite3_changes(store_database(s)) > 0;
}

/* Loading a snapshot into a forest */

/* The connection it is read through: the Store's, or one of a worker's own. */
typedef struct Db {
        sqlite3 *db;
        Store *store;     /* NULL for a connection of our own */
        const char *path; /* of that one */
} Db;

/* On the store's connection, the store's mapping. On a connection of its own (an export reading
 * a stored snapshot), deliberately not sqlite_errno(): a stored snapshot that cannot be read is
 * the daemon's I/O failure whatever SQLite calls it, and its -EBUSY or -EINVAL would reach the
 * caller through the bus-error table as "limits exceeded" or "the snapshot was refused". */
static int db_error(Db *d, int rc, const char *what) {
        if (d->store)
                return store_sqlite_error(d->store, rc, what);
        if ((rc & 0xff) == SQLITE_NOMEM)
                return -ENOMEM;
        return log_error_errno(-EIO, "Failed to %s in %s: %s", what, d->path, sqlite3_errmsg(d->db));
}

static int db_prepare(Db *d, const char *sql, sqlite3_stmt **ret) {
        if (d->store)
                return prepare(d->store, sql, ret);
        int rc = sqlite3_prepare_v3(d->db, sql, -1, 0, ret, NULL);
        return rc == SQLITE_OK ? 0 : db_error(d, rc, "prepare a snapshot statement");
}

static int load_header(Db *s, uint64_t id, Forest *f) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int r = db_prepare(s,
                           "SELECT name, created_usec, taken_by_uid, root_pid, backend, identity, consistency, "
                           "host_kernel, host_arch, host_hostname FROM snapshots WHERE id = ?1 AND complete",
                           &st);
        if (r < 0)
                return r;
        bind_u64(st, 1, id);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return db_error(s, rc, "read a snapshot");
        f->created_at_usec = (uint64_t) sqlite3_column_int64(st, 1);
        f->snapshot.taken_by_uid = (uint32_t) sqlite3_column_int64(st, 2);
        f->root = (pid_t) sqlite3_column_int64(st, 3);
        f->backend = column_strdup(st, 4);
        f->identity = identity_kind_from_string((const char *) sqlite3_column_text(st, 5));
        f->snapshot.consistency = snapshot_consistency_from_string((const char *) sqlite3_column_text(st, 6));
        if (!f->backend)
                return -ENOMEM;
        if (f->identity < 0 || f->snapshot.consistency < 0)
                return -EBADMSG;
        r = snapshot_info_set_name(&f->snapshot, (const char *) sqlite3_column_text(st, 0));
        if (r < 0)
                return r;
        return host_info_set(&f->host, (const char *) sqlite3_column_text(st, 7),
                             (const char *) sqlite3_column_text(st, 8), (const char *) sqlite3_column_text(st, 9));
}

static int decode_program(const void *blob, size_t bytes, size_t len, struct sock_filter *insns) {
        if (len > PROG_MAX_INSNS || bytes != len * PROG_INSN_WIRE_SIZE)
                return -EBADMSG;
        prog_from_wire(blob, len, insns);
        return 0;
}

static int load_filters(Db *s, uint64_t id, Forest *f) {
        _cleanup_free_ struct sock_filter *insns = malloc(PROG_MAX_INSNS * sizeof(struct sock_filter));
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        if (!insns)
                return -ENOMEM;
        int r = db_prepare(s,
                        "SELECT id, parent, length, program, log, wait_killable_recv, listener, identity "
                        "FROM snapshot_filters WHERE snapshot = ?1 ORDER BY id",
                        &st), rc;
        if (r < 0)
                return r;
        bind_u64(st, 1, id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                Filter *flt;
                size_t len = (size_t) sqlite3_column_int64(st, 2);
                r = decode_program(sqlite3_column_blob(st, 3), (size_t) sqlite3_column_bytes(st, 3), len, insns);
                if (r < 0)
                        return r; /* -EBADMSG */
                r = forest_add_filter(f, (uint64_t) sqlite3_column_int64(st, 0),
                                      (uint64_t) sqlite3_column_int64(st, 1), insns, len, &flt);
                if (r < 0)
                        return r == -EEXIST ? -EBADMSG : r;
                flt->log = sqlite3_column_int(st, 4);
                flt->wait_killable_recv = sqlite3_column_int(st, 5);
                flt->listener_id = (uint64_t) sqlite3_column_int64(st, 6);
                flt->has_listener = flt->listener_id != 0;
                flt->identity = identity_kind_from_string((const char *) sqlite3_column_text(st, 7));
                if (flt->identity < 0)
                        return -EBADMSG;
        }
        return rc == SQLITE_DONE ? 0 : db_error(s, rc, "read a snapshot's filters");
}

static int load_process(sqlite3_stmt *st, Forest *f) {
        Process *p;
        const char *comm = (const char *) sqlite3_column_text(st, 3);
        int r = forest_add_process(f, (pid_t) sqlite3_column_int64(st, 0), &p);
        if (r < 0)
                return r == -EEXIST || r == -EINVAL ? -EBADMSG : r;
        p->ppid = (pid_t) sqlite3_column_int64(st, 1);
        p->start_time = (uint64_t) sqlite3_column_int64(st, 2);
        snprintf(p->comm, sizeof(p->comm), "%s", comm ? comm : "");
        p->uid = (uid_t) sqlite3_column_int64(st, 6);
        p->gid = (gid_t) sqlite3_column_int64(st, 7);
        p->no_new_privs = sqlite3_column_int(st, 8);
        if (sqlite3_column_type(st, 9) != SQLITE_NULL) {
                TaskMode mode = task_mode_from_string((const char *) sqlite3_column_text(st, 9));
                if (mode < 0)
                        return -EBADMSG;
                process_set_exited_leader(p, mode, (unsigned) sqlite3_column_int64(st, 10));
        }
        if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
                r = process_set_exe(p, (const char *) sqlite3_column_text(st, 4));
                if (r < 0)
                        return r;
        }
        r = process_set_units(p, (const char *) sqlite3_column_text(st, 11), (const char *) sqlite3_column_text(st, 12),
                              (const char *) sqlite3_column_text(st, 13));
        if (r < 0)
                return r;
        return store_argv_from_json(p, (const char *) sqlite3_column_text(st, 5));
}

static int load_processes(Db *s, uint64_t id, Forest *f) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int r = db_prepare(s,
                        "SELECT pid, ppid, start_time, comm, exe, argv, uid, gid, no_new_privs, exited_leader_mode, "
                        "exited_leader_filters, unit, user_unit, machine FROM snapshot_processes WHERE snapshot = ?1 "
                        "ORDER BY pid",
                        &st), rc;
        if (r < 0)
                return r;
        bind_u64(st, 1, id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                if ((r = load_process(st, f)) < 0)
                        return r;
        return rc == SQLITE_DONE ? 0 : db_error(s, rc, "read a snapshot's processes");
}

static int load_threads(Db *s, uint64_t id, Forest *f) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int r = db_prepare(s, "SELECT tid, pid, mode, filter, no_new_privs FROM snapshot_threads WHERE snapshot = ?1 "
                           "ORDER BY pid, tid",
                        &st), rc;
        if (r < 0)
                return r;
        bind_u64(st, 1, id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                Process *p = forest_find_process(f, (pid_t) sqlite3_column_int64(st, 1));
                Task *t;
                if (!p)
                        return -EBADMSG;
                r = process_append_thread(p, (pid_t) sqlite3_column_int64(st, 0), &t);
                if (r < 0)
                        return r;
                t->tgid = p->pid;
                t->mode = task_mode_from_string((const char *) sqlite3_column_text(st, 2));
                t->filter_id = (uint64_t) sqlite3_column_int64(st, 3);
                if (sqlite3_column_type(st, 4) != SQLITE_NULL)
                        task_set_no_new_privs(t, sqlite3_column_int(st, 4) != 0);
                if (t->mode < 0)
                        return -EBADMSG;
        }
        return rc == SQLITE_DONE ? 0 : db_error(s, rc, "read a snapshot's threads");
}

static int load_listeners(Db *s, uint64_t id, Forest *f) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL, *hst = NULL;
        int r = db_prepare(s, "SELECT id, filter FROM snapshot_listeners WHERE snapshot = ?1 ORDER BY id", &st), rc;
        if (r < 0)
                return r;
        r = db_prepare(s, "SELECT pid, fd FROM snapshot_holders WHERE snapshot = ?1 AND listener = ?2 ORDER BY position",
                       &hst);
        if (r < 0)
                return r;
        bind_u64(st, 1, id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                Listener *l;
                r = forest_append_listener(f, (uint64_t) sqlite3_column_int64(st, 0),
                                           (uint64_t) sqlite3_column_int64(st, 1), &l);
                if (r < 0)
                        return r;
                bind_u64(hst, 1, id);
                bind_u64(hst, 2, l->id);
                while ((rc = sqlite3_step(hst)) == SQLITE_ROW)
                        if ((r = listener_append_holder(l, (pid_t) sqlite3_column_int64(hst, 0),
                                                        (int) sqlite3_column_int64(hst, 1))) < 0)
                                return r;
                sqlite3_reset(hst);
                if (rc != SQLITE_DONE)
                        return db_error(s, rc, "read a snapshot's listener holders");
        }
        return rc == SQLITE_DONE ? 0 : db_error(s, rc, "read a snapshot's listeners");
}

/* Snapshot id read into f: its row, then the rows of each of its tables. */
static int load_rows(Db *s, uint64_t id, Forest *f) {
        int r = load_header(s, id, f);
        if (r < 0)
                return r;
        r = load_filters(s, id, f);
        if (r < 0)
                return r;
        r = load_processes(s, id, f);
        if (r < 0)
                return r;
        r = load_threads(s, id, f);
        if (r < 0)
                return r;
        return load_listeners(s, id, f);
}

static int load(Db *s, uint64_t id, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        _cleanup_free_ char *error = NULL;
        if (!f)
                return -ENOMEM;
        int r = load_rows(s, id, f);
        if (r == -EBADMSG)
                return log_error_errno(r, "Snapshot %" PRIu64 " in the state database has invalid rows.", id);
        if (r < 0)
                return r;
        r = forest_link(f, &error);
        if (r < 0)
                return log_error_errno(-EBADMSG, "Snapshot %" PRIu64 " in the state database is inconsistent: %s", id,
                                       error ? error : "?");
        *ret = TAKE_PTR(f);
        return 0;
}

int store_snapshot_load(Store *s, uint64_t id, Forest **ret) {
        Db d = { .db = store_database(s), .store = s };
        return load(&d, id, ret);
}

static void sqlite3_closep(sqlite3 **db) {
        sqlite3_close(*db);
}

int store_snapshot_load_path(const char *path, uint64_t id, Forest **ret) {
        _cleanup_(sqlite3_closep) sqlite3 *db = NULL;
        Db d = { .path = path };
        int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE, NULL);
        d.db = db;
        if (rc == SQLITE_OK)
                rc = sqlite3_busy_timeout(db, 1000);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL); /* one read transaction: one state of the file */
        if (rc != SQLITE_OK)
                return db ? db_error(&d, rc, "open the database for reading") : -ENOMEM;
        int r = load(&d, id, ret);
        (void) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        return r;
}
