/* scan-bpf-forest.c: a bpf pass's records made a Forest: the kept filters, the member processes
 * with their threads, executables and command lines, the listeners with their holders, and the
 * programs within each uid's budget */
#include <linux/seccomp.h>
#include <stdio.h>
#include <time.h>

#include "core/budget.h"
#include "observe/procinfo.h"
#include "observe/scan-bpf-cache.h"
#include "observe/scan-bpf-forest.h"
#include "observe/scan-bpf-load.h"
#include "observe/scan-bpf-pass.h"

/* programs: each filter's (else none yet: forest_fill_programs() adds those within budget); a
 * scanner that scans once hands them over rather than copying them. */
static int forest_add_filters(Forest *f, const BpfScanner *s, bool programs) {
        const PassRecords *r = &s->records;
        int k;

        for (size_t i = 0; i < r->n_filters; i++) {
                BpfFilter *bf = r->filters[i];
                bool over_budget = bf->dropped;
                Filter *flt;

                if (!bf->keep)
                        continue;
                if (s->once && programs && !bf->dropped && bf->len > 0) {
                        _cleanup_free_ struct sock_filter *insns = bpf_filter_take_insns(bf);
                        k = forest_add_filter_taking(f, bf->id, bf->parent_id, &insns, bf->len, bf->digest, &flt);
                } else
                        k = forest_add_filter_with_digest(f, bf->id, bf->parent_id,
                                                          bf->dropped || !programs ? NULL : bf->insns, bf->len,
                                                          bf->digest, &flt);
                if (k < 0)
                        return k;
                flt->over_budget = over_budget;
                flt->log = bf->log;
                flt->wait_killable_recv = bf->wait_killable_recv;
                flt->has_listener = bf->has_listener;
                flt->refs = bf->refs;
                flt->users = bf->users;
                flt->identity = IDENTITY_EXACT;
        }
        return 0;
}

/* The executable as the pass sent it, or from /proc when it could not say (or did not visit the
 * leader: a process read from /proc). */
static void process_fill_exe(Process *p, BpfScanner *s) {
        const ProcRec *e = bpf_proc_rec_find(s->records.exes, s->records.n_exes, p->pid);
        _cleanup_free_ char *exe = NULL;

        if (e && (e->flags & SCAN_EXE_SAME)) {
                e = bpf_proc_rec_find(s->records.exes, s->records.n_exes, e->same_tgid);
                if (e && (e->flags & (SCAN_EXE_NONE | SCAN_EXE_SAME)))
                        e = NULL; /* only records with a path are referred to: ask /proc */
        }
        if (e && (e->flags & SCAN_EXE_NONE))
                return;
        if (e && !(e->flags & SCAN_EXE_UNKNOWN)) {
                const char *suffix = e->flags & SCAN_EXE_DELETED ? " (deleted)" : "";
                if (asprintf(&exe, "%.*s%s", (int) e->len, s->records.pool + e->off, suffix) < 0)
                        return;
        } else {
                s->exe_proc_reads++;
                if (proc_read_exe(p->pid, &exe) < 0)
                        return; /* gone meanwhile: it simply has none */
        }
        (void) process_set_exe(p, exe);
}

/* The command line as the argv pass read it, or from /proc when it could not. */
static void process_fill_argv(Process *p, BpfScanner *s) {
        const ProcRec *a = bpf_proc_rec_find(s->records.argvs, s->records.n_argvs, p->pid);
        _cleanup_strv_free_ char **argv = NULL;
        int k;

        if (a && !(a->flags & SCAN_ARGV_UNKNOWN) && bpf_scanner_ticks(s, a->start_boottime) == p->start_time)
                k = argv_parse(s->records.pool + a->off, a->len, &argv);
        else {
                s->argv_proc_reads++;
                k = proc_read_argv(p->pid, &argv);
        }
        if (k >= 0) /* else gone meanwhile: it simply has none */
                (void) process_set_argv(p, argv);
}

static void process_fill_proc(Process *p, BpfScanner *s, const ScanOptions *opts) {
        if (opts->include_exe)
                process_fill_exe(p, s);
        if (opts->include_argv)
                process_fill_argv(p, s);
}

