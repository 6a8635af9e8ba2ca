/* pidns.bpf.h: pids as the daemon's own pid namespace numbers them, for the scan and watch units.
 * The kernel's task->pid and ->tgid are those of the initial namespace; a daemon that runs in
 * another one (a container, a booted systemd in private namespaces) would name tasks by numbers
 * that its callers, /proc and pidfd_open() do not know. The namespace (pidns_self, ids.bpf.h) is
 * learnt from the daemon's own task when it reads an iterator. */
#pragma once

#include "observe/bpf/ids.bpf.h"

/* The iterators run in the reader's context: current is the daemon. Once is enough (a process
 * never changes its pid namespace). */
static __always_inline void pidns_learn(void) {
        struct task_struct *me;
        struct pid *p;
        struct upid u = {};
        __u32 level;

        if (pidns_self.inum)
                return;
        me = task_plain(bpf_get_current_task_btf());
        p = me->thread_pid;
        level = p->level;
        if (level > 32 || bpf_probe_read_kernel(&u, sizeof(u), (const void *) ((__u64) p +
                                                bpf_core_field_offset(struct pid, numbers) +
                                                (__u64) level * sizeof(struct upid))) < 0 || !u.ns)
                return;
        pidns_self.level = level;
        pidns_self.inum = BPF_CORE_READ(u.ns, ns.inum);
}

/* p's number in the daemon's namespace, or 0 when p is not in it (a task of a namespace above it,
 * or of a sibling one). Two reads of kernel memory, only outside the initial namespace. */
static __noinline __u32 pidns_nr(struct pid *p) {
        __u32 level = pidns_self.level;
        struct upid u = {};
        __u64 at;

        if (!p || p->level < level || level > 32)
                return 0;
        at = (__u64) p + bpf_core_field_offset(struct pid, numbers) + (__u64) level * sizeof(struct upid);
        if (bpf_probe_read_kernel(&u, sizeof(u), (const void *) at) < 0 || !u.ns)
                return 0;
        if (BPF_CORE_READ(u.ns, ns.inum) != pidns_self.inum)
                return 0;
        return (__u32) u.nr;
}

/* t's tid, its process's tgid and its parent process's tgid in the daemon's namespace. Returns
 * false when t is not in it, or the namespace is not known yet (the caller skips t: the first
 * pass will report it); a parent outside it is ppid 0, as /proc says of a namespace's init. t is
 * a plain (task_plain()) pointer. */
static __always_inline bool pidns_task_ids(struct task_struct *t, __u32 *tid, __u32 *tgid, __u32 *ppid) {
        struct task_struct *leader = t->group_leader;

        if (!pidns_self.inum)
                return false;
        if (pidns_self.level == 0) {
                *tid = t->pid;
                *tgid = t->tgid;
                *ppid = leader->real_parent->tgid;
                return true;
        }
        *tid = pidns_nr(t->thread_pid);
        *tgid = pidns_nr(leader->thread_pid);
        *ppid = pidns_nr(leader->real_parent->group_leader->thread_pid);
        return *tid != 0 && *tgid != 0;
}

/* The tgid alone (listeners, executables, command lines); 0: not in the daemon's namespace. */
static __always_inline __u32 pidns_tgid(struct task_struct *t) {
        if (!pidns_self.inum)
                return 0;
        if (pidns_self.level == 0)
                return t->tgid;
        return pidns_nr(t->group_leader->thread_pid);
}
