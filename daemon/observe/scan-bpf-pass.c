/* scan-bpf-pass.c: one pass of the bpf scanner: its records taken from the scan ring buffer, the
 * task, task_file and argv iterators run to their end, and the checks that the pass is whole */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/seccomp.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "observe/procinfo.h"
#include "observe/scan-bpf-cache.h"
#include "observe/scan-bpf-load.h"
#include "observe/scan-bpf-pass.h"
#include "observe/scan-bpf-side.h"
#include "observe/bpf/scan.skel.h" /* after the records it names (bpf/scan.h) */

#define MAX_READ_STALLS 1000  /* -EAGAIN reads in a row that made no room in the ring buffer */

/* The kernel's id map keeps the ids of gone filters until a pass ends with a sweep, which visits
 * every bucket of the map (some milliseconds, whatever the number of filters): one is asked for
 * when ids of gone filters have been waiting this many passes, or sooner when they take up
 * 1/SWEEP_STALE_SHARE of the map. */
#define SWEEP_INTERVAL 16
#define SWEEP_STALE_SHARE 16

/* The records are kept in arrays that live as long as the scanner; a pass only resets them. */
static void pass_records_reset(PassRecords *r) {
        *r = (PassRecords) {
                .tasks = r->tasks,
                .n_tasks_allocated = r->n_tasks_allocated,
                .tasks_spare = r->tasks_spare,
                .n_tasks_spare_allocated = r->n_tasks_spare_allocated,
                .listeners = r->listeners,
                .n_listeners_allocated = r->n_listeners_allocated,
                .filters = r->filters,
                .n_filters_allocated = r->n_filters_allocated,
                .by_id = r->by_id,
                .n_by_id_allocated = r->n_by_id_allocated,
                .exes = r->exes,
                .n_exes_allocated = r->n_exes_allocated,
                .argvs = r->argvs,
                .n_argvs_allocated = r->n_argvs_allocated,
                .pool = r->pool,
                .pool_allocated = r->pool_allocated,
        };
}

void bpf_pass_records_free(PassRecords *r) {
        free(r->tasks);
        free(r->tasks_spare);
        free(r->listeners);
        free(r->filters);
        free(r->by_id);
        free(r->exes);
        free(r->argvs);
        free(r->pool);
        *r = (PassRecords) {};
}

static int records_add_filter(BpfScanner *s, const struct scan_rec_filter *rec, size_t size) {
        PassRecords *r = &s->records;
        BpfFilter *f;
        int k;

        if (size < sizeof(*rec) || rec->id == 0 || rec->len > SCAN_MAX_INSNS ||
            (rec->has_insns && size < sizeof(*rec) + rec->len * sizeof(struct sock_filter)))
                return -EBADMSG;
        f = hashmap_get(&s->filters, rec->id);
        if (f && f->seen_pass == s->pass)
                return 0; /* met again on a retried object */

        k = bpf_scanner_filter_from_rec(s, f, rec, &f);
        if (k < 0 || !f)
                return k;
        if (GROW(r->filters, r->n_filters_allocated, r->n_filters + 1) < 0)
                return -ENOMEM;
        f->parent_id = rec->parent_id;
        f->seen_pass = s->pass;
        f->refs = rec->refs;
        f->users = rec->users;
        f->has_listener = rec->has_listener;
        f->keep = false;
        r->filters[r->n_filters++] = f;
        if (f->has_listener)
                r->any_listener = true;
        return 0;
}

/* Keep len bytes of a record in the pass's string pool; their offset in *ret_off. */
static int records_keep_bytes(PassRecords *r, const void *data, size_t len, size_t *ret_off) {
        if (GROW(r->pool, r->pool_allocated, r->pool_len + len) < 0)
                return -ENOMEM;
        memcpy(r->pool + r->pool_len, data, len);
        *ret_off = r->pool_len;
        r->pool_len += len;
        return 0;
}

