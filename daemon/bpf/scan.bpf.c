/* scan.bpf.c: task and file iterators that send the seccomp filter forest as records named by
 * in-kernel ids, and the tracepoints that give every newly created filter a fresh id (and, with
 * watch.bpf.h, report it) */
#include "kernel.h"

#include <linux/errno.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <stdbool.h>

#include "scan.h"

char LICENSE[] SEC("license") = "GPL";

/* The kernel caps the instructions of a chain at 32768 with a penalty of 4 per filter, so no
 * chain is deeper than 32768 / 5 filters. */
#define MAX_CHAIN_WALK 8192
#define MAX_FILTER_IDS (1U << 18) /* allocated on demand (BPF_F_NO_PREALLOC) */
#define MAX_PENDING 4096
#define RINGBUF_SIZE (8U << 20)

#define SWEEP_AFTER_PASSES 2

/* Set by user space before each pass. */
__u64 pass;
bool emit_all_tasks; /* also tasks without seccomp in single-threaded processes */

struct scan_stats stats;
/* The last filter id handed out. User space may start it higher before load, so that ids continue
 * above those a state database has already used. */
__u64 last_id SEC(".data") = 0;

/* struct seccomp_filter * -> its id. Only BPF programs may read it: the keys are kernel
 * addresses, and BPF_F_WRONLY keeps lookups and key walks from the syscall side out (-EPERM). */
struct filter_ent {
        __u64 id;
        __u64 prog; /* the filter's struct bpf_prog * and orig_prog and length when the id was */
        __u64 orig; /* given: an address reused by a new filter almost surely differs in these */
        __u32 len;
        __u32 _pad;
        __u64 created_pass;
        __u64 seen_pass;     /* sent (as a FILTER record) in this pass */
        __u64 complete_pass; /* it and all its ancestors were sent in this pass */
};

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, MAX_FILTER_IDS);
        __uint(map_flags, BPF_F_WRONLY | BPF_F_NO_PREALLOC);
        __type(key, __u64);
        __type(value, struct filter_ent);
} filter_ids SEC(".maps");

/* tid -> its head filter when it entered seccomp(SET_MODE_FILTER) or prctl(PR_SET_SECCOMP),
 * the last id handed out by then, and how it asked. */
struct pending_install {
        __u64 head;
        __u64 ids_before;
        __u32 seccomp_flags;
        __u32 prctl;
};

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, MAX_PENDING);
        __uint(map_flags, BPF_F_WRONLY);
        __type(key, __u32);
        __type(value, struct pending_install);
} pending SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, RINGBUF_SIZE);
} records SEC(".maps");

/* Where FILTER records are put together before they are copied into the ring buffer. */
struct filter_buf {
        __u8 data[sizeof(struct scan_rec_filter) + SCAN_MAX_INSNS * sizeof(struct sock_filter)];
};

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct filter_buf);
} scratch SEC(".maps");

/* What tells two objects that lived at the same address apart. */
struct filter_check {
        __u64 prog;
        __u64 orig;
        __u32 len;
};

static __always_inline void filter_check_read(__u64 f, struct filter_check *c) {
        struct seccomp_filter *sf = (void *) f;
        struct bpf_prog *prog = BPF_CORE_READ(sf, prog);
        struct sock_fprog_kern *orig = BPF_CORE_READ(prog, orig_prog);

        c->prog = (__u64) prog;
        c->orig = (__u64) orig;
        c->len = orig ? BPF_CORE_READ(orig, len) : 0;
}

static __always_inline bool filter_ent_matches(const struct filter_ent *e, const struct filter_check *c) {
        return e->prog == c->prog && e->orig == c->orig && e->len == c->len;
}

/* Give f a new id. replace: an entry for this address exists and names another object. Returns
 * the id, 0 if it could not be stored (-EEXIST in *ret_error: somebody else stored one first). */
static __always_inline __u64 filter_id_new(__u64 f, const struct filter_check *c, bool replace, long *ret_error) {
        struct filter_ent e = {
                .prog = c->prog,
                .orig = c->orig,
                .len = c->len,
                .created_pass = pass,
        };
        long r;

        e.id = __sync_fetch_and_add(&last_id, 1) + 1;
        __sync_fetch_and_add(&stats.ids_assigned, 1);
        r = bpf_map_update_elem(&filter_ids, &f, &e, replace ? BPF_EXIST : BPF_NOEXIST);
        if (r < 0 && replace && r == -ENOENT) /* the stale entry went away meanwhile */
                r = bpf_map_update_elem(&filter_ids, &f, &e, BPF_NOEXIST);
        *ret_error = r;
        if (r < 0)
                return 0;
        if (replace)
                __sync_fetch_and_add(&stats.addresses_reused, 1);
        return e.id;
}

