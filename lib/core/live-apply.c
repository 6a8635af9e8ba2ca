/* live-apply.c: batches of events applied to the live forest
 *
 * Every change goes through one of the primitives below (process_add/update/remove, thread_add/
 * update/exit, filter_attach/retire), each of which records exactly one LiveChange with what it
 * replaced, after reserving room for it: a primitive either fails having changed nothing, or
 * changes the forest and records it. live_rollback() undoes the records newest first.
 *
 * Filters only ever grow on a task, so a thread's head is replaced by an event's head unless the
 * event's head is an ancestor of (or is) the head we have: that event is older than what a full
 * pass already showed us. */
#include "core/live-apply.h"

#include "core/budget.h"
#include "core/live-private.h"
#include "core/live-state.h"
#include "core/live-undo.h"

static bool fields_equal(const LiveProcessFields *a, const LiveProcessFields *b) {
        return a->ppid == b->ppid && a->start_time == b->start_time && memcmp(a->comm, b->comm, sizeof(a->comm)) == 0 &&
               a->uid == b->uid && a->gid == b->gid && a->no_new_privs == b->no_new_privs && streq_ptr(a->exe, b->exe);
}

static int process_add(Live *l, LiveChanges *c, const LiveProcessFields *f, pid_t pid, Process **ret) {
        Process *p;
        _cleanup_free_ char *exe = f->exe ? strdup(f->exe) : NULL;
        int r = live_changes_reserve(c);
        if (r < 0 || (f->exe && !exe))
                return -ENOMEM;
        r = forest_add_process(l->forest, pid, &p);
        if (r < 0)
                return r;
        LiveProcessFields mine = *f, none;
        mine.exe = exe;
        mine.ppid = 0;
        (void) live_fields_swap(l, p, &mine, &none); /* with ppid 0 the index is not touched */
        TAKE_PTR(exe);
        r = live_children_add(l, f->ppid, pid);
        if (r < 0) {
                process_free(forest_take_process(l->forest, pid));
                return r;
        }
        p->ppid = f->ppid;
        LiveChange *x = live_change_push(c, LIVE_PROCESS_ADDED);
        x->tgid = pid;
        *ret = p;
        return 0;
}

static int process_update(Live *l, LiveChanges *c, Process *p, const LiveProcessFields *f) {
        LiveProcessFields now;
        live_fields_of(p, &now);
        if (fields_equal(&now, f))
                return 0;
        LiveProcessFields mine = *f;
        _cleanup_free_ char *exe = NULL;
        int r = live_changes_reserve(c);
        if (r < 0)
                return r;
        if (!streq_ptr(f->exe, p->exe)) {
                exe = f->exe ? strdup(f->exe) : NULL;
                if (f->exe && !exe)
                        return -ENOMEM;
                mine.exe = exe;
        } else
                mine.exe = p->exe;
        LiveProcessFields old;
        r = live_fields_swap(l, p, &mine, &old);
        if (r < 0)
                return r;
        TAKE_PTR(exe);
        LiveChange *x = live_change_push(c, LIVE_PROCESS_UPDATED);
        x->tgid = p->pid;
        memcpy(x->comm, p->comm, sizeof(x->comm));
        x->old = old;
        x->exe_changed = old.exe != p->exe;
        if (!x->exe_changed)
                x->old.exe = NULL; /* the process's: not the change's to free */
        return 0;
}

/* p has no threads left: it leaves the forest (kept by the change). */
static int process_remove(Live *l, LiveChanges *c, Process *p) {
        int r = live_changes_reserve(c);
        if (r < 0)
                return r;
        live_children_remove(l, p->ppid, p->pid);
        LiveChange *x = live_change_push(c, LIVE_PROCESS_REMOVED);
        x->tgid = p->pid;
        x->process = forest_take_process(l->forest, p->pid);
        return 0;
}

