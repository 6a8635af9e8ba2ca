/* kernel.h: the few kernel structures the BPF programs read, relocated with CO-RE (no vmlinux.h) */
#pragma once

#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/filter.h>

/* Only the fields that are read are declared; libbpf matches them by name against the running
 * kernel's BTF, so their order and the missing members do not matter. */
#define __kernel_struct __attribute__((preserve_access_index))

typedef struct {
        int counter;
} atomic_t;

struct refcount_struct {
        atomic_t refs;
} __kernel_struct;
typedef struct refcount_struct refcount_t;

typedef struct {
        __u32 val;
} kuid_t;

typedef struct {
        __u32 val;
} kgid_t;

struct cred {
        kuid_t uid;
        kgid_t gid;
        kuid_t euid;
} __kernel_struct;

struct sock_fprog_kern {
        __u16 len;
        struct sock_filter *filter;
} __kernel_struct;

struct bpf_prog {
        struct sock_fprog_kern *orig_prog;
} __kernel_struct;

struct notification;

struct seccomp_filter {
        refcount_t refs;
        refcount_t users;
        _Bool log;
        _Bool wait_killable_recv;
        struct seccomp_filter *prev;
        struct bpf_prog *prog;
        struct notification *notif;
} __kernel_struct;

struct seccomp {
        int mode;
        atomic_t filter_count;
        struct seccomp_filter *filter;
} __kernel_struct;

struct signal_struct {
        int nr_threads;
        atomic_t live;
} __kernel_struct;

/* Since 6.18 mm->flags is a bitmap (mm_flags_t); before, an unsigned long. */
typedef struct {
        unsigned long __mm_flags[1];
} mm_flags_t;

struct file;

struct mm_struct {
        mm_flags_t flags;
        struct file *exe_file;
        unsigned long arg_start, arg_end;
} __kernel_struct;

struct mm_struct___ulong_flags {
        unsigned long flags;
} __kernel_struct;

struct fs_struct;

struct ns_common {
        unsigned int inum;
} __kernel_struct;

struct pid_namespace {
        struct ns_common ns;
} __kernel_struct;

/* What the running kernel's verifier says it can do, in its BTF (Linux 6.17 and later), tested
 * with bpf_core_enum_value_exists(): BPF_FEAT_RDONLY_CAST_TO_VOID, bpf_rdonly_cast() to no type
 * (kernel_word(), ids.bpf.h). */
enum bpf_features {
        BPF_FEAT_RDONLY_CAST_TO_VOID = 0,
};

struct upid {
        int nr;
        struct pid_namespace *ns;
};

/* numbers[level + 1]: the pid's number in each namespace from the initial one (0) down to its own. */
struct pid {
        unsigned int level;
        struct upid numbers[];
} __kernel_struct;

struct list_head {
        struct list_head *next, *prev;
};

struct task_struct {
        unsigned int flags;
        int exit_state;
        unsigned long atomic_flags;
        int pid;
        int tgid;
        struct task_struct *real_parent;
        struct task_struct *group_leader;
        struct pid *thread_pid;
        __u64 start_boottime;
        const struct cred *real_cred;
        struct mm_struct *mm;
        char comm[16];
        struct signal_struct *signal;
        struct list_head thread_node; /* in signal->thread_head (Linux 3.15) */
        struct fs_struct *fs;
        struct seccomp seccomp;
} __kernel_struct;

struct qstr {
        __u32 len;
        const unsigned char *name;
} __kernel_struct;

/* Only its address is read (scan.bpf.c, anon_sb_of_current()). */
struct super_block;

struct hlist_bl_node {
        struct hlist_bl_node *next, **pprev;
} __kernel_struct;

struct dentry;

struct dentry_operations {
        char *(*d_dname)(struct dentry *, char *, int);
} __kernel_struct;

struct dentry {
        struct hlist_bl_node d_hash; /* unhashed (pprev NULL): deleted, unless a root */
        struct dentry *d_parent;
        struct qstr d_name;
        const struct dentry_operations *d_op;
} __kernel_struct;

struct vfsmount {
        struct dentry *mnt_root;
} __kernel_struct;

/* fs/mount.h: a vfsmount is the mnt member of its struct mount. */
struct mount {
        struct mount *mnt_parent;
        struct dentry *mnt_mountpoint;
        struct vfsmount mnt;
} __kernel_struct;

struct path {
        struct vfsmount *mnt;
        struct dentry *dentry;
} __kernel_struct;

struct fs_struct {
        struct path root;
} __kernel_struct;

struct inode {
        struct super_block *i_sb;
} __kernel_struct;

struct file {
        struct path f_path;
        struct inode *f_inode;
        void *private_data;
} __kernel_struct;

/* Iterator contexts (layout fixed by the kernel's DEFINE_BPF_ITER_FUNC: one 8-byte slot each). */
struct bpf_iter_meta;

struct bpf_iter__task {
        union {
                struct bpf_iter_meta *meta;
                __u64 :64;
        };
        union {
                struct task_struct *task;
                __u64 :64;
        };
};

struct bpf_iter__task_file {
        union {
                struct bpf_iter_meta *meta;
                __u64 :64;
        };
        union {
                struct task_struct *task;
                __u64 :64;
        };
        __u32 fd __attribute__((aligned(8)));
        union {
                struct file *file;
                __u64 :64;
        };
};

/* Tracepoint contexts of syscalls/sys_enter_* and sys_exit_* (see their tracefs "format"). */
struct syscall_enter_ctx {
        __u64 common;
        __s64 syscall_nr;
        __u64 args[6];
};

struct syscall_exit_ctx {
        __u64 common;
        __s64 syscall_nr;
        __s64 ret;
};

/* Tracepoint contexts of sched/sched_process_* (relocated against the kernel's own
 * trace_event_raw_* types, which its BTF describes). */
struct trace_event_raw_sched_process_fork {
        int parent_pid;
        int child_pid;
} __kernel_struct;

struct trace_event_raw_sched_process_exec {
        int pid;
        int old_pid;
} __kernel_struct;

struct trace_event_raw_sched_process_exit {
        int pid;
        _Bool group_dead; /* not in older kernels: then signal->live tells */
} __kernel_struct;

struct trace_event_raw_task_rename {
        int pid;
        char newcomm[16];
} __kernel_struct;

/* A file table: fd[i] is open when bit i of open_fds is set (fd[i] may still be NULL while an
 * open is being installed). Reached through task_struct___files: struct task_struct above leaves
 * files out. */
struct fdtable {
        unsigned int max_fds;
        struct file **fd;
        unsigned long *open_fds;
} __kernel_struct;

struct files_struct {
        struct fdtable *fdt;
} __kernel_struct;

struct task_struct___files {
        struct files_struct *files;
} __kernel_struct;

/* The state of an open-coded number iterator (bpf_iter_num_new/next/destroy, 6.4+). */
struct bpf_iter_num {
        __u64 __opaque[1];
} __attribute__((aligned(8)));

/* Constants of the kernel this relies on. */
#define PF_EXITING 0x00000004
#define PF_KTHREAD 0x00200000
#define MMF_DUMPABLE_MASK 3UL /* the low bits of mm->flags */
#define SUID_DUMP_USER 1
#define PFA_NO_NEW_PRIVS 0
#define SECCOMP_NOTIFY_NAME "seccomp notify"