static int records_add_exe(PassRecords *r, const struct scan_rec_exe *rec, size_t size) {
        ProcRec e;

        if (size < sizeof(*rec) || rec->len >= SCAN_PATH_MAX || size < sizeof(*rec) + rec->len ||
            memchr(rec->path, 0, rec->len))
                return -EBADMSG;
        e = (ProcRec) { .tgid = (pid_t) rec->tgid, .flags = rec->flags, .same_tgid = (pid_t) rec->same_tgid, .len = rec->len };
        if (GROW(r->exes, r->n_exes_allocated, r->n_exes + 1) < 0 || records_keep_bytes(r, rec->path, rec->len, &e.off) < 0)
                return -ENOMEM;
        r->exes[r->n_exes++] = e;
        return 0;
}

static int records_add_argv(PassRecords *r, const struct scan_rec_argv *rec, size_t size) {
        ProcRec a;

        if (size < sizeof(*rec) || rec->len >= SCAN_ARGV_MAX || size < sizeof(*rec) + rec->len)
                return -EBADMSG;
        a = (ProcRec) {
                .tgid = (pid_t) rec->tgid,
                .flags = rec->flags,
                .start_boottime = rec->start_boottime,
                .len = rec->len,
        };
        if (GROW(r->argvs, r->n_argvs_allocated, r->n_argvs + 1) < 0 || records_keep_bytes(r, rec->args, rec->len, &a.off) < 0)
                return -ENOMEM;
        r->argvs[r->n_argvs++] = a;
        return 0;
}

static int records_add(BpfScanner *s, const void *data, size_t size) {
        PassRecords *r = &s->records;
        uint32_t type;

        if (size < sizeof(type))
                return -EBADMSG;
        memcpy(&type, data, sizeof(type));

        switch (type) {
        case SCAN_REC_TASK:
                if (size < sizeof(struct scan_rec_task))
                        return -EBADMSG;
                if (GROW(r->tasks, r->n_tasks_allocated, r->n_tasks + 1) < 0)
                        return -ENOMEM;
                memcpy(&r->tasks[r->n_tasks++], data, sizeof(struct scan_rec_task));
                return 0;
        case SCAN_REC_FILTER:
                return records_add_filter(s, data, size);
        case SCAN_REC_LISTENER:
                if (size < sizeof(struct scan_rec_listener))
                        return -EBADMSG;
                if (GROW(r->listeners, r->n_listeners_allocated, r->n_listeners + 1) < 0)
                        return -ENOMEM;
                memcpy(&r->listeners[r->n_listeners++], data, sizeof(struct scan_rec_listener));
                return 0;
        case SCAN_REC_EXE:
                return records_add_exe(r, data, size);
        case SCAN_REC_ARGV:
                return records_add_argv(r, data, size);
        case SCAN_REC_END: {
                struct scan_rec_end end;
                if (size < sizeof(end))
                        return -EBADMSG;
                memcpy(&end, data, sizeof(end));
                r->end_seen = true;
                r->end_pass = end.pass;
                return 0;
        }
        default:
                return -EBADMSG;
        }
}

int bpf_scanner_on_record(void *userdata, void *data, size_t size) {
        BpfScanner *s = userdata;
        int k;

        k = records_add(s, data, size);
        if (k < 0 && s->records.error == 0)
                s->records.error = k;
        return k; /* a negative value stops ring_buffer__consume() */
}

static int consume(BpfScanner *s) {
        int n = ring_buffer__consume(s->rb);

        if (s->records.error < 0)
                return bpf_scanner_fail_errno(s, s->records.error, "Failed to take in a scan record: %m");
        if (n < 0)
                return bpf_scanner_fail_errno(s, n, "Failed to read the scan ring buffer: %m");
        return n;
}

/* Run one iterator to its end. Its program never writes to the iterator's file: read() returns 0
 * at the end, or -EAGAIN when the ring buffer is full — then drain it, and the same object is
 * tried again. side: an iterator read beside it into the same ring buffer, told of each drain. */
