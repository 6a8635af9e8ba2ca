/* scan-bpf-select.c: what a bpf pass reports: its task records sorted into processes (spans), the
 * members of the whole machine or of a subtree with the listeners' holders, and the filter chains
 * they keep */
#include <linux/seccomp.h>
#include <stdlib.h>

#include "observe/scan-bpf-cache.h"
#include "observe/scan-bpf-select.h"

static int cmp_task_rec(const void *a, const void *b) {
        const struct scan_rec_task *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_span_pid(const void *key, const void *elem) {
        pid_t pid = *(const pid_t *) key, other = ((const ProcSpan *) elem)->pid;
        return pid < other ? -1 : pid > other;
}

bool bpf_task_rec_reported(const struct scan_rec_task *t) {
        return !(t->flags & SCAN_TASK_EXITING);
}

static bool span_has_seccomp(const PassRecords *r, const ProcSpan *p) {
        for (size_t i = p->first; i < p->first + p->n; i++)
                if (bpf_task_rec_reported(&r->tasks[i]) && r->tasks[i].mode != SECCOMP_MODE_DISABLED)
                        return true;
        return false;
}

static bool span_has_threads(const PassRecords *r, const ProcSpan *p) {
        for (size_t i = p->first; i < p->first + p->n; i++)
                if (bpf_task_rec_reported(&r->tasks[i]))
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

typedef struct TaskKey {
        uint32_t tgid, tid, index;
} TaskKey;

static int cmp_task_key(const void *a, const void *b) {
        const TaskKey *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Sort keys[0..n). They come in the iterator's tid order, which is theirs for most: a process's
 * later threads and whatever pids have wrapped around to are out of it, and few. Those are taken
 * aside, sorted and merged back from the end: n steps and the sort of a few, not n log n steps. */
static int keys_sort(TaskKey *keys, size_t n) {
        _cleanup_free_ TaskKey *late = malloc(n * sizeof(TaskKey));
        size_t m = 0, k = 0, w = n;

        if (!late)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (m == 0 || cmp_task_key(&keys[m - 1], &keys[i]) <= 0)
                        keys[m++] = keys[i];
                else
                        late[k++] = keys[i];
        qsort_safe(late, k, sizeof(TaskKey), cmp_task_key);
        while (k > 0)
                keys[--w] = m > 0 && cmp_task_key(&keys[m - 1], &late[k - 1]) > 0 ? keys[--m] : late[--k];
        return 0;
}

/* Sort the task records by process and thread. Once pids have wrapped around (on any machine that
 * has run long enough) the iterator's tid order is not that: small keys are sorted, and each
 * record (over 100 bytes) moved once, into the spare array that then takes the records' place. */
static int task_recs_sort(PassRecords *r) {
        _cleanup_free_ TaskKey *keys = NULL;
        struct scan_rec_task *t;
        size_t n = r->n_tasks, a;

        /* the iterator goes by tid: in order whenever threads were made right after their process */
        if (is_sorted(r->tasks, n, sizeof(struct scan_rec_task), cmp_task_rec))
                return 0;
        keys = malloc(n * sizeof(TaskKey));
        if (!keys || GROW(r->tasks_spare, r->n_tasks_spare_allocated, n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                keys[i] = (TaskKey) { .tgid = r->tasks[i].tgid, .tid = r->tasks[i].tid, .index = (uint32_t) i };
        if (keys_sort(keys, n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                r->tasks_spare[i] = r->tasks[keys[i].index];
        t = r->tasks, r->tasks = r->tasks_spare, r->tasks_spare = t;
        a = r->n_tasks_allocated, r->n_tasks_allocated = r->n_tasks_spare_allocated, r->n_tasks_spare_allocated = a;
        return 0;
}

int bpf_spans_build(PassRecords *r, ProcSpan **ret, size_t *ret_n) {
        _cleanup_free_ ProcSpan *spans = NULL;
        size_t n = 0, allocated = 0;

        if (task_recs_sort(r) < 0)
                return -ENOMEM;
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
static int keep_chain(BpfScanner *s, uint64_t id) {
        for (size_t steps = 0; id != 0; steps++) {
                BpfFilter *f = bpf_scanner_pass_filter(s, id);
                if (!f || steps > s->records.n_filters)
                        return -ENOENT;
                if (f->keep)
                        return 0;
                f->keep = true;
                id = f->parent_id;
        }
        return 0;
}

ProcSpan *bpf_span_find(ProcSpan *spans, size_t n, pid_t pid) {
        return bsearch(&pid, spans, n, sizeof(ProcSpan), cmp_span_pid);
}

static bool listener_held_by_member(const struct scan_rec_listener *l, ProcSpan *spans, size_t n) {
        ProcSpan *p = bpf_span_find(spans, n, (pid_t) l->tgid);
        return p && p->member;
}

/* A leader that exited while threads of its process live on: a zombie whose seccomp mode and
 * number of filters /proc/PID/status keeps showing (Process.exited_leader; the kernel released
 * the filters themselves: its filter_id is 0). */
bool bpf_rec_is_exited_leader(const PassRecords *r, const ProcSpan *p, const struct scan_rec_task *t) {
        return t->tid == t->tgid && !bpf_task_rec_reported(t) && span_has_threads(r, p);
}

/* Keep the chains of every reported thread of a member. */
static int span_keep_chains(BpfScanner *s, const ProcSpan *p) {
        const PassRecords *r = &s->records;
        uint64_t kept = 0;
        int k;

        for (size_t j = p->first; j < p->first + p->n; j++) {
                const struct scan_rec_task *t = &r->tasks[j];
                if (!bpf_task_rec_reported(t) || t->filter_id == kept)
                        continue; /* threads often share their head with the one before */
                k = keep_chain(s, t->filter_id);
                if (k < 0)
                        return log_debug_errno(k, "Task %u: a filter of its chain was not sent.", t->tid);
                kept = t->filter_id;
        }
        return 0;
}

/* The listeners reported, and their holders: the whole machine, every listener; a subtree, those
 * whose filter is kept or that a member holds (forest_restrict_to_subtree() decides the same).
 * Every holder becomes a member, wherever it is and whatever its mode, and its chains are kept,
 * which may reach the filters of further listeners: until nothing changes. */
static int select_listeners(BpfScanner *s, ProcSpan *spans, size_t n, pid_t root) {
        PassRecords *r = &s->records;
        int k;

        for (bool changed = true; changed;) {
                changed = false;
                for (size_t i = 0; i < r->n_listeners; i++) {
                        const struct scan_rec_listener *l = &r->listeners[i];
                        const BpfFilter *f = bpf_scanner_pass_filter(s, l->filter_id);
                        if (!(root == 0 || (f && f->keep) || listener_held_by_member(l, spans, n)))
                                continue;
                        k = keep_chain(s, l->filter_id);
                        if (k < 0)
                                return log_debug_errno(k, "Listener fd %u of %u: its filter was not sent.", l->fd, l->tgid);
                        ProcSpan *h = bpf_span_find(spans, n, (pid_t) l->tgid);
                        if (!h || h->member || !span_has_threads(r, h))
                                continue; /* gone: the holder is left out */
                        h->member = changed = true;
                        k = span_keep_chains(s, h);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

/* Decide which processes are reported (member) and which filters are kept. */
int bpf_scanner_select(BpfScanner *s, ProcSpan *spans, size_t n, pid_t root) {
        PassRecords *r = &s->records;
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
                return bpf_scanner_fail_errno(s, -ESRCH, "Process %d not found.", root);

        for (size_t i = 0; i < n; i++)
                if (spans[i].member && (k = span_keep_chains(s, &spans[i])) < 0)
                        return k;
        return select_listeners(s, spans, n, root);
}
