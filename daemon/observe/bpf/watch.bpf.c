/* watch.bpf.c: the tracepoints: seccomp(2) and prctl(2) give every newly created filter a fresh id
 * (from before the first pass on, so that an address reused by a new filter never keeps an old
 * id) and, once user space watches, report it, with the threads a TSYNC reached; fork, exec and
 * exit of the tasks a pass reports are events too, and so is close(2) of a listener fd. Records
 * go to a ring buffer of their own. */
#include "observe/bpf/ids.bpf.h"
#include "observe/bpf/pidns.bpf.h"
#include "observe/bpf/task-iter.bpf.h" /* over the threads of one process */

#include <linux/prctl.h>

#include "observe/bpf/watch.h"

char LICENSE[] SEC("license") = "GPL";

#define EVENTS_SIZE (4U << 20) /* user space may change it before load */
#define MAX_PENDING 4096

extern struct task_struct *bpf_task_from_pid(__s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

/* What close(2) of a listener fd reads: the fd table (kernel.h), and the file's reference count
 * (file_ref_t since 6.13, counting from 0 for one reference; f_count, from 1, before). */
struct atomic_long___w {
        long counter;
};

struct file_ref___w {
        struct atomic_long___w refcnt;
};

struct file___ref {
        struct file_ref___w f_ref;
} __kernel_struct;

struct file___count {
        struct atomic_long___w f_count;
} __kernel_struct;

/* Set by user space: bpf_scanner_watch_start() turns the events on (the install tracepoints run
 * from bpf_scanner_new() on, to name filters). */
bool watch_enabled;
/* Events that could not be sent, by cause (enum watch_loss); read by user space. */
__u64 watch_lost[_WATCH_LOSS_MAX];

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, EVENTS_SIZE);
} events SEC(".maps");

/* tid -> its head filter and mode when it entered seccomp(2) or prctl(PR_SET_SECCOMP), the last
 * id handed out by then, and how it asked. */
struct pending_install {
        __u64 head;
        __u64 ids_before;
        __u32 seccomp_flags;
        __u8 prctl;
        __u8 strict; /* SECCOMP_MODE_STRICT was asked for, not a filter */
        __u8 mode_before;
        __u8 _pad;
};

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, MAX_PENDING);
        __uint(map_flags, BPF_F_WRONLY);
        __type(key, __u32);
        __type(value, struct pending_install);
} pending SEC(".maps");

/* Where FILTER events are put together. Tracepoint programs do not nest on a CPU (the kernel
 * skips, and counts as a miss, a tracepoint program that would run while another runs on the
 * same CPU), so one slot per CPU is enough; a per-CPU array cannot hold values this large
 * (32 KiB at most), so this is an array indexed by CPU, sized by user space before load. */
struct watch_filter_buf {
        __u8 data[sizeof(struct watch_rec_filter) + WATCH_MAX_INSNS * sizeof(struct sock_filter)];
};

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct watch_filter_buf);
} watch_scratch SEC(".maps");

static __always_inline void watch_lose(enum watch_loss why) {
        if (why < _WATCH_LOSS_MAX)
                __sync_fetch_and_add(&watch_lost[why], 1);
}

/* Whose fork, exec and exit are events: exactly the tasks a whole-machine pass reports — tasks
 * in strict or filter mode, and every thread of a multi-threaded process that has one. The rest
 * of the machine (nearly all forks and exits) is not sent: the daemon has no use for it, and it
 * would be most of the volume. A subtree of unfiltered processes is therefore known from passes,
 * not from events. This runs on every fork and exit of the machine: t (task_plain() of the
 * current task or of one held by bpf_task_from_pid()) is read with plain loads, not helper calls. */
static __always_inline bool task_reported(struct task_struct *t) {
        if (t->seccomp.mode != SECCOMP_MODE_DISABLED)
                return true;
        if (t->signal->nr_threads <= 1)
                return false;
        return seccomp_proc_marked(t);
}

/* Fill r from t; returns t's head filter (a kernel address: it stays here). r->tid is 0 when t is
 * outside the daemon's pid namespace: task_event_send() drops it. */