/* The id of filter f, given now if it has none yet. 0 if the id map is full. */
static __u64 filter_id_get(__u64 f) {
        struct filter_check c;
        struct filter_ent *e;
        long r;
        __u64 id;

        filter_check_read(f, &c);
        e = bpf_map_lookup_elem(&filter_ids, &f);
        if (e && filter_ent_matches(e, &c))
                return e->id;

        id = filter_id_new(f, &c, e != NULL, &r);
        if (id > 0)
                return id;

        if (r == -EEXIST) {
                /* A tracepoint or another walker stored it between our lookup and update. */
                e = bpf_map_lookup_elem(&filter_ids, &f);
                if (e && filter_ent_matches(e, &c))
                        return e->id;
        }
        __sync_fetch_and_add(&stats.map_full, 1);
        return 0;
}

#include "watch.bpf.h"

static __always_inline void filter_ent_mark(__u64 f, __u64 id, bool complete) {
        struct filter_ent *e = bpf_map_lookup_elem(&filter_ids, &f);

        if (!e || e->id != id)
                return;
        if (complete)
                e->complete_pass = pass;
        else
                e->seen_pass = pass;
}

static __always_inline int filter_emit(__u64 f, __u64 id, __u64 parent_id) {
        struct seccomp_filter *sf = (void *) f;
        struct scan_rec_filter *r;
        struct sock_fprog_kern *orig;
        struct sock_filter *insns;
        __u32 zero = 0, len;

        r = bpf_map_lookup_elem(&scratch, &zero);
        if (!r)
                return -ENOMEM;

        r->type = SCAN_REC_FILTER;
        r->id = id;
        r->parent_id = parent_id;
        r->refs = BPF_CORE_READ(sf, refs.refs.counter);
        r->users = BPF_CORE_READ(sf, users.refs.counter);
        r->log = BPF_CORE_READ(sf, log);
        r->wait_killable_recv = BPF_CORE_READ(sf, wait_killable_recv);
        r->has_listener = BPF_CORE_READ(sf, notif) != NULL;
        r->_pad = 0;

        orig = BPF_CORE_READ(sf, prog, orig_prog);
        len = orig ? BPF_CORE_READ(orig, len) : 0;
        insns = orig ? BPF_CORE_READ(orig, filter) : NULL;
        if (len > SCAN_MAX_INSNS || !insns)
                len = 0;
        if (len > 0 && bpf_probe_read_kernel(r->insns, len * sizeof(struct sock_filter), insns) < 0)
                len = 0;
        r->len = len;
        r->has_insns = len > 0;

        if (bpf_ringbuf_output(&records, r, sizeof(*r) + len * sizeof(struct sock_filter), BPF_RB_NO_WAKEUP) < 0)
                return -ENOSPC;
        return 0;
}

struct walk {
        __u64 filter;    /* to visit next */
        __u64 filter_id; /* its id when already known, else 0 */
        __u64 head_id;
        int error;
        bool done;
};

/* One element of a chain, from the head towards the root: send it unless this pass did already,
 * and stop early at a filter whose whole chain was sent in this pass. */
static long walk_step(__u32 index, void *data) {
        struct walk *w = data;
        struct filter_ent *e;
        __u64 f = w->filter, id = w->filter_id, prev, parent_id = 0;
        bool seen;
        int r;

        if (!f) {
                w->done = true;
                return 1;
        }
        if (!id) {
                id = filter_id_get(f);
                if (!id) {
                        w->error = -ENOMEM;
                        return 1;
                }
        }
        if (index == 0)
                w->head_id = id;

        e = bpf_map_lookup_elem(&filter_ids, &f);
        if (e && e->id == id && e->complete_pass == pass) {
                w->done = true;
                return 1;
        }
        seen = e && e->id == id && e->seen_pass == pass;

        prev = (__u64) BPF_CORE_READ((struct seccomp_filter *) f, prev);
        if (prev) {
                parent_id = filter_id_get(prev);
                if (!parent_id) {
                        w->error = -ENOMEM;
                        return 1;
                }
        }

        if (!seen) {
                r = filter_emit(f, id, parent_id);
                if (r < 0) {
                        w->error = r;
                        return 1;
                }
                filter_ent_mark(f, id, false);
        }

        w->filter = prev;
        w->filter_id = parent_id;
        if (!prev) {
                w->done = true;
                return 1;
        }
        return 0;
}

/* Send every filter of the chain at head not sent in this pass yet. 0, -ENOSPC (ring buffer
 * full: retry the object), or another negative errno (counted in stats). */
