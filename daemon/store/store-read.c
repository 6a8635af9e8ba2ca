/* store-read.c: what the state database says: the checks of a file before it is used (a sectree
 * database, of a schema this build knows), and the live tables read back */
#include <sqlite3.h>

#include "core/sqlite-util.h"
#include "store/state-migrations.h"
#include "store/store-db-internal.h"
#include "store/store-read.h"

static int store_header_error(Store *s, int rc) {
        if ((rc & 0xff) == SQLITE_NOTADB)
                return log_error_errno(-EMEDIUMTYPE, "%s is not an SQLite database, refusing to touch it.", s->path);
        return store_error(s, rc, "read the database header");
}

/* A one-shot statement (not kept): reads the header fields without writing anything. */
int store_read_header(Store *s, StoreHeader *ret) {
        static const char sql[] =
                "SELECT (SELECT application_id FROM pragma_application_id), "
                "(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)";
        sqlite3_stmt *st = NULL;
        int r, rc;

        rc = sqlite3_prepare_v3(s->db, sql, -1, 0, &st, NULL);
        if (rc != SQLITE_OK)
                return store_header_error(s, rc);
        rc = sqlite3_step(st);
        r = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : store_header_error(s, rc);
        if (r > 0) {
                *ret = (StoreHeader) {
                        .application_id = sqlite3_column_int64(st, 0),
                        .user_version = sqlite3_column_int64(st, 1),
                        .n_objects = sqlite3_column_int64(st, 2),
                };
                r = 0;
        } else if (r == 0)
                r = log_error_errno(-EIO, "Failed to read the database header of %s: no row.", s->path);
        sqlite3_finalize(st);
        return r;
}

int store_check_header(Store *s, const StoreHeader *h) {
        bool fresh = h->application_id == 0 && h->user_version == 0 && h->n_objects == 0;

        if (h->application_id != STORE_APPLICATION_ID && !fresh)
                return log_error_errno(-EMEDIUMTYPE,
                                       "%s is not a sectree state database (application_id 0x%08" PRIx32
                                       ", expected 0x%08x), refusing to touch it.",
                                       s->path, (uint32_t) h->application_id, STORE_APPLICATION_ID);
        if (h->user_version > STATE_MIGRATIONS_COUNT)
                return log_error_errno(-EPROTONOSUPPORT,
                                       "%s has schema version %" PRIi64 ", newer than this sectreed knows (%d).",
                                       s->path, h->user_version, STATE_MIGRATIONS_COUNT);
        if (h->user_version < 0)
                return log_error_errno(-EPROTONOSUPPORT, "%s has an invalid schema version %" PRIi64 ".",
                                       s->path, h->user_version);
        return 0;
}

int store_check_format(Store *s) {
        StoreHeader h;
        int r = store_read_header(s, &h);

        if (r < 0)
                return r;
        return store_check_header(s, &h);
}


int store_load_generation(Store *s) {
        sqlite3_stmt *st = NULL;
        int r, rc;

        rc = sqlite3_prepare_v3(s->db, "SELECT generation FROM meta", -1, 0, &st, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "read the generation");
        r = store_step_row(s, st, "read the generation");
        if (r > 0)
                s->generation = sqlite3_column_int64(st, 0);
        else if (r == 0)
                r = log_error_errno(-EBADMSG, "%s has no meta row.", s->path);
        sqlite3_finalize(st);
        return r < 0 ? r : 0;
}

int store_max_filter_id(Store *s, uint64_t *ret) {
        sqlite3_stmt *st = store_statement(s, STMT_MAX_FILTER_ID);
        int r = store_step_row(s, st, "read the highest filter id");

        if (r < 0)
                return r;
        *ret = r > 0 ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        return 0;
}

int store_get_installer(Store *s, uint64_t id, StoreInstalled *ret) {
        sqlite3_stmt *st = store_statement(s, STMT_GET_INSTALLER);
        sqlite3_bind_int64(st, 1, (sqlite3_int64) id);
        int r = store_step_row(s, st, "read a filter's installer");
        if (r <= 0)
                return r;
        const char *comm = (const char *) sqlite3_column_text(st, 2), *exe = (const char *) sqlite3_column_text(st, 3);
        *ret = (StoreInstalled) {
                .tid = (pid_t) sqlite3_column_int64(st, 0),
                .tgid = (pid_t) sqlite3_column_int64(st, 1),
                .comm = strdup(comm ?: ""),
                .exe = strdup(exe ?: ""),
                .usec = (uint64_t) sqlite3_column_int64(st, 4),
        };
        sqlite3_reset(st);
        if (!ret->comm || !ret->exe) {
                store_installed_done(ret);
                return -ENOMEM;
        }
        return 1;
}

void store_installed_done(StoreInstalled *x) {
        free(x->comm);
        free(x->exe);
        x->comm = x->exe = NULL;
}

/* Reading the live tables back */

static int store_query(Store *s, const char *sql, sqlite3_stmt **ret) {
        int rc = sqlite3_prepare_v3(s->db, sql, -1, 0, ret, NULL);
        return rc == SQLITE_OK ? 0 : store_error(s, rc, "prepare a query");
}

static const char *column_text(sqlite3_stmt *st, int i) {
        return (const char *) sqlite3_column_text(st, i);
}

