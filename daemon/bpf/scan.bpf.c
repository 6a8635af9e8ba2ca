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

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

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
bool files_planned;  /* the task_file iterator follows the task iterator: the pass ends there */
bool sweep_wanted;   /* end this pass with a sweep of the id map (it visits every bucket) */
/* A filter's instructions are sent once per id and epoch. User space starts a new epoch when it
 * no longer has instructions the kernel thinks it sent. */
__u64 insns_epoch SEC(".data") = 1;

struct scan_stats stats;
/* The last filter id handed out. User space may start it higher before load, so that ids continue
 * above those a state database has already used. */
__u64 last_id SEC(".data") = 0;
/* seccomp(2) calls that returned with a listener on the caller's head filter: user space runs
 * the task_file iterator when this moved (a listener fd may be all that keeps a filter alive). */
__u64 listeners_created;

/* The iterators' own state (one pass runs at a time); user space leaves it alone. */
__u64 iter_ended_pass;
__u64 iter_marked_pass; /* the process last marked in seccomp_procs, to mark each once a pass */
__u64 iter_marked_start;
__u32 iter_marked_tgid;

/* struct seccomp_filter * -> its id. Only BPF programs may read it: the keys are kernel
 * addresses, and BPF_F_WRONLY keeps lookups and key walks from the syscall side out (-EPERM). */
struct filter_ent {
        __u64 id;
        __u64 prog; /* the filter's struct bpf_prog * and parent when the id was given: an address */
        __u64 prev; /* reused by a new filter almost surely differs in these (see filter_check) */
        __u32 len;  /* instructions of its program */
        __u32 _pad;
        __u64 created_pass;
        __u64 seen_pass;     /* sent (as a FILTER record) in this pass */
        __u64 complete_pass; /* it and all its ancestors were sent in this pass */
        __u64 insns_epoch;   /* its instructions were sent in this epoch (0: never) */
};

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, MAX_FILTER_IDS);
        __uint(map_flags, BPF_F_WRONLY | BPF_F_NO_PREALLOC);
        __type(key, __u64);
        __type(value, struct filter_ent);
} filter_ids SEC(".maps");

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

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, RINGBUF_SIZE);
} records SEC(".maps");

/* Where FILTER records with instructions are put together before they are copied into the ring
 * buffer. */
struct filter_buf {
        __u8 data[sizeof(struct scan_rec_filter) + SCAN_MAX_INSNS * sizeof(struct sock_filter)];
};

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct filter_buf);
} scratch SEC(".maps");

/* Every struct seccomp_filter * here is a BTF pointer (from a trusted task, a field of one, or
 * bpf_rdonly_cast()), read with plain loads: the verifier turns them into exception-handled loads,
 * far cheaper than bpf_probe_read_kernel() calls. */

/* What tells two objects that lived at the same address apart: the program, a vmalloc()ed
 * object whose addresses come back only after a lazy purge of many frees (unlike the slab objects
 * around it, reused first-in last-out), and the parent. Both sit on the cache line of the filter
 * that a walk up the chain reads anyway (->prev); the program is not touched. The tracepoint on
 * seccomp(2)/prctl(2) renames a reused address when the new filter's call returns, so this only
 * has to tell them apart in that window, or when a tracepoint run was missed. */
struct filter_check {
        __u64 prog;
        __u64 prev;
};

static __always_inline void filter_check_read(struct seccomp_filter *f, struct filter_check *c) {
        c->prog = (__u64) f->prog;
        c->prev = (__u64) f->prev;
}

static __always_inline bool filter_ent_matches(const struct filter_ent *e, const struct filter_check *c) {
        return e->prog == c->prog && e->prev == c->prev;
}

static __always_inline __u32 filter_len(struct seccomp_filter *f) {
        struct sock_fprog_kern *orig = f->prog->orig_prog;

        return orig ? orig->len : 0;
}

/* Give the filter at address f a new id. replace: an entry for this address exists and names
 * another object. Returns the id, 0 if it could not be stored (-EEXIST in *ret_error: somebody
 * else stored one first). */