static int thread_add(Live *l, LiveChanges *c, Process *p, const Task *t, const char *comm, Task **ret) {
        Task *n;
        int r = live_changes_reserve(c);
        if (r < 0)
                return r;
        r = process_append_thread(p, t->tid, &n);
        if (r < 0)
                return r;
        *n = *t;
        n->tgid = p->pid;
        n->filter = NULL;
        l->n_threads++;
        live_uses_add(l, n->filter_id);
        LiveChange *x = live_change_push(c, LIVE_TASK_ADDED);
        x->tid = n->tid;
        x->tgid = p->pid;
        memcpy(x->comm, comm, sizeof(x->comm));
        *ret = n;
        return 0;
}

/* Records a change to thread t of p, with t as it was. */
static void task_change_push(LiveChanges *c, LiveChangeType type, const Process *p, const Task *t) {
        LiveChange *x = live_change_push(c, type);
        x->tid = t->tid;
        x->tgid = p->pid;
        x->old_task = *t;
}

static int thread_update(Live *l, LiveChanges *c, Process *p, Task *t, const Task *want) {
        if (t->start_time == want->start_time && t->mode == want->mode && t->filter_id == want->filter_id &&
            t->filter_count == want->filter_count)
                return 0;
        int r = live_changes_reserve(c);
        if (r < 0)
                return r;
        task_change_push(c, LIVE_TASK_UPDATED, p, t);
        if (want->filter_id != t->filter_id) {
                live_uses_add(l, want->filter_id);
                live_uses_drop(l, t->filter_id);
        }
        t->start_time = want->start_time;
        t->mode = want->mode;
        t->filter_id = want->filter_id;
        t->filter_count = want->filter_count;
        t->filter = NULL;
        l->forest->linked = false;
        return 0;
}

static int drop_process(Live *l, LiveChanges *c, Process *p);

/* The thread leaves; unless keep_process, its process too when no thread in strict or filter mode
 * is left (its escaped threads, in disabled mode, go with it). */
static int thread_exit(Live *l, LiveChanges *c, Process *p, Task *t, bool keep_process) {
        int r = live_changes_reserve(c);
        if (r < 0)
                return r;
        task_change_push(c, LIVE_TASK_EXITED, p, t);
        live_uses_drop(l, t->filter_id);
        *t = p->threads[--p->n_threads];
        l->n_threads--;
        l->forest->linked = false;
        if (!keep_process && !process_has_seccomp(p))
                return drop_process(l, c, p);
        return 0;
}

static int filter_attach(Live *l, LiveChanges *c, const LiveEvent *e) {
        const LiveFilter *wf = &e->filter;
        Filter *flt = forest_find_filter(l->forest, wf->id);
        bool is_new = !flt;
        const Process *p = forest_find_process(l->forest, e->task.tgid);
        const char *exe = e->task.exe ?: p ? p->exe : NULL;
        _cleanup_free_ char *exe_copy = exe ? strdup(exe) : NULL;
        int r = live_changes_reserve(c);
        if (r < 0 || (exe && !exe_copy))
                return -ENOMEM;
        if (is_new) {
                if (wf->parent_id && !forest_find_filter(l->forest, wf->parent_id))
                        return -ENOLINK; /* we missed the parent: only a full pass can tell */
                /* Beyond its installer's budget, only the digest of its instructions is kept. */
                bool keep = budget_take(&l->budget, e->task.uid, wf->len);
                uint8_t digest[PROG_DIGEST_SIZE];
                prog_digest(wf->insns, wf->len, digest);
                r = forest_add_filter_with_digest(l->forest, wf->id, wf->parent_id, keep ? wf->insns : NULL, wf->len,
                                                  digest, &flt);
                if (r < 0) {
                        budget_release(&l->budget, &(Filter) { .budget_uid = e->task.uid, .len = wf->len,
                                                                .over_budget = !keep });
                        return r;
                }
                flt->budget_uid = e->task.uid;
                flt->over_budget = !keep;
                flt->log = wf->log;
                flt->wait_killable_recv = wf->wait_killable_recv;
                flt->has_listener = wf->has_listener;
                flt->identity = wf->identity;
                live_uses_add(l, flt->parent_id);
                live_push_candidate(l, flt->id); /* nothing uses it yet */
        }
        LiveChange *x = live_change_push(c, LIVE_FILTER_ATTACHED);
        x->new_filter = is_new;
        x->filter = flt;
        x->filter_id = flt->id;
        x->parent_id = flt->parent_id;
        x->tid = e->task.tid;
        x->tgid = e->task.tgid;
        memcpy(x->comm, e->task.comm, sizeof(x->comm));
        x->installer_exe = TAKE_PTR(exe_copy);
        return 0;
}

