/* plan-kmodel.c: a pure model of what the kernel does with processes, threads and seccomp filters
 * (fork, clone, CLONE_PARENT, install with TSYNC and NEW_LISTENER, exits and reparenting to
 * subreapers, strict mode, no_new_privs, listener fds), to plan and check restores without one */
#include "plan/plan-kmodel.h"

#include <linux/seccomp.h>

#include "core/prog.h"


#define KMODEL_FIRST_PID 1000

void kmodel_init(KModel *m, bool privileged) {
        *m = (KModel) { .privileged = privileged, .next_tid = KMODEL_FIRST_PID };
}

void kmodel_deinit(KModel *m) {
        for (size_t i = 0; i < m->n_processes; i++) {
                free(m->processes[i].threads);
                free(m->processes[i].fds);
        }
        free(m->processes);
        free(m->tasks);
        free(m->filters);
        free(m->listeners);
        *m = (KModel) {};
}

static bool task_ok(const KModel *m, size_t t) {
        return t < m->n_tasks && m->tasks[t].alive;
}

static int add_process(KModel *m, size_t parent, size_t *ret) {
        if (GROW(m->processes, m->n_processes_allocated, m->n_processes + 1) < 0)
                return -ENOMEM;
        m->processes[m->n_processes] = (KProcess) { .parent = parent, .alive = true };
        *ret = m->n_processes++;
        return 0;
}

/* A new living task in process p (its first one becomes the leader: tid == pid). */
static int add_task(KModel *m, size_t p, const KTask *like, size_t *ret) {
        KProcess *proc = &m->processes[p];

        if (GROW(m->tasks, m->n_tasks_allocated, m->n_tasks + 1) < 0 ||
            GROW(proc->threads, proc->n_threads_allocated, proc->n_threads + 1) < 0)
                return -ENOMEM;
        m->tasks[m->n_tasks] = (KTask) {
                .process = p,
                .head = like ? like->head : KMODEL_NONE,
                .mode = like ? like->mode : TASK_MODE_DISABLED,
                .nnp = like && like->nnp,
                .ids_set = like && like->ids_set,
                .uid = like ? like->uid : 0,
                .gid = like ? like->gid : 0,
                .alive = true,
                .tid = m->next_tid++,
        };
        if (proc->n_threads == 0)
                proc->pid = m->tasks[m->n_tasks].tid;
        proc->threads[proc->n_threads++] = m->n_tasks;
        proc->n_alive_threads++;
        *ret = m->n_tasks++;
        return 0;
}

int kmodel_spawn_initial(KModel *m, size_t *ret_task) {
        size_t p;
        int r = add_process(m, KMODEL_NONE, &p);

        if (r < 0)
                return r;
        return add_task(m, p, NULL, ret_task);
}

static int copy_fds(KModel *m, size_t from, size_t to) {
        KProcess *src = &m->processes[from], *dst = &m->processes[to];

        if (src->n_fds == 0)
                return 0;
        dst->fds = calloc(src->n_fds, sizeof(KFd));
        if (!dst->fds)
                return -ENOMEM;
        memcpy(dst->fds, src->fds, src->n_fds * sizeof(KFd));
        dst->n_fds = dst->n_fds_allocated = src->n_fds;
        for (size_t i = 0; i < dst->n_fds; i++)
                m->listeners[dst->fds[i].listener].n_fds++;
        return 0;
}

int kmodel_fork(KModel *m, size_t t, bool clone_parent, size_t *ret_task) {
        size_t p, parent;
        KTask like;
        int r;

        if (!task_ok(m, t))
                return -ESRCH;
        if (m->tasks[t].mode == TASK_MODE_STRICT)
                return -EPERM;
        parent = m->tasks[t].process;
        if (clone_parent) {
                parent = m->processes[parent].parent;
                if (parent == KMODEL_NONE)
                        return -EINVAL;
        }
        like = m->tasks[t];
        r = add_process(m, parent, &p);
        if (r < 0)
                return r;
        memcpy(m->processes[p].comm, m->processes[like.process].comm, sizeof(m->processes[p].comm));
        r = copy_fds(m, like.process, p);
        if (r < 0)
                return r;
        return add_task(m, p, &like, ret_task);
}

int kmodel_thread(KModel *m, size_t t, size_t *ret_task) {
        KTask like;

        if (!task_ok(m, t))
                return -ESRCH;
        if (m->tasks[t].mode == TASK_MODE_STRICT)
                return -EPERM;
        like = m->tasks[t];
        return add_task(m, like.process, &like, ret_task);
}

