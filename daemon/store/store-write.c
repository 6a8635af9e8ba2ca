/* store-write.c: the live tables made equal to the daemon's view: a full pass by mark and sweep
 * (rows stamped with a new generation, the others swept, history pruned) or by its differences
 * from the last one, and a live batch's changes, each in one transaction */
#include <sqlite3.h>

#include "core/sqlite-util.h"
#include "store/store-rows-internal.h"
#include "store/store-write.h"

static int store_next_generation(Store *s, uint64_t now_usec) {
        sqlite3_stmt *st = store_statement(s, STMT_NEXT_GENERATION);
        int r;

        bind_u64(st, 1, now_usec);
        r = store_step_row(s, st, "start a new generation");
        if (r < 0)
                return r;
        if (r == 0)
                return store_log_errno(s, LOG_LEVEL_ERR, -EBADMSG, "%s has no meta row.", s->path);
        s->generation = sqlite3_column_int64(st, 0);
        return store_run(s, st, "start a new generation");
}

static int store_reconcile_filters(Store *s, const Forest *f, uint64_t now_usec) {
        uint64_t max_id = 0;

        for (size_t i = 0; i < f->n_filters; i++) {
                FilterRow row;
                int r = filter_row_init(&row, f->filters[i], NULL);
                if (r < 0)
                        return r;
                r = store_touch_or_put_filter_row(s, &row, now_usec);
                if (r < 0)
                        return r;
                if (row.id > max_id)
                        max_id = row.id;
        }
        return store_raise_max_filter_id(s, max_id);
}