static int filter_retire(Live *l, LiveChanges *c, Filter *x) {
        int r = live_changes_reserve(c);
        if (r < 0)
                return r;
        uint64_t parent = x->parent_id;
        LiveChange *ch = live_change_push(c, LIVE_FILTER_RETIRED);
        ch->filter_id = x->id;
        ch->parent_id = parent;
        ch->filter = forest_take_filter(l->forest, x->id);
        budget_release(&l->budget, ch->filter);
        live_uses_drop(l, parent); /* the parent is the next candidate if this was its last use */
        return 0;
}

/* Listeners. One per filter (the kernel allows one), its id the filter's. The filter's flag says
 * that the listener exists: that some process holds a file descriptor of it. */

static Listener *listener_copy(const Listener *l) {
        Listener *c = malloc(sizeof(Listener));
        if (!c)
                return NULL;
        *c = *l;
        c->holders = NULL;
        c->n_holders_allocated = 0;
        if (l->n_holders > 0 && !(c->holders = calloc(l->n_holders, sizeof(ListenerHolder)))) {
                free(c);
                return NULL;
        }
        memcpy_safe(c->holders, l->holders, l->n_holders * sizeof(ListenerHolder));
        c->n_holders_allocated = l->n_holders;
        return c;
}

/* Make flt's listener want (taken; NULL: none), recording what it was. */
static int listener_set(Live *l, LiveChanges *c, Filter *flt, Listener *want) {
        Listener *old = forest_find_listener(l->forest, flt->id), *old_copy = NULL;
        int r = live_changes_reserve(c);
        if (r >= 0 && old && !(old_copy = listener_copy(old)))
                r = -ENOMEM;
        if (r >= 0 && want)
                r = GROW(l->forest->listeners, l->forest->n_listeners_allocated, l->forest->n_listeners + 1);
        if (r < 0) {
                live_listener_dispose(want);
                live_listener_dispose(old_copy);
                return r;
        }
        LiveChange *x = live_change_push(c, LIVE_LISTENER_CHANGED);
        x->filter_id = flt->id;
        x->old_listener = old_copy;
        x->old_has_listener = flt->has_listener;
        live_listener_dispose(live_listener_take(l->forest, flt->id));
        if (old)
                live_uses_drop(l, flt->id);
        if (want) {
                want->id = flt->id;
                want->filter_id = flt->id;
                (void) live_listener_put(l->forest, want); /* room was made */
                live_uses_add(l, flt->id);
        }
        flt->has_listener = want != NULL;
        flt->listener_id = want ? flt->id : 0;
        return 0;
}

/* flt's listener, with (pid, fd) among its holders (made if there is none). */
static int listener_hold(Live *l, LiveChanges *c, Filter *flt, pid_t pid, int fd) {
        const Listener *now = forest_find_listener(l->forest, flt->id);
        Listener *want = now ? listener_copy(now) : calloc(1, sizeof(Listener));
        if (!want)
                return -ENOMEM;
        if (!now)
                want->identity = flt->identity;
        for (size_t i = 0; i < want->n_holders; i++)
                if (want->holders[i].pid == pid && want->holders[i].fd == fd) {
                        live_listener_dispose(want);
                        return 0; /* held so already */
                }
        if (GROW(want->holders, want->n_holders_allocated, want->n_holders + 1) < 0) {
                live_listener_dispose(want);
                return -ENOMEM;
        }
        want->holders[want->n_holders++] = (ListenerHolder) { .pid = pid, .fd = fd };
        return listener_set(l, c, flt, want);
}