bool kmodel_filter_is_ancestor(const KModel *m, size_t a, size_t b) {
        if (a == KMODEL_NONE)
                return true;
        while (b != KMODEL_NONE && m->filters[b].depth > m->filters[a].depth)
                b = m->filters[b].parent;
        return a == b;
}

/* seccomp_can_sync_threads(): every other thread is disabled or runs under an ancestor of t's
 * chain. The offending task, or KMODEL_NONE. */
static size_t tsync_blocker(const KModel *m, size_t t) {
        const KProcess *p = &m->processes[m->tasks[t].process];

        for (size_t i = 0; i < p->n_threads; i++) {
                const KTask *x = &m->tasks[p->threads[i]];

                if (p->threads[i] == t || !x->alive || x->mode == TASK_MODE_DISABLED)
                        continue;
                if (x->mode == TASK_MODE_STRICT || !kmodel_filter_is_ancestor(m, x->head, m->tasks[t].head))
                        return p->threads[i];
        }
        return KMODEL_NONE;
}

static int check_install_flags(unsigned flags) {
        unsigned known = SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_NEW_LISTENER |
                         SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV | SECCOMP_FILTER_FLAG_TSYNC_ESRCH;

        if (flags & ~known)
                return -EINVAL;
        /* seccomp_set_mode_filter(): a listener fd cannot be returned with TSYNC's tid */
        if ((flags & SECCOMP_FILTER_FLAG_TSYNC) && (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) &&
            !(flags & SECCOMP_FILTER_FLAG_TSYNC_ESRCH))
                return -EINVAL;
        if ((flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) && !(flags & SECCOMP_FILTER_FLAG_NEW_LISTENER))
                return -EINVAL;
        return 0;
}

static int add_filter(KModel *m, size_t parent, const struct sock_filter *insns, size_t len, unsigned flags,
                      uint64_t tag, size_t *ret) {
        if (GROW(m->filters, m->n_filters_allocated, m->n_filters + 1) < 0)
                return -ENOMEM;
        m->filters[m->n_filters] = (KFilter) {
                .parent = parent,
                .insns = insns,
                .len = len,
                .log = flags & SECCOMP_FILTER_FLAG_LOG,
                .wait_killable_recv = flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
                .listener = KMODEL_NONE,
                .tag = tag,
                .depth = parent == KMODEL_NONE ? 1 : m->filters[parent].depth + 1,
        };
        *ret = m->n_filters++;
        return 0;
}

/* The lowest fd number free in process p. */
static int lowest_free_fd(const KModel *m, size_t p) {
        int fd = KMODEL_FIRST_FD;

        for (bool again = true; again;) {
                again = false;
                for (size_t i = 0; i < m->processes[p].n_fds; i++)
                        if (m->processes[p].fds[i].fd == fd) {
                                fd++;
                                again = true;
                        }
        }
        return fd;
}

static int fd_put(KModel *m, size_t p, int fd, size_t listener) {
        KProcess *proc = &m->processes[p];

        if (GROW(proc->fds, proc->n_fds_allocated, proc->n_fds + 1) < 0)
                return -ENOMEM;
        proc->fds[proc->n_fds++] = (KFd) { .fd = fd, .listener = listener };
        m->listeners[listener].n_fds++;
        return 0;
}

static int new_listener(KModel *m, size_t filter, size_t p, int *ret_fd) {
        int fd = lowest_free_fd(m, p);

        if (GROW(m->listeners, m->n_listeners_allocated, m->n_listeners + 1) < 0)
                return -ENOMEM;
        m->listeners[m->n_listeners] = (KListener) { .filter = filter };
        m->filters[filter].listener = m->n_listeners++;
        *ret_fd = fd;
        return fd_put(m, p, fd, m->filters[filter].listener);
}

/* Point the installing thread, or with TSYNC every living thread of its process, at filter f. */
static void apply_install(KModel *m, size_t t, size_t f, bool tsync) {
        KProcess *p = &m->processes[m->tasks[t].process];

        for (size_t i = 0; i < p->n_threads; i++) {
                KTask *x = &m->tasks[p->threads[i]];

                if (!x->alive || (p->threads[i] != t && !tsync))
                        continue;
                x->head = f;
                x->mode = TASK_MODE_FILTER;
                if (m->tasks[t].nnp)
                        x->nnp = true; /* seccomp_sync_threads() copies no_new_privs */
        }
}

