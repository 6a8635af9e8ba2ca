/* pidns.bpf.h: pids as the daemon's own pid namespace numbers them, for the scan and watch units.
 * The kernel's task->pid and ->tgid are those of the initial namespace; a daemon that runs in
 * another one (a container, a booted systemd in private namespaces) would name tasks by numbers
 * that its callers, /proc and pidfd_open() do not know. The namespace (pidns_self, ids.bpf.h) is
 * learnt from the daemon's own task when it reads an iterator. */
#pragma once

#include "observe/bpf/ids.bpf.h"

/* A pid's number at one level of namespaces, and that namespace (its inode number). */
struct pid_number {
        __u32 nr, level, inum;
};

/* The number of the struct pid at pid_addr at level (its own, the deepest, when own), in *ret;
 * all 0 when it has none there. Every read of struct pid and struct pid_namespace is here, once:
 * the kernel resolves a light skeleton's CO-RE relocations through a cache of 31 candidate lists by
 * a hash of the type's name, where these two share a slot, and each alternation between them walks
 * all of its types again. A global function, which the verifier checks once rather than at each
 * of the calls (half of the task program's verification was these lines, six times over); it
 * takes the pid as a number (pidns_pid_of()). Two reads of kernel memory. */
__noinline int pid_number_at(__u64 pid_addr, __u32 level, __u32 own, struct pid_number *ret) {
        struct pid *p = bpf_rdonly_cast((void *) pid_addr, bpf_core_type_id_kernel(struct pid));
        struct pid_namespace *ns;
        struct upid u = {};
        __u32 deepest;
        __u64 at;

        if (!ret)
                return 0;
        ret->nr = ret->level = ret->inum = 0;
        if (!p)
                return 0;
        deepest = p->level;
        if (own)
                level = deepest;
        if (deepest < level || level > 32)
                return 0;
        at = (__u64) p + bpf_core_field_offset(struct pid, numbers) + (__u64) level * sizeof(struct upid);
        if (bpf_probe_read_kernel(&u, sizeof(u), (const void *) at) < 0 || !u.ns)
                return 0;
        ns = u.ns; /* a plain struct upid: its layout has not changed since it was made */
        ret->nr = (__u32) u.nr;
        ret->level = level;
        ret->inum = BPF_CORE_READ(ns, ns.inum);
        return 0;
}

/* t's struct pid as a number, for pid_number_at() (a global function takes no kernel pointer). */
static __always_inline __u64 pidns_pid_of(struct task_struct *t) {
        __u64 addr = 0;

        if (bpf_probe_read_kernel(&addr, sizeof(addr), &t->thread_pid) < 0)
                return 0;
        return addr;
}

/* The iterators run in the reader's context: current is the daemon. Once is enough (a process
 * never changes its pid namespace). */
static __always_inline void pidns_learn(void) {
        struct pid_number n = {};

        if (pidns_self.inum)
                return;
        pid_number_at(pidns_pid_of(task_plain(bpf_get_current_task_btf())), 0, 1, &n);
        if (!n.inum)
                return;
        pidns_self.level = n.level;
        pidns_self.inum = n.inum;
}

/* t's number in the daemon's namespace, or 0 when t is not in it (a task of a namespace above it,
 * or of a sibling one). */
static __always_inline __u32 pidns_nr(struct task_struct *t) {
        struct pid_number n = {};

        pid_number_at(pidns_pid_of(t), pidns_self.level, 0, &n);
        return n.inum && n.inum == pidns_self.inum ? n.nr : 0;
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
        *tid = pidns_nr(t);
        *tgid = pidns_nr(leader);
        *ppid = pidns_nr(leader->real_parent->group_leader);
        return *tid != 0 && *tgid != 0;
}

/* The tgid alone (listeners, executables, command lines); 0: not in the daemon's namespace. */
static __always_inline __u32 pidns_tgid(struct task_struct *t) {
        if (!pidns_self.inum)
                return 0;
        if (pidns_self.level == 0)
                return t->tgid;
        return pidns_nr(t->group_leader);
}