static int iter_run_beside(BpfScanner *s, int link_fd, const char *name, BpfSideRun *side) {
        _cleanup_close_ int fd = -1;
        unsigned stalls = 0;
        char buf[64];
        int n;

        fd = bpf_iter_create(link_fd);
        if (fd < 0)
                return bpf_scanner_fail_errno(s, -errno, "Failed to start the %s iterator: %m", name);

        for (;;) {
                ssize_t k = read(fd, buf, sizeof(buf));
                int saved = errno;

                n = side ? bpf_side_drain(side) : consume(s);
                if (n < 0)
                        return n;
                if (k == 0)
                        return 0;
                if (k > 0)
                        return bpf_scanner_fail_errno(s, -EBADMSG, "The %s iterator wrote text, expected none.", name);
                if (saved == EINTR)
                        continue;
                if (saved != EAGAIN)
                        return bpf_scanner_fail_errno(s, -saved, "Failed to run the %s iterator: %m", name);
                stalls = n > 0 ? 0 : stalls + 1;
                if (stalls > MAX_READ_STALLS)
                        return bpf_scanner_fail_errno(s, -EIO, "The %s iterator makes no progress.", name);
        }
}

static int iter_run(BpfScanner *s, int link_fd, const char *name) {
        return iter_run_beside(s, link_fd, name, NULL);
}

/* Drain the ring buffer for side until it has ended; its result, or this thread's first error r. */
static int side_finish(BpfScanner *s, BpfSideRun *side, int r) {
        bool done;
        int k, n;

        do {
                bpf_side_wait(side, &done);
                k = bpf_side_drain(side);
                if (r >= 0 && k < 0)
                        r = k;
        } while (!done);
        k = bpf_side_join(side);
        if (r >= 0 && side->drain_error < 0)
                r = side->drain_error; /* consume() said why */
        if (r >= 0 && k >= 0 && (n = consume(s)) < 0) /* after the drainer's last drain: nothing, or an error */
                r = n;
        if (r >= 0 && k == -EBADMSG)
                return bpf_scanner_fail_errno(s, k, "The task_file iterator wrote text, expected none.");
        if (r >= 0 && k < 0)
                return bpf_scanner_fail_errno(s, k, "Failed to run the task_file iterator: %m");
        return r;
}

typedef struct StatsMark {
        uint64_t map_full, chain_too_long, retries, insns_sent, anon_unknown;
} StatsMark;

static StatsMark stats_mark(BpfScanner *s) {
        const volatile struct scan_stats *k = &s->unit.bss->stats;

        return (StatsMark) {
                .map_full = s->unit.data_ids->ids_stats.map_full,
                .chain_too_long = k->chain_too_long,
                .retries = k->retries,
                .insns_sent = k->insns_sent,
                .anon_unknown = k->anon_unknown,
        };
}

/* Whether the task_file iterator (a second walk over every task and every open file) must run
 * before the task iterator has. It finds the listener fds, and with them the filters that only a
 * listener fd keeps alive: no task's chain leads to those. Every listener that exists now either
 * existed when the last run started — that run met it, so it had listeners — or was made since
 * by seccomp(2), which the install tracepoint counts (and a tracepoint run the kernel skipped
 * counts as a miss). Otherwise there is no listener, and nothing for the iterator to find. */
static bool files_pass_needed(BpfScanner *s) {
        if (!s->watch.skel) /* nothing here counts the listeners made: a live scanner beside it may */
                return !(s->no_listeners && s->no_listeners(s->no_listeners_userdata));
        BpfListenerMark m = bpf_scanner_listener_mark(s);
        return !bpf_scanner_listener_mark_holds(s, &m);
}

/* Whether the pass should end with a sweep of the kernel's id map. Its entries (stored minus
 * swept) beyond the filters the last pass met belong to gone filters. */
static bool sweep_due(BpfScanner *s) {
        uint64_t entries = s->unit.data_ids->ids_stats.ids_stored - s->unit.bss->stats.ids_swept;
        uint64_t stale = entries > s->live_filters ? entries - s->live_filters : 0;

        if (s->force_sweep)
                return true; /* a one-shot scanner's next pass renews every id it meets (scan.bpf.c,
                              * scan_ent_get()): its sweeps only make room */
        if (stale == 0)
                return false;
        return stale >= s->unit.filter_ids_entries / SWEEP_STALE_SHARE ||
               s->pass - s->last_sweep_pass >= SWEEP_INTERVAL;
}

