/* scan-bpf.c: the exact backend: runs the BPF task and task_file iterators and turns their records
 * into a Forest whose filter ids name kernel objects */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <time.h>

#include "bpf/scan.h"
#include "procinfo.h"
#include "scan-bpf-internal.h"
#include "scan.h"
#include "scan.skel.h"
#include "tracefs.h"

#define PASS_ATTEMPTS 3       /* passes tried before an inconsistent one is an error */
#define MAX_READ_STALLS 1000  /* -EAGAIN reads in a row that made no room in the ring buffer */
#define MIN_RINGBUF_SIZE (64U << 10) /* holds the largest record: a FILTER of 4096 instructions */

static PassFilter *pass_filter_free(PassFilter *pf) {
        if (pf) {
                free(pf->rec);
                free(pf);
        }
        return NULL;
}
DEFINE_CLEANUP(PassFilter *, pass_filter_free);

static void pass_records_clear(PassRecords *r) {
        uint64_t id;
        void *pf;

        for (size_t i = 0; hashmap_next(&r->filters, &i, &id, &pf);)
                pass_filter_free(pf);
        hashmap_deinit(&r->filters);
        free(r->tasks);
        free(r->listeners);
        *r = (PassRecords) {};
}

static PassFilter *pass_filter_find(const PassRecords *r, uint64_t id) {
        return id == 0 ? NULL : hashmap_get(&r->filters, id);
}

static int records_add_filter(PassRecords *r, const struct scan_rec_filter *rec, size_t size) {
        _cleanup_(pass_filter_freep) PassFilter *pf = NULL;
        size_t n;
        int k;

        if (size < sizeof(*rec) || rec->id == 0 || rec->len > SCAN_MAX_INSNS ||
            size < sizeof(*rec) + rec->len * sizeof(struct sock_filter))
                return -EBADMSG;
        if (pass_filter_find(r, rec->id))
                return 0; /* met again on a retried object */

        n = sizeof(*rec) + rec->len * sizeof(struct sock_filter);
        pf = calloc(1, sizeof(PassFilter));
        if (!pf)
                return -ENOMEM;
        pf->rec = malloc(n);
        if (!pf->rec)
                return -ENOMEM;
        memcpy(pf->rec, rec, n);

        k = hashmap_put(&r->filters, rec->id, pf);
        if (k < 0)
                return k;
        TAKE_PTR(pf);
        return 0;
}