static __always_inline int chain_walk(__u64 head, __u64 *ret_head_id) {
        struct walk w = {
                .filter = head,
        };

        *ret_head_id = 0;
        if (!head)
                return 0;

        bpf_loop(MAX_CHAIN_WALK, walk_step, &w, 0);
        if (w.error < 0)
                return w.error; /* -ENOSPC, or -ENOMEM counted in stats.map_full */
        if (!w.done) {
                __sync_fetch_and_add(&stats.chain_too_long, 1);
                return -E2BIG;
        }

        filter_ent_mark(head, w.head_id, true);
        *ret_head_id = w.head_id;
        return 0;
}

static __always_inline int retry_object(void) {
        __sync_fetch_and_add(&stats.retries, 1);
        return 1; /* the iterator calls us again with the same object on the next read() */
}

/* Every task the kernel lets BPF see. On the project's machines that is every task but those of
 * pid 1 (the VM's init agent): its whole thread group is missing from iter/task, from a
 * task-specific iterator (bpf_iter_link_info.task.pid, .tid or .pid_fd = pidfd_open(1)) and from
 * bpf_task_from_pid(1) alike, while pid 2 and the rest are found — that kernel hides it from BPF,
 * so no pass can cover it. Its children are visited (with ppid 1); a subtree rooted at a process
 * no pass visits is completed from /proc by user space. */
SEC("iter/task")
int scan_tasks(struct bpf_iter__task *ctx) {
        struct task_struct *t = ctx->task, *leader;
        struct scan_rec_task rec = {};
        __u64 head, head_id;
        int mode, r;

        if (!t)
                return 0;

        /* t is a trusted pointer: plain loads (relocated by CO-RE) are the fast way to read it. */
        mode = t->seccomp.mode;
        if (mode == SECCOMP_MODE_DISABLED && !emit_all_tasks && t->signal->nr_threads <= 1)
                return 0;
        if (mode != SECCOMP_MODE_DISABLED)
                seccomp_proc_mark(t);

        head = (__u64) BPF_CORE_READ(t, seccomp.filter);
        r = chain_walk(head, &head_id);
        if (r == -ENOSPC)
                return retry_object();

        leader = t->group_leader;
        rec.type = SCAN_REC_TASK;
        rec.tid = t->pid;
        rec.tgid = t->tgid;
        rec.ppid = leader->real_parent->tgid;
        rec.mode = mode;
        if (t->atomic_flags & (1UL << PFA_NO_NEW_PRIVS))
                rec.flags |= SCAN_TASK_NO_NEW_PRIVS;
        if (leader->atomic_flags & (1UL << PFA_NO_NEW_PRIVS))
                rec.flags |= SCAN_TASK_LEADER_NO_NEW_PRIVS;
        if ((t->flags & PF_EXITING) || t->exit_state)
                rec.flags |= SCAN_TASK_EXITING;
        if (task_dumpable(t))
                rec.flags |= SCAN_TASK_DUMPABLE;
        rec.uid = leader->real_cred->uid.val;
        rec.euid = leader->real_cred->euid.val;
        rec.gid = leader->real_cred->gid.val;
        rec.filter_count = t->seccomp.filter_count.counter;
        rec.start_boottime = t->start_boottime;
        rec.leader_start_boottime = leader->start_boottime;
        rec.filter_id = head_id;
        __builtin_memcpy(rec.comm, t->comm, sizeof(rec.comm));
        __builtin_memcpy(rec.leader_comm, leader->comm, sizeof(rec.leader_comm));

        if (bpf_ringbuf_output(&records, &rec, sizeof(rec), BPF_RB_NO_WAKEUP) < 0)
                return retry_object();
        return 0;
}

struct sweep {
        __u64 swept;
};

static long sweep_one(void *map, const void *key, void *value, void *data) {
        struct filter_ent *e = value;
        struct sweep *s = data;
        __u64 last = e->seen_pass > e->created_pass ? e->seen_pass : e->created_pass;

        if (last + SWEEP_AFTER_PASSES <= pass && bpf_map_delete_elem(&filter_ids, key) == 0)
                s->swept++;
        return 0;
}

/* After the last object of the last iterator of a pass: forget filters not met for a while. */
static __always_inline void pass_end(void) {
        struct sweep s = {};
        struct scan_rec_end end = {
                .type = SCAN_REC_END,
                .pass = pass,
        };

        bpf_for_each_map_elem(&filter_ids, sweep_one, &s, 0);
        __sync_fetch_and_add(&stats.ids_swept, s.swept);

        end.swept = s.swept;
        bpf_ringbuf_output(&records, &end, sizeof(end), BPF_RB_NO_WAKEUP);
}