/* What a holder letting go of a listener means for the listener. */
typedef enum ListenerEnd {
        LISTENER_ENDS,        /* that was the file's last reference (close(2) said so) */
        LISTENER_LIVES,       /* others hold it still (close(2) said so), known or not */
        LISTENER_ENDS_IF_NONE /* not known (a process exited): it ends when no holder it knows of is left */
} ListenerEnd;

/* The holders of pid (fd < 0: all of its fds) let go of flt's listener, which may end with them. */
static int listener_release(Live *l, LiveChanges *c, Filter *flt, pid_t pid, int fd, ListenerEnd end) {
        const Listener *now = forest_find_listener(l->forest, flt->id);
        bool gone = end == LISTENER_ENDS;
        if (!now)
                return gone && flt->has_listener ? listener_set(l, c, flt, NULL) : 0;
        Listener *want = listener_copy(now);
        if (!want)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < want->n_holders; i++)
                if (!(want->holders[i].pid == pid && (fd < 0 || want->holders[i].fd == fd)))
                        want->holders[n++] = want->holders[i];
        if (n == want->n_holders && !gone) {
                live_listener_dispose(want);
                return 0;
        }
        want->n_holders = n;
        if (gone || (n == 0 && end == LISTENER_ENDS_IF_NONE)) {
                live_listener_dispose(want);
                want = NULL;
        }
        return listener_set(l, c, flt, want);
}

/* ---- events ---- */

/* Whether proposed is head or one of its ancestors: an event older than what we know. */
static bool is_ancestor_or_self(const Forest *f, uint64_t proposed, uint64_t head) {
        size_t steps = 0;
        for (const Filter *x = forest_find_filter(f, head); x && steps <= f->n_filters;
             x = forest_find_filter(f, x->parent_id), steps++)
                if (x->id == proposed)
                        return true;
        return false;
}

/* The process's fields as w says them, over what p has. */
static void fields_from_task(const Process *p, const LiveTask *w, LiveProcessFields *ret) {
        bool leader = w->tid == w->tgid;
        if (p)
                live_fields_of(p, ret);
        else
                *ret = (LiveProcessFields) {};
        ret->ppid = w->ppid;
        ret->uid = w->uid;
        ret->gid = w->gid;
        ret->no_new_privs = w->no_new_privs;
        if (w->process_start_time)
                ret->start_time = w->process_start_time;
        else if (leader)
                ret->start_time = w->start_time;
        if (leader || !ret->comm[0])
                memcpy(ret->comm, w->comm, sizeof(ret->comm));
        if (w->exe)
                ret->exe = (char *) w->exe;
}

/* Every thread of p leaves, then p. */
static int drop_process(Live *l, LiveChanges *c, Process *p) {
        while (p->n_threads > 0) {
                int r = thread_exit(l, c, p, &p->threads[p->n_threads - 1], true);
                if (r < 0)
                        return r;
        }
        return process_remove(l, c, p);
}

/* The process of w, added or brought up to date. A process we have under the same pid but another
 * start time is one whose exit we missed: it goes first. */
static int process_for(Live *l, LiveChanges *c, const LiveTask *w, Process **ret) {
        Process *p = forest_find_process(l->forest, w->tgid);
        uint64_t start = w->process_start_time ? w->process_start_time : w->tid == w->tgid ? w->start_time : 0;
        LiveProcessFields f;
        int r;

        if (p && p->start_time && start && p->start_time != start) {
                r = drop_process(l, c, p);
                if (r < 0)
                        return r;
                p = NULL;
        }
        fields_from_task(p, w, &f);
        r = p ? process_update(l, c, p, &f) : process_add(l, c, &f, w->tgid, &p);
        if (r < 0)
                return r;
        *ret = p;
        return 0;
}