static void files_start(BpfScanner *s) {
        s->files.created_mark = s->unit.data_ids->listeners_created;
        s->files.install_misses = bpf_watch_install_misses(&s->watch);
        s->files.ran = false; /* until this run has found them all */
}

static void files_done(BpfScanner *s) {
        s->files.ran = true;
        s->files.n_listeners = s->records.n_listeners;
}

/* The file tables alone, after the tasks. */
static int files_run(BpfScanner *s) {
        int r;

        files_start(s);
        s->unit.bss->run.files_mode = SCAN_FILES_ONLY;
        r = iter_run(s, s->unit.tasks_link_fd, "files");
        if (r < 0)
                return r;
        files_done(s);
        return 0;
}

/* Whether the file tables are walked beside the tasks, in a second thread: in a one-shot's first
 * pass (the later ones renew ids of earlier passes, one walker at a time) if it needs them from
 * the start, on a machine of two CPUs or more with tasks enough (s->beside_min_tasks) that the
 * walks take longer than a thread costs to start and to meet (some hundreds of microseconds: an
 * idle machine's walks take less). Else the task walk reads each task's table as it goes, which
 * costs less in all than a second walk (that one visits every task again) but takes longer than
 * two walks on two CPUs. Whether a second CPU is free is left to the scheduler: a count of the
 * tasks running at the moment of asking (/proc/loadavg) said no in most runs on an otherwise quiet
 * machine, kernel workers finishing the last process's teardown among them. A live scanner's passes
 * read the tables rarely, and while the machine's other work goes on. */
static bool files_beside(BpfScanner *s, bool files) {
        struct sysinfo si;

        return files && s->oneshot && s->pass == 1 && sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
               (s->beside_min_tasks == 0 || (sysinfo(&si) == 0 && si.procs >= s->beside_min_tasks));
}

static void populate_then(void *userdata) {
        bpf_heap_block_populate(userdata);
}

static int drain(void *userdata) {
        return consume(userdata);
}

/* The tasks, and the file tables beside them in a second run of the task iterator: the records of
 * both taken in by a third thread while they walk (and here when the ring buffer is full). The
 * file tables take less time than the tasks: the side then populates the heap the forest will
 * take (forest_prepare() would, after the pass). */
static int tasks_and_files_run(BpfScanner *s) {
        BpfHeapBlock forest_heap;
        struct sysinfo si;
        BpfSideRun side;
        int r;

        files_start(s);
        s->unit.bss->run.files_walker_tid = 0;
        s->unit.bss->run.files_mode = SCAN_FILES_BESIDE;
        forest_heap = bpf_heap_block_new(sysinfo(&si) == 0 ? (size_t) si.procs : 0, BPF_HEAP_FOREST_BYTES_PER_TASK);
        r = bpf_side_start(&side, s->unit.tasks_link_fd, &s->unit.bss->run.files_walker_tid, populate_then, &forest_heap,
                           drain, s);
        if (r < 0) {
                bpf_heap_block_free(&forest_heap);
                return bpf_scanner_fail_errno(s, r, "Failed to start the files walk: %m");
        }
        r = iter_run_beside(s, s->unit.tasks_link_fd, "task", &side);
        bpf_heap_block_stop(&forest_heap); /* the forest is built next, whatever the side populated */
        r = side_finish(s, &side, r);
        bpf_heap_block_free(&forest_heap);
        if (r < 0)
                return r;
        files_done(s);
        return 0;
}

/* The tasks, and each task's file table when files. */
static int tasks_run(BpfScanner *s, bool files) {
        int r;

        if (files)
                files_start(s);
        s->unit.bss->run.files_mode = files ? SCAN_FILES_IN_TASKS : SCAN_FILES_NONE;
        r = iter_run(s, s->unit.tasks_link_fd, "task");
        if (r < 0)
                return r;
        if (files)
                files_done(s);
        return 0;
}

