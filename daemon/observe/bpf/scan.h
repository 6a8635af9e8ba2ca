/* scan.h: the binary records the scan BPF programs (iterators) send to user space through the ring
 * buffer */
#pragma once

#include <linux/filter.h>
#include <linux/types.h>

/* No record ever carries a kernel address: filters are named by ids handed out in the kernel. */

#define SCAN_COMM_LEN 16
#define SCAN_MAX_INSNS 4096 /* BPF_MAXINSNS: the kernel's limit for one classic filter */

enum scan_rec_type {
        SCAN_REC_TASK = 1,
        SCAN_REC_FILTER = 2,
        SCAN_REC_LISTENER = 3,
        SCAN_REC_END = 4,
        SCAN_REC_EXE = 5,
        SCAN_REC_ARGV = 6,
};

/* scan_rec_task.flags */
enum {
        SCAN_TASK_NO_NEW_PRIVS = 1U << 0,        /* the thread's own no_new_privs */
        SCAN_TASK_LEADER_NO_NEW_PRIVS = 1U << 1, /* the thread group leader's */
        SCAN_TASK_EXITING = 1U << 2,             /* PF_EXITING or a zombie: not reported */
};

/* One thread. The leader_* fields, ppid, uid, euid and gid describe its process (thread group
 * leader), so that any thread's record suffices to report the process. */
struct scan_rec_task {
        __u32 type;
        __u32 tid;
        __u32 tgid;
        __u32 ppid; /* leader's real_parent->tgid */
        __u32 mode; /* SECCOMP_MODE_DISABLED / _STRICT / _FILTER */
        __u32 flags;
        __u32 uid; /* leader's real_cred->uid */
        __u32 gid;
        __u32 filter_count; /* task->seccomp.filter_count, as in Seccomp_filters: */
        __u32 euid;
        __u64 start_boottime;        /* ns since boot */
        __u64 leader_start_boottime; /* ns since boot */
        __u64 filter_id;             /* head of the chain (newest), 0 if none */
        char comm[SCAN_COMM_LEN];
        char leader_comm[SCAN_COMM_LEN];
};

/* One filter, sent the first time a pass meets it. Its instructions follow only the first time
 * this scanner ever sends its id (filters are immutable, ids are never reused): later passes send
 * the record alone, and user space takes the instructions from what it kept. User space can ask
 * for all of them again by moving to a new insns_epoch (a global of scan.bpf.c). */
struct scan_rec_filter {
        __u32 type;
        __u32 len; /* instructions of the program (prog->orig_prog->len); 0 if the kernel kept none */
        __u64 id;
        __u64 parent_id; /* 0 = a root filter */
        __u32 refs;
        __u32 users;
        __u8 log;
        __u8 wait_killable_recv;
        __u8 has_listener; /* filter->notif != NULL */
        __u8 has_insns;    /* insns[] holds the len instructions; 0 with len > 0: sent before */
        __u32 _pad;
        struct sock_filter insns[];
};

/* scan_rec_exe.flags */
enum {
        SCAN_EXE_NONE = 1U << 0,    /* no executable: no mm (a kernel thread, a leader that exited) */
        SCAN_EXE_DELETED = 1U << 1, /* the file is deleted: readlink(2) shows path + " (deleted)" */
        SCAN_EXE_UNKNOWN = 1U << 2, /* not worked out here (a pseudo file system names it itself, or
                                     * the walk did not end): ask /proc/PID/exe */
        SCAN_EXE_SAME = 1U << 3,    /* the same file as the executable of same_tgid, whose record
                                     * this pass sent before with its path */
};

#define SCAN_PATH_MAX 4096 /* PATH_MAX: readlink of /proc/PID/exe fails above it */

/* The executable of process tgid as readlink(2) of /proc/PID/exe shows it to the reading process
 * (the path below its root, without " (deleted)"). Sent for each thread group leader a pass
 * reports, when asked for (want_exe). */