static __always_inline __u64 filter_id_new(struct seccomp_filter *f, const struct filter_check *c, bool replace,
                                           long *ret_error) {
        __u64 key = (__u64) f;
        struct filter_ent e = {
                .prog = c->prog,
                .prev = c->prev,
                .len = filter_len(f),
                .created_pass = pass,
        };
        long r;

        e.id = __sync_fetch_and_add(&last_id, 1) + 1;
        __sync_fetch_and_add(&stats.ids_assigned, 1);
        r = bpf_map_update_elem(&filter_ids, &key, &e, replace ? BPF_EXIST : BPF_NOEXIST);
        if (r < 0 && replace && r == -ENOENT) { /* the stale entry went away meanwhile */
                replace = false;
                r = bpf_map_update_elem(&filter_ids, &key, &e, BPF_NOEXIST);
        }
        *ret_error = r;
        if (r < 0)
                return 0;
        if (replace)
                __sync_fetch_and_add(&stats.addresses_reused, 1);
        else
                __sync_fetch_and_add(&stats.ids_stored, 1);
        return e.id;
}

/* The entry of filter f, with a new id if it has none yet. NULL if the id map is full. */
static struct filter_ent *filter_ent_get(struct seccomp_filter *f) {
        __u64 key = (__u64) f;
        struct filter_check c;
        struct filter_ent *e;
        long r;

        filter_check_read(f, &c);
        e = bpf_map_lookup_elem(&filter_ids, &key);
        if (e && filter_ent_matches(e, &c))
                return e;

        if (filter_id_new(f, &c, e != NULL, &r) > 0 || r == -EEXIST) {
                /* Ours, or one a tracepoint or another walker stored between lookup and update. */
                e = bpf_map_lookup_elem(&filter_ids, &key);
                if (e && filter_ent_matches(e, &c))
                        return e;
        }
        __sync_fetch_and_add(&stats.map_full, 1);
        return NULL;
}

/* The id of filter f, given now if it has none yet. 0 if the id map is full. */
static __always_inline __u64 filter_id_get(struct seccomp_filter *f) {
        struct filter_ent *e = filter_ent_get(f);

        return e ? e->id : 0;
}

#include "watch.bpf.h"

/* The record of f, e when its instructions go along: put together in the scratch buffer. */
static int filter_send_insns(struct seccomp_filter *f, struct filter_ent *e, const struct scan_rec_filter *hdr) {
        struct sock_fprog_kern *orig = f->prog->orig_prog;
        struct scan_rec_filter *r;
        struct sock_filter *insns;
        __u32 zero = 0, len;

        r = bpf_map_lookup_elem(&scratch, &zero);
        if (!r)
                return -ENOMEM;
        *r = *hdr;
        len = orig ? orig->len : 0;
        insns = orig ? orig->filter : NULL;
        if (len > SCAN_MAX_INSNS || !insns)
                len = 0;
        if (len > 0 && bpf_probe_read_kernel(r->insns, len * sizeof(struct sock_filter), insns) < 0)
                len = 0; /* sent without a program, and tried again on the next pass */
        r->len = len;
        r->has_insns = len > 0;

        if (bpf_ringbuf_output(&records, r, sizeof(*r) + len * sizeof(struct sock_filter), BPF_RB_NO_WAKEUP) < 0)
                return -ENOSPC;
        if (len > 0 || !orig)
                e->insns_epoch = insns_epoch;
        __sync_fetch_and_add(&stats.insns_sent, 1);
        return 0;
}

/* Send f's record unless this pass did already; its instructions only if this epoch has not.
 * 0, -ENOSPC (ring buffer full: retry the object) or -ENOMEM. */
