/* watch.h: the binary records the watch BPF programs (tracepoints) send to user space through the
 * event ring buffer */
#pragma once

#include <linux/filter.h>
#include <linux/types.h>

/* Like the scan's records, no event ever carries a kernel address: filters are named by the ids
 * of the scan's in-kernel id map, shared with the iterators. */

#define WATCH_COMM_LEN 16
#define WATCH_MAX_INSNS 4096 /* BPF_MAXINSNS */

enum watch_rec_type {
        WATCH_REC_TASK_NEW = 1,  /* fork/clone: the child's state */
        WATCH_REC_TASK_EXEC = 2, /* after a successful exec: the task's new state */
        WATCH_REC_TASK_EXIT = 3, /* a thread is exiting: its last state (head 0 on newer kernels) */
        WATCH_REC_FILTER = 4,    /* a filter was attached: struct watch_rec_filter */
        WATCH_REC_TASK_MODE = 5, /* the thread went from disabled to strict mode: its new state */
        WATCH_REC_TASK_TSYNC = 6, /* after a FILTER record with TSYNC: one thread it reached, its state
                                   * at the installer's return (task.filter_id is the new filter) */
        WATCH_REC_LISTENER_CLOSE = 7, /* close(2) of a listener fd: struct watch_rec_listener */
        WATCH_REC_TASK_ESCAPED = 8, /* after the first FILTER record of a process, without TSYNC: one of
                                     * its other threads, in disabled mode: it escaped the filter */
        WATCH_REC_TASK_COMM = 9, /* a process's main thread was renamed (PR_SET_NAME, a write to
                                  * /proc/PID/comm, an exec): its state, task.comm the new name */
};

/* watch_rec_task.flags */
enum {
        WATCH_TASK_NO_NEW_PRIVS = 1U << 0, /* the thread group leader's no_new_privs */
        WATCH_TASK_DUMPABLE = 1U << 1,     /* the mm's dumpable setting is SUID_DUMP_USER */
        WATCH_TASK_GROUP_DEAD = 1U << 2,   /* TASK_EXIT: the last thread of its process */
        WATCH_TASK_THREADED = 1U << 3,     /* its process has other threads */
};

/* One thread. ppid, uid, euid, gid and no_new_privs describe its process (the thread group
 * leader), as the scan's records do. */
struct watch_rec_task {
        __u32 tid;
        __u32 tgid;
        __u32 ppid; /* leader's real_parent->tgid */
        __u32 mode; /* SECCOMP_MODE_* */
        __u32 uid;  /* leader's real_cred */
        __u32 euid;
        __u32 gid;
        __u32 flags;
        __u64 start_boottime; /* ns since boot */
        __u64 filter_id;      /* head of the chain, 0 if none */
        char comm[WATCH_COMM_LEN];
};

/* The common start of every event. */
struct watch_rec {
        __u32 type;
        __u32 _pad;
        __u64 ktime_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
        struct watch_rec_task task;
};

/* watch_rec_filter.install_flags */
enum {
        WATCH_INSTALL_PRCTL = 1U << 0, /* prctl(PR_SET_SECCOMP), not seccomp(2) */
        WATCH_INSTALL_TSYNC = 1U << 1, /* TSYNC requested and done: every thread of task.tgid has it */
};

/* Why an event could not be sent, counted apart (watch_lost[] in the watch unit): the log names it. */
enum watch_loss {
        WATCH_LOSS_RING_FULL = 0, /* the event ring buffer had no room */
        WATCH_LOSS_NO_ID = 1,     /* a filter (or its parent) had no id: the id map was full */
        WATCH_LOSS_TASK_GONE = 2, /* a task could not be looked up (at its fork; a TSYNC leader) */
        _WATCH_LOSS_MAX,
};

/* WATCH_REC_FILTER: task is the installer, after the install; followed by len instructions. */
struct watch_rec_filter {
        struct watch_rec hdr;
        __u64 id;
        __u64 parent_id; /* 0 = a root filter */
        __u32 len;       /* instructions in insns[] */
        __u32 seccomp_flags; /* SECCOMP_FILTER_FLAG_* given to seccomp(2); 0 for prctl */
        __u32 install_flags;
        __u8 log;
        __u8 wait_killable_recv;
        __u8 has_listener;
        __u8 has_insns; /* 0 if the kernel kept no orig_prog */
        __s32 listener_fd; /* NEW_LISTENER: the fd seccomp(2) returned in the installer's process; else -1 */
        __u32 _pad2;
        struct sock_filter insns[];
};

/* WATCH_REC_LISTENER_CLOSE: task (the closing thread, task.filter_id its head) is closing fd, a
 * descriptor of the listener of filter_id; last: it was the file's only reference, so the listener
 * goes with it. */
struct watch_rec_listener {
        struct watch_rec hdr;
        __u64 filter_id;
        __s32 fd;
        __u32 last;
};
