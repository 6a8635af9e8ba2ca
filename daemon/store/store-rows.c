/* store-rows.c: the rows of the live tables written one at a time: filters (brought back from
 * history when their id is there), processes and threads, a thread removed, a filter retired */
#include <sqlite3.h>

#include "core/sqlite-util.h"
#include "store/store-rows-internal.h"

/* Filters */

int filter_row_init(FilterRow *row, const Filter *flt, const StoreInstaller *installer) {
        *row = (FilterRow) {
                .id = flt->id,
                .parent_id = flt->parent_id,
                .insns = flt->insns,
                .len = flt->len,
                .log = flt->log,
                .wait_killable_recv = flt->wait_killable_recv,
                .has_listener = flt->has_listener,
                .over_budget = flt->over_budget && !flt->insns,
                .identity = identity_kind_to_string(flt->identity),
                .refs = flt->refs,
                .users = flt->users,
                .installer = installer,
        };
        prog_digest_to_string(flt->digest, row->digest);
        if (row->id == 0 || row->len > PROG_MAX_INSNS || (row->len > 0 && !row->insns && !row->over_budget) ||
            !row->identity)
                return log_error_errno(-EINVAL, "Refusing to store filter %" PRIu64 ": invalid id, length or identity.",
                                       row->id);
        return 0;
}

static void bind_installer(sqlite3_stmt *st, const StoreInstaller *in) {
        if (in && in->tid > 0)
                sqlite3_bind_int64(st, PF_INSTALLER_TID, in->tid);
        else
                sqlite3_bind_null(st, PF_INSTALLER_TID);
        if (in && in->tgid > 0)
                sqlite3_bind_int64(st, PF_INSTALLER_TGID, in->tgid);
        else
                sqlite3_bind_null(st, PF_INSTALLER_TGID);
        bind_text_or_null(st, PF_INSTALLER_COMM, in ? in->comm : NULL);
        bind_text_or_null(st, PF_INSTALLER_EXE, in ? in->exe : NULL);
}

/* What STMT_PUT_FILTER and STMT_TOUCH_FILTER share. */
static void bind_filter_row(Store *s, sqlite3_stmt *st, const FilterRow *f, uint64_t now_usec) {
        bind_u64(st, PF_ID, f->id);
        bind_id_or_null(st, PF_PARENT, f->parent_id);
        sqlite3_bind_int64(st, PF_LENGTH, (sqlite3_int64) f->len);
        sqlite3_bind_text(st, PF_DIGEST, f->digest, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, PF_LOG, f->log);
        sqlite3_bind_int(st, PF_WAIT_KILLABLE_RECV, f->wait_killable_recv);
        sqlite3_bind_int(st, PF_HAS_LISTENER, f->has_listener);
        sqlite3_bind_text(st, PF_IDENTITY, f->identity, -1, SQLITE_STATIC);
        bind_id_or_null(st, PF_REFS, f->refs);
        bind_id_or_null(st, PF_USERS, f->users);
        bind_u64(st, PF_NOW, now_usec);
        sqlite3_bind_int64(st, PF_GENERATION, s->generation);
}

int store_raise_max_filter_id(Store *s, uint64_t id) {
        sqlite3_stmt *st = store_statement(s, STMT_RAISE_MAX_FILTER_ID);

        bind_u64(st, 1, id);
        return store_run(s, st, "record the highest filter id");
}

/* The program in its stored encoding, in s->program: empty for a filter over budget. */
static size_t program_wire_size(Store *s, const FilterRow *f) {
        return f->over_budget ? 0 : prog_to_wire(f->insns, f->len, s->program);
}

/* Returns 1 when the row was written, 0 when its id is in history (nothing written). */
static int store_put_filter_once(Store *s, const FilterRow *f, uint64_t now_usec) {
        sqlite3_stmt *st = store_statement(s, STMT_PUT_FILTER);
        int r;

        bind_filter_row(s, st, f, now_usec);
        sqlite3_bind_blob(st, PF_PROGRAM, s->program, (int) program_wire_size(s, f), SQLITE_STATIC);
        bind_installer(st, f->installer);
        r = store_run(s, st, "store a filter");
        if (r == -ENOENT)
                return store_log_errno(s, LOG_LEVEL_WARNING, r,
                                       "Filter %" PRIu64 " names parent %" PRIu64 ", which is not stored.", f->id,
                                       f->parent_id);
        if (r < 0)
                return r;
        return sqlite3_changes(s->db) > 0;
}

typedef struct ReviveArgs {
        const FilterRow *row;
        uint64_t now_usec;
} ReviveArgs;