static int filter_send(struct seccomp_filter *f, struct filter_ent *e, __u64 parent_id) {
        struct scan_rec_filter r = {
                .type = SCAN_REC_FILTER,
                .id = e->id,
                .parent_id = parent_id,
                .len = e->len,
        };
        int k;

        if (e->seen_pass == pass)
                return 0;
        r.refs = f->refs.refs.counter;
        r.users = f->users.refs.counter;
        r.log = f->log;
        r.wait_killable_recv = f->wait_killable_recv;
        r.has_listener = f->notif != NULL;

        if (e->insns_epoch != insns_epoch) {
                k = filter_send_insns(f, e, &r);
                if (k < 0)
                        return k;
        } else if (bpf_ringbuf_output(&records, &r, sizeof(r), BPF_RB_NO_WAKEUP) < 0)
                return -ENOSPC;
        e->seen_pass = pass;
        return 0;
}

/* Mark the chain from head (entry he) up to stop, exclusive, as complete: everything on it was
 * sent in this pass. */
static __always_inline void chain_mark_complete(struct seccomp_filter *head, struct filter_ent *he,
                                                struct seccomp_filter *stop) {
        struct seccomp_filter *f = head;
        struct filter_ent *e = he;
        struct bpf_iter_num it;
        __u64 key;

        bpf_iter_num_new(&it, 0, MAX_CHAIN_WALK);
        while (bpf_iter_num_next(&it)) {
                e->complete_pass = pass;
                f = f->prev;
                if (!f || f == stop)
                        break;
                key = (__u64) f;
                e = bpf_map_lookup_elem(&filter_ids, &key);
                if (!e || e->complete_pass == pass)
                        break;
        }
        bpf_iter_num_destroy(&it);
}

/* Send every filter of the chain at head not sent in this pass yet, walking from the head towards
 * the root and stopping early at a filter whose whole chain was sent in this pass. Most tasks
 * take the first return: their head was completed by another task. 0, -ENOSPC (ring buffer full:
 * retry the object), or another negative errno (counted in stats). */
static __always_inline int chain_walk(struct seccomp_filter *head, __u64 *ret_head_id) {
        struct seccomp_filter *f, *prev, *stop = NULL;
        struct filter_ent *he, *e, *pe;
        struct bpf_iter_num it;
        bool done = false;
        int r = 0;

        *ret_head_id = 0;
        if (!head)
                return 0;
        he = filter_ent_get(head);
        if (!he)
                return -ENOMEM;
        if (he->complete_pass == pass) {
                *ret_head_id = he->id;
                return 0;
        }

        f = head;
        e = he;
        bpf_iter_num_new(&it, 0, MAX_CHAIN_WALK);
        while (bpf_iter_num_next(&it)) {
                if (e->complete_pass == pass) {
                        stop = f;
                        done = true;
                        break;
                }
                prev = f->prev;
                if (!prev) {
                        r = filter_send(f, e, 0);
                        done = r == 0;
                        break;
                }
                pe = filter_ent_get(prev);
                if (!pe) {
                        r = -ENOMEM;
                        break;
                }
                r = filter_send(f, e, pe->id);
                if (r < 0)
                        break;
                f = prev;
                e = pe;
        }
        bpf_iter_num_destroy(&it);

        if (r < 0)
                return r; /* -ENOSPC, or -ENOMEM counted in stats.map_full */
        if (!done) {
                __sync_fetch_and_add(&stats.chain_too_long, 1);
                return -E2BIG;
        }
        chain_mark_complete(head, he, stop);
        *ret_head_id = he->id;
        return 0;
}