/* has_duplicate_listener(): no filter of the chain may have a listener open already. */
static bool chain_has_listener(const KModel *m, size_t head) {
        for (size_t f = head; f != KMODEL_NONE; f = m->filters[f].parent)
                if (m->filters[f].listener != KMODEL_NONE)
                        return true;
        return false;
}

int kmodel_install(KModel *m, size_t t, const struct sock_filter *insns, size_t len, unsigned flags, uint64_t tag,
                   size_t *ret_filter, int *ret_fd, size_t *ret_busy_task) {
        size_t f, busy;
        int r;

        if (!task_ok(m, t))
                return -ESRCH;
        r = check_install_flags(flags);
        if (r < 0)
                return r;
        if (len == 0 || len > PROG_MAX_INSNS || m->tasks[t].mode == TASK_MODE_STRICT)
                return -EINVAL;
        if (!kmodel_task_privileged(m, t) && !m->tasks[t].nnp)
                return -EACCES;
        if ((flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) && chain_has_listener(m, m->tasks[t].head))
                return -EBUSY;
        if (flags & SECCOMP_FILTER_FLAG_TSYNC) {
                busy = tsync_blocker(m, t);
                if (busy != KMODEL_NONE) {
                        if (ret_busy_task)
                                *ret_busy_task = busy;
                        return -EBUSY;
                }
        }
        r = add_filter(m, m->tasks[t].head, insns, len, flags, tag, &f);
        if (r < 0)
                return r;
        if (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) {
                int fd;
                r = new_listener(m, f, m->tasks[t].process, &fd);
                if (r < 0)
                        return r;
                if (ret_fd)
                        *ret_fd = fd;
        }
        apply_install(m, t, f, flags & SECCOMP_FILTER_FLAG_TSYNC);
        if (ret_filter)
                *ret_filter = f;
        return 0;
}

int kmodel_strict(KModel *m, size_t t) {
        if (!task_ok(m, t))
                return -ESRCH;
        if (m->tasks[t].mode == TASK_MODE_FILTER)
                return -EINVAL; /* seccomp_may_assign_mode(): no change of mode once set */
        m->tasks[t].mode = TASK_MODE_STRICT;
        return 0;
}

int kmodel_set_ids(KModel *m, size_t t, uid_t uid, gid_t gid) {
        if (!task_ok(m, t))
                return -ESRCH;
        m->tasks[t].ids_set = true;
        m->tasks[t].uid = uid;
        m->tasks[t].gid = gid;
        return 0;
}

bool kmodel_task_privileged(const KModel *m, size_t t) {
        return m->privileged && !(m->tasks[t].ids_set && m->tasks[t].uid != 0);
}

int kmodel_set_nnp(KModel *m, size_t t) {
        if (!task_ok(m, t))
                return -ESRCH;
        m->tasks[t].nnp = true;
        return 0;
}

int kmodel_set_subreaper(KModel *m, size_t process, bool on) {
        if (process >= m->n_processes || !m->processes[process].alive)
                return -ESRCH;
        m->processes[process].subreaper = on;
        return 0;
}

int kmodel_set_comm(KModel *m, size_t t, const char *comm) {
        char *dst;

        if (!task_ok(m, t))
                return -ESRCH;
        dst = m->processes[m->tasks[t].process].comm;
        strncpy(dst, comm, sizeof(m->processes[0].comm) - 1);
        dst[sizeof(m->processes[0].comm) - 1] = 0;
        return 0;
}

static void listener_unref(KModel *m, size_t l) {
        KListener *x = &m->listeners[l];

        x->n_fds--;
        if (x->n_fds == 0 && x->n_outside == 0)
                m->filters[x->filter].listener = KMODEL_NONE; /* seccomp_notify_detach() */
}

/* find_new_reaper(): the nearest living subreaper above p, or outside the model. */
static size_t new_reaper(const KModel *m, size_t p) {
        for (size_t a = m->processes[p].parent; a != KMODEL_NONE; a = m->processes[a].parent)
                if (m->processes[a].alive && m->processes[a].subreaper)
                        return a;
        return KMODEL_NONE;
}