struct scan_rec_exe {
        __u32 type;
        __u32 tgid;
        __u32 flags;
        __u32 len;       /* bytes of path[], no NUL */
        __u32 same_tgid; /* SCAN_EXE_SAME */
        __u32 _pad;
        char path[];
};

/* scan_rec_argv.flags */
enum {
        SCAN_ARGV_UNKNOWN = 1U << 0, /* not read here (longer than SCAN_ARGV_MAX, rewritten by
                                      * setproctitle(3), not readable now): ask /proc/PID/cmdline */
};

#define SCAN_ARGV_MAX 16384 /* bytes of a command line read by the iterator; longer ones by /proc */
#define SCAN_ARGV_WORDS (4194304 / 64) /* PID_MAX_LIMIT bits: the processes argv is wanted of */

/* The command line of process tgid, as /proc/PID/cmdline has it: the arguments, each ended by a
 * NUL. Sent by the argv iterator for each process whose bit user space set in argv_want. */
struct scan_rec_argv {
        __u32 type;
        __u32 tgid;
        __u32 flags;
        __u32 len; /* bytes of args[] */
        __u64 start_boottime; /* the leader's, to tell a reused tgid apart */
        char args[];
};

/* A seccomp listener fd held by process tgid, pointing at filter_id. */
struct scan_rec_listener {
        __u32 type;
        __u32 tgid;
        __u32 fd;
        __u32 _pad;
        __u64 filter_id;
};

/* The last record of a pass (best effort: lost if the ring buffer is full at that moment). */
struct scan_rec_end {
        __u32 type;
        __u32 _pad;
        __u64 pass;
        __u64 swept; /* ids dropped at the end of this pass */
};

/* What a run of the task iterator does (files_mode, a global of scan.bpf.c): the listener fds are
 * found by reading every file table, in the same walk as the tasks or in a walk of its own. */
enum scan_files_mode {
        SCAN_FILES_NONE = 0,     /* the tasks only */
        SCAN_FILES_IN_TASKS = 1, /* the tasks, and each one's file table */
        SCAN_FILES_ONLY = 2,     /* the file tables only */
        SCAN_FILES_BESIDE = 3,   /* the file tables in the reads of thread files_walker_tid, the
                                  * tasks in every other thread's */
};

/* What user space sets before each pass of the task iterator (the global `run` of scan.bpf.c). One
 * struct, not six globals: the compiler orders a section's globals as it likes, and did so
 * differently in the variants of the unit (the tree's light skeleton had want_exe where the
 * others have files_planned), while user space writes them through one skeleton's layout. */
struct scan_pass_settings {
        __u32 files_mode;       /* what a run of the task iterator does: enum scan_files_mode */
        __u32 files_walker_tid; /* SCAN_FILES_BESIDE: the thread (in the daemon's pid namespace)
                                 * whose reads walk the file tables, while the others' walk the
                                 * tasks */
        __u8 emit_all_tasks;    /* also tasks without seccomp in single-threaded processes */
        __u8 files_planned;     /* a files walk runs after or beside the tasks walk: the pass ends
                                 * with both */
        __u8 sweep_wanted;      /* end this pass with a sweep of the id map (it visits every
                                 * bucket) */
        __u8 want_exe;          /* send the executable of each thread group leader reported */
        __u32 anon_fd;          /* an fd of the reading process on the anonymous inode file system
                                 * (the ring buffer's), to tell that file system's files by */
        __u32 _pad;
};

/* Counters of the iterators in their .bss, read by user space (never addresses); those of the id
 * map itself are struct ids_stats (ids.h). */
struct scan_stats {
        __u64 ids_swept;      /* ids dropped by sweeps */
        __u64 chain_too_long; /* a chain deeper than the walk bound: the pass is incomplete */
        __u64 retries;        /* objects retried because the ring buffer was full */
        __u64 sweeps;         /* passes that ended with a sweep of the id map */
        __u64 insns_sent;     /* FILTER records that carried instructions */
        __u64 zero;           /* always 0: a number the verifier cannot know (bpf/loop.bpf.h) */
        __u64 anon_unknown;   /* file tables not read: run.anon_fd was not found open */
};