static __always_inline int retry_object(void) {
        __sync_fetch_and_add(&stats.retries, 1);
        return 1; /* the iterator calls us again with the same object on the next read() */
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

/* After the last object of the last iterator of a pass: forget filters not met for a while, when
 * user space asks for it (a sweep visits every bucket of the map, some milliseconds). */
static __always_inline void pass_end(void) {
        struct sweep s = {};
        struct scan_rec_end end = {
                .type = SCAN_REC_END,
                .pass = pass,
        };

        if (iter_ended_pass == pass)
                return;
        iter_ended_pass = pass;
        if (sweep_wanted) {
                bpf_for_each_map_elem(&filter_ids, sweep_one, &s, 0);
                __sync_fetch_and_add(&stats.ids_swept, s.swept);
                __sync_fetch_and_add(&stats.sweeps, 1);
        }

        end.swept = s.swept;
        bpf_ringbuf_output(&records, &end, sizeof(end), BPF_RB_NO_WAKEUP);
}

/* Mark t's process in seccomp_procs once a pass: its threads are usually met one after another. */
static __always_inline void scan_proc_mark(struct task_struct *t) {
        __u32 tgid = t->tgid;
        __u64 start = t->group_leader->start_boottime;

        if (iter_marked_pass == pass && iter_marked_tgid == tgid && iter_marked_start == start)
                return;
        seccomp_proc_mark(t);
        iter_marked_pass = pass;
        iter_marked_tgid = tgid;
        iter_marked_start = start;
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
        const struct cred *cred;
        struct scan_rec_task *rec;
        __u64 head_id;
        __u32 flags = 0;
        int mode, r;

        if (!t) {
                if (!files_planned)
                        pass_end();
                return 0;
        }

        /* t is a trusted pointer: plain loads (relocated by CO-RE) are the fast way to read it. */
        mode = t->seccomp.mode;
        if (mode == SECCOMP_MODE_DISABLED && !emit_all_tasks && t->signal->nr_threads <= 1)
                return 0;
        if (mode != SECCOMP_MODE_DISABLED)
                scan_proc_mark(t);

        r = chain_walk(t->seccomp.filter, &head_id);
        if (r == -ENOSPC)
                return retry_object();

        leader = t->group_leader;
        if (t->atomic_flags & (1UL << PFA_NO_NEW_PRIVS))
                flags |= SCAN_TASK_NO_NEW_PRIVS;
        if (leader->atomic_flags & (1UL << PFA_NO_NEW_PRIVS))
                flags |= SCAN_TASK_LEADER_NO_NEW_PRIVS;
        if ((t->flags & PF_EXITING) || t->exit_state)
                flags |= SCAN_TASK_EXITING;
        if (task_dumpable(t))
                flags |= SCAN_TASK_DUMPABLE;

        rec = bpf_ringbuf_reserve(&records, sizeof(*rec), 0);
        if (!rec)
                return retry_object();
        cred = leader->real_cred;
        rec->type = SCAN_REC_TASK;
        rec->tid = t->pid;
        rec->tgid = t->tgid;
        rec->ppid = leader->real_parent->tgid;
        rec->mode = mode;
        rec->flags = flags;
        rec->uid = cred->uid.val;
        rec->euid = cred->euid.val;
        rec->gid = cred->gid.val;
        rec->filter_count = t->seccomp.filter_count.counter;
        rec->start_boottime = t->start_boottime;
        rec->leader_start_boottime = leader->start_boottime;
        rec->filter_id = head_id;
        __builtin_memcpy(rec->comm, t->comm, sizeof(rec->comm));
        __builtin_memcpy(rec->leader_comm, leader->comm, sizeof(rec->leader_comm));
        bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
        return 0;
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
        struct seccomp_filter *filter;
        __u64 filter_id;
        int r;

        if (!t || !file) {
                pass_end();
                return 0;
        }
        if (!file_is_listener(file))
                return 0;

        /* A seccomp listener's private_data is its filter. */
        filter = bpf_rdonly_cast(file->private_data, bpf_core_type_id_kernel(struct seccomp_filter));
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

/* New filters and strict mode: remember the head and mode at entry; at exit name a changed head
 * afresh, or report the mode change. */
static __always_inline int install_enter(__u32 seccomp_flags, bool prctl, bool strict) {
        struct task_struct *t = bpf_get_current_task_btf();
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
        __sync_fetch_and_add(&stats.map_full, 1);
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
        struct task_struct *t = bpf_get_current_task_btf();
        __u32 tid = (__u32) bpf_get_current_pid_tgid();
        struct pending_install *p, saved;
        struct seccomp_filter *head;
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
        seccomp_proc_mark(t);
        watch_filter_attached(t, head, id, saved.seccomp_flags, saved.prctl, ret);
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
        struct seccomp_filter *head = bpf_get_current_task_btf()->seccomp.filter;

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
