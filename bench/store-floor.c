/* store-floor.c: the store figure's floor: the same rows in bare tables */
#include <time.h>

#include "bench.h"
#include "bench-sqlite.h"
#include "store-floor.h"

#define SYNTHETIC_TID_BASE (1 << 22) /* above PID_MAX_LIMIT: never a real thread */
#define FLOOR_FILE_NAME "floor.db"

static const char floor_schema[] =
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768; "
        "PRAGMA temp_store = MEMORY;"
        "CREATE TABLE filters (id INTEGER PRIMARY KEY, parent, length, digest, program, log, "
        "wait_killable_recv, has_listener, identity, refs, users, first_seen_usec, last_seen_usec, "
        "installer_tid, installer_tgid, installer_comm, installer_exe, generation);"
        "CREATE TABLE processes (pid INTEGER PRIMARY KEY, ppid, start_time, comm, exe, uid, gid, "
        "no_new_privs, generation);"
        "CREATE TABLE tasks (tid INTEGER PRIMARY KEY, tgid, start_time, mode, filter, last_seen_usec, "
        "generation);";
static const char floor_insert_filter[] =
        "INSERT INTO filters VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, NULL, NULL, NULL, "
        "NULL, 1)";
static const char floor_insert_process[] = "INSERT INTO processes VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1)";
static const char floor_insert_task[] = "INSERT INTO tasks VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1)";

/* A filter row of the floor: what the store binds, encoded beforehand. */
typedef struct FloorFilter {
        const Filter *filter;
        char digest[PROG_DIGEST_STRING_MAX];
        uint8_t *program;
        size_t program_size;
} FloorFilter;

typedef struct FloorRows {
        FloorFilter *filters;
        size_t n_filters;
} FloorRows;

static void floor_rows_free(FloorRows *rows) {
        for (size_t i = 0; i < rows->n_filters; i++)
                free(rows->filters[i].program);
        free(rows->filters);
        *rows = (FloorRows) {};
}

/* The encoding the store uses (schema/state-001.sql): code le16, jt, jf, k le32. */
static int floor_rows_prepare(FloorRows *rows, const Forest *f) {
        rows->filters = calloc(f->n_filters ?: 1, sizeof(FloorFilter));
        if (!rows->filters)
                return log_oom();
        rows->n_filters = f->n_filters;
        for (size_t i = 0; i < f->n_filters; i++) {
                FloorFilter *x = &rows->filters[i];
                const Filter *flt = f->filters[i];
                x->filter = flt;
                prog_digest_to_string(flt->digest, x->digest);
                x->program_size = flt->len * 8;
                x->program = malloc(x->program_size ?: 1);
                if (!x->program)
                        return log_oom();
                for (size_t k = 0; k < flt->len; k++) {
                        uint8_t *o = x->program + k * 8;
                        o[0] = (uint8_t) flt->insns[k].code;
                        o[1] = (uint8_t) (flt->insns[k].code >> 8);
                        o[2] = flt->insns[k].jt;
                        o[3] = flt->insns[k].jf;
                        for (int j = 0; j < 4; j++)
                                o[4 + j] = (uint8_t) (flt->insns[k].k >> (8 * j));
                }
        }
        return 0;
}

static int floor_step(sqlite3 *db, sqlite3_stmt *st) {
        return bench_sqlite_step(db, st, "insert a floor row");
}