static int store_revive_filter_steps(Store *s, const void *arg) {
        const ReviveArgs *a = arg;
        int r = store_run_by_id(s, STMT_REVIVE_FILTER, (int64_t) a->row->id, "bring a filter back from history");

        if (r < 0)
                return r;
        r = store_run_by_id(s, STMT_FORGET_HISTORY_ROW, (int64_t) a->row->id, "delete a history row");
        if (r < 0)
                return r;
        r = store_put_filter_once(s, a->row, a->now_usec);
        if (r < 0)
                return r;
        if (r == 0)
                return store_log_errno(s, LOG_LEVEL_WARNING, -EEXIST,
                                       "Filter %" PRIu64 " is still in history after it was brought back.",
                                       a->row->id);
        return 0;
}

/* A filter whose id is in history was retired while something still held it (events were lost):
 * the same id is the same kernel object, so it comes back, and keeps its first_seen and installer. */
int store_put_filter_row(Store *s, const FilterRow *f, uint64_t now_usec) {
        int r = store_put_filter_once(s, f, now_usec);

        if (r != 0)
                return r < 0 ? r : 0;
        log_info("Filter %" PRIu64 " was retired but is live: bringing it back from history.", f->id);
        return store_atomically(s, store_revive_filter_steps, &(ReviveArgs) { .row = f, .now_usec = now_usec });
}

/* A full scan mostly finds filters that are stored already: then only mark them seen. */
int store_touch_or_put_filter_row(Store *s, const FilterRow *f, uint64_t now_usec) {
        sqlite3_stmt *st = store_statement(s, STMT_TOUCH_FILTER);
        int r;

        bind_filter_row(s, st, f, now_usec);
        sqlite3_bind_int64(st, PF_PROGRAM_SIZE, (sqlite3_int64) (f->over_budget ? 0 : f->len * PROG_INSN_WIRE_SIZE));
        r = store_run(s, st, "mark a filter seen");
        if (r >= 0 && sqlite3_changes(s->db) == 0)
                r = store_put_filter_row(s, f, now_usec);
        return r;
}

int store_put_filter(Store *s, const Filter *flt, const StoreInstaller *installer, uint64_t now_usec) {
        FilterRow row;
        int r = filter_row_init(&row, flt, installer);

        if (r < 0)
                return r;
        r = store_put_filter_row(s, &row, now_usec);
        if (r < 0)
                return r;
        return store_raise_max_filter_id(s, row.id);
}

static int store_check_unused(Store *s, uint64_t id) {
        sqlite3_stmt *st = store_statement(s, STMT_FILTER_USE);
        bool exists, used;
        int r;

        bind_u64(st, 1, id);
        r = store_step_row(s, st, "check whether a filter is in use");
        if (r < 0)
                return r;
        exists = r > 0 && sqlite3_column_int(st, 0);
        used = r > 0 && sqlite3_column_int(st, 1);
        sqlite3_reset(st);
        if (!exists)
                return log_debug_errno(-ENOENT, "Filter %" PRIu64 " is not stored, nothing to retire.", id);
        if (used)
                return store_log_errno(s, LOG_LEVEL_WARNING, -EBUSY,
                                       "Not retiring filter %" PRIu64 ": a task or a child filter uses it.",
                                       id);
        return 0;
}

int store_retire_filter_steps(Store *s, const void *arg) {
        const RetireArgs *a = arg;
        sqlite3_stmt *st = store_statement(s, STMT_ARCHIVE_FILTER);
        int r;

        bind_u64(st, 1, a->id);
        bind_u64(st, 2, a->now_usec);
        r = store_run(s, st, "move a filter to history");
        if (r < 0)
                return r;
        s->archived++; /* an overcount when rolled back: one prune too many */
        st = store_statement(s, STMT_DELETE_FILTER);
        bind_u64(st, 1, a->id);
        return store_run(s, st, "delete a filter"); /* its listeners go with it (ON DELETE CASCADE) */
}

int store_retire_filter(Store *s, uint64_t id, uint64_t now_usec) {
        int r = store_check_unused(s, id);

        if (r < 0)
                return r;
        return store_atomically(s, store_retire_filter_steps, &(RetireArgs) { .id = id, .now_usec = now_usec });
}

/* Processes and tasks */