static __always_inline struct seccomp_filter *task_fill(struct watch_rec_task *r, struct task_struct *t) {
        struct task_struct *leader = t->group_leader;
        const struct cred *cred = leader->real_cred;

        if (!pidns_task_ids(t, 0, &r->tid, &r->tgid, &r->ppid))
                r->tid = 0;
        r->mode = t->seccomp.mode;
        r->uid = cred->uid.val;
        r->euid = cred->euid.val;
        r->gid = cred->gid.val;
        r->flags = 0;
        if (leader->atomic_flags & (1UL << PFA_NO_NEW_PRIVS))
                r->flags |= WATCH_TASK_NO_NEW_PRIVS;
        if (task_dumpable(t))
                r->flags |= WATCH_TASK_DUMPABLE;
        if (t->signal->nr_threads > 1)
                r->flags |= WATCH_TASK_THREADED;
        r->start_boottime = t->start_boottime;
        r->filter_id = 0;
        __builtin_memcpy(r->comm, t->comm, sizeof(r->comm));
        return t->seccomp.filter;
}

/* Send a task event whose record was filled from a task with head filter head. */
static __always_inline void task_event_send(struct watch_rec *r, __u32 type, struct seccomp_filter *head) {
        if (!r->task.tid)
                return; /* outside the daemon's pid namespace */
        r->type = type;
        r->_pad = 0;
        r->ktime_ns = bpf_ktime_get_ns();
        if (head) {
                r->task.filter_id = filter_id_get(head);
                if (!r->task.filter_id) {
                        watch_lose(WATCH_LOSS_NO_ID);
                        return;
                }
        }
        if (bpf_ringbuf_output(&events, r, sizeof(*r), 0) < 0)
                watch_lose(WATCH_LOSS_RING_FULL);
}

/* The parent's context, after the child was made and before it first runs. The child's state is
 * read from the child itself: the parent's head may have moved on by now (TSYNC from another
 * thread). */
SEC("tracepoint/sched/sched_process_fork")
int watch_fork(struct trace_event_raw_sched_process_fork *ctx) {
        struct seccomp_filter *head;
        struct task_struct *child;
        struct watch_rec r = {};
        bool reported;

        /* The child inherits the parent's mode and process (or makes a single-threaded one):
         * nothing to look up for the forks of the unfiltered. */
        if (!task_reported(task_plain(bpf_get_current_task_btf())))
                return 0;

        child = bpf_task_from_pid(ctx->child_pid);
        if (!child) {
                watch_lose(WATCH_LOSS_TASK_GONE);
                return 0;
        }
        reported = task_reported(task_plain(child));
        head = task_fill(&r.task, task_plain(child));
        bpf_task_release(child);

        if (reported)
                task_event_send(&r, WATCH_REC_TASK_NEW, head);
        return 0;
}

/* After a successful exec: comm changed, the task is the only thread, its tid the tgid. */
SEC("tracepoint/sched/sched_process_exec")
int watch_exec(void *ctx) {
        struct task_struct *t = task_plain(bpf_get_current_task_btf());
        struct seccomp_filter *head;
        struct watch_rec r = {};

        if (!task_reported(t))
                return 0;
        head = task_fill(&r.task, t);
        task_event_send(&r, WATCH_REC_TASK_EXEC, head);
        return 0;
}

/* A rename, in the context of whoever renames (the task itself with PR_SET_NAME, another through
 * /proc/PID/comm, exec): the name is not changed yet, the new one is the tracepoint's. Only a
 * process's main thread: its name is the process's in the daemon's model. */
SEC("tracepoint/task/task_rename")
int watch_rename(struct trace_event_raw_task_rename *ctx) {
        struct seccomp_filter *head;
        struct task_struct *t;
        struct watch_rec r = {};
        bool reported;

        t = bpf_task_from_pid(ctx->pid);
        if (!t) {
                watch_lose(WATCH_LOSS_TASK_GONE);
                return 0;
        }
        reported = task_reported(task_plain(t)) && task_plain(t)->pid == task_plain(t)->tgid;
        head = task_fill(&r.task, task_plain(t));
        bpf_task_release(t);
        if (!reported)
                return 0;
        /* not a plain load: the field's relocated offset would make a modified ctx pointer */
        if (bpf_probe_read_kernel(r.task.comm, sizeof(r.task.comm), ctx->newcomm) < 0)
                return 0;
        task_event_send(&r, WATCH_REC_TASK_COMM, head);
        return 0;
}

static __always_inline bool exit_group_dead(struct trace_event_raw_sched_process_exit *ctx, struct task_struct *t) {
        if (bpf_core_field_exists(ctx->group_dead))
                return ctx->group_dead;
        return t->signal->live.counter == 0;
}