/* The kernel thinks this scanner has instructions it does not have: ask for all of them again. */
static void insns_epoch_next(BpfScanner *s) {
        s->unit.data->insns_epoch++;
        log_debug("Pass %" PRIu64 ": instructions of a filter were left out but are not known here; asking for all "
                  "of them again.", s->pass);
}

static int pass_check(BpfScanner *s, const StatsMark *before) {
        StatsMark after = stats_mark(s);

        if (s->records.insns_missing) {
                insns_epoch_next(s);
                return -ENOENT; /* run it again */
        }
        if (after.map_full != before->map_full) {
                s->force_sweep = true; /* and the pass is tried again */
                return log_debug_errno(-ENOBUFS, "Pass %" PRIu64 ": the filter id map is full.", s->pass);
        }
        if (after.anon_unknown != before->anon_unknown)
                return bpf_scanner_fail_errno(s, -EBADF,
                                              "The file tables could not be read: the scan's own ring buffer fd "
                                              "was not found open in its thread.");
        if (after.chain_too_long != before->chain_too_long)
                return bpf_scanner_fail_errno(s, -ELOOP,
                                              "A filter chain is deeper than the walk bound: pass incomplete.");
        return 0;
}

/* The pass's filters by id, where the ids span at most a few times their number: the forest's
 * selection and build look a filter up for each task, and the hash map's lookups were a cache
 * miss each (tens of thousands at 20,000 processes), where the array is walked nearly in order. */
static void records_index_by_id(PassRecords *r) {
        uint64_t lo = UINT64_MAX, hi = 0;

        r->n_by_id = 0;
        for (size_t i = 0; i < r->n_filters; i++) {
                lo = MIN(lo, r->filters[i]->id);
                hi = MAX(hi, r->filters[i]->id);
        }
        if (r->n_filters == 0 || hi - lo >= 4 * (uint64_t) r->n_filters + 64 ||
            GROW(r->by_id, r->n_by_id_allocated, hi - lo + 1) < 0)
                return; /* looked up in the scanner's map */
        r->by_id_base = lo;
        r->n_by_id = hi - lo + 1;
        memset(r->by_id, 0, r->n_by_id * sizeof(BpfFilter *));
        for (size_t i = 0; i < r->n_filters; i++)
                r->by_id[r->filters[i]->id - lo] = r->filters[i];
}

static int cmp_proc_rec(const void *a, const void *b) {
        const ProcRec *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->off < y->off ? -1 : x->off > y->off; /* sent again on a retry: the last one counts */
}

/* The last record of tgid in recs (sorted with cmp_proc_rec), or NULL. */
const ProcRec *bpf_proc_rec_find(const ProcRec *recs, size_t n, pid_t tgid) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (recs[mid].tgid <= tgid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && recs[lo - 1].tgid == tgid ? &recs[lo - 1] : NULL;
}

/* Before a scanner's first pass: room for a task record per task of the machine, and some, taken
 * at once, rather than grown by doubling, each time copied (20,000 processes: 12 copies). */
static void records_presize(BpfScanner *s) {
        struct sysinfo si;

        if (s->records.n_tasks_allocated == 0 && sysinfo(&si) == 0)
                (void) GROW(s->records.tasks, s->records.n_tasks_allocated, (size_t) si.procs + si.procs / 8 + 64);
}

void bpf_records_check_listeners(PassRecords *r) {
        size_t n = 0;
        for (size_t i = 0; i < r->n_listeners; i++)
                if (proc_fd_is_listener((pid_t) r->listeners[i].tgid, (int) r->listeners[i].fd))
                        r->listeners[n++] = r->listeners[i];
        r->n_listeners = n;
}