static int records_add(PassRecords *r, const void *data, size_t size) {
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
                return records_add_filter(r, data, size);
        case SCAN_REC_LISTENER:
                if (size < sizeof(struct scan_rec_listener))
                        return -EBADMSG;
                if (GROW(r->listeners, r->n_listeners_allocated, r->n_listeners + 1) < 0)
                        return -ENOMEM;
                memcpy(&r->listeners[r->n_listeners++], data, sizeof(struct scan_rec_listener));
                return 0;
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

static int on_record(void *userdata, void *data, size_t size) {
        PassRecords *r = userdata;
        int k;

        k = records_add(r, data, size);
        if (k < 0 && r->error == 0)
                r->error = k;
        return k; /* a negative value stops ring_buffer__consume() */
}

static int libbpf_log(enum libbpf_print_level level, const char *format, va_list ap) {
        char buf[LINE_MAX];
        size_t n;

        if (level == LIBBPF_DEBUG && log_get_max_level() < LOG_LEVEL_DEBUG)
                return 0;
        vsnprintf(buf, sizeof(buf), format, ap);
        n = strlen(buf);
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = 0;
        if (level == LIBBPF_WARN)
                log_warning("libbpf: %s", buf);
        else
                log_debug("libbpf: %s", buf);
        return 0;
}

/* $SECTREE_BPF_RINGBUF_SIZE (bytes, a power of two) replaces the ring buffer's size: tests make it
 * small so that passes overflow it and objects are retried. */
static int ringbuf_size_from_env(struct scan_bpf *skel) {
        const char *e = secure_getenv("SECTREE_BPF_RINGBUF_SIZE");
        uint64_t size;
        int r;

        if (!e)
                return 0;
        r = safe_atou64(e, &size);
        if (r < 0 || size < MIN_RINGBUF_SIZE || size > UINT32_MAX || (size & (size - 1)) != 0)
                return log_error_errno(r < 0 ? r : -EINVAL, "Invalid $SECTREE_BPF_RINGBUF_SIZE: %s", e);
        r = bpf_map__set_max_entries(skel->maps.records, (uint32_t) size);
        if (r < 0)
                return log_error_errno(r, "Failed to set the ring buffer size: %m");
        return 0;
}

BpfScanner *bpf_scanner_free(BpfScanner *s) {
        if (!s)
                return NULL;
        bpf_watch_deinit(&s->watch);
        ring_buffer__free(s->rb);
        scan_bpf__destroy(s->skel);
        pass_records_clear(&s->records);
        free(s);
        return NULL;
}

int bpf_scanner_new(BpfScanner **ret) {
        return bpf_scanner_new_with_first_id(ret, 1);
}

int bpf_scanner_new_with_first_id(BpfScanner **ret, uint64_t first_id) {
        _cleanup_(bpf_scanner_freep) BpfScanner *s = NULL;
        int r;

        /* The tracepoints that name new filters must be in place before the first pass. */
        r = tracefs_ensure_mounted();
        if (r < 0)
                return r;

        s = calloc(1, sizeof(BpfScanner));
        if (!s)
                return log_oom();
        s->ticks_per_sec = sysconf(_SC_CLK_TCK);
        if (s->ticks_per_sec <= 0)
                s->ticks_per_sec = 100;

        libbpf_set_print(libbpf_log);

        s->skel = scan_bpf__open();
        if (!s->skel)
                return log_error_errno(-errno, "Failed to open the scan BPF programs: %m");

        if (first_id == 0)
                return -EINVAL;
        s->skel->data->last_id = first_id - 1;
        r = ringbuf_size_from_env(s->skel);
        if (r < 0)
                return r;
        r = bpf_watch_configure(s->skel);
        if (r < 0)
                return r;

        r = scan_bpf__load(s->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to load the scan BPF programs: %m");

        r = scan_bpf__attach(s->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the scan BPF programs: %m");

        s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.records), on_record, &s->records, NULL);
        if (!s->rb)
                return log_error_errno(-errno, "Failed to set up the scan ring buffer: %m");

        *ret = TAKE_PTR(s);
        return 0;
}

int bpf_scanner_get_stats(BpfScanner *s, BpfScannerStats *ret) {
        const volatile struct scan_stats *k = &s->skel->bss->stats;

        *ret = (BpfScannerStats) {
                .passes = s->pass,
                .ids_assigned = k->ids_assigned,
                .ids_swept = k->ids_swept,
                .addresses_reused = k->addresses_reused,
        };
        return 0;
}

static int consume(BpfScanner *s) {
        int n = ring_buffer__consume(s->rb);

        if (s->records.error < 0)
                return log_error_errno(s->records.error, "Failed to take in a scan record: %m");
        if (n < 0)
                return log_error_errno(n, "Failed to read the scan ring buffer: %m");
        return n;
}

/* Run one iterator to its end. Its program never writes to the iterator's file: read() returns 0
 * at the end, or -EAGAIN when the ring buffer is full — then drain it, and the same object is
 * tried again. */
static int iter_run(BpfScanner *s, struct bpf_link *link, const char *name) {
        _cleanup_close_ int fd = -1;
        unsigned stalls = 0;
        char buf[64];
        int n;

        fd = bpf_iter_create(bpf_link__fd(link));
        if (fd < 0)
                return log_error_errno(-errno, "Failed to start the %s iterator: %m", name);

        for (;;) {
                ssize_t k = read(fd, buf, sizeof(buf));
                int saved = errno;

                n = consume(s);
                if (n < 0)
                        return n;
                if (k == 0)
                        return 0;
                if (k > 0)
                        return log_error_errno(-EBADMSG, "The %s iterator wrote text, expected none.", name);
                if (saved == EINTR)
                        continue;
                if (saved != EAGAIN)
                        return log_error_errno(-saved, "Failed to run the %s iterator: %m", name);
                stalls = n > 0 ? 0 : stalls + 1;
                if (stalls > MAX_READ_STALLS)
                        return log_error_errno(-EIO, "The %s iterator makes no progress.", name);
        }
}

typedef struct StatsMark {
        uint64_t map_full, chain_too_long, retries;
} StatsMark;

static StatsMark stats_mark(BpfScanner *s) {
        return (StatsMark) {
                .map_full = s->skel->bss->stats.map_full,
                .chain_too_long = s->skel->bss->stats.chain_too_long,
                .retries = s->skel->bss->stats.retries,
        };
}

static int pass_run(BpfScanner *s, bool all_tasks) {
        StatsMark before, after;
        int r;

        pass_records_clear(&s->records);
        s->skel->bss->pass = ++s->pass;
        s->skel->bss->emit_all_tasks = all_tasks;
        before = stats_mark(s);

        r = iter_run(s, s->skel->links.scan_tasks, "task");
        if (r < 0)
                return r;
        r = iter_run(s, s->skel->links.scan_files, "task_file");
        if (r < 0)
                return r;

        after = stats_mark(s);
        if (after.map_full != before.map_full)
                return log_error_errno(-ENOBUFS, "The filter id map is full: pass incomplete.");
        if (after.chain_too_long != before.chain_too_long)
                return log_error_errno(-ELOOP, "A filter chain is deeper than the walk bound: pass incomplete.");
        if (!s->records.end_seen || s->records.end_pass != s->pass)
                log_debug("Pass %" PRIu64 ": no end record (ring buffer full at the end).", s->pass);
        log_debug("Pass %" PRIu64 ": %zu task, %zu filter, %zu listener records, %" PRIu64 " objects retried.",
                  s->pass, s->records.n_tasks, hashmap_size(&s->records.filters), s->records.n_listeners,
                  after.retries - before.retries);
        return 0;
}

/* Choosing what to report. */

static int cmp_task_rec(const void *a, const void *b) {
        const struct scan_rec_task *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

typedef struct ProcSpan {
        pid_t pid, ppid;
        size_t first, n; /* into the sorted task records */
        int8_t subtree;  /* in the root's subtree: 1 yes, -1 no, 0 not known yet */
        bool member;     /* reported */
} ProcSpan;

static int cmp_span_pid(const void *key, const void *elem) {
        pid_t pid = *(const pid_t *) key, other = ((const ProcSpan *) elem)->pid;
        return pid < other ? -1 : pid > other;
}

static bool task_rec_reported(const struct scan_rec_task *t) {
        return !(t->flags & SCAN_TASK_EXITING);
}

static bool span_has_seccomp(const PassRecords *r, const ProcSpan *p) {
        for (size_t i = p->first; i < p->first + p->n; i++)
                if (task_rec_reported(&r->tasks[i]) && r->tasks[i].mode != SECCOMP_MODE_DISABLED)
                        return true;
        return false;
}

static bool span_has_threads(const PassRecords *r, const ProcSpan *p) {
        for (size_t i = p->first; i < p->first + p->n; i++)
                if (task_rec_reported(&r->tasks[i]))
                        return true;
        return false;
}

/* Whether p's ancestry leads to root, memoized in ProcSpan.subtree along the way. */
static int8_t span_subtree(ProcSpan *spans, size_t n, ProcSpan *p, pid_t root) {
        int8_t verdict = -1;
        size_t steps = 0;
        ProcSpan *x;

        for (x = p; x && steps <= n; steps++) {
                if (x->subtree != 0) {
                        verdict = x->subtree;
                        break;
                }
                if (x->pid == root) {
                        verdict = 1;
                        break;
                }
                if (x->ppid <= 0 || x->ppid == x->pid)
                        break;
                x = bsearch(&x->ppid, spans, n, sizeof(ProcSpan), cmp_span_pid);
        }

        steps = 0;
        for (x = p; x && x->subtree == 0 && steps <= n; steps++) {
                x->subtree = verdict;
                if (x->pid == root || x->ppid <= 0)
                        break;
                x = bsearch(&x->ppid, spans, n, sizeof(ProcSpan), cmp_span_pid);
        }
        return verdict;
}

static int spans_build(PassRecords *r, ProcSpan **ret, size_t *ret_n) {
        _cleanup_free_ ProcSpan *spans = NULL;
        size_t n = 0, allocated = 0;

        qsort(r->tasks, r->n_tasks, sizeof(struct scan_rec_task), cmp_task_rec);
        for (size_t i = 0; i < r->n_tasks; i++) {
                if (n > 0 && spans[n - 1].pid == (pid_t) r->tasks[i].tgid) {
                        spans[n - 1].n++;
                        continue;
                }
                if (GROW(spans, allocated, n + 1) < 0)
                        return -ENOMEM;
                spans[n++] = (ProcSpan) {
                        .pid = r->tasks[i].tgid,
                        .ppid = r->tasks[i].ppid,
                        .first = i,
                        .n = 1,
                };
        }
        *ret = TAKE_PTR(spans);
        *ret_n = n;
        return 0;
}

/* Mark the chain from id up to its root as kept. -ENOENT if an element was not sent. */
static int keep_chain(PassRecords *r, uint64_t id) {
        for (size_t steps = 0; id != 0; steps++) {
                PassFilter *pf = pass_filter_find(r, id);
                if (!pf || steps > hashmap_size(&r->filters))
                        return -ENOENT;
                if (pf->keep)
                        return 0;
                pf->keep = true;
                id = pf->rec->parent_id;
        }
        return 0;
}

static bool listener_held_by_member(const struct scan_rec_listener *l, ProcSpan *spans, size_t n) {
        ProcSpan *p = bsearch(&(pid_t) { l->tgid }, spans, n, sizeof(ProcSpan), cmp_span_pid);
        return p && p->member;
}

/* Decide which processes are reported (member) and which filters are kept. */
static int select_reported(PassRecords *r, ProcSpan *spans, size_t n, pid_t root) {
        bool root_found = false;
        int k;

        for (size_t i = 0; i < n; i++) {
                ProcSpan *p = &spans[i];
                bool in = root > 0 ? span_subtree(spans, n, p, root) > 0 : span_has_seccomp(r, p);
                if (p->pid == root)
                        root_found = true;
                p->member = in && span_has_threads(r, p);
        }
        if (root > 0 && !root_found)
                return log_error_errno(-ESRCH, "Process %d not found.", root);

        for (size_t i = 0; i < n; i++) {
                if (!spans[i].member)
                        continue;
                for (size_t j = spans[i].first; j < spans[i].first + spans[i].n; j++) {
                        const struct scan_rec_task *t = &r->tasks[j];
                        if (!task_rec_reported(t))
                                continue;
                        k = keep_chain(r, t->filter_id);
                        if (k < 0)
                                return log_debug_errno(k, "Task %u: a filter of its chain was not sent.", t->tid);
                }
        }

        /* The whole machine: every listener. A subtree: those held inside it (as
         * forest_restrict_to_subtree() does), and with them the chains of their filters. */
        for (size_t i = 0; i < r->n_listeners; i++) {
                const struct scan_rec_listener *l = &r->listeners[i];
                if (root > 0 && !listener_held_by_member(l, spans, n))
                        continue;
                k = keep_chain(r, l->filter_id);
                if (k < 0)
                        return log_debug_errno(k, "Listener fd %u of %u: its filter was not sent.", l->fd, l->tgid);
        }
        return 0;
}

/* Building the forest. */

static int forest_add_filters(Forest *f, PassRecords *r) {
        uint64_t id;
        void *v;
        int k;

        for (size_t i = 0; hashmap_next(&r->filters, &i, &id, &v);) {
                const PassFilter *pf = v;
                const struct scan_rec_filter *rec = pf->rec;
                Filter *flt;

                if (!pf->keep)
                        continue;
                k = forest_add_filter(f, rec->id, rec->parent_id, rec->insns, rec->len, &flt);
                if (k < 0)
                        return k;
                flt->log = rec->log;
                flt->wait_killable_recv = rec->wait_killable_recv;
                flt->has_listener = rec->has_listener;
                flt->refs = rec->refs;
                flt->users = rec->users;
                flt->identity = IDENTITY_EXACT;
        }
        return 0;
}

static void process_fill_proc(Process *p, const ScanOptions *opts) {
        /* exe and argv come from /proc: a process that is gone meanwhile simply has none. */
        if (opts->include_exe) {
                _cleanup_free_ char *exe = NULL;
                if (proc_read_exe(p->pid, &exe) >= 0)
                        (void) process_set_exe(p, exe);
        }
        if (opts->include_argv) {
                _cleanup_strv_free_ char **argv = NULL;
                if (proc_read_argv(p->pid, &argv) >= 0)
                        (void) process_set_argv(p, argv);
        }
}

static const struct scan_rec_task *span_leader(const PassRecords *r, const ProcSpan *span) {
        for (size_t i = span->first; i < span->first + span->n; i++)
                if (r->tasks[i].tid == r->tasks[i].tgid)
                        return &r->tasks[i];
        return &r->tasks[span->first];
}

static int forest_add_span(Forest *f, const BpfScanner *s, const PassRecords *r, const ProcSpan *span,
                           const ScanOptions *opts) {
        const struct scan_rec_task *leader = span_leader(r, span);
        Process *p;
        int k;

        k = forest_add_process(f, span->pid, &p);
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

                if (!task_rec_reported(rec))
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
        }

        process_fill_proc(p, opts);
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

/* One listener per filter (the kernel allows one), holding every fd that points at it. */
static int forest_add_listeners(Forest *f, PassRecords *r) {
        Listener *l = NULL;
        uint64_t next_id = 1;
        int k;

        qsort(r->listeners, r->n_listeners, sizeof(struct scan_rec_listener), cmp_listener_rec);
        for (size_t i = 0; i < r->n_listeners; i++) {
                const struct scan_rec_listener *rec = &r->listeners[i];
                PassFilter *pf = pass_filter_find(r, rec->filter_id);

                if (!pf || !pf->keep)
                        continue;
                if (!l || l->filter_id != rec->filter_id) {
                        k = forest_add_listener(f, next_id++, rec->filter_id, &l);
                        if (k < 0)
                                return k;
                        l->identity = IDENTITY_EXACT;
                        forest_find_filter(f, rec->filter_id)->listener_id = l->id;
                }
                k = listener_add_holder(l, rec->tgid, rec->fd);
                if (k < 0 && k != -EEXIST)
                        return k;
        }
        return 0;
}

static int forest_build(BpfScanner *s, const ScanOptions *opts, ProcSpan *spans, size_t n, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ char *error = NULL;
        struct timespec ts;
        int k;

        f = forest_new();
        if (!f)
                return -ENOMEM;
        f->identity = IDENTITY_EXACT;
        f->root = opts->root;
        f->backend = strdup("bpf");
        if (!f->backend)
                return -ENOMEM;
        clock_gettime(CLOCK_REALTIME, &ts);
        f->created_at_usec = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        k = host_info_fill_local(&f->host);
        if (k < 0)
                return k;

        k = forest_add_filters(f, &s->records);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if (spans[i].member) {
                        k = forest_add_span(f, s, &s->records, &spans[i], opts);
                        if (k < 0)
                                return k;
                }
        k = forest_add_listeners(f, &s->records);
        if (k < 0)
                return k;

        k = forest_link(f, &error);
        if (k < 0)
                return log_debug_errno(k, "Pass %" PRIu64 " is inconsistent: %s", s->pass, error ?: "?");

        *ret = TAKE_PTR(f);
        return 0;
}

/* A root no pass visits. */

static bool records_have_process(const PassRecords *r, pid_t pid) {
        for (size_t i = 0; i < r->n_tasks; i++)
                if ((pid_t) r->tasks[i].tgid == pid)
                        return true;
        return false;
}

static uint64_t ticks_to_ns(const BpfScanner *s, uint64_t ticks) {
        return ticks * (UINT64_C(1000000000) / (uint64_t) s->ticks_per_sec);
}

/* The record of thread tid of process pid as /proc has it; leader holds pid's process fields. */
static int task_rec_from_proc(const BpfScanner *s, pid_t pid, pid_t tid, const struct scan_rec_task *leader,
                              struct scan_rec_task *ret) {
        ProcStatus st;
        uint64_t start;
        int k;

        k = proc_read_status(tid, &st);
        if (k >= 0)
                k = proc_read_start_time(tid, &start);
        if (k < 0)
                return k;
        if (st.seccomp_mode == SECCOMP_MODE_FILTER)
                return log_error_errno(-EOPNOTSUPP, "Thread %d of process %d is hidden from the BPF iterators and runs "
                                       "under seccomp filters, whose identity they cannot read; use the ptrace backend.",
                                       tid, pid);

        *ret = leader ? *leader : (struct scan_rec_task) { .type = SCAN_REC_TASK, .tgid = pid };
        ret->tid = tid;
        ret->mode = st.seccomp_mode;
        ret->filter_count = 0;
        ret->start_boottime = ticks_to_ns(s, start);
        ret->flags &= ~(SCAN_TASK_NO_NEW_PRIVS | SCAN_TASK_EXITING);
        if (st.no_new_privs)
                ret->flags |= SCAN_TASK_NO_NEW_PRIVS;
        if (st.state == 'Z' || st.state == 'X')
                ret->flags |= SCAN_TASK_EXITING;
        if (!leader) {
                ret->ppid = st.ppid;
                ret->uid = st.uid;
                ret->euid = st.euid;
                ret->gid = st.gid;
                ret->leader_start_boottime = ret->start_boottime;
                if (st.no_new_privs)
                        ret->flags |= SCAN_TASK_LEADER_NO_NEW_PRIVS;
        }
        k = proc_read_comm(tid, ret->comm);
        if (k < 0)
                return k;
        if (!leader)
                memcpy(ret->leader_comm, ret->comm, sizeof(ret->comm));
        return 0;
}

/* Pid 1's thread group is hidden from BPF on the project's machines (see scan_tasks() in
 * scan.bpf.c): a subtree rooted there, or at any process the pass did not meet, gets its root's
 * threads from /proc. That works as long as they run under no filter (their ids cannot be read);
 * the rest of the subtree comes from the pass as usual. */
static int records_add_unvisited_root(BpfScanner *s, pid_t pid) {
        _cleanup_free_ pid_t *tids = NULL;
        struct scan_rec_task leader;
        size_t n;
        int k;

        k = task_rec_from_proc(s, pid, pid, NULL, &leader);
        if (k == -ESRCH)
                return log_error_errno(k, "Process %d not found.", pid);
        if (k < 0)
                return k;
        k = proc_list_threads(pid, &tids, &n);
        if (k < 0)
                return k;
        log_debug("Process %d was not visited by the pass: its %zu threads are read from /proc.", pid, n);

        for (size_t i = 0; i < n; i++) {
                struct scan_rec_task rec;

                if (tids[i] == pid)
                        rec = leader;
                else {
                        k = task_rec_from_proc(s, pid, tids[i], &leader, &rec);
                        if (k == -ESRCH)
                                continue; /* exited meanwhile */
                        if (k < 0)
                                return k;
                }
                if (GROW(s->records.tasks, s->records.n_tasks_allocated, s->records.n_tasks + 1) < 0)
                        return -ENOMEM;
                s->records.tasks[s->records.n_tasks++] = rec;
        }
        return 0;
}

static int scan_once(BpfScanner *s, const ScanOptions *opts, Forest **ret) {
        _cleanup_free_ ProcSpan *spans = NULL;
        size_t n;
        int k;

        k = pass_run(s, opts->root > 0);
        if (k < 0)
                return k;
        if (opts->root > 0 && !records_have_process(&s->records, opts->root)) {
                k = records_add_unvisited_root(s, opts->root);
                if (k < 0)
                        return k;
        }
        k = spans_build(&s->records, &spans, &n);
        if (k < 0)
                return k;
        k = select_reported(&s->records, spans, n, opts->root);
        if (k < 0)
                return k;
        return forest_build(s, opts, spans, n, ret);
}

int bpf_scanner_scan(BpfScanner *s, const ScanOptions *opts, Forest **ret) {
        ScanOptions o = opts ? *opts : SCAN_OPTIONS_DEFAULT;
        int k = -EIO;

        /* A pass is not atomic: objects may be replaced while it runs. A pass whose records do
         * not fit together (a task pointing at a filter that was not sent) is run again. */
        for (unsigned attempt = 0; attempt < PASS_ATTEMPTS; attempt++) {
                k = scan_once(s, &o, ret);
                pass_records_clear(&s->records);
                if (k != -ENOENT && k != -EINVAL)
                        break;
        }
        if (k == -ENOENT || k == -EINVAL)
                return log_error_errno(k, "Failed to get a consistent pass in %d attempts.", PASS_ATTEMPTS);
        if (k < 0)
                return k;
        return 0;
}