static int store_reconcile_process(Store *s, const Process *p, uint64_t now_usec) {
        ProcessRow prow;
        int r;

        process_row_init(&prow, p);
        r = store_run_process_row(s, STMT_TOUCH_PROCESS, &prow);
        if (r >= 0 && sqlite3_changes(s->db) == 0)
                r = store_run_process_row(s, STMT_PUT_PROCESS, &prow);
        if (r < 0)
                return r;

        for (size_t i = 0; i < p->n_threads; i++) {
                const Task *t = &p->threads[i];
                TaskRow trow;
                r = task_row_init(&trow, t->tid, p->pid, t->start_time, t->mode, t->filter_id);
                if (r < 0)
                        return r;
                r = store_run_task_row(s, STMT_TOUCH_TASK, &trow, now_usec);
                if (r >= 0 && sqlite3_changes(s->db) == 0)
                        r = store_run_task_row(s, STMT_PUT_TASK, &trow, now_usec);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int store_reconcile_processes(Store *s, const Forest *f, uint64_t now_usec) {
        for (size_t i = 0; i < f->n_processes; i++) {
                int r = store_reconcile_process(s, f->processes[i], now_usec);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int store_put_listener(Store *s, const Listener *l) {
        sqlite3_stmt *st = store_statement(s, STMT_PUT_LISTENER);
        const char *identity = identity_kind_to_string(l->identity);
        int r;

        if (!identity)
                return store_log_errno(s, LOG_LEVEL_ERR, -EINVAL,
                                       "Refusing to store listener %" PRIu64 ": invalid identity.", l->id);
        bind_u64(st, 1, l->id);
        bind_u64(st, 2, l->filter_id);
        sqlite3_bind_text(st, 3, identity, -1, SQLITE_STATIC);
        r = store_run(s, st, "store a listener");
        if (r < 0)
                return r;

        st = store_statement(s, STMT_PUT_HOLDER);
        for (size_t i = 0; i < l->n_holders; i++) {
                bind_u64(st, 1, l->id);
                sqlite3_bind_int64(st, 2, l->holders[i].pid);
                sqlite3_bind_int(st, 3, l->holders[i].fd);
                r = store_run(s, st, "store a listener holder");
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Listener ids are local to a scan: the tables are rewritten, not merged. */
static int store_reconcile_listeners(Store *s, const Forest *f) {
        int r;

        r = store_run_plain(s, STMT_DELETE_HOLDERS, "delete the listener holders");
        if (r < 0)
                return r;
        r = store_run_plain(s, STMT_DELETE_LISTENERS, "delete the listeners");
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_listeners; i++) {
                r = store_put_listener(s, f->listeners[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int store_sweep_statement(Store *s, StoreStatement which, uint64_t now_usec, const char *what) {
        sqlite3_stmt *st = store_statement(s, which);

        sqlite3_bind_int64(st, 1, s->generation);
        if (which == STMT_ARCHIVE_STALE_FILTERS)
                bind_u64(st, 2, now_usec);
        return store_run(s, st, what);
}

/* Rows the new generation did not touch are gone: threads, then processes, then filters (into
 * history). Returns the number of filters gone. */
static int store_sweep(Store *s, uint64_t now_usec) {
        int r, gone;

        r = store_sweep_statement(s, STMT_SWEEP_TASKS, now_usec, "delete gone threads");
        if (r < 0)
                return r;
        r = store_sweep_statement(s, STMT_SWEEP_PROCESSES, now_usec, "delete gone processes");
        if (r < 0)
                return r;
        r = store_sweep_statement(s, STMT_ARCHIVE_STALE_FILTERS, now_usec, "move gone filters to history");
        if (r < 0)
                return r;
        gone = sqlite3_changes(s->db);
        r = store_sweep_statement(s, STMT_SWEEP_FILTERS, now_usec, "delete gone filters");
        return r < 0 ? r : gone;
}

/* Foreign keys are not enforced row by row during a reconciliation (that would triple its
 * cost); instead the whole result is checked once before it is committed. */
static int store_check_foreign_keys(Store *s) {
        sqlite3_stmt *st = store_statement(s, STMT_FOREIGN_KEY_CHECK);
        int r = store_step_row(s, st, "check foreign keys");

        if (r <= 0)
                return r;
        r = store_log_errno(s, LOG_LEVEL_ERR, -ENOENT,
                            "Refusing to store the scan: %s row %" PRIi64 " refers to a missing %s row.",
                            (const char *) sqlite3_column_text(st, 0), (int64_t) sqlite3_column_int64(st, 1),
                            (const char *) sqlite3_column_text(st, 2));
        sqlite3_reset(st);
        return r;
}

/* Keep the newest history_limit rows of history, a slice at a time: at most
 * STORE_PRUNE_MAX_ROWS rows go in one transaction, so that none grows with what piled up (the
 * pages a transaction dirties stay in memory until its commit, and the loop waits for it). What
 * is left over is pruned by the next transactions. */
static int store_prune_history(Store *s) {
        int r = store_run_plain(s, STMT_REMEMBER_HISTORY_IDS, "remember the ids in history");
        if (r < 0)
                return r;
        sqlite3_stmt *st = store_statement(s, STMT_PRUNE_HISTORY);
        bind_u64(st, 1, s->history_limit);
        bind_u64(st, 2, STORE_PRUNE_MAX_ROWS);
        r = store_run(s, st, "prune history");
        if (r < 0)
                return r;
        int n = sqlite3_changes(s->db);
        if (n > 0)
                log_debug("Pruned %d filters from history (it keeps %" PRIu64 ").", n, s->history_limit);
        s->archived = (uint64_t) n >= STORE_PRUNE_MAX_ROWS ? STORE_PRUNE_SLICE : 0; /* more next time */
        return 0;
}

void store_set_history_limit(Store *s, uint64_t rows) {
        s->history_limit = rows;
}

static int store_reconcile(Store *s, const Forest *f, uint64_t now_usec) {
        int r, gone;

        r = store_next_generation(s, now_usec);
        if (r < 0)
                return r;
        r = store_reconcile_filters(s, f, now_usec);
        if (r < 0)
                return r;
        r = store_reconcile_processes(s, f, now_usec);
        if (r < 0)
                return r;
        r = store_reconcile_listeners(s, f);
        if (r < 0)
                return r;
        gone = store_sweep(s, now_usec);
        if (gone < 0)
                return gone;
        r = store_prune_history(s);
        if (r < 0)
                return r;
        r = store_check_foreign_keys(s);
        if (r < 0)
                return r;
        log_debug("Stored %zu filters (%d gone), %zu processes, %zu threads, %zu listeners in %s.", f->n_filters, gone,
                  f->n_processes, f->n_tasks, f->n_listeners, s->path);
        return 0;
}

typedef int (*PassSteps)(Store *s, const Forest *old, const Forest *f, uint64_t now_usec);

/* Inside the transaction: the steps, then the commit. */
static int store_pass_steps_commit(Store *s, PassSteps steps, const Forest *old, const Forest *f, uint64_t now_usec) {
        int r = steps(s, old, f, now_usec);
        if (r < 0)
                return r;
        return store_commit(s);
}

/* A full pass's writes in one transaction: rolled back on failure, with the generation it started
 * as it was. */
static int store_pass_transaction(Store *s, PassSteps steps, const Forest *old, const Forest *f, uint64_t now_usec) {
        int64_t generation = s->generation;
        int r = store_begin(s);

        if (r < 0)
                return r;
        r = store_pass_steps_commit(s, steps, old, f, now_usec);
        if (r < 0) {
                store_rollback(s);
                s->generation = generation;
        }
        return r;
}

static int store_reconcile_steps(Store *s, const Forest *old, const Forest *f, uint64_t now_usec) {
        return store_reconcile(s, f, now_usec);
}

static int store_replace_all_transaction(Store *s, const Forest *f, uint64_t now_usec) {
        return store_pass_transaction(s, store_reconcile_steps, NULL, f, now_usec);
}

int store_replace_all(Store *s, const Forest *f, uint64_t now_usec) {
        int r, k;

        if (!f->linked)
                return store_log_errno(s, LOG_LEVEL_ERR, -EINVAL, "Refusing to store a forest that is not linked.");
        if (!sqlite3_get_autocommit(s->db))
                return store_log_errno(s, LOG_LEVEL_ERR, -EBUSY,
                                       "Refusing to replace %s inside an open batch.", s->path);

        r = store_enforce_foreign_keys(s, false);
        if (r < 0)
                return r;
        r = store_replace_all_transaction(s, f, now_usec);
        k = store_enforce_foreign_keys(s, true);
        return r < 0 ? r : k;
}

/* Batches: what a live batch changed, net of what it changed back */

/* The installer the kernel named; an inferred filter's is not known. */
static int store_put_attached(Store *s, const LiveChange *x, uint64_t now_usec) {
        StoreInstaller in = { .tid = x->tid, .tgid = x->tgid, .comm = x->comm, .exe = x->installer_exe };
        bool exact = x->filter->identity == IDENTITY_EXACT;

        return store_put_filter(s, x->filter, exact ? &in : NULL, now_usec);
}

typedef struct Touched {
        Hashmap threads;   /* tid -> (void *) tgid of its last change */
        Hashmap processes; /* tgid -> (void *) 1 */
} Touched;

static void touched_deinit(Touched *t) {
        hashmap_deinit(&t->threads);
        hashmap_deinit(&t->processes);
}

static int touched_collect(Touched *t, const LiveChanges *c) {
        for (size_t i = 0; i < c->n; i++) {
                const LiveChange *x = &c->changes[i];
                int r = 0;
                switch (x->type) {
                case LIVE_TASK_ADDED:
                case LIVE_TASK_UPDATED:
                case LIVE_TASK_EXITED:
                        r = hashmap_replace(&t->threads, (uint64_t) x->tid, (void *) (uintptr_t) x->tgid);
                        break;
                case LIVE_PROCESS_ADDED:
                case LIVE_PROCESS_UPDATED:
                case LIVE_PROCESS_REMOVED:
                        r = hashmap_replace(&t->processes, (uint64_t) x->tgid, (void *) 1);
                        break;
                default:
                        break;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static const Task *live_thread(const Forest *live, pid_t tgid, pid_t tid) {
        return process_find_thread(forest_find_process(live, tgid), tid);
}

/* Threads gone: their rows, and their process's once it has none left. */
static int store_write_removals(Store *s, const Forest *live, const Touched *t) {
        uint64_t tid;
        void *tgid;
        for (size_t i = 0; hashmap_next(&t->threads, &i, &tid, &tgid);)
                if (!live_thread(live, (pid_t) (uintptr_t) tgid, (pid_t) tid)) {
                        int r = store_remove_task(s, (pid_t) tid);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Processes, then threads, as the live forest has them now. A thread's process row is written too:
 * removing another thread may have taken it. */
static int store_write_puts(Store *s, const Forest *live, Touched *t, uint64_t now_usec) {
        uint64_t key;
        void *value;
        int r;

        for (size_t i = 0; hashmap_next(&t->threads, &i, &key, &value);)
                if (live_thread(live, (pid_t) (uintptr_t) value, (pid_t) key) &&
                    (r = hashmap_replace(&t->processes, (uint64_t) (uintptr_t) value, (void *) 1)) < 0)
                        return r;
        for (size_t i = 0; hashmap_next(&t->processes, &i, &key, NULL);) {
                const Process *p = forest_find_process(live, (pid_t) key);
                if (p && (r = store_put_process(s, p)) < 0)
                        return r;
        }
        for (size_t i = 0; hashmap_next(&t->threads, &i, &key, &value);) {
                const Process *p = forest_find_process(live, (pid_t) (uintptr_t) value);
                const Task *th = process_find_thread(p, (pid_t) key);
                if (th && (r = store_put_thread(s, p, th, now_usec)) < 0)
                        return r;
        }
        return 0;
}

/* Listeners that events made, changed or ended: their filters' flags, and the listener tables as
 * the live forest has them (a few rows: rewritten whole). */
static int store_write_listeners(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec) {
        bool any = false;
        for (size_t i = 0; i < c->n; i++) {
                if (c->changes[i].type != LIVE_LISTENER_CHANGED)
                        continue;
                const Filter *flt = forest_find_filter(live, c->changes[i].filter_id);
                int r = flt ? store_put_filter(s, flt, NULL, now_usec) : 0;
                if (r < 0)
                        return r;
                any = true;
        }
        return any ? store_reconcile_listeners(s, live) : 0;
}

/* Filters first (a thread's row names its head), then threads gone, then what is, then the
 * listeners, then the filters retired (children before parents, as the changes have them). */
static int store_write_batch(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec) {
        _cleanup_(touched_deinit) Touched t = {};
        int r = touched_collect(&t, c);

        if (r < 0)
                return r;
        for (size_t i = 0; i < c->n; i++)
                if (c->changes[i].type == LIVE_FILTER_ATTACHED && c->changes[i].new_filter) {
                        r = store_put_attached(s, &c->changes[i], now_usec);
                        if (r < 0)
                                return r;
                }
        r = store_write_removals(s, live, &t);
        if (r < 0)
                return r;
        r = store_write_puts(s, live, &t, now_usec);
        if (r < 0)
                return r;
        r = store_write_listeners(s, live, c, now_usec);
        if (r < 0)
                return r;
        for (size_t i = 0; i < c->n; i++)
                if (c->changes[i].type == LIVE_FILTER_RETIRED) {
                        r = store_retire_filter(s, c->changes[i].filter_id, now_usec);
                        if (r < 0)
                                return r;
                }
        /* Filters retired by events go to history too: it is pruned every STORE_PRUNE_SLICE of
         * them, not only by full passes (between two, it would grow by all a minute retired, and
         * the pass prune all of that in one transaction). */
        if (s->archived >= STORE_PRUNE_SLICE)
                return store_prune_history(s);
        return 0;
}

/* A full pass when the live tables hold the forest it replaced: only what differs is written. */

static bool filter_row_same(const Filter *a, const Filter *b) {
        return a->parent_id == b->parent_id && a->len == b->len && memcmp(a->digest, b->digest, sizeof(a->digest)) == 0 &&
               a->log == b->log && a->wait_killable_recv == b->wait_killable_recv &&
               a->has_listener == b->has_listener && a->identity == b->identity && a->refs == b->refs &&
               a->users == b->users && (a->over_budget && !a->insns) == (b->over_budget && !b->insns);
}

static bool process_row_same(const Process *a, const Process *b) {
        return a->ppid == b->ppid && a->start_time == b->start_time && memcmp(a->comm, b->comm, sizeof(a->comm)) == 0 &&
               streq_ptr(a->exe, b->exe) && a->uid == b->uid && a->gid == b->gid && a->no_new_privs == b->no_new_privs;
}

static bool task_row_same(const Task *a, const Task *b) {
        return a->start_time == b->start_time && a->mode == b->mode && a->filter_id == b->filter_id;
}

static int store_diff_filters(Store *s, const Forest *old, const Forest *new, uint64_t now_usec) {
        uint64_t max_id = 0;
        int r;

        for (size_t i = 0; i < new->n_filters; i++) {
                const Filter *x = new->filters[i], *was = forest_find_filter(old, x->id);
                FilterRow row;
                if (x->id > max_id)
                        max_id = x->id;
                if (was && filter_row_same(was, x))
                        continue;
                r = filter_row_init(&row, x, NULL);
                if (r < 0)
                        return r;
                r = store_put_filter_row(s, &row, now_usec);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < old->n_filters; i++)
                if (!forest_find_filter(new, old->filters[i]->id) &&
                    (r = store_retire_filter_steps(s, &(RetireArgs) { .id = old->filters[i]->id, .now_usec = now_usec })) < 0)
                        return r;
        return store_raise_max_filter_id(s, max_id);
}

static int store_diff_tasks(Store *s, const Forest *old, const Forest *new, uint64_t now_usec) {
        int r;

        /* gone first: a pid or tid may be another process's or thread's now */
        for (size_t i = 0; i < old->n_processes; i++) {
                const Process *p = old->processes[i], *now = forest_find_process(new, p->pid);
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j], *still = now ? process_find_thread(now, t->tid) : NULL;
                        if (!still && (r = store_run_by_id(s, STMT_DELETE_TASK, t->tid, "delete a thread")) < 0)
                                return r;
                }
                if (!now && (r = store_run_by_id(s, STMT_DELETE_PROCESS, p->pid, "delete a process")) < 0)
                        return r;
        }
        for (size_t i = 0; i < new->n_processes; i++) {
                const Process *p = new->processes[i], *was = forest_find_process(old, p->pid);
                if ((!was || !process_row_same(was, p)) && (r = store_put_process(s, p)) < 0)
                        return r;
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j], *before = was ? process_find_thread(was, t->tid) : NULL;
                        if ((!before || !task_row_same(before, t)) && (r = store_put_thread(s, p, t, now_usec)) < 0)
                                return r;
                }
        }
        return 0;
}

/* Foreign keys are enforced for the rows written, at the commit (deferred: the order of the
 * writes does not matter), instead of checked over all rows; history is pruned only when filters
 * went to it. */
static int store_replace_diff_steps(Store *s, const Forest *old, const Forest *new, uint64_t now_usec) {
        int r = store_exec(s, "PRAGMA defer_foreign_keys = ON", "defer foreign key checks");
        if (r < 0)
                return r;
        r = store_next_generation(s, now_usec);
        if (r < 0)
                return r;
        r = store_diff_filters(s, old, new, now_usec);
        if (r < 0)
                return r;
        r = store_diff_tasks(s, old, new, now_usec);
        if (r < 0)
                return r;
        r = store_reconcile_listeners(s, new);
        if (r < 0)
                return r;
        if (s->archived > 0)
                return store_prune_history(s);
        return r;
}

static int store_replace_diff(Store *s, const Forest *old, const Forest *new, uint64_t now_usec) {
        if (!new->linked)
                return store_log_errno(s, LOG_LEVEL_ERR, -EINVAL, "Refusing to store a forest that is not linked.");
        return store_pass_transaction(s, store_replace_diff_steps, old, new, now_usec);
}

/* Inside the batch's transaction: its writes, then the commit. */
static int store_write_batch_commit(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec) {
        int r = store_write_batch(s, live, c, now_usec);
        if (r < 0)
                return r;
        return store_commit(s);
}

static int write_changes(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec) {
        int r;

        if (c->replaced) {
                /* The first change holds the forest the pass replaced: when the tables hold it
                 * too, its differences are all there is to write. */
                const Forest *old = c->n > 0 && c->changes[0].type == LIVE_REPLACED ? c->changes[0].old_forest : NULL;
                bool mirrors = s->mirrors_live && old;
                s->mirrors_live = false;
                r = mirrors ? store_replace_diff(s, old, live, now_usec) : store_replace_all(s, live, now_usec);
                s->mirrors_live = r >= 0;
                return r;
        }
        if (c->n == 0)
                return 0;
        bool mirrors = s->mirrors_live;
        s->mirrors_live = false; /* until it is committed */
        r = store_begin(s);
        if (r < 0)
                return r;
        r = store_write_batch_commit(s, live, c, now_usec);
        if (r < 0)
                store_rollback(s);
        else
                s->mirrors_live = mirrors;
        return r;
}

/* Its one caller (the manager) logs every failure, where it knows what follows from it. */
int store_write_changes(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec) {
        s->caller_logs++;
        int r = write_changes(s, live, c, now_usec);
        s->caller_logs--;
        return r;
}
