/* figure-store.c: figure 2, the state database: a full scan written in one transaction, one
 * incremental batch, the size per 1,000 tasks, against bare tables filled with the same rows;
 * and the daemon's full pass (scan + store) that the 100 ms target is stated for */
#include <time.h>

#include "bench-sqlite.h"
#include "figures.h"
#include "observe/scanner.h"
#include "store/store.h"
#include "store-floor.h"
#include "workload.h"

/*
 * What is timed, on one live workload per size, a checked warm-up pass first and then the median
 * of the measured passes:
 *   - the daemon's scan: bpf_scanner_scan() of the workload's subtree with the options the daemon
 *     uses (exe, no argv), forest_drop_unfiltered_processes() and forest_link(), as in
 *     manager_full_pass();
 *   - store_replace_all() of that forest into a fresh state database (store_open() in a new
 *     directory, not timed): the daemon's first pass; and again with the same forest: a refresh,
 *     where every row is found as it is;
 *   - incremental batches as the daemon makes them for one watch event: store_begin(),
 *     store_put_filter() + store_put_process() + store_put_thread() (a thread attached a filter: what
 *     store_write_changes() writes for it), store_commit();
 *     and store_begin(), store_remove_task() + store_retire_filter() (it exited), store_commit();
 *   - the floor: the same rows (values prepared beforehand) inserted into bare tables of the same
 *     columns (no index besides the rowid, no constraint, no upsert) with one prepared INSERT per
 *     table, in one transaction, on a connection with the store's settings (WAL,
 *     synchronous=NORMAL, the same page cache). That is what SQLite itself needs for these bytes;
 *     what the store adds is its indexes, constraints, upserts, the sweep of rows gone and the
 *     foreign key check. The incremental batches have a floor of their own: a transaction of one
 *     bare INSERT.
 * The database size is page_count * page_size after a checkpoint, right after the first write.
 */

#define INCREMENTAL_BATCHES 20          /* of each kind, per pass */
#define SYNTHETIC_TID_BASE (1 << 22)    /* above PID_MAX_LIMIT: never a real thread */
#define FULL_PASS_TARGET_MSEC 100.0

typedef enum StoreFigure {
        STORE_SCAN,          /* the daemon's scan, dropped and linked */
        STORE_FIRST,         /* store_replace_all() into an empty database */
        STORE_REFRESH,       /* the same forest again */
        STORE_FLOOR,         /* bare tables, same rows */
        _STORE_PASS_MAX,
} StoreFigure;

typedef enum StoreBatch {
        BATCH_ATTACH,       /* put_filter + put_process + put_thread */
        BATCH_EXIT,         /* remove_task + retire_filter */
        BATCH_FLOOR,        /* one bare INSERT */
        _BATCH_MAX,
} StoreBatch;

typedef struct StoreBench {
        const BenchOptions *opts;
        Report *report;
        BpfScanner *bpf;
        Workload *w;
        double passes[_STORE_PASS_MAX][BENCH_MAX_PASSES];
        double *batches[_BATCH_MAX]; /* µs, INCREMENTAL_BATCHES per pass */
        size_t n_batches[_BATCH_MAX];
        uint64_t store_bytes, floor_bytes;
        char store_breakdown[128];
        unsigned next_synthetic;
} StoreBench;

/* Where the bytes of a state database are, from the dbstat table (when SQLite has it). */
static void store_size_breakdown(sqlite3 *db, char *buf, size_t size) {
        static const char sql[] =
                "SELECT sum(pgsize) FILTER (WHERE name = 'filters'), sum(pgsize) FILTER (WHERE name = 'tasks'), "
                "sum(pgsize) FILTER (WHERE name = 'processes'), "
                "sum(pgsize) FILTER (WHERE name IN ('filters_parent', 'tasks_tgid', 'tasks_filter')) FROM dbstat";
        _cleanup_(bench_sqlite_finalizep) sqlite3_stmt *st = NULL;

        buf[0] = 0;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
                return;
        snprintf(buf, size, "KiB: filters %.0f, tasks %.0f, procs %.0f, idx %.0f",
                 (double) sqlite3_column_int64(st, 0) / 1024, (double) sqlite3_column_int64(st, 1) / 1024,
                 (double) sqlite3_column_int64(st, 2) / 1024, (double) sqlite3_column_int64(st, 3) / 1024);
}