/* Fires for every thread, in its own context. Newer kernels (6.18 here) have let go of the
 * thread's filters by then (do_exit() releases them early): the record's head is 0 and its mode
 * still says filter. */
SEC("tracepoint/sched/sched_process_exit")
int watch_exit(struct trace_event_raw_sched_process_exit *ctx) {
        struct task_struct *t = task_plain(bpf_get_current_task_btf());
        struct watch_rec r = {};
        bool group_dead = exit_group_dead(ctx, t);
        bool reported = task_reported(t);
        struct seccomp_filter *head;

        if (group_dead)
                seccomp_proc_unmark(t);
        if (!reported)
                return 0;
        head = task_fill(&r.task, t);
        if (group_dead)
                r.task.flags |= WATCH_TASK_GROUP_DEAD;
        task_event_send(&r, WATCH_REC_TASK_EXIT, head);
        return 0;
}

/* t went from disabled to strict mode (prctl(PR_SET_SECCOMP) or seccomp(SECCOMP_SET_MODE_STRICT)
 * returned 0). */
static __always_inline void watch_mode_changed(struct task_struct *t) {
        struct watch_rec r = {};

        if (!watch_enabled)
                return;
        task_event_send(&r, WATCH_REC_TASK_MODE, task_fill(&r.task, t));
}

/* A filter attached by t: head, named id (0 if no id could be stored). Called at the exit of
 * seccomp(2)/prctl(2), whose return value is ret. */
static __always_inline void watch_filter_attached(struct task_struct *t, struct seccomp_filter *head, __u64 id,
                                                  __u32 seccomp_flags, bool prctl, long ret) {
        struct seccomp_filter *prev = head->prev;
        struct sock_fprog_kern *orig;
        struct watch_rec_filter *r;
        struct sock_filter *insns;
        __u32 cpu = bpf_get_smp_processor_id(), len;
        __u64 parent_id = 0;

        if (!watch_enabled)
                return;
        if (prev)
                parent_id = filter_id_get(prev);
        r = bpf_map_lookup_elem(&watch_scratch, &cpu);
        if (!id || (prev && !parent_id) || !r) {
                watch_lose(WATCH_LOSS_NO_ID);
                return;
        }

        r->hdr.type = WATCH_REC_FILTER;
        r->hdr._pad = 0;
        r->hdr.ktime_ns = bpf_ktime_get_ns();
        task_fill(&r->hdr.task, t);
        if (!r->hdr.task.tid)
                return; /* outside the daemon's pid namespace: its filters come with the tasks inside */
        r->hdr.task.filter_id = id;
        r->id = id;
        r->parent_id = parent_id;
        r->seccomp_flags = seccomp_flags;
        r->install_flags = prctl ? WATCH_INSTALL_PRCTL : 0;
        if ((seccomp_flags & SECCOMP_FILTER_FLAG_TSYNC) && ret >= 0)
                r->install_flags |= WATCH_INSTALL_TSYNC;
        r->log = head->log;
        r->wait_killable_recv = head->wait_killable_recv;
        r->has_listener = head->notif != NULL;
        r->listener_fd = -1;
        if ((seccomp_flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) && !prctl && ret >= 0 && r->has_listener)
                r->listener_fd = (__s32) ret;
        r->_pad2 = 0;

        orig = head->prog->orig_prog;
        len = orig ? orig->len : 0;
        insns = orig ? orig->filter : NULL;
        if (len > WATCH_MAX_INSNS || !insns)
                len = 0;
        if (len > 0 && bpf_probe_read_kernel(r->insns, len * sizeof(struct sock_filter), insns) < 0)
                len = 0;
        r->len = len;
        r->has_insns = len > 0;

        if (bpf_ringbuf_output(&events, r, sizeof(*r) + len * sizeof(struct sock_filter), 0) < 0)
                watch_lose(WATCH_LOSS_RING_FULL);
}

/* The other threads of cur's process that an install left behind, each as a record of its own
 * after the filter's, as the kernel has them at the event (user space would read /proc only when
 * it handles the event, when the process may have changed or be gone). A thread that is exiting is
 * left out (its exit is an event, or was one).
 *   tsync (type WATCH_REC_TASK_TSYNC): TSYNC pointed every thread at head (id), under the process's
 *     lock, before the call returned: those that still have it as their head say so (one whose
 *     head is another by now installed a filter of its own on top: its own record says so);
 *   otherwise (WATCH_REC_TASK_ESCAPED): the process's first filter, without TSYNC: the threads
 *     still in disabled mode escaped it. */