/* Binds every parameter of STMT_PUT_PROCESS and STMT_TOUCH_PROCESS. */
int store_run_process_row(Store *s, StoreStatement which, const ProcessRow *p) {
        sqlite3_stmt *st = store_statement(s, which);

        sqlite3_bind_int64(st, PP_PID, p->pid);
        sqlite3_bind_int64(st, PP_PPID, p->ppid > 0 ? p->ppid : 0);
        bind_id_or_null(st, PP_START_TIME, p->start_time);
        sqlite3_bind_text(st, PP_COMM, p->comm, -1, SQLITE_STATIC);
        bind_text_or_null(st, PP_EXE, p->exe);
        sqlite3_bind_int64(st, PP_UID, p->uid);
        sqlite3_bind_int64(st, PP_GID, p->gid);
        sqlite3_bind_int(st, PP_NO_NEW_PRIVS, p->no_new_privs);
        sqlite3_bind_int64(st, PP_GENERATION, s->generation);
        return store_run(s, st, "store a process");
}

int task_row_init(TaskRow *row, pid_t tid, pid_t tgid, uint64_t start_time, TaskMode mode, uint64_t filter_id) {
        *row = (TaskRow) {
                .tid = tid,
                .tgid = tgid,
                .start_time = start_time,
                .mode = task_mode_to_string(mode),
                .filter_id = filter_id,
        };
        if (tid <= 0 || tgid <= 0 || !row->mode)
                return log_error_errno(-EINVAL, "Refusing to store thread %d of process %d: invalid ids or mode %d.",
                                       tid, tgid, mode);
        return 0;
}

/* Binds every parameter of STMT_PUT_TASK and STMT_TOUCH_TASK. */
int store_run_task_row(Store *s, StoreStatement which, const TaskRow *t, uint64_t now_usec) {
        sqlite3_stmt *st = store_statement(s, which);
        int r;

        sqlite3_bind_int64(st, PT_TID, t->tid);
        sqlite3_bind_int64(st, PT_TGID, t->tgid);
        bind_u64(st, PT_START_TIME, t->start_time);
        sqlite3_bind_text(st, PT_MODE, t->mode, -1, SQLITE_STATIC);
        bind_id_or_null(st, PT_FILTER, t->filter_id);
        bind_u64(st, PT_NOW, now_usec);
        sqlite3_bind_int64(st, PT_GENERATION, s->generation);
        r = store_run(s, st, "store a thread");
        if (r == -ENOENT)
                return store_log_errno(s, LOG_LEVEL_WARNING, r,
                                       "Thread %d names filter %" PRIu64 ", which is not stored.", t->tid,
                                       t->filter_id);
        return r;
}

void process_row_init(ProcessRow *row, const Process *p) {
        *row = (ProcessRow) {
                .pid = p->pid,
                .ppid = p->ppid,
                .start_time = p->start_time,
                .comm = p->comm,
                .exe = p->exe,
                .uid = p->uid,
                .gid = p->gid,
                .no_new_privs = p->no_new_privs,
        };
}

int store_put_process(Store *s, const Process *p) {
        ProcessRow row;

        process_row_init(&row, p);
        return store_run_process_row(s, STMT_PUT_PROCESS, &row);
}

int store_put_thread(Store *s, const Process *p, const Task *t, uint64_t now_usec) {
        TaskRow row;
        int r = task_row_init(&row, t->tid, p->pid, t->start_time, t->mode, t->filter_id);

        if (r < 0)
                return r;
        return store_run_task_row(s, STMT_PUT_TASK, &row, now_usec);
}

/* Delete the thread, and its process once no thread is left. Returns 1 if it was stored. */
static int store_remove_task_steps(Store *s, const void *arg) {
        pid_t tid = *(const pid_t *) arg;
        sqlite3_stmt *st = store_statement(s, STMT_REMOVE_TASK);
        int64_t tgid;
        int r;

        sqlite3_bind_int64(st, 1, tid);
        r = store_step_row(s, st, "delete a thread");
        if (r <= 0)
                return r;
        tgid = sqlite3_column_int64(st, 0);
        r = store_run(s, st, "delete a thread"); /* finish the DELETE ... RETURNING */
        if (r < 0)
                return r;

        st = store_statement(s, STMT_REMOVE_EMPTY_PROCESS);
        sqlite3_bind_int64(st, 1, tgid);
        r = store_run(s, st, "delete an empty process");
        return r < 0 ? r : 1;
}

int store_remove_task(Store *s, pid_t tid) {
        return store_atomically(s, store_remove_task_steps, &tid);
}

/* Full reconciliation: mark and sweep. Every row of the forest is stamped with a new
 * generation, either by a cheap "touch" when the stored row is equal, or by an upsert; rows left
 * with an older generation are gone. */
