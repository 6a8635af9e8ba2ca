/* scan-bpf-proc.c: what a bpf pass could not meet, read from /proc: a subtree's root hidden from
 * the iterators, and listener holders a whole-machine pass leaves out */
#include <linux/seccomp.h>
#include <stdlib.h>

#include "observe/procinfo.h"
#include "observe/scan-bpf-proc.h"

bool bpf_records_have_process(const PassRecords *r, pid_t pid) {
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
        if (k < 0)
                return k;
        k = proc_read_start_time(tid, &start);
        if (k < 0)
                return k;
        if (st.seccomp_mode == SECCOMP_MODE_FILTER)
                return -EOPNOTSUPP; /* its filters' identity cannot be read from here */

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

/* Thread tid of process pid from /proc (leader: its leader's record), appended to the records; one
 * that exited meanwhile is left out. */
static int records_add_thread(BpfScanner *s, pid_t pid, pid_t tid, const struct scan_rec_task *leader) {
        struct scan_rec_task rec = *leader;

        if (tid != pid) {
                int k = task_rec_from_proc(s, pid, tid, leader, &rec);
                if (k == -ESRCH)
                        return 0;
                if (k < 0)
                        return k;
        }
        if (GROW(s->records.tasks, s->records.n_tasks_allocated, s->records.n_tasks + 1) < 0)
                return -ENOMEM;
        s->records.tasks[s->records.n_tasks++] = rec;
        return 0;
}

/* The threads of process pid from /proc, appended to the records; on failure the records are as
 * they were. -EOPNOTSUPP if a thread runs under seccomp filters (their ids cannot be read). */
static int records_add_from_proc(BpfScanner *s, pid_t pid) {
        _cleanup_free_ pid_t *tids = NULL;
        struct scan_rec_task leader;
        size_t n, n_before = s->records.n_tasks;
        int k;

        k = task_rec_from_proc(s, pid, pid, NULL, &leader);
        if (k < 0)
                return k;
        k = proc_list_threads(pid, &tids, &n);
        if (k < 0)
                return k;

        for (size_t i = 0; i < n; i++) {
                k = records_add_thread(s, pid, tids[i], &leader);
                if (k < 0) {
                        s->records.n_tasks = n_before;
                        return k;
                }
        }
        log_debug("Process %d was not visited by the pass: its %zu threads are read from /proc.", pid, n);
        return 0;
}

/* Pid 1's thread group is hidden from BPF on the project's machines (see scan_tasks() in
 * scan.bpf.c): a subtree rooted there, or at any process the pass did not meet, gets its root's
 * threads from /proc. That works as long as they run under no filter (their ids cannot be read);
 * the rest of the subtree comes from the pass as usual. */
int bpf_scanner_add_unvisited_root(BpfScanner *s, pid_t pid) {
        int k = records_add_from_proc(s, pid);
        if (k == -ESRCH)
                return bpf_scanner_fail_errno(s, k, "Process %d not found.", pid);
        if (k == -EOPNOTSUPP)
                return bpf_scanner_fail_errno(s, k, "Process %d is hidden from the BPF iterators and has a thread "
                                              "under seccomp filters, whose identity they cannot read; use the "
                                              "ptrace backend.", pid);
        return k;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* A whole-machine pass leaves out single-threaded processes in disabled mode, and a listener's
 * holder is often one (a supervisor): those are read from /proc. One that runs under filters now
 * (it installed them after the task iterator met it) or has exited is left out, and with it its
 * holders. Returns 1 when records were added (the spans must be built again). */
int bpf_scanner_add_holders(BpfScanner *s, ProcSpan *spans, size_t n_spans) {
        PassRecords *r = &s->records;
        _cleanup_free_ pid_t *missing = NULL;
        size_t n = 0, allocated = 0;
        bool added = false;
        int k;

        for (size_t i = 0; i < r->n_listeners; i++) {
                pid_t pid = (pid_t) r->listeners[i].tgid;
                if (bpf_span_find(spans, n_spans, pid))
                        continue;
                if (GROW(missing, allocated, n + 1) < 0)
                        return -ENOMEM;
                missing[n++] = pid;
        }
        if (n == 0)
                return 0;
        qsort(missing, n, sizeof(pid_t), cmp_pid);
        for (size_t i = 0; i < n; i++) {
                if (i > 0 && missing[i] == missing[i - 1])
                        continue;
                k = records_add_from_proc(s, missing[i]);
                if (k == -ESRCH || k == -EOPNOTSUPP) {
                        log_debug_errno(k, "Listener holder %d could not be read from /proc, left out: %m", missing[i]);
                        continue;
                }
                if (k < 0)
                        return k;
                added = true;
        }
        return added;
}