static __noinline void watch_threads(struct task_struct *cur, struct seccomp_filter *head, __u64 id, bool tsync) {
        struct task_struct *leader = bpf_task_from_pid(task_plain(cur)->tgid);
        struct bpf_iter_task it;
        struct task_struct *th;

        if (!leader) {
                watch_lose(WATCH_LOSS_TASK_GONE);
                return;
        }
        /* From the leader: the iterator goes down the thread list from where it starts. */
        bpf_iter_task_new(&it, leader, BPF_TASK_ITER_PROC_THREADS);
        while ((th = bpf_iter_task_next(&it))) {
                struct task_struct *t = task_plain(th);
                struct watch_rec r = {};

                if (th == cur || (t->flags & PF_EXITING))
                        continue;
                if (tsync ? t->seccomp.filter != head : t->seccomp.mode != SECCOMP_MODE_DISABLED)
                        continue;
                task_fill(&r.task, t);
                if (!r.task.tid)
                        continue; /* outside the daemon's pid namespace */
                r.type = tsync ? WATCH_REC_TASK_TSYNC : WATCH_REC_TASK_ESCAPED;
                r.ktime_ns = bpf_ktime_get_ns();
                r.task.filter_id = tsync ? id : 0;
                if (bpf_ringbuf_output(&events, &r, sizeof(r), 0) < 0)
                        watch_lose(WATCH_LOSS_RING_FULL);
        }
        bpf_iter_task_destroy(&it);
        bpf_task_release(leader);
}

/* New filters and strict mode: remember the head and mode at entry; at exit name a changed head
 * afresh, or report the mode change. */
static __always_inline int install_enter(__u32 seccomp_flags, bool prctl, bool strict) {
        struct task_struct *t = task_plain(bpf_get_current_task_btf());
        __u32 tid = (__u32) bpf_get_current_pid_tgid();
        struct pending_install p = {
                .head = (__u64) t->seccomp.filter,
                .ids_before = last_id,
                .seccomp_flags = seccomp_flags,
                .prctl = prctl,
                .strict = strict,
                .mode_before = (__u8) t->seccomp.mode,
        };

        bpf_map_update_elem(&pending, &tid, &p, BPF_ANY);
        return 0;
}

/* The id of head, created by the call that is returning. An entry for its address either names
 * an object freed before (give a new id), or was made for head itself by an iterator that met it
 * during the call (keep it, the pass may have sent it). 0 if no id could be stored. */
static __always_inline __u64 install_name(struct seccomp_filter *head, __u64 ids_before) {
        __u64 key = (__u64) head;
        struct filter_check c;
        struct filter_ent *e;
        __u64 id;
        long r;

        filter_check_read(head, &c);
        e = bpf_map_lookup_elem(&filter_ids, &key);
        if (e && e->id > ids_before && filter_ent_matches(e, &c))
                return e->id;
        id = filter_id_new(head, &c, e != NULL, &r);
        if (id > 0)
                return id;
        if (r == -EEXIST) {
                /* An iterator named it between our lookup and update. */
                e = bpf_map_lookup_elem(&filter_ids, &key);
                if (e && filter_ent_matches(e, &c))
                        return e->id;
        }
        __sync_fetch_and_add(&ids_stats.map_full, 1);
        return 0;
}

/* SECCOMP_MODE_STRICT was asked for: if the thread went from disabled to strict, say so. */
static __always_inline void strict_exit(struct task_struct *t, const struct pending_install *p, long ret) {
        if (ret != 0 || p->mode_before != SECCOMP_MODE_DISABLED || t->seccomp.mode != SECCOMP_MODE_STRICT)
                return;
        seccomp_proc_mark(t);
        watch_mode_changed(t);
}

static __always_inline int install_exit(long ret) {
        struct task_struct *t = task_plain(bpf_get_current_task_btf());
        __u32 tid = (__u32) bpf_get_current_pid_tgid();
        struct pending_install *p, saved;
        struct seccomp_filter *head;
        bool first, tsync;
        __u64 id;

        p = bpf_map_lookup_elem(&pending, &tid);
        if (!p)
                return 0;
        saved = *p;
        bpf_map_delete_elem(&pending, &tid);

        if (saved.strict) {
                strict_exit(t, &saved, ret);
                return 0;
        }
        head = t->seccomp.filter;
        if (!head || (__u64) head == saved.head)
                return 0;

        id = install_name(head, saved.ids_before);
        first = saved.mode_before == SECCOMP_MODE_DISABLED && !seccomp_proc_marked(t);
        seccomp_proc_mark(t);
        watch_filter_attached(t, head, id, saved.seccomp_flags, saved.prctl, ret);
        tsync = !saved.prctl && (saved.seccomp_flags & SECCOMP_FILTER_FLAG_TSYNC) && ret >= 0;
        if (watch_enabled && id && t->signal->nr_threads > 1 && (tsync || first))
                watch_threads(bpf_get_current_task_btf(), head, id, tsync);
        return 0;
}