/* Bring one thread up to the state w describes, keeping a head newer than w's. */
static int task_state(Live *l, LiveChanges *c, const LiveTask *w) {
        Process *p;
        if (w->tid <= 0 || w->tgid <= 0 || w->mode < 0 || w->mode >= _TASK_MODE_MAX ||
            (w->mode == TASK_MODE_FILTER && w->filter_id == 0))
                return -EBADMSG;
        int r = process_for(l, c, w, &p);
        if (r < 0)
                return r;
        Task *t = process_find_thread(p, w->tid);
        if (t && w->start_time && t->start_time && t->start_time != w->start_time) {
                r = thread_exit(l, c, p, t, true); /* another thread under a reused tid */
                if (r < 0)
                        return r;
                t = NULL;
        }
        Task want = t ? *t : (Task) { .tid = w->tid, .mode = TASK_MODE_DISABLED };
        want.start_time = w->start_time ? w->start_time : want.start_time;
        if (w->mode > want.mode)
                want.mode = w->mode;
        if (w->filter_id && !is_ancestor_or_self(l->forest, w->filter_id, want.filter_id)) {
                want.filter_id = w->filter_id;
                want.mode = TASK_MODE_FILTER;
        }
        if (!t) {
                if (want.mode == TASK_MODE_DISABLED && !process_has_seccomp(p))
                        return 0; /* nothing to track: an empty new process goes again below */
                return thread_add(l, c, p, &want, w->comm, &t); /* an escaped thread, if disabled */
        }
        return thread_update(l, c, p, t, &want);
}

/* A process event made a process but no thread in strict or filter mode came of it (or exec left
 * only an escaped thread): it leaves. */
static int process_drop_if_unfiltered(Live *l, LiveChanges *c, pid_t tgid) {
        Process *p = forest_find_process(l->forest, tgid);
        return p && !process_has_seccomp(p) ? drop_process(l, c, p) : 0;
}

/* A process made by fork(2) has a copy of its parent's file descriptors: it holds the listeners its
 * parent held, under the same numbers. */