static const struct scan_rec_task *span_leader(const PassRecords *r, const ProcSpan *span) {
        for (size_t i = span->first; i < span->first + span->n; i++)
                if (r->tasks[i].tid == r->tasks[i].tgid)
                        return &r->tasks[i];
        return &r->tasks[span->first];
}

static int forest_add_span(Forest *f, BpfScanner *s, const PassRecords *r, const ProcSpan *span,
                           const ScanOptions *opts) {
        const struct scan_rec_task *leader = span_leader(r, span);
        Process *p;
        int k;

        k = forest_add_process(f, span->pid, &p);
        if (k < 0)
                return k;
        k = process_reserve_threads(p, span->n);
        if (k < 0)
                return k;
        p->ppid = leader->ppid;
        p->start_time = bpf_scanner_ticks(s, leader->leader_start_boottime);
        memcpy(p->comm, leader->leader_comm, sizeof(p->comm));
        p->comm[sizeof(p->comm) - 1] = 0;
        p->uid = leader->uid;
        p->gid = leader->gid;
        p->no_new_privs = leader->flags & SCAN_TASK_LEADER_NO_NEW_PRIVS;

        for (size_t i = span->first; i < span->first + span->n; i++) {
                const struct scan_rec_task *rec = &r->tasks[i];
                Task *t;

                if (!bpf_task_rec_reported(rec))
                        continue;
                k = process_add_thread(p, rec->tid, &t);
                if (k == -EEXIST)
                        continue;
                if (k < 0)
                        return k;
                t->start_time = bpf_scanner_ticks(s, rec->start_boottime);
                t->mode = task_mode_from_kernel(rec->mode);
                t->filter_id = rec->filter_id;
                t->filter_count = rec->filter_count;
                task_set_no_new_privs(t, rec->flags & SCAN_TASK_NO_NEW_PRIVS); /* per thread */
        }
        if ((pid_t) leader->tid == span->pid && bpf_rec_is_exited_leader(r, span, leader))
                process_set_exited_leader(p, task_mode_from_kernel(leader->mode), leader->filter_count);

        process_fill_proc(p, s, opts);
        return 0;
}

static int cmp_listener_rec(const void *a, const void *b) {
        const struct scan_rec_listener *x = a, *y = b;

        if (x->filter_id != y->filter_id)
                return x->filter_id < y->filter_id ? -1 : 1;
        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->fd < y->fd ? -1 : x->fd > y->fd;
}

/* One listener per filter (the kernel allows one), holding every fd that points at it, but for
 * those of processes that are gone (select_listeners() made every other holder a member). */
static int forest_add_listeners(Forest *f, BpfScanner *s, ProcSpan *spans, size_t n) {
        PassRecords *r = &s->records;
        Listener *l = NULL;
        uint64_t next_id = 1;
        int k;

        qsort(r->listeners, r->n_listeners, sizeof(struct scan_rec_listener), cmp_listener_rec);
        for (size_t i = 0; i < r->n_listeners; i++) {
                const struct scan_rec_listener *rec = &r->listeners[i];
                const BpfFilter *bf = bpf_scanner_pass_filter(s, rec->filter_id);

                if (!bf || !bf->keep)
                        continue;
                if (!l || l->filter_id != rec->filter_id) {
                        k = forest_add_listener(f, next_id++, rec->filter_id, &l);
                        if (k < 0)
                                return k;
                        l->identity = IDENTITY_EXACT;
                        forest_find_filter(f, rec->filter_id)->listener_id = l->id;
                }
                const ProcSpan *h = bpf_span_find(spans, n, (pid_t) rec->tgid);
                if (!h || !h->member)
                        continue;
                k = listener_add_holder(l, rec->tgid, rec->fd);
                if (k < 0 && k != -EEXIST)
                        return k;
        }
        return 0;
}

static bool forest_over_budget(uint64_t id, void *userdata) {
        const Filter *x = forest_find_filter(userdata, id);
        return x && x->over_budget;
}