static int load_filter(Forest *f, sqlite3_stmt *st) {
        uint8_t digest[PROG_DIGEST_SIZE];
        int n = sqlite3_column_bytes(st, 2);
        size_t len = (size_t) n / PROG_INSN_WIRE_SIZE;
        /* An empty program of a filter with instructions: they were over budget, not kept. */
        bool over_budget = n == 0 && sqlite3_column_int64(st, 8) > 0;
        _cleanup_free_ struct sock_filter *insns = calloc(len + 1, sizeof(struct sock_filter));
        Filter *x;

        if (over_budget)
                len = (size_t) sqlite3_column_int64(st, 8);
        if (!insns)
                return -ENOMEM;
        if (len > PROG_MAX_INSNS || prog_digest_from_string(column_text(st, 7), digest) < 0)
                return -EBADMSG;
        if (!over_budget)
                prog_from_wire(sqlite3_column_blob(st, 2), len, insns);
        int r = forest_add_filter_with_digest(f, (uint64_t) sqlite3_column_int64(st, 0),
                                              (uint64_t) sqlite3_column_int64(st, 1), over_budget ? NULL : insns,
                                              len, digest, &x);
        if (r < 0)
                return r;
        x->over_budget = over_budget;
        x->log = sqlite3_column_int(st, 3);
        x->wait_killable_recv = sqlite3_column_int(st, 4);
        x->has_listener = sqlite3_column_int(st, 5);
        x->identity = identity_kind_from_string(column_text(st, 6));
        return x->identity < 0 ? -EBADMSG : 0;
}

static int load_process(Forest *f, sqlite3_stmt *st) {
        Process *p;
        int r = forest_add_process(f, (pid_t) sqlite3_column_int64(st, 0), &p);
        if (r < 0)
                return r;
        p->ppid = (pid_t) sqlite3_column_int64(st, 1);
        p->start_time = (uint64_t) sqlite3_column_int64(st, 2);
        snprintf(p->comm, sizeof(p->comm), "%s", column_text(st, 3) ?: "");
        p->uid = (uid_t) sqlite3_column_int64(st, 5);
        p->gid = (gid_t) sqlite3_column_int64(st, 6);
        p->no_new_privs = sqlite3_column_int(st, 7);
        return process_set_exe(p, column_text(st, 4));
}

static int load_task(Forest *f, sqlite3_stmt *st) {
        Process *p = forest_find_process(f, (pid_t) sqlite3_column_int64(st, 1));
        Task *t;
        if (!p)
                return -EBADMSG;
        int r = process_append_thread(p, (pid_t) sqlite3_column_int64(st, 0), &t);
        if (r < 0)
                return r;
        t->start_time = (uint64_t) sqlite3_column_int64(st, 2);
        t->mode = task_mode_from_string(column_text(st, 3));
        t->filter_id = (uint64_t) sqlite3_column_int64(st, 4);
        return t->mode < 0 ? -EBADMSG : 0;
}

static int load_listener(Forest *f, sqlite3_stmt *st) {
        Listener *l;
        int r = forest_append_listener(f, (uint64_t) sqlite3_column_int64(st, 0), (uint64_t) sqlite3_column_int64(st, 1), &l);
        if (r < 0)
                return r;
        l->identity = identity_kind_from_string(column_text(st, 2));
        return l->identity < 0 ? -EBADMSG : 0;
}

static int load_holder(Forest *f, sqlite3_stmt *st) {
        Listener *l = forest_find_listener(f, (uint64_t) sqlite3_column_int64(st, 0));
        return l ? listener_append_holder(l, (pid_t) sqlite3_column_int64(st, 1), sqlite3_column_int(st, 2)) : -EBADMSG;
}

static int store_load_rows(Store *s, Forest *f, const char *sql, int (*load)(Forest *f, sqlite3_stmt *st)) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_query(s, sql, &st);
        while (r >= 0 && (r = store_step_row(s, st, "read the live state")) > 0)
                if ((r = load(f, st)) < 0)
                        return store_log_errno(s, LOG_LEVEL_ERR, r,
                                               "Failed to read the live state of %s: a row is invalid: %m", s->path);
        return r;
}

static int load_live(Store *s, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        int r;

        if (!f)
                return store_log_errno(s, LOG_LEVEL_ERR, -ENOMEM, "Out of memory.");
        r = store_load_rows(s, f, "SELECT id, coalesce(parent, 0), program, log, wait_killable_recv, has_listener, "
                                  "identity, digest, length FROM filters", load_filter);
        if (r < 0)
                return r;
        r = store_load_rows(s, f, "SELECT pid, ppid, coalesce(start_time, 0), comm, exe, uid, gid, no_new_privs "
                                  "FROM processes", load_process);
        if (r < 0)
                return r;
        r = store_load_rows(s, f, "SELECT tid, tgid, start_time, mode, coalesce(filter, 0) FROM tasks", load_task);
        if (r < 0)
                return r;
        r = store_load_rows(s, f, "SELECT id, filter, identity FROM listeners", load_listener);
        if (r < 0)
                return r;
        r = store_load_rows(s, f, "SELECT listener, pid, fd FROM listener_holders", load_holder);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

/* Its callers (the manager) log every failure, where they know what follows from it. */
int store_load_live(Store *s, Forest **ret) {
        s->caller_logs++;
        int r = load_live(s, ret);
        s->caller_logs--;
        return r;
}
