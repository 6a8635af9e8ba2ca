/* pidns.bpf.h: pids as the daemon's own pid namespace numbers them, for the scan and watch units.
 * The kernel's task->pid and ->tgid are those of the initial namespace; a daemon that runs in
 * another one (a container, a booted systemd in private namespaces) would name tasks by numbers
 * that its callers, /proc and pidfd_open() do not know. The namespace (pidns_self, ids.bpf.h) is
 * learnt from the daemon's own task when it reads an iterator. */
#pragma once

#include "observe/bpf/ids.bpf.h"

/* A pid's number at one level of namespaces, and that namespace: its address (which never leaves
 * the program) and, unless PIDNS_FROM_CURRENT, its inode number. */
struct pid_number {
        __u32 nr, level, inum;
        __u64 ns;
};

/* The number of the struct pid at pid_addr at level (its own, the deepest, when own), in *ret;
 * all 0 when it has none there. Every read of struct pid (and struct pid_namespace) is here, once:
 * the kernel resolves a light skeleton's CO-RE relocations through a cache of 31 candidate lists by
 * a hash of the type's name, where these two share a slot, and each alternation between them walks
 * all of its types again. A global function, which the verifier checks once rather than at each
 * of the calls (half of the task program's verification was these lines, six times over); it
 * takes the pid as a number (pidns_pid_of()). Two reads of kernel memory (three with the inode
 * number).
 *
 * The scan unit defines PIDNS_FROM_CURRENT: its iterators run in the daemon's own context, so the
 * daemon's namespace is the one current is in, told apart from others by its address, and the
 * unit reads no struct pid_namespace at all (no candidate list of that name to find each load).
 * The watch unit's tracepoints run in any task's: it compares inode numbers. */
__noinline int pid_number_at(__u64 pid_addr, __u32 level, __u32 own, struct pid_number *ret) {
        struct pid *p = bpf_rdonly_cast((void *) pid_addr, bpf_core_type_id_kernel(struct pid));
        __u32 deepest;
        __u64 at, ns;

        if (!ret)
                return 0;
        ret->nr = ret->level = ret->inum = 0;
        ret->ns = 0;
        if (!p)
                return 0;
        deepest = p->level;
        if (own)
                level = deepest;
        if (deepest < level || level > 32)
                return 0;
        at = (__u64) p + bpf_core_field_offset(struct pid, numbers) + (__u64) level * sizeof(struct upid);
        /* p->numbers[level], a plain struct upid (its layout has not changed since it was made),
         * read as words: the verifier cannot bound level */
        ns = kernel_word((const void *) (at + __builtin_offsetof(struct upid, ns)));
        if (!ns)
                return 0;
        ret->nr = kernel_u32((const void *) (at + __builtin_offsetof(struct upid, nr)));
        ret->level = level;
        ret->ns = ns;
#ifndef PIDNS_FROM_CURRENT
        ret->inum = BPF_CORE_READ((struct pid_namespace *) ns, ns.inum);
#endif
        return 0;
}

/* t's struct pid as a number, for pid_number_at() (a global function takes no kernel pointer). */
static __always_inline __u64 pidns_pid_of(struct task_struct *t) {
        return kernel_word(&t->thread_pid);
}

#ifdef PIDNS_FROM_CURRENT
/* The iterators run in the reader's context: current is the daemon. Its level, once (a process
 * never changes its pid namespace); the namespace's inode number is the one user space read. */
__noinline int pidns_learn_once(void) {
        struct pid_number n = {};

        pid_number_at(pidns_pid_of(task_plain(bpf_get_current_task_btf())), 0, 1, &n);
        if (!n.ns)
                return 0;
        pidns_self.level = n.level;
        pidns_self.inum = pidns_self.own_inum;
        return 0;
}

static __always_inline void pidns_learn(void) {
        if (!pidns_self.inum && pidns_self.own_inum)
                pidns_learn_once();
}

/* The daemon's namespace, as pid_number_at() has it in ->ns: the one current is in. */
static __always_inline __u64 pidns_self_ns(void) {
        struct pid_number n = {};

        pid_number_at(pidns_pid_of(task_plain(bpf_get_current_task_btf())), pidns_self.level, 0, &n);
        return n.ns;
}
#else
static __always_inline __u64 pidns_self_ns(void) {
        return 0; /* told by the inode number */
}
#endif