static int listeners_inherit(Live *l, LiveChanges *c, pid_t child, pid_t parent) {
        _cleanup_free_ ListenerHolder *held = NULL; /* .pid: unused; the filter's id goes in what */
        _cleanup_free_ uint64_t *what = NULL;
        size_t n = 0, allocated = 0, allocated_what = 0;
        for (size_t i = 0; i < l->forest->n_listeners; i++) {
                const Listener *x = l->forest->listeners[i];
                for (size_t j = 0; j < x->n_holders; j++) {
                        if (x->holders[j].pid != parent)
                                continue;
                        if (GROW(held, allocated, n + 1) < 0 || GROW(what, allocated_what, n + 1) < 0)
                                return -ENOMEM;
                        held[n] = x->holders[j];
                        what[n++] = x->filter_id;
                }
        }
        for (size_t i = 0; i < n; i++) {
                Filter *flt = forest_find_filter(l->forest, what[i]);
                int r = flt ? listener_hold(l, c, flt, child, held[i].fd) : 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A disabled thread is tracked only in a process that has a thread in strict or filter mode: it
 * escaped that process's filters (it was created before they were installed without TSYNC). */
static int on_task_state(Live *l, LiveChanges *c, const LiveTask *w) {
        const Process *p = forest_find_process(l->forest, w->tgid);
        bool forked = w->forked && !p && w->tid == w->tgid && w->ppid > 0;
        if (w->mode == TASK_MODE_DISABLED && !process_find_thread(p, w->tid) && !process_has_seccomp(p))
                return 0; /* not a thread of the forest */
        int r = task_state(l, c, w);
        if (r >= 0 && forked && l->forest->n_listeners > 0 && forest_find_process(l->forest, w->tgid))
                r = listeners_inherit(l, c, w->tgid, w->ppid);
        return r < 0 ? r : process_drop_if_unfiltered(l, c, w->tgid);
}

/* exec ends every other thread of the process, without exit events for them; the thread that
 * exec'd takes over the leader's tid. */
static int on_task_exec(Live *l, LiveChanges *c, const LiveTask *w) {
        Process *p = forest_find_process(l->forest, w->tgid);
        for (size_t i = p ? p->n_threads : 0; i-- > 0;) {
                if (p->threads[i].tid == w->tid)
                        continue;
                int r = thread_exit(l, c, p, &p->threads[i], true);
                if (r < 0)
                        return r;
        }
        int r = on_task_state(l, c, w);
        return r < 0 ? r : process_drop_if_unfiltered(l, c, w->tgid);
}

/* A process is gone: the listener fds it held are closed. */
static int listeners_drop_holder(Live *l, LiveChanges *c, pid_t pid) {
        for (size_t i = 0; i < l->forest->n_listeners; i++) {
                const Listener *x = l->forest->listeners[i];
                bool held = false;
                for (size_t j = 0; j < x->n_holders && !held; j++)
                        held = x->holders[j].pid == pid;
                Filter *flt = held ? forest_find_filter(l->forest, x->filter_id) : NULL;
                if (!flt)
                        continue;
                int r = listener_release(l, c, flt, pid, -1, LISTENER_ENDS_IF_NONE);
                if (r < 0)
                        return r;
                i = (size_t) -1; /* the list changed: look again from the start */
        }
        return 0;
}

static int on_task_exit(Live *l, LiveChanges *c, const LiveTask *w) {
        Process *p = forest_find_process(l->forest, w->tgid);
        Task *t = process_find_thread(p, w->tid);
        int r = t ? thread_exit(l, c, p, t, false) : 0;
        if (r >= 0 && w->group_dead && l->forest->n_listeners > 0)
                r = listeners_drop_holder(l, c, w->tgid);
        return r;
}

static int on_listener_closed(Live *l, LiveChanges *c, const LiveEvent *e) {
        Filter *flt = forest_find_filter(l->forest, e->filter.id);
        if (!flt)
                return 0; /* retired already, or never known: nothing says it has a listener */
        return listener_release(l, c, flt, e->task.tgid, e->filter.listener_fd,
                                e->filter.has_listener ? LISTENER_LIVES : LISTENER_ENDS);
}

static int on_filter(Live *l, LiveChanges *c, const LiveEvent *e) {
        if (e->filter.id == 0 || e->filter.id == e->filter.parent_id)
                return -EBADMSG;
        int r = filter_attach(l, c, e);
        if (r < 0)
                return r;
        LiveTask w = e->task;
        w.filter_id = e->filter.id;
        w.mode = TASK_MODE_FILTER;
        w.exe = NULL;
        for (size_t i = 0; i < e->filter.n_tsync; i++) {
                LiveTask other = w;
                other.tid = e->filter.tsync[i].tid;
                other.start_time = e->filter.tsync[i].start_time;
                if (other.tid != w.tid && (r = task_state(l, c, &other)) < 0)
                        return r;
        }
        w.exe = e->task.exe;
        r = task_state(l, c, &w);
        if (r >= 0 && e->filter.has_listener && e->filter.listener_held) {
                Filter *flt = forest_find_filter(l->forest, e->filter.id);
                r = flt ? listener_hold(l, c, flt, e->task.tgid, e->filter.listener_fd) : 0;
        }
        return r;
}

static int on_comm(Live *l, LiveChanges *c, const LiveTask *w) {
        Process *p = forest_find_process(l->forest, w->tgid);
        if (w->tid != w->tgid || !process_find_thread(p, w->tid))
                return 0;
        LiveProcessFields f;
        live_fields_of(p, &f);
        memcpy(f.comm, w->comm, sizeof(f.comm));
        return process_update(l, c, p, &f);
}

static int on_parent(Live *l, LiveChanges *c, const LiveTask *w) {
        Process *p = forest_find_process(l->forest, w->tgid);
        if (!p || (w->process_start_time && p->start_time && p->start_time != w->process_start_time))
                return 0; /* gone, or another process under that pid */
        LiveProcessFields f;
        live_fields_of(p, &f);
        f.ppid = w->ppid;
        return process_update(l, c, p, &f);
}

static int apply_one(Live *l, LiveChanges *c, const LiveEvent *e) {
        switch (e->type) {
        case LIVE_EVENT_TASK:
                return on_task_state(l, c, &e->task);
        case LIVE_EVENT_EXEC:
                return on_task_exec(l, c, &e->task);
        case LIVE_EVENT_EXIT:
                return on_task_exit(l, c, &e->task);
        case LIVE_EVENT_FILTER:
                return on_filter(l, c, e);
        case LIVE_EVENT_COMM:
                return on_comm(l, c, &e->task);
        case LIVE_EVENT_PARENT:
                return on_parent(l, c, &e->task);
        case LIVE_EVENT_LISTENER_CLOSED:
                return on_listener_closed(l, c, e);
        default:
                return -EBADMSG;
        }
}

/* Retire the candidates still unused, children before their parents. */
static int retire_unused(Live *l, LiveChanges *c) {
        int r;

        /* A filter named before it was known may be known by now: count again to be sure. */
        if ((!l->uses_valid || l->uses_broken) && (r = live_uses_rebuild(l)) < 0)
                return r;
        if (l->uses_broken)
                return -EUCLEAN;
        while (l->n_candidates > 0) {
                uint64_t id = l->candidates[--l->n_candidates];
                Filter *x = forest_find_filter(l->forest, id);
                if (!x || live_uses_get(l, id) > 0)
                        continue; /* retired already, or used again */
                r = filter_retire(l, c, x);
                if (r < 0)
                        return r;
                if (!l->uses_valid && (r = live_uses_rebuild(l)) < 0)
                        return r;
        }
        return 0;
}

int live_apply(Live *l, const LiveEvent *events, size_t n, LiveChanges *c) {
        for (size_t i = 0; i < n; i++) {
                int r = apply_one(l, c, &events[i]);
                if (r < 0)
                        return r;
        }
        return retire_unused(l, c);
}

/* The filters the batch's filter events bring whose parent is known by then (the forest's, or one
 * such an event brought before): the others would fail with -ENOLINK. */
static int batch_filters_known(const Live *l, const LiveEvent *events, size_t n, Hashmap *ret) {
        for (size_t i = 0; i < n; i++) {
                const LiveFilter *f = &events[i].filter;
                if (events[i].type != LIVE_EVENT_FILTER || f->id == 0)
                        continue;
                if (f->parent_id && !forest_find_filter(l->forest, f->parent_id) && !hashmap_get(ret, f->parent_id))
                        continue;
                if (hashmap_replace(ret, f->id, (void *) 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The filter e names that neither the forest nor the batch brings: 0 if none. */
static uint64_t event_unknown_filter(const Live *l, const Hashmap *brought, const LiveEvent *e) {
        uint64_t id = 0;
        if (e->type == LIVE_EVENT_TASK || e->type == LIVE_EVENT_EXEC)
                id = e->task.filter_id;
        else if (e->type == LIVE_EVENT_FILTER)
                id = hashmap_get(brought, e->filter.id) ? 0 : e->filter.parent_id ?: e->filter.id;
        if (id == 0 || forest_find_filter(l->forest, id) || hashmap_get(brought, id))
                return 0;
        return id;
}

static void skipped_note(LiveSkipped *s, const LiveEvent *e, uint64_t filter_id, int error) {
        if (s->n++ == 0) {
                s->tid = e->task.tid;
                s->filter_id = filter_id;
                s->error = error;
        }
        if (filter_id)
                s->unknown_filter++;
}

int live_apply_fitting(Live *l, const LiveEvent *events, size_t n, LiveChanges *c, LiveSkipped *skipped) {
        _cleanup_(hashmap_deinit) Hashmap brought = {};
        int r = batch_filters_known(l, events, n, &brought);
        *skipped = (LiveSkipped) {};
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                uint64_t unknown = event_unknown_filter(l, &brought, &events[i]);
                if (unknown) {
                        skipped_note(skipped, &events[i], unknown, -ENOLINK);
                        continue;
                }
                size_t mark = c->n;
                r = apply_one(l, c, &events[i]);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        int k = live_rollback_to(l, c, mark);
                        if (k < 0)
                                return k;
                        skipped_note(skipped, &events[i], 0, r);
                }
        }
        return retire_unused(l, c);
}
