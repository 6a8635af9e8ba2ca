/* visibility.c: what a bus caller may see of the live forest and of /proc: a filter's tasks, a
 * thread's process, a subtree, a listener holder's name */
#include "service/visibility.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "observe/procinfo.h"
#include "snapshot/snapshot.h"

size_t visible_task_count(const Caller *c, const Hashmap *counts, const Filter *flt) {
        return c->privileged ? flt->n_tasks : (size_t) (uintptr_t) hashmap_get(counts, flt->id);
}

/* Whether tgid descends from root, by the parents /proc shows now; memo holds what earlier walks
 * found (pid -> 1 in, 2 out), so every process is read once per call. */
int proc_descends_from(pid_t tgid, pid_t root, Hashmap *memo, bool *ret) {
        _cleanup_free_ pid_t *path = NULL;
        size_t n = 0, allocated = 0;
        bool in = false;
        /* /proc parents form a tree; the bound only stops a walk that races with reparenting */
        for (pid_t x = tgid; n <= SNAPSHOT_MAX_PID; n++) {
                void *known = hashmap_get(memo, (uint64_t) x);
                if (x == root || known) {
                        in = x == root || known == (void *) 1;
                        break;
                }
                ProcStatus st;
                if (x <= 1 || proc_read_status(x, &st) < 0 || st.ppid == x)
                        break; /* init, or gone: not below root */
                if (GROW(path, allocated, n + 1) < 0)
                        return -ENOMEM;
                path[n] = x;
                x = st.ppid;
        }
        for (size_t i = 0; i < n; i++)
                if (hashmap_put(memo, (uint64_t) path[i], in ? (void *) 1 : (void *) 2) < 0)
                        return -ENOMEM;
        *ret = in;
        return 0;
}

/* The process (tgid) of thread tid, which the daemon may not list (a thread stands for its
 * process); 0 when there is no such task. */
pid_t proc_process_of(uint32_t tid) {
        ProcStatus st;
        if (tid == 0 || tid > INT32_MAX || proc_read_status((pid_t) tid, &st) < 0 || st.tgid <= 0)
                return 0;
        return st.tgid;
}

int tracked_processes_copy(const Forest *f, TrackedProcesses *ret) {
        *ret = (TrackedProcesses) { .p = calloc(f->n_processes + 1, sizeof(TrackedProcess)) };
        if (!ret->p)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                TrackedProcess *t = &ret->p[ret->n++];
                *t = (TrackedProcess) { .pid = p->pid, .start_time = p->start_time };
                memcpy(t->comm, p->comm, sizeof(t->comm));
        }
        return 0;
}

void tracked_processes_done(TrackedProcesses *t) {
        free(t->p);
        *t = (TrackedProcesses) {};
}