int bpf_scanner_pass_run(BpfScanner *s, bool all_tasks, bool want_exe) {
        uint64_t start = now_usec(CLOCK_MONOTONIC), tasks_done, files_end;
        StatsMark before, after;
        bool files, sweep, beside, late;
        int r;

        pass_records_reset(&s->records);
        hashmap_clear(&s->pass_programs);
        records_presize(s);
        s->unit.data_ids->pass = ++s->pass;
        s->unit.bss->run.emit_all_tasks = all_tasks;
        s->unit.bss->run.want_exe = want_exe;
        s->unit.bss->run.anon_fd = (uint32_t) s->unit.records_fd; /* how the file walks tell an anonymous file */
        files = files_pass_needed(s);
        sweep = sweep_due(s);
        beside = files_beside(s, files);
        s->unit.bss->run.files_planned = beside;
        s->unit.bss->run.sweep_wanted = sweep;
        before = stats_mark(s);

        r = beside ? tasks_and_files_run(s) : tasks_run(s, files);
        if (r < 0)
                return r;
        tasks_done = now_usec(CLOCK_MONOTONIC);
        /* A filter with a listener that no pass knew of: its fds may be anywhere. */
        late = !files && s->records.any_listener;
        if (late) {
                r = files_run(s);
                if (r < 0)
                        return r;
        }
        files_end = now_usec(CLOCK_MONOTONIC);

        r = pass_check(s, &before);
        if (r < 0)
                return r;
        if (sweep) {
                s->last_sweep_pass = s->pass;
                s->force_sweep = false;
        }
        s->live_filters = s->records.n_filters;
        records_index_by_id(&s->records);
        qsort(s->records.exes, s->records.n_exes, sizeof(ProcRec), cmp_proc_rec);
        r = bpf_scanner_evict(s);
        if (r < 0)
                return r;

        after = stats_mark(s);
        if (!s->records.end_seen || s->records.end_pass != s->pass)
                log_debug("Pass %" PRIu64 ": no end record (ring buffer full at the end).", s->pass);
        log_debug("Pass %" PRIu64 ": %zu task, %zu filter (%" PRIu64 " with instructions), %zu listener records, "
                  "%" PRIu64 " objects retried; tasks %s%" PRIu64 " us%s, files %s%" PRIu64 " us.",
                  s->pass, s->records.n_tasks, s->records.n_filters, after.insns_sent - before.insns_sent,
                  s->records.n_listeners, after.retries - before.retries,
                  beside ? "and files side by side " : files ? "and files in one walk " : "", tasks_done - start,
                  sweep ? " (with a sweep)" : "", late ? "" : "skipped, ", files_end - tasks_done);
        return 0;
}

static void argv_want_mark(BpfScanner *s, const ProcSpan *spans, size_t n, bool on) {
        for (size_t i = 0; i < n; i++) {
                pid_t pid = spans[i].pid;
                uint64_t bit = UINT64_C(1) << (pid % 64);

                if (!spans[i].member || pid <= 0 || (size_t) pid / 64 >= SCAN_ARGV_WORDS)
                        continue;
                if (on)
                        s->argv_want[pid / 64] |= bit;
                else
                        s->argv_want[pid / 64] &= ~bit;
        }
}

/* The command lines of the reported processes: the argv iterator reads them from their memory. */
int bpf_scanner_argv_pass(BpfScanner *s, const ProcSpan *spans, size_t n) {
        int k;

        argv_want_mark(s, spans, n, true);
        k = iter_run(s, s->unit.argv_link_fd, "argv");
        argv_want_mark(s, spans, n, false);
        if (k < 0)
                return k;
        s->argv_passes++;
        qsort(s->records.argvs, s->records.n_argvs, sizeof(ProcRec), cmp_proc_rec);
        return 0;
}

BpfListenerMark bpf_scanner_listener_mark(const BpfScanner *s) {
        return (BpfListenerMark) {
                .none = s->watch.skel && s->files.ran && s->files.n_listeners == 0,
                .created = s->files.created_mark,
                .install_misses = s->files.install_misses,
        };
}

bool bpf_scanner_listener_mark_holds(BpfScanner *s, const BpfListenerMark *m) {
        return m->none && s->unit.data_ids->listeners_created == m->created &&
               bpf_watch_install_misses(&s->watch) == m->install_misses;
}