/* The programs of the filters within their uid's budget, copied; the others' dropped here too. */
static int forest_fill_programs(BpfScanner *s, Forest *f, uint64_t insns_per_uid) {
        Budget b;
        budget_init(&b, insns_per_uid);
        int k = budget_apply(&b, f); /* no program to drop yet: it marks those over budget */
        budget_deinit(&b);
        if (k < 0)
                return k;
        for (size_t i = 0; i < f->n_filters; i++) {
                Filter *x = f->filters[i];
                const BpfFilter *bf = hashmap_get(&s->filters, x->id);
                if (x->over_budget || x->len == 0)
                        continue;
                if (!bf || bf->dropped) {
                        x->over_budget = true; /* within budget now, but its program is gone */
                        continue;
                }
                x->insns = malloc(x->len * sizeof(struct sock_filter));
                if (!x->insns)
                        return -ENOMEM;
                memcpy(x->insns, bf->insns, x->len * sizeof(struct sock_filter));
        }
        bpf_scanner_drop_programs(s, forest_over_budget, f);
        return 0;
}

/* Where the daemon gave its free memory back (after every full pass and snapshot), building a
 * forest of 10,000 processes touches thousands of fresh pages one at a time: a third of a
 * snapshot's scan on the project's virtual machines. So the heap the forest will take is
 * populated in one call first (at most what bpf_scanner_process_prepare() keeps: freeing it trims nothing), and
 * the forest's arrays and indexes are allocated once, at their size. */
#define PROCESS_HEAP_BYTES 256 /* a Process, its exe and argv vector, malloc's headers */

static size_t forest_heap_bytes(const BpfScanner *s, const ProcSpan *spans, size_t n, const ScanOptions *opts,
                                size_t *ret_processes) {
        const PassRecords *r = &s->records;
        size_t bytes = 0, processes = 0;

        for (size_t i = 0; i < r->n_filters; i++)
                if (r->filters[i]->keep) /* a scanner that scans once hands the programs over */
                        bytes += sizeof(Filter) + (s->once ? 0 : r->filters[i]->len * sizeof(struct sock_filter));
        for (size_t i = 0; i < n; i++)
                if (spans[i].member) {
                        processes++;
                        bytes += PROCESS_HEAP_BYTES + spans[i].n * sizeof(Task);
                }
        if (opts->include_argv || opts->include_exe)
                bytes += r->pool_len;
        *ret_processes = processes;
        return bytes + processes * 2 * sizeof(HashmapSlot);
}

static int forest_prepare(BpfScanner *s, Forest *f, const ProcSpan *spans, size_t n, const ScanOptions *opts) {
        size_t processes, bytes = forest_heap_bytes(s, spans, n, opts, &processes);

        bpf_heap_populate_kept(bytes);
        return forest_reserve(f, s->records.n_filters, processes);
}

int bpf_scanner_forest_build(BpfScanner *s, const ScanOptions *opts, ProcSpan *spans, size_t n, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ char *error = NULL;
        int k;

        f = forest_new();
        if (!f)
                return -ENOMEM;
        forest_set_dense_keys(f); /* ids from the scan program, pids from the kernel */
        f->identity = IDENTITY_EXACT;
        f->root = opts->root;
        f->snapshot.consistency = SNAPSHOT_CONSISTENCY_ITERATOR; /* one pass of the task iterator */
        f->backend = strdup("bpf");
        if (!f->backend)
                return -ENOMEM;
        f->created_at_usec = now_usec(CLOCK_REALTIME);
        k = host_info_fill_local(&f->host);
        if (k < 0)
                return k;

        k = forest_prepare(s, f, spans, n, opts);
        if (k < 0)
                return k;
        bool budget = opts->allow_dropped && opts->budget_insns_per_uid > 0;
        k = forest_add_filters(f, s, !budget);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if (spans[i].member) {
                        k = forest_add_span(f, s, &s->records, &spans[i], opts);
                        if (k < 0)
                                return k;
                }
        k = forest_add_listeners(f, s, spans, n);
        if (k < 0)
                return k;

        k = forest_link(f, &error);
        if (k < 0)
                return log_debug_errno(k, "Pass %" PRIu64 " is inconsistent: %s", s->pass, error ?: "?");
        if (budget && (k = forest_fill_programs(s, f, opts->budget_insns_per_uid)) < 0)
                return k;

        *ret = TAKE_PTR(f);
        return 0;
}

/* A root no pass visits. */