static void process_gone(KModel *m, size_t p) {
        KProcess *proc = &m->processes[p];
        size_t reaper = new_reaper(m, p);

        proc->alive = false;
        for (size_t i = 0; i < proc->n_fds; i++)
                listener_unref(m, proc->fds[i].listener);
        proc->n_fds = 0;
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i].alive && m->processes[i].parent == p)
                        m->processes[i].parent = reaper;
}

int kmodel_exit_thread(KModel *m, size_t t) {
        KProcess *p;

        if (!task_ok(m, t))
                return -ESRCH;
        m->tasks[t].alive = false;
        p = &m->processes[m->tasks[t].process];
        if (--p->n_alive_threads == 0)
                process_gone(m, m->tasks[t].process);
        return 0;
}

int kmodel_exit_process(KModel *m, size_t process) {
        KProcess *p;

        if (process >= m->n_processes || !m->processes[process].alive)
                return -ESRCH;
        p = &m->processes[process];
        for (size_t i = 0; i < p->n_threads; i++)
                m->tasks[p->threads[i]].alive = false;
        p->n_alive_threads = 0;
        process_gone(m, process);
        return 0;
}

static ssize_t fd_index(const KModel *m, size_t p, int fd) {
        for (size_t i = 0; i < m->processes[p].n_fds; i++)
                if (m->processes[p].fds[i].fd == fd)
                        return (ssize_t) i;
        return -1;
}

size_t kmodel_fd_listener(const KModel *m, size_t process, int fd) {
        ssize_t i;

        if (process >= m->n_processes)
                return KMODEL_NONE;
        i = fd_index(m, process, fd);
        return i < 0 ? KMODEL_NONE : m->processes[process].fds[i].listener;
}

int kmodel_fd_close(KModel *m, size_t process, int fd) {
        KProcess *p;
        ssize_t i;

        if (process >= m->n_processes || !m->processes[process].alive)
                return -ESRCH;
        p = &m->processes[process];
        i = fd_index(m, process, fd);
        if (i < 0)
                return -EBADF;
        listener_unref(m, p->fds[i].listener);
        p->fds[i] = p->fds[--p->n_fds];
        return 0;
}

int kmodel_fd_dup(KModel *m, size_t process, int from, int to) {
        size_t l = kmodel_fd_listener(m, process, from);
        int r;

        if (process >= m->n_processes || !m->processes[process].alive)
                return -ESRCH;
        if (l == KMODEL_NONE || to < 0)
                return -EBADF;
        if (from == to)
                return 0;
        if (kmodel_fd_listener(m, process, to) != KMODEL_NONE) {
                r = kmodel_fd_close(m, process, to);
                if (r < 0)
                        return r;
        }
        return fd_put(m, process, to, l);
}

int kmodel_fd_copy(KModel *m, size_t from_process, int fd, size_t to_process, int to_fd, int *ret_fd) {
        size_t l = kmodel_fd_listener(m, from_process, fd);
        int r;

        if (l == KMODEL_NONE)
                return -EBADF;
        if (to_process >= m->n_processes || !m->processes[to_process].alive)
                return -ESRCH;
        if (to_fd < 0)
                to_fd = lowest_free_fd(m, to_process);
        else if (kmodel_fd_listener(m, to_process, to_fd) != KMODEL_NONE) {
                r = kmodel_fd_close(m, to_process, to_fd);
                if (r < 0)
                        return r;
        }
        r = fd_put(m, to_process, to_fd, l);
        if (r >= 0 && ret_fd)
                *ret_fd = to_fd;
        return r;
}

int kmodel_fd_receive(KModel *m, size_t process, size_t l, int to_fd) {
        int r;

        if (process >= m->n_processes || !m->processes[process].alive)
                return -ESRCH;
        if (l >= m->n_listeners || m->filters[m->listeners[l].filter].listener != l || to_fd < 0)
                return -EBADF;
        if (kmodel_fd_listener(m, process, to_fd) != KMODEL_NONE) {
                r = kmodel_fd_close(m, process, to_fd);
                if (r < 0)
                        return r;
        }
        return fd_put(m, process, to_fd, l);
}

int kmodel_listener_take_outside(KModel *m, size_t l) {
        if (l >= m->n_listeners || m->filters[m->listeners[l].filter].listener != l)
                return -EBADF;
        m->listeners[l].n_outside++;
        return 0;
}

/* ---- the state as a snapshot ---- */