/* The stored rows of the state database are those of the forest. */
static void store_check_rows(StoreBench *b, sqlite3 *db, const Forest *f) {
        int64_t filters = -1, tasks = -1, processes = -1;

        (void) bench_sqlite_query_int(db, "SELECT count(*) FROM filters", &filters);
        (void) bench_sqlite_query_int(db, "SELECT count(*) FROM tasks", &tasks);
        (void) bench_sqlite_query_int(db, "SELECT count(*) FROM processes", &processes);
        if (filters != (int64_t) f->n_filters || tasks != (int64_t) f->n_tasks ||
            processes != (int64_t) f->n_processes)
                report_check_failed(b->report, "store: %" PRIi64 " filters, %" PRIi64 " tasks, %" PRIi64
                                    " processes stored, expected %zu, %zu and %zu.", filters, tasks, processes,
                                    f->n_filters, f->n_tasks, f->n_processes);
}

/* The database file of a store opened in dir. */
static char *store_db_path(const char *dir) {
        char *p;
        return asprintf(&p, "%s/%s", dir, STORE_FILE_NAME) < 0 ? NULL : p;
}

/* The scan, as the daemon's full pass makes it. */

static int pass_scan(StoreBench *b, Forest **ret, double *ret_usec) {
        _cleanup_(forest_freep) Forest *f = NULL;
        ScanOptions opts = { .root = workload_root(b->w), .include_argv = false, .include_exe = true };
        uint64_t start = now_nsec();
        int r = bpf_scanner_scan(b->bpf, &opts, &f);

        if (r < 0)
                return log_error_errno(r, "bpf scan failed: %m");
        forest_drop_unfiltered_processes(f);
        r = forest_link(f, NULL);
        if (r < 0)
                return log_error_errno(r, "The scanned forest is inconsistent: %m");
        *ret_usec = usec_since(start);
        *ret = TAKE_PTR(f);
        return 0;
}

/* Incremental batches */

static int batch_record(StoreBench *b, StoreBatch kind, double usec) {
        size_t max = (size_t) (b->opts->passes + 1) * INCREMENTAL_BATCHES;

        if (!b->batches[kind]) {
                b->batches[kind] = calloc(max, sizeof(double));
                if (!b->batches[kind])
                        return log_oom();
        }
        if (b->n_batches[kind] < max)
                b->batches[kind][b->n_batches[kind]++] = usec;
        return 0;
}

/* A thread of a workload process attaches a filter on top of the shared one: one batch. */
static int batch_attach(StoreBench *b, Store *s, const Forest *f, const Process *p, Task *task, uint64_t *ret_id) {
        const Filter *shared = f->filters[0]; /* parents first: the shared root */
        uint64_t id;
        int r = store_max_filter_id(s, &id);

        if (r < 0)
                return r;
        id++;
        Filter flt = { .id = id, .parent_id = shared->id, .insns = shared->insns, .len = shared->len,
                       .identity = IDENTITY_EXACT };
        memcpy(flt.digest, shared->digest, PROG_DIGEST_SIZE);
        StoreInstaller inst = { .tid = task->tid, .tgid = p->pid, .comm = p->comm };
        task->filter_id = id;

        uint64_t start = now_nsec();
        r = store_begin(s);
        if (r >= 0)
                r = store_put_filter(s, &flt, &inst, now_usec(CLOCK_REALTIME));
        if (r >= 0)
                r = store_put_process(s, p);
        if (r >= 0)
                r = store_put_thread(s, p, task, now_usec(CLOCK_REALTIME));
        if (r >= 0)
                r = store_commit(s);
        if (r < 0) {
                store_rollback(s);
                return log_error_errno(r, "The attach batch failed: %m");
        }
        *ret_id = id;
        return batch_record(b, BATCH_ATTACH, usec_since(start));
}

/* The thread exits: its row goes, and the filter nobody holds any more moves to history. */
static int batch_exit(StoreBench *b, Store *s, const Task *task, uint64_t id) {
        uint64_t start = now_nsec();
        int r = store_begin(s);

        if (r >= 0)
                r = store_remove_task(s, task->tid);
        if (r == 0)
                r = log_error_errno(-ENOENT, "Thread %d was not stored.", task->tid);
        if (r > 0)
                r = store_retire_filter(s, id, now_usec(CLOCK_REALTIME));
        if (r >= 0)
                r = store_commit(s);
        if (r < 0) {
                store_rollback(s);
                return log_error_errno(r, "The exit batch failed: %m");
        }
        return batch_record(b, BATCH_EXIT, usec_since(start));
}