SEC("tracepoint/syscalls/sys_enter_seccomp")
int seccomp_enter(struct syscall_enter_ctx *ctx) {
        __u32 op = (__u32) ctx->args[0];

        if (op == SECCOMP_SET_MODE_FILTER)
                return install_enter((__u32) ctx->args[1], false, false);
        if (op == SECCOMP_SET_MODE_STRICT)
                return install_enter(0, false, true);
        return 0;
}

SEC("tracepoint/syscalls/sys_exit_seccomp")
int seccomp_exit(struct syscall_exit_ctx *ctx) {
        struct seccomp_filter *head = task_plain(bpf_get_current_task_btf())->seccomp.filter;

        /* Counted before anything can fail: a listener nobody counts might never be looked for. */
        if (ctx->ret >= 0 && head && head->notif)
                __sync_fetch_and_add(&listeners_created, 1);
        return install_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_prctl")
int prctl_enter(struct syscall_enter_ctx *ctx) {
        if ((__u32) ctx->args[0] != PR_SET_SECCOMP)
                return 0;
        if (ctx->args[1] == SECCOMP_MODE_FILTER)
                return install_enter(0, true, false);
        if (ctx->args[1] == SECCOMP_MODE_STRICT)
                return install_enter(0, true, true);
        return 0;
}

SEC("tracepoint/syscalls/sys_exit_prctl")
int prctl_exit(struct syscall_exit_ctx *ctx) {
        return install_exit(ctx->ret);
}

/* close(2) of a listener fd: user space hears which listener lost a descriptor, and whether it was
 * its last (the file is released on the way back to user space, after any tracepoint). A file is
 * a listener's when its private data is a filter the id map names (the object checked as the
 * iterators check it). Runs for every close(2) of the machine once a listener was ever made. */
SEC("tracepoint/syscalls/sys_enter_close")
int close_enter(struct syscall_enter_ctx *ctx) {
        struct task_struct *t = task_plain(bpf_get_current_task_btf());
        struct watch_rec_listener r = {};
        struct files_struct *files;
        struct fdtable *fdt;
        struct file *file = NULL, *f;
        struct seccomp_filter *flt;
        struct filter_check c;
        struct filter_ent *e;
        int fd = (int) ctx->args[0];
        __u64 key;
        long refs;

        if (!watch_enabled || !listeners_created || fd < 0)
                return 0;
        files = ((struct task_struct___files *) t)->files;
        if (!files)
                return 0;
        fdt = files->fdt;
        if ((unsigned int) fd >= fdt->max_fds ||
            bpf_probe_read_kernel(&file, sizeof(file), (const void *) ((__u64) fdt->fd + (__u64) fd * sizeof(file))) < 0 ||
            !file)
                return 0;
        f = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
        key = (__u64) f->private_data;
        e = key ? bpf_map_lookup_elem(&filter_ids, &key) : NULL;
        if (!e)
                return 0;
        flt = bpf_rdonly_cast((void *) key, bpf_core_type_id_kernel(struct seccomp_filter));
        filter_check_read(flt, &c);
        if (!filter_ent_matches(e, &c))
                return 0;

        if (bpf_core_field_exists(((struct file___ref *) 0)->f_ref))
                refs = BPF_CORE_READ((struct file___ref *) file, f_ref.refcnt.counter) + 1;
        else
                refs = BPF_CORE_READ((struct file___count *) file, f_count.counter);
        r.filter_id = e->id;
        r.fd = fd;
        r.last = refs <= 1;
        task_fill(&r.hdr.task, t);
        if (!r.hdr.task.tid)
                return 0;
        r.hdr.task.filter_id = 0;
        r.hdr.type = WATCH_REC_LISTENER_CLOSE;
        r.hdr.ktime_ns = bpf_ktime_get_ns();
        if (bpf_ringbuf_output(&events, &r, sizeof(r), 0) < 0)
                watch_lose(WATCH_LOSS_RING_FULL);
        return 0;
}