static int floor_insert_filters(const FloorRows *rows, sqlite3 *db, sqlite3_stmt *st, uint64_t now) {
        for (size_t i = 0; i < rows->n_filters; i++) {
                const FloorFilter *x = &rows->filters[i];
                const Filter *flt = x->filter;
                sqlite3_bind_int64(st, 1, (sqlite3_int64) flt->id);
                if (flt->parent_id)
                        sqlite3_bind_int64(st, 2, (sqlite3_int64) flt->parent_id);
                else
                        sqlite3_bind_null(st, 2);
                sqlite3_bind_int64(st, 3, (sqlite3_int64) flt->len);
                sqlite3_bind_text(st, 4, x->digest, -1, SQLITE_STATIC);
                sqlite3_bind_blob(st, 5, x->program, (int) x->program_size, SQLITE_STATIC);
                sqlite3_bind_int(st, 6, flt->log);
                sqlite3_bind_int(st, 7, flt->wait_killable_recv);
                sqlite3_bind_int(st, 8, flt->has_listener);
                sqlite3_bind_text(st, 9, identity_kind_to_string(flt->identity), -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 10, flt->refs);
                sqlite3_bind_int64(st, 11, flt->users);
                sqlite3_bind_int64(st, 12, (sqlite3_int64) now);
                int r = floor_step(db, st);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int floor_insert_processes(sqlite3 *db, sqlite3_stmt *pst, sqlite3_stmt *tst, const Forest *f,
                                  uint64_t now) {
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                sqlite3_bind_int64(pst, 1, p->pid);
                sqlite3_bind_int64(pst, 2, p->ppid);
                sqlite3_bind_int64(pst, 3, (sqlite3_int64) p->start_time);
                sqlite3_bind_text(pst, 4, p->comm, -1, SQLITE_STATIC);
                if (p->exe)
                        sqlite3_bind_text(pst, 5, p->exe, -1, SQLITE_STATIC);
                else
                        sqlite3_bind_null(pst, 5);
                sqlite3_bind_int64(pst, 6, p->uid);
                sqlite3_bind_int64(pst, 7, p->gid);
                sqlite3_bind_int(pst, 8, p->no_new_privs);
                int r = floor_step(db, pst);
                for (size_t j = 0; r >= 0 && j < p->n_threads; j++) {
                        const Task *t = &p->threads[j];
                        sqlite3_bind_int64(tst, 1, t->tid);
                        sqlite3_bind_int64(tst, 2, p->pid);
                        sqlite3_bind_int64(tst, 3, (sqlite3_int64) t->start_time);
                        sqlite3_bind_text(tst, 4, task_mode_to_string(t->mode), -1, SQLITE_STATIC);
                        if (t->filter_id)
                                sqlite3_bind_int64(tst, 5, (sqlite3_int64) t->filter_id);
                        else
                                sqlite3_bind_null(tst, 5);
                        sqlite3_bind_int64(tst, 6, (sqlite3_int64) now);
                        r = floor_step(db, tst);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One-row transactions: the floor of an incremental batch. */
static int floor_batches(sqlite3 *db, sqlite3_stmt *tst, StoreFloorResult *res) {
        for (size_t i = 0; i < res->n_batches; i++) {
                uint64_t start = now_nsec();
                int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        return bench_sqlite_fail(db, rc, "begin");
                sqlite3_bind_int64(tst, 1, SYNTHETIC_TID_BASE + (sqlite3_int64) i);
                sqlite3_bind_int64(tst, 2, 1);
                sqlite3_bind_int64(tst, 3, 1);
                sqlite3_bind_text(tst, 4, "filter", -1, SQLITE_STATIC);
                sqlite3_bind_int64(tst, 5, 1);
                sqlite3_bind_int64(tst, 6, 1);
                int r = floor_step(db, tst);
                rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
                if (r < 0 || rc != SQLITE_OK)
                        return r < 0 ? r : bench_sqlite_fail(db, rc, "commit");
                res->batch_usec[i] = usec_since(start);
        }
        return 0;
}

static int floor_fill(const FloorRows *rows, sqlite3 *db, const Forest *f, StoreFloorResult *res) {
        _cleanup_(bench_sqlite_finalizep) sqlite3_stmt *fst = NULL, *pst = NULL, *tst = NULL;
        uint64_t now = now_usec(CLOCK_REALTIME), start;
        int rc, r;

        rc = sqlite3_exec(db, floor_schema, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return bench_sqlite_fail(db, rc, "create the floor's tables");
        if (sqlite3_prepare_v2(db, floor_insert_filter, -1, &fst, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, floor_insert_process, -1, &pst, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, floor_insert_task, -1, &tst, NULL) != SQLITE_OK)
                return bench_sqlite_fail(db, SQLITE_ERROR, "prepare the floor's statements");

        start = now_nsec();
        rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return bench_sqlite_fail(db, rc, "begin");
        r = floor_insert_filters(rows, db, fst, now);
        if (r >= 0)
                r = floor_insert_processes(db, pst, tst, f, now);
        rc = sqlite3_exec(db, r >= 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
        if (r < 0 || rc != SQLITE_OK)
                return r < 0 ? r : bench_sqlite_fail(db, rc, "commit");
        res->fill_usec = usec_since(start);
        return floor_batches(db, tst, res);
}

int store_floor_run(const Forest *f, StoreFloorResult *res) {
        _cleanup_(floor_rows_free) FloorRows rows = {};
        _cleanup_free_ char *dir = NULL, *path = NULL;
        int r = floor_rows_prepare(&rows, f);

        if (r >= 0)
                r = bench_mkdtemp("floor", &dir);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/%s", dir, FLOOR_FILE_NAME) < 0) {
                path = NULL;
                r = log_oom();
        } else {
                _cleanup_(bench_sqlite_closep) sqlite3 *db = NULL;
                r = bench_sqlite_open(path, &db);
                if (r >= 0)
                        r = floor_fill(&rows, db, f, res);
                if (r >= 0)
                        r = bench_sqlite_size_after_checkpoint(db, &res->bytes);
        }
        bench_rm_rf(dir);
        return r;
}