/* Mark every filter the living tasks and listeners reach. */
static void mark_reachable(const KModel *m, bool *keep) {
        for (size_t t = 0; t < m->n_tasks; t++)
                if (m->tasks[t].alive)
                        for (size_t f = m->tasks[t].head; f != KMODEL_NONE && !keep[f]; f = m->filters[f].parent)
                                keep[f] = true;
        for (size_t i = 0; i < m->n_filters; i++)
                if (m->filters[i].listener != KMODEL_NONE)
                        for (size_t f = i; f != KMODEL_NONE && !keep[f]; f = m->filters[f].parent)
                                keep[f] = true;
}

static int forest_add_filters(const KModel *m, Forest *f) {
        _cleanup_free_ bool *keep = calloc(m->n_filters ?: 1, sizeof(bool));

        if (!keep)
                return -ENOMEM;
        mark_reachable(m, keep);
        for (size_t i = 0; i < m->n_filters; i++) {
                const KFilter *k = &m->filters[i];
                Filter *x;
                int r;

                if (!keep[i])
                        continue;
                r = forest_add_filter(f, i + 1, k->parent == KMODEL_NONE ? 0 : k->parent + 1, k->insns, k->len, &x);
                if (r < 0)
                        return r;
                x->log = k->log;
                x->wait_killable_recv = k->wait_killable_recv;
                x->has_listener = k->listener != KMODEL_NONE;
                x->listener_id = x->has_listener ? k->listener + 1 : 0;
                x->identity = IDENTITY_EXACT;
        }
        return 0;
}

static int forest_add_process_of(const KModel *m, Forest *f, size_t p) {
        const KProcess *k = &m->processes[p];
        const KTask *leader = &m->tasks[k->threads[0]];
        Process *x;
        int r;

        r = forest_add_process(f, k->pid, &x);
        if (r < 0)
                return r;
        x->ppid = k->parent == KMODEL_NONE ? 0 : m->processes[k->parent].pid;
        x->start_time = (uint64_t) k->pid;
        snprintf(x->comm, sizeof(x->comm), "%s", k->comm[0] ? k->comm : "kmodel");
        x->no_new_privs = leader->nnp;
        for (size_t i = 0; i < k->n_threads; i++) {
                const KTask *t = &m->tasks[k->threads[i]];
                Task *y;

                if (!t->alive)
                        continue;
                r = process_add_thread(x, t->tid, &y);
                if (r < 0)
                        return r;
                y->mode = t->mode;
                task_set_no_new_privs(y, t->nnp);
                y->filter_id = t->head == KMODEL_NONE ? 0 : t->head + 1;
                y->start_time = x->start_time;
        }
        if (!leader->alive) /* what /proc/PID/status keeps showing: its mode and number of filters */
                process_set_exited_leader(x, leader->mode,
                                          leader->head == KMODEL_NONE ? 0 : (unsigned) m->filters[leader->head].depth);
        return 0;
}

/* The listeners, each with its holders (pid, fd). */
static int forest_add_listeners(const KModel *m, Forest *f) {
        for (size_t l = 0; l < m->n_listeners; l++) {
                Listener *x;
                int r;

                if (m->filters[m->listeners[l].filter].listener != l)
                        continue;
                r = forest_add_listener(f, l + 1, m->listeners[l].filter + 1, &x);
                if (r < 0)
                        return r;
                x->identity = IDENTITY_EXACT;
                for (size_t p = 0; p < m->n_processes; p++) {
                        const KProcess *k = &m->processes[p];
                        for (size_t i = 0; k->alive && i < k->n_fds; i++)
                                if (k->fds[i].listener == l && (r = listener_add_holder(x, k->pid, k->fds[i].fd)) < 0)
                                        return r;
                }
        }
        return 0;
}

int kmodel_to_forest(const KModel *m, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        _cleanup_free_ char *error = NULL;
        int r;

        if (!f || !(f->backend = strdup("bpf")))
                return -ENOMEM;
        f->identity = IDENTITY_EXACT;
        f->snapshot.consistency = SNAPSHOT_CONSISTENCY_ITERATOR;
        r = host_info_set(&f->host, "kmodel", "x86_64", "kmodel");
        if (r < 0)
                return r;
        r = forest_add_filters(m, f);
        for (size_t p = 0; r >= 0 && p < m->n_processes; p++)
                if (m->processes[p].alive)
                        r = forest_add_process_of(m, f, p);
        if (r >= 0)
                r = forest_add_listeners(m, f);
        if (r < 0)
                return r;
        r = forest_link(f, &error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}