/* t's number in the daemon's namespace (self_ns: pidns_self_ns()), or 0 when t is not in it (a
 * task of a namespace above it, or of a sibling one). */
static __always_inline __u32 pidns_nr(struct task_struct *t, __u64 self_ns) {
        struct pid_number n = {};

        pid_number_at(pidns_pid_of(t), pidns_self.level, 0, &n);
#ifdef PIDNS_FROM_CURRENT
        return n.ns && n.ns == self_ns ? n.nr : 0;
#else
        return n.inum && n.inum == pidns_self.inum ? n.nr : 0;
#endif
}

/* Which task pidns_nr_which() numbers, from the one it is given. */
enum {
        PIDNS_OF_TASK,
        PIDNS_OF_LEADER, /* its thread group leader: its process's tgid */
        PIDNS_OF_PARENT, /* its parent process's leader: its ppid */
};

/* t, its thread group leader or its parent process's leader (which: PIDNS_OF_*). */
static __always_inline struct task_struct *pidns_task_which(struct task_struct *t, __u32 which) {
        if (which != PIDNS_OF_TASK)
                t = t->group_leader;
        if (which == PIDNS_OF_PARENT)
                t = t->real_parent->group_leader;
        return t;
}

#ifdef PIDNS_FROM_CURRENT
/* pidns_nr_which() in a global function, which the verifier checks once where each inline use
 * was checked again (a quarter of the task program's verification); it takes the task as a
 * number. */
__noinline __u32 pidns_nr_of(__u64 task_addr, __u32 which) {
        struct task_struct *t = bpf_rdonly_cast((void *) task_addr, bpf_core_type_id_kernel(struct task_struct));

        return t ? pidns_nr(pidns_task_which(t, which), pidns_self_ns()) : 0;
}
#endif

/* The number in the daemon's namespace of t (the task at task_addr: the scan unit's iterators
 * know it as a number), of its leader or of its parent process (which: PIDNS_OF_*); 0 when that
 * task is not in it. */
static __always_inline __u32 pidns_nr_which(struct task_struct *t, __u64 task_addr, __u32 which) {
#ifdef PIDNS_FROM_CURRENT
        return pidns_nr_of(task_addr, which);
#else
        return pidns_nr(pidns_task_which(t, which), pidns_self_ns());
#endif
}

/* The address of the task a field points at, as a number (for a global function, which takes no
 * kernel pointer); 0 if unreadable. */
static __always_inline __u64 task_addr_of(struct task_struct *const *field) {
        return kernel_word(field);
}

/* The tid, the process's tgid and its parent process's tgid in the daemon's namespace of t, the
 * task at task_addr (0 in the watch unit, which reads t). Returns false when t is not in it, or
 * the namespace is not known yet (the caller skips t: the first pass will report it); a parent
 * outside it is ppid 0, as /proc says of a namespace's init. t is a plain (task_plain()) pointer. */
static __always_inline bool pidns_task_ids(struct task_struct *t, __u64 task_addr, __u32 *tid, __u32 *tgid,
                                           __u32 *ppid) {
        if (!pidns_self.inum)
                return false;
        if (pidns_self.level == 0) {
                *tid = t->pid;
                *tgid = t->tgid;
                *ppid = t->group_leader->real_parent->tgid;
                return true;
        }
        *tid = pidns_nr_which(t, task_addr, PIDNS_OF_TASK);
        *tgid = pidns_nr_which(t, task_addr, PIDNS_OF_LEADER);
        *ppid = pidns_nr_which(t, task_addr, PIDNS_OF_PARENT);
        return *tid != 0 && *tgid != 0;
}

/* The tgid alone (listeners, executables, command lines) of t, the task at task_addr; 0: not in
 * the daemon's namespace. */
static __always_inline __u32 pidns_tgid(struct task_struct *t, __u64 task_addr) {
        if (!pidns_self.inum)
                return 0;
        if (pidns_self.level == 0)
                return t->tgid;
        return pidns_nr_which(t, task_addr, PIDNS_OF_LEADER);
}