static __always_inline bool file_is_listener(struct file *file) {
        static const char name[] = SECCOMP_NOTIFY_NAME;
        char buf[sizeof(name)] = {};
        const unsigned char *p;

        /* file is a trusted pointer: plain loads. */
        if (file->f_inode->i_sb->s_magic != ANON_INODE_FS_MAGIC)
                return false;
        if (file->f_path.dentry->d_name.len != sizeof(name) - 1)
                return false;
        p = file->f_path.dentry->d_name.name;
        if (bpf_probe_read_kernel(buf, sizeof(name) - 1, p) < 0)
                return false;
        for (unsigned i = 0; i < sizeof(name) - 1; i++)
                if (buf[i] != name[i])
                        return false;
        return true;
}

SEC("iter/task_file")
int scan_files(struct bpf_iter__task_file *ctx) {
        struct task_struct *t = ctx->task;
        struct file *file = ctx->file;
        struct scan_rec_listener rec = {};
        __u64 filter, filter_id;
        int r;

        if (!t || !file) {
                pass_end();
                return 0;
        }
        if (!file_is_listener(file))
                return 0;

        filter = (__u64) BPF_CORE_READ(file, private_data);
        if (!filter)
                return 0;
        r = chain_walk(filter, &filter_id);
        if (r == -ENOSPC)
                return retry_object();

        rec.type = SCAN_REC_LISTENER;
        rec.tgid = t->tgid;
        rec.fd = ctx->fd;
        rec.filter_id = filter_id;
        if (bpf_ringbuf_output(&records, &rec, sizeof(rec), BPF_RB_NO_WAKEUP) < 0)
                return retry_object();
        return 0;
}

/* New filters: remember the head at entry, and at exit name a changed head afresh. */
static __always_inline int install_enter(__u32 seccomp_flags, bool prctl) {
        struct task_struct *t = (void *) bpf_get_current_task();
        __u32 tid = (__u32) bpf_get_current_pid_tgid();
        struct pending_install p = {
                .head = (__u64) BPF_CORE_READ(t, seccomp.filter),
                .ids_before = last_id,
                .seccomp_flags = seccomp_flags,
                .prctl = prctl,
        };

        bpf_map_update_elem(&pending, &tid, &p, BPF_ANY);
        return 0;
}

/* The id of head, created by the call that is returning. An entry for its address either names
 * an object freed before (give a new id), or was made for head itself by an iterator that met it
 * during the call (keep it, the pass may have sent it). 0 if no id could be stored. */
static __always_inline __u64 install_name(__u64 head, __u64 ids_before) {
        struct filter_check c;
        struct filter_ent *e;
        __u64 id;
        long r;

        filter_check_read(head, &c);
        e = bpf_map_lookup_elem(&filter_ids, &head);
        if (e && e->id > ids_before && filter_ent_matches(e, &c))
                return e->id;
        id = filter_id_new(head, &c, e != NULL, &r);
        if (id > 0)
                return id;
        if (r == -EEXIST) {
                /* An iterator named it between our lookup and update. */
                e = bpf_map_lookup_elem(&filter_ids, &head);
                if (e && filter_ent_matches(e, &c))
                        return e->id;
        }
        __sync_fetch_and_add(&stats.map_full, 1);
        return 0;
}

static __always_inline int install_exit(long ret) {
        struct task_struct *t = (void *) bpf_get_current_task();
        __u32 tid = (__u32) bpf_get_current_pid_tgid();
        struct pending_install *p;
        __u64 head, old_head, ids_before, id;
        __u32 seccomp_flags;
        bool prctl;

        p = bpf_map_lookup_elem(&pending, &tid);
        if (!p)
                return 0;
        old_head = p->head;
        ids_before = p->ids_before;
        seccomp_flags = p->seccomp_flags;
        prctl = p->prctl;
        bpf_map_delete_elem(&pending, &tid);

        head = (__u64) BPF_CORE_READ(t, seccomp.filter);
        if (!head || head == old_head)
                return 0;

        id = install_name(head, ids_before);
        seccomp_proc_mark(t);
        watch_filter_attached(t, head, id, seccomp_flags, prctl, ret);
        return 0;
}

SEC("tracepoint/syscalls/sys_enter_seccomp")
int seccomp_enter(struct syscall_enter_ctx *ctx) {
        if ((__u32) ctx->args[0] != SECCOMP_SET_MODE_FILTER)
                return 0;
        return install_enter((__u32) ctx->args[1], false);
}

SEC("tracepoint/syscalls/sys_exit_seccomp")
int seccomp_exit(struct syscall_exit_ctx *ctx) {
        return install_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_prctl")
int prctl_enter(struct syscall_enter_ctx *ctx) {
        if ((__u32) ctx->args[0] != PR_SET_SECCOMP || ctx->args[1] != SECCOMP_MODE_FILTER)
                return 0;
        return install_enter(0, true);
}

SEC("tracepoint/syscalls/sys_exit_prctl")
int prctl_exit(struct syscall_exit_ctx *ctx) {
        return install_exit(ctx->ret);
}