int caller_subtree_tracked(Caller *c, const TrackedProcesses *t, pid_t root, pid_t **ret, size_t *ret_n) {
        _cleanup_(hashmap_deinit) Hashmap memo = {};
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, allocated = 0;
        for (size_t i = 0; i < t->n; i++) {
                const TrackedProcess *p = &t->p[i];
                bool in;
                if (!caller_may_see_started(c, p->pid, p->start_time))
                        continue;
                int r = proc_descends_from(p->pid, root, &memo, &in);
                if (r < 0)
                        return r;
                if (!in)
                        continue;
                if (GROW(pids, allocated, n + 1) < 0)
                        return -ENOMEM;
                pids[n++] = p->pid;
        }
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

int caller_check_tracked(Caller *c, const TrackedProcesses *t) {
        for (size_t i = 0; i < t->n; i++)
                (void) caller_may_see_started(c, t->p[i].pid, t->p[i].start_time);
        return 0;
}

int caller_process_units(Caller *c, const TrackedProcesses *t, PidUnit **ret, size_t *ret_n) {
        PidUnit *l = calloc(t->n + 1, sizeof(PidUnit));
        size_t n = 0;
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++) {
                if (!caller_may_see_started(c, t->p[i].pid, t->p[i].start_time))
                        continue;
                int r = process_unit_read(t->p[i].pid, &l[n].unit);
                if (r == -ESRCH)
                        continue;
                if (r < 0) {
                        pid_units_free(l, n);
                        return r;
                }
                l[n++].pid = t->p[i].pid;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* t's processes by pid, into *ret (pid -> its TrackedProcess). -ENOMEM. */
static int tracked_by_pid(const TrackedProcesses *t, Hashmap *ret) {
        for (size_t i = 0; i < t->n; i++)
                if (hashmap_put(ret, (uint64_t) t->p[i].pid, (void *) &t->p[i]) < 0)
                        return -ENOMEM;
        return 0;
}

int caller_unfiltered_units(Caller *c, const TrackedProcesses *t, PidUnit **ret, size_t *ret_n) {
        _cleanup_(process_unit_cache_done) ProcessUnitCache units = {};
        _cleanup_(hashmap_deinit) Hashmap tracked = {};
        _cleanup_free_ pid_t *pids = NULL;
        size_t n_pids = 0, n = 0;
        PidUnit *l;
        int r = proc_list_pids(&pids, &n_pids);
        if (r < 0)
                return r;
        if (tracked_by_pid(t, &tracked) < 0)
                return -ENOMEM;
        l = calloc(n_pids + 1, sizeof(PidUnit));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n_pids; i++) {
                ProcStatus st;
                pid_t pid = pids[i];
                /* who may see it first: for another user's process one stat(2), not a read of it */
                if (hashmap_get(&tracked, (uint64_t) pid) || !caller_may_see_started(c, pid, 0) ||
                    proc_read_status(pid, &st) < 0 || pid == 2 || st.ppid == 2 || /* kthreadd, kernel threads */
                    st.seccomp_mode != 0)
                        continue;
                r = process_unit_read_cached(&units, pid, &l[n].unit);
                if (r == -ESRCH)
                        continue;
                if (r < 0) {
                        pid_units_free(l, n);
                        return r;
                }
                l[n].pid = pid;
                l[n++].threads = st.threads;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

int caller_seen_rebase(Caller *c, const TrackedProcesses *t, const Forest *f) {
        _cleanup_(hashmap_deinit) Hashmap seen = {};
        int r = hashmap_reserve(&seen, t->n);
        for (size_t i = 0; r >= 0 && i < t->n; i++) {
                void *v = hashmap_get(&c->seen, (uint64_t) t->p[i].pid);
                const Process *p = v ? forest_find_process(f, t->p[i].pid) : NULL;
                if (p && p->start_time == t->p[i].start_time)
                        r = hashmap_replace(&seen, (uint64_t) p->pid, v);
        }
        if (r < 0)
                return r;
        hashmap_deinit(&c->seen);
        c->seen = seen;
        seen = (Hashmap) {};
        return 0;
}

/* pid as ListTasks would show it to the caller (p: its tracked process, or NULL); 0 if it may not
 * see it or it is gone. */
static int visible_process(Caller *c, const TrackedProcess *p, pid_t pid, VisibleProcess *ret) {
        ProcStatus st;
        *ret = (VisibleProcess) { .pid = pid };
        if (!caller_may_see_started(c, pid, p ? p->start_time : 0))
                return 0;
        if (proc_read_status(pid, &st) < 0 || st.tgid != pid || (!p && proc_read_comm(pid, ret->comm) < 0))
                return 0;
        if (p)
                memcpy(ret->comm, p->comm, sizeof(ret->comm));
        ret->ppid = st.ppid;
        return 1;
}

int caller_subtree_processes(Caller *c, const TrackedProcesses *t, pid_t root, VisibleProcess **ret, size_t *ret_n) {
        _cleanup_(hashmap_deinit) Hashmap memo = {}, tracked = {};
        _cleanup_free_ pid_t *pids = NULL;
        _cleanup_free_ VisibleProcess *list = NULL;
        size_t n_pids = 0, n = 0;
        int r = proc_list_pids(&pids, &n_pids);
        if (r < 0)
                return r;
        list = calloc(n_pids + 1, sizeof(VisibleProcess));
        if (!list)
                return -ENOMEM;
        if (tracked_by_pid(t, &tracked) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n_pids; i++) {
                bool in;
                r = proc_descends_from(pids[i], root, &memo, &in);
                if (r < 0)
                        return r;
                if (in && visible_process(c, hashmap_get(&tracked, (uint64_t) pids[i]), pids[i], &list[n]) > 0)
                        n++;
        }
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

void holder_comm(const Forest *f, pid_t pid, char comm[16]) {
        const Process *p = forest_find_process(f, pid);
        memset(comm, 0, 16);
        if (p)
                memcpy(comm, p->comm, 16);
        else
                (void) proc_read_comm(pid, comm);
        comm[15] = 0;
}

int caller_check_untracked_task(Caller *c, pid_t tid) {
        ProcStatus st;
        if (proc_read_status(tid, &st) < 0)
                return -ESRCH;
        if (!caller_may_see_process(c, st.tgid))
                return -EACCES;
        return 0;
}