static int measure_batches(StoreBench *b, Store *s, const Forest *f) {
        const WorkloadTask *wt = &workload_tasks(b->w)[workload_n_tasks(b->w) > 1 ? 1 : 0];

        const Process *p = forest_find_process(f, wt->tgid);
        if (!p)
                return log_error_errno(-ESRCH, "Process %d is not in the scan.", wt->tgid);
        for (unsigned i = 0; i < INCREMENTAL_BATCHES; i++) {
                Task task = {
                        .tid = SYNTHETIC_TID_BASE + (pid_t) b->next_synthetic++,
                        .tgid = wt->tgid,
                        .start_time = 1,
                        .mode = TASK_MODE_FILTER,
                };
                uint64_t id = 0;
                int r = batch_attach(b, s, f, p, &task, &id);
                if (r >= 0)
                        r = batch_exit(b, s, &task, id);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The state database: first write, refresh, batches; sizes and rows checked on the first pass. */
static int pass_store(StoreBench *b, const Forest *f, bool check, double *ret_first, double *ret_refresh) {
        _cleanup_free_ char *dir = NULL, *path = NULL;
        _cleanup_(store_freep) Store *s = NULL;
        int r = bench_mkdtemp("store", &dir);

        if (r < 0)
                return r;
        path = store_db_path(dir);
        r = path ? store_open(dir, &s) : log_oom();
        if (r >= 0) {
                uint64_t start = now_nsec();
                r = store_replace_all(s, f, now_usec(CLOCK_REALTIME));
                *ret_first = usec_since(start);
        }
        if (r >= 0 && check) {
                _cleanup_(bench_sqlite_closep) sqlite3 *db = NULL;
                r = bench_sqlite_open(path, &db);
                if (r >= 0)
                        r = bench_sqlite_size_after_checkpoint(db, &b->store_bytes);
                if (r >= 0) {
                        store_size_breakdown(db, b->store_breakdown, sizeof(b->store_breakdown));
                        store_check_rows(b, db, f);
                }
        }
        if (r >= 0) {
                uint64_t start = now_nsec();
                r = store_replace_all(s, f, now_usec(CLOCK_REALTIME) + 1);
                *ret_refresh = usec_since(start);
        }
        if (r >= 0)
                r = measure_batches(b, s, f);
        s = store_free(s);
        bench_rm_rf(dir);
        return r < 0 ? log_error_errno(r, "Storing the scan failed: %m") : 0;
}

/* The floor: its fill, its one-row batches; its size on the checked pass. */
static int pass_floor(StoreBench *b, const Forest *f, bool check, double *ret_usec) {
        double batches[INCREMENTAL_BATCHES];
        StoreFloorResult res = { .batch_usec = batches, .n_batches = INCREMENTAL_BATCHES };
        int r = store_floor_run(f, &res);

        if (r < 0)
                return log_error_errno(r, "The floor failed: %m");
        *ret_usec = res.fill_usec;
        if (check)
                b->floor_bytes = res.bytes;
        for (size_t i = 0; r >= 0 && i < res.n_batches; i++)
                r = batch_record(b, BATCH_FLOOR, batches[i]);
        return r;
}

/* One pass of everything; the warm-up pass (check) also checks the scan and the stored rows. */
static int measure_pass(StoreBench *b, bool check, unsigned slot) {
        _cleanup_(forest_freep) Forest *f = NULL;
        double t[_STORE_PASS_MAX] = {};
        char why[160];
        int r = pass_scan(b, &f, &t[STORE_SCAN]);

        if (r < 0)
                return r;
        if (check && !workload_matches_forest(b->w, f, why, sizeof(why)))
                report_check_failed(b->report, "store figure, daemon's scan of %zu tasks: %s.",
                                    workload_n_tasks(b->w), why);
        r = pass_store(b, f, check, &t[STORE_FIRST], &t[STORE_REFRESH]);
        if (r >= 0)
                r = pass_floor(b, f, check, &t[STORE_FLOOR]);
        if (r < 0)
                return r;
        if (!check)
                for (StoreFigure i = 0; i < _STORE_PASS_MAX; i++)
                        b->passes[i][slot] = t[i];
        return 0;
}

/* Reporting */

static int add_ms_row(StoreBench *b, size_t n, const char *figure, double usec, double ratio, const char *ratio_to,
                      const char *target, Verdict verdict) {
        char note[64];

        snprintf(note, sizeof(note), "%.2f µs/task", usec / (double) n);
        return report_add_ms(b->report, n, figure, usec / 1000, ratio, ratio_to, target, verdict, note);
}

static int add_batch_row(StoreBench *b, size_t n, const char *figure, StoreBatch kind, double floor_usec) {
        double *s = b->batches[kind];
        size_t k = b->n_batches[kind];
        double med = median(s, k);
        char note[64];

        snprintf(note, sizeof(note), "p99 %.0f µs of %zu", percentile(s, k, 99), k);
        return report_add(b->report, &(BenchRow) {
                .figure = figure,
                .tasks = n,
                .value = med,
                .unit = "µs",
                .ratio = floor_usec > 0 ? med / floor_usec : 0,
                .ratio_to = "one-row floor",
                .note = note,
        });
}

static int report_size(StoreBench *b, size_t n) {
        double t[_STORE_PASS_MAX], floor_batch;
        unsigned k = b->opts->passes;
        int r;

        for (StoreFigure i = 0; i < _STORE_PASS_MAX; i++)
                t[i] = median(b->passes[i], k);
        floor_batch = median(b->batches[BATCH_FLOOR], b->n_batches[BATCH_FLOOR]);

        double full = t[STORE_SCAN] + t[STORE_FIRST], full_refresh = t[STORE_SCAN] + t[STORE_REFRESH];
        double per_k = (double) b->store_bytes / (double) n * 1000 / 1024;
        double floor_per_k = (double) b->floor_bytes / (double) n * 1000 / 1024;

        r = add_ms_row(b, n, "floor: bare tables", t[STORE_FLOOR], 0, NULL, NULL, VERDICT_NONE);
        if (r >= 0)
                r = add_ms_row(b, n, "store: first write", t[STORE_FIRST], t[STORE_FIRST] / t[STORE_FLOOR],
                               "bare-table floor", NULL, VERDICT_NONE);
        if (r >= 0)
                r = add_ms_row(b, n, "store: refresh (same scan)", t[STORE_REFRESH],
                               t[STORE_REFRESH] / t[STORE_FLOOR], "bare-table floor", NULL, VERDICT_NONE);
        if (r >= 0)
                r = add_batch_row(b, n, "floor: one-row transaction", BATCH_FLOOR, 0);
        if (r >= 0)
                r = add_batch_row(b, n, "batch: attach (filter+task)", BATCH_ATTACH, floor_batch);
        if (r >= 0)
                r = add_batch_row(b, n, "batch: exit (task, retire)", BATCH_EXIT, floor_batch);
        if (r >= 0)
                r = report_add(b->report, &(BenchRow) {
                        .figure = "database size",
                        .tasks = n,
                        .value = per_k,
                        .unit = "KiB/1k tasks",
                        .ratio = b->floor_bytes ? (double) b->store_bytes / (double) b->floor_bytes : 0,
                        .ratio_to = "bare-table size",
                        .note = b->store_breakdown[0] ? b->store_breakdown : NULL,
                });
        if (r >= 0)
                r = report_add(b->report, &(BenchRow) {
                        .figure = "floor: bare-table size",
                        .tasks = n,
                        .value = floor_per_k,
                        .unit = "KiB/1k tasks",
                });
        if (r >= 0)
                r = add_ms_row(b, n, "scan (daemon's options)", t[STORE_SCAN], 0, NULL, NULL, VERDICT_NONE);
        if (r >= 0)
                r = add_ms_row(b, n, "scan + store (first write)", full, 0, NULL, "≤ 100 ms",
                               verdict_for(b->opts, n, full / 1000, FULL_PASS_TARGET_MSEC, false));
        if (r >= 0)
                r = add_ms_row(b, n, "scan + store (refresh)", full_refresh, 0, NULL, "≤ 100 ms",
                               verdict_info(verdict_for(b->opts, n, full_refresh / 1000, FULL_PASS_TARGET_MSEC,
                                                        false)));
        return r;
}

static void batches_reset(StoreBench *b) {
        for (StoreBatch i = 0; i < _BATCH_MAX; i++) {
                free(b->batches[i]);
                b->batches[i] = NULL;
                b->n_batches[i] = 0;
        }
}

static int store_size(StoreBench *b, size_t n) {
        WorkloadOptions wo = {
                .n_tasks = n,
                .threads_per_process = b->opts->threads_per_process,
                .filter_len = b->opts->filter_len,
        };
        int r = workload_new(&wo, &b->w);

        if (r < 0)
                return r;
        batches_reset(b);
        b->store_bytes = b->floor_bytes = 0;
        b->store_breakdown[0] = 0;
        r = measure_pass(b, true, 0);
        if (r >= 0) {
                /* The batches of the warm-up pass count: they are not what changes with warmth. */
                for (unsigned i = 0; r >= 0 && i < b->opts->passes; i++)
                        r = measure_pass(b, false, i);
        }
        b->w = workload_free(b->w);
        if (r >= 0)
                r = report_size(b, n);
        batches_reset(b);
        return r;
}

int figure_store_run(const BenchOptions *o, Report *report) {
        _cleanup_(bpf_scanner_freep) BpfScanner *bpf = NULL;
        int r = bpf_scanner_new(&bpf);

        if (r < 0)
                return log_error_errno(r, "Failed to set up the bpf scanner: %m");
        StoreBench b = { .opts = o, .report = report, .bpf = bpf };
        for (size_t i = 0; i < o->n_sizes; i++) {
                r = store_size(&b, o->sizes[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}
