/* scan.bpf.c: task and file iterators that send the seccomp filter forest as records named by
 * in-kernel ids (ids.bpf.h: the id map, shared with the watch unit's tracepoints) */
#include <stdbool.h>
#include <linux/types.h>

/* Set by user space before load: a one-shot scanner's ids hold within a pass (nothing tells it of
 * filters freed before the next). An entry made before this pass is stale (FILTER_ENT_STALE, for
 * ids.bpf.h): the filter gets a new id when a pass meets it, as if a sweep had forgotten it at the
 * end of the pass before, so that a pass need not end with one (a sweep visits and deletes every
 * entry: 5% of a one-shot at 20,000 processes); a sweep forgets every id. A one-shot's passes after
 * the first run one walker at a time (scan-bpf-pass.c), so that no two renew one entry at once. */
const volatile bool forget_after_pass = false;
#define FILTER_ENT_STALE(e) (forget_after_pass && (e)->created_pass != pass)

#include "observe/bpf/ids.bpf.h"
#define PIDNS_FROM_CURRENT /* the iterators run in the reader's context (pidns.bpf.h) */
#include "observe/bpf/pidns.bpf.h"

#include "observe/bpf/scan.h"

char LICENSE[] SEC("license") = "GPL";

/* The kernel caps the instructions of a chain at 32768 with a penalty of 4 per filter, so no
 * chain is deeper than 32768 / 5 filters. */
#define MAX_CHAIN_WALK 8192
#define RINGBUF_SIZE (256U << 10) /* a pass that overflows it is drained and goes on (retry_object) */

#define SWEEP_AFTER_PASSES 2

/* Set by user space before load: a one-shot scanner has no watch, and nobody reads the marks. */
const volatile bool mark_procs = true;

/* Set by user space before each pass (and pass, in ids.bpf.h): struct scan_pass_settings
 * (scan.h), one struct so that every variant of the unit lays it out the same way. */
struct scan_pass_settings run;
/* A filter's instructions are sent once per id and epoch. User space starts a new epoch when it
 * no longer has instructions the kernel thinks it sent. */
__u64 insns_epoch SEC(".data") = 1;

struct scan_stats stats;
#define LOOP_ZERO stats.zero /* for bounded_for() */
#include "observe/bpf/loop.bpf.h"
/* The iterators' own state (one pass runs at a time, its task and files iterators one after
 * the other or side by side); user space leaves it alone. */
__u64 iter_ended_pass;
__u64 tasks_ended_pass, files_ended_pass;
__u64 iter_marked_pass; /* the process last marked in seccomp_procs, to mark each once a pass */
__u64 iter_marked_start;
__u32 iter_marked_tgid;

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, RINGBUF_SIZE);
} records SEC(".maps");

/* Where FILTER records with instructions are put together before they are copied into the ring
 * buffer: one buffer for each iterator that walks chains, since a one-shot pass runs them side by
 * side (a per-CPU buffer would not do: an iterator's program may be preempted on its CPU). */
struct filter_buf {
        __u8 data[sizeof(struct scan_rec_filter) + SCAN_MAX_INSNS * sizeof(struct sock_filter)];
};

enum {
        SCRATCH_TASKS,
        SCRATCH_FILES,
        _SCRATCH_MAX,
};

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, _SCRATCH_MAX);
        __type(key, __u32);
        __type(value, struct filter_buf);
} scratch SEC(".maps");

#ifndef SCAN_NO_ARGV /* the units without the command-line iterator have no use for its maps */
/* One bit per pid (PID_MAX_LIMIT of them): the processes the argv iterator reads the command line
 * of. Set and cleared by user space, through its mapping of the map. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, SCAN_ARGV_WORDS);
        __uint(map_flags, BPF_F_MMAPABLE);
        __type(key, __u32);
        __type(value, __u64);
} argv_want SEC(".maps");

struct argv_buf {
        __u8 out[sizeof(struct scan_rec_argv) + SCAN_ARGV_MAX]; /* the record */
};

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct argv_buf);
} argv_scratch SEC(".maps");
#endif

/* The record of f, e when its instructions go along: put together in scratch buffer slot. */
static int filter_send_insns(struct seccomp_filter *f, struct filter_ent *e, const struct scan_rec_filter *hdr,
                             __u32 slot) {
        struct sock_fprog_kern *orig = f->prog->orig_prog;
        struct scan_rec_filter *r;
        struct sock_filter *insns;
        __u32 len;

        r = bpf_map_lookup_elem(&scratch, &slot);
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
static int filter_send(struct seccomp_filter *f, struct filter_ent *e, __u64 parent_id, __u32 slot) {
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
                k = filter_send_insns(f, e, &r, slot);
                if (k < 0)
                        return k;
        } else if (bpf_ringbuf_output(&records, &r, sizeof(r), BPF_RB_NO_WAKEUP) < 0)
                return -ENOSPC;
        e->seen_pass = pass;
        return 0;
}

/* Mark the chain from head up to stop, exclusive, as complete: everything on it was sent in this
 * pass. */
static __always_inline void chain_mark_complete(struct seccomp_filter *head, __u64 stop) {
        struct seccomp_filter *f = head;
        struct filter_ent *e;
        __u64 key, i;

        bounded_for(i, MAX_CHAIN_WALK) {
                key = (__u64) f;
                if (!f || key == stop)
                        break;
                e = bpf_map_lookup_elem(&filter_ids, &key);
                if (!e || e->complete_pass == pass)
                        break;
                e->complete_pass = pass;
                f = f->prev;
        }
}

/* What chain_step() did with one filter of a chain. */
enum {
        CHAIN_STEP_COMPLETE, /* its whole chain was sent in this pass already: nothing sent */
        CHAIN_STEP_DONE,     /* sent (unless this pass had), and complete now: the root, or its
                              * parent's chain was complete */
        CHAIN_STEP_NEXT,     /* sent (unless this pass had): its parent, step->next, comes next */
};

struct chain_step {
        __u64 id;   /* the filter's */
        __u64 next; /* CHAIN_STEP_NEXT: the parent's address */
};

/* One filter of a chain, at f_addr: its entry (an id given if it has none), and its record sent
 * unless this pass sent it. A global function, which the verifier checks once, where the body of
 * the chain walk's loop was checked again until its states converged (chain_send() was a third of
 * the scan unit's verification). A CHAIN_STEP_*, or -ENOSPC (ring buffer full: retry the object),
 * -ENOMEM (the id map is full, counted in stats), -EINVAL. */
__noinline int chain_step(__u64 f_addr, __u32 slot, struct chain_step *step) {
        struct seccomp_filter *f = bpf_rdonly_cast((void *) f_addr, bpf_core_type_id_kernel(struct seccomp_filter));
        struct filter_ent *e, *pe;
        __u64 prev = 0, parent_id = 0;
        bool parent_complete = false;
        int r;

        if (!step || !f)
                return -EINVAL;
        step->id = step->next = 0;
        e = filter_ent_get(f);
        if (!e)
                return -ENOMEM;
        step->id = e->id;
        if (e->complete_pass == pass)
                return CHAIN_STEP_COMPLETE;
        /* the parent as a number: a global function takes no kernel pointer */
        prev = kernel_word(&f->prev);
        if (prev) {
                pe = filter_ent_get(bpf_rdonly_cast((void *) prev, bpf_core_type_id_kernel(struct seccomp_filter)));
                if (!pe)
                        return -ENOMEM;
                parent_id = pe->id;
                parent_complete = pe->complete_pass == pass;
        }
        r = filter_send(f, e, parent_id, slot); /* one call: the verifier checks it at each */
        if (r < 0)
                return r;
        if (!prev || parent_complete) {
                /* Its ancestors' records are in the ring buffer, and now its own: the walk ends
                 * here, without a step to the parent to find it complete, nor one back to mark
                 * this one (the common chain: one new filter on an inherited one). */
                e->complete_pass = pass;
                return CHAIN_STEP_DONE;
        }
        step->next = prev;
        return CHAIN_STEP_NEXT;
}

/* Send every filter of the chain at head not sent in this pass yet, walking from the head towards
 * the root and stopping early at a filter whose whole chain was sent in this pass, or that
 * completes one (its parent's was). Most tasks take the first step's return: their head was
 * completed by another task, or is a new filter on a complete chain. The head's id (0: no
 * head), or -ENOSPC (ring buffer full: retry the object), or another negative errno (counted in
 * stats). A global function: checked once, whatever calls it (the task program walks chains
 * twice: its task's and a listener's). */
__noinline __s64 chain_send(__u64 head_addr, __u32 slot) {
        struct seccomp_filter *head = bpf_rdonly_cast((void *) head_addr, bpf_core_type_id_kernel(struct seccomp_filter));
        struct chain_step step = {};
        __u64 f = head_addr, stop = 0, head_id = 0;
        bool done = false;
        int r = 0;
        __u64 i;

        if (!head)
                return 0;
        bounded_for(i, MAX_CHAIN_WALK) {
                r = chain_step(f, slot, &step);
                if (r < 0)
                        break;
                if (f == head_addr)
                        head_id = step.id;
                if (r != CHAIN_STEP_NEXT) { /* f is complete: those before it are now */
                        stop = f;
                        done = true;
                        break;
                }
                f = step.next;
        }

        if (r < 0)
                return r; /* -ENOSPC, or -ENOMEM counted in stats.map_full */
        if (!done) {
                __sync_fetch_and_add(&stats.chain_too_long, 1);
                return -E2BIG;
        }
        if (stop != head_addr)
                chain_mark_complete(head, stop);
        return (__s64) head_id;
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

        if ((forget_after_pass || last + SWEEP_AFTER_PASSES <= pass) && bpf_map_delete_elem(&filter_ids, key) == 0)
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

        __u64 ended = iter_ended_pass;

        /* once, even when both iterators end at the same time on two CPUs */
        if (ended == pass || __sync_val_compare_and_swap(&iter_ended_pass, ended, pass) != ended)
                return;
        if (run.sweep_wanted) {
                bpf_for_each_map_elem(&filter_ids, sweep_one, &s, 0);
                __sync_fetch_and_add(&stats.ids_swept, s.swept);
                __sync_fetch_and_add(&stats.sweeps, 1);
        }

        end.swept = s.swept;
        bpf_ringbuf_output(&records, &end, sizeof(end), BPF_RB_NO_WAKEUP);
}

/* The id of head when its whole chain was sent in this pass already, as for most tasks (threads
 * and sibling processes share chains): one lookup, and no call of chain_send() with its loop and
 * the calls below it. 0 otherwise: chain_send() then walks the chain. */
static __always_inline __u64 head_id_if_complete(struct seccomp_filter *head) {
        __u64 key = (__u64) head;
        struct filter_check c;
        struct filter_ent *e;

        if (!head)
                return 0;
        e = bpf_map_lookup_elem(&filter_ids, &key);
        if (!e || e->complete_pass != pass || FILTER_ENT_STALE(e))
                return 0;
        filter_check_read(head, &c);
        return filter_ent_matches(e, &c) ? e->id : 0;
}

/* An iterator of the pass met its end: the pass ends with the last of them (the files
 * iterator runs when run.files_planned, before, after or beside the task iterator). */
static __always_inline void iter_end(bool files) {
        /* Exchanges, not stores: of two iterators ending side by side, the second sees the first. */
        if (files)
                __sync_lock_test_and_set(&files_ended_pass, pass);
        else
                __sync_lock_test_and_set(&tasks_ended_pass, pass);
        if (tasks_ended_pass == pass && (!run.files_planned || files_ended_pass == pass))
                pass_end();
}

#ifndef SCAN_NO_EXE /* the tree of `sectreed scan` reads no executables (meson.build) */
#include "observe/bpf/scan-exe.bpf.h"
#endif

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

/* Whether file, of the anonymous inode file system, is a seccomp listener: by its name. */
static __always_inline bool file_is_listener(struct file *file) {
        static const char name[] = SECCOMP_NOTIFY_NAME;
        char buf[sizeof(name)] = {};
        const unsigned char *p;

        /* Plain loads. */
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

/* The super block of the file at file_addr, as a number (0 if unreadable). */
static __always_inline __u64 file_sb(__u64 file_addr) {
        struct file *file = bpf_rdonly_cast((void *) file_addr, bpf_core_type_id_kernel(struct file));

        return file ? kernel_word(&file->f_inode->i_sb) : 0;
}

/* The super block of the anonymous inode file system, where every seccomp listener's file is: that
 * of run.anon_fd in the file table of the thread running the program (the iterators run in the
 * reader's context), as a number; 0 if it cannot be read. Told by its address, not by its magic
 * number: a read of struct super_block made the kernel walk its ~126,000 types twice on every load
 * of a light skeleton, that name and `enum bpf_features` sharing a slot of its cache of CO-RE
 * candidates (pidns.bpf.h says more of that cache). */
static __always_inline __u64 anon_sb_of_current(void) {
        struct task_struct *me = task_plain(bpf_get_current_task_btf());
        struct files_struct *files = ((struct task_struct___files *) me)->files;
        struct fdtable *fdt;
        struct file **fds;
        __u32 fd = run.anon_fd;

        if (!files)
                return 0;
        fdt = files->fdt;
        if (!fdt || fd >= fdt->max_fds)
                return 0;
        fds = fdt->fd;
        return file_sb(kernel_word(&fds[fd]));
}

/* Whether the file at file_addr is of the anonymous inode file system (anon_sb), as a seccomp
 * listener is: the test that turns nearly every file away, inline, before the call of
 * listener_file_send() (each call and return of BPF code costs, once per open file of the machine
 * here). */
static __always_inline bool file_is_anon(__u64 file_addr, __u64 anon_sb) {
        return file_addr && file_sb(file_addr) == anon_sb;
}

/* The index of the lowest bit set in bits (not 0), without a branch (the verifier would follow
 * each): that bit times a de Bruijn sequence has a distinct top six bits for each index. */
static const __u8 debruijn_index[64] = {
        0,  1,  56, 2,  57, 49, 28, 3,  61, 58, 42, 50, 38, 29, 17, 4,  62, 47, 59, 36, 45, 43,
        51, 22, 53, 39, 33, 30, 24, 18, 12, 5,  63, 55, 48, 27, 60, 41, 37, 16, 46, 35, 44, 21,
        52, 32, 23, 11, 54, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,  13, 8,  7,  6,
};

static __always_inline __u32 lowest_bit(__u64 bits) {
        return debruijn_index[((bits & -bits) * 0x03f79d71b4ca8b09ULL) >> 58];
}

/* The bound of a file table walk, in words of its open_fds bitmap: the most an open-coded loop may
 * run (BPF_MAX_LOOPS), 512 Mi fds; a table that large would hold 4 GiB of pointers. */
#define FD_WORDS_MAX (8U << 20)

/* The record of fd of the process of the task at task_addr, a listener of filter_id. 0, or
 * -ENOSPC. */
static __always_inline int listener_send(__u64 task_addr, __u32 fd, __u64 filter_id) {
        struct task_struct *t = bpf_rdonly_cast((void *) task_addr, bpf_core_type_id_kernel(struct task_struct));
        struct scan_rec_listener rec = {
                .type = SCAN_REC_LISTENER,
                .fd = fd,
                .filter_id = filter_id,
        };

        if (!t)
                return 0;
        rec.tgid = pidns_tgid(t, task_addr);
        if (!rec.tgid)
                return 0;
        if (bpf_ringbuf_output(&records, &rec, sizeof(rec), BPF_RB_NO_WAKEUP) < 0)
                return -ENOSPC;
        return 0;
}

/* When the file at file_addr, fd of the task at task_addr, is a seccomp listener: its filter's
 * chain, then its record. 0 (a listener sent, or not a listener), or -ENOSPC when the ring buffer
 * is full (retry the task). A global function: checked once, not at each call. */
__noinline int listener_file_send(__u64 file_addr, __u64 task_addr, __u32 fd, __u32 slot) {
        struct file *file = bpf_rdonly_cast((void *) file_addr, bpf_core_type_id_kernel(struct file));
        __u64 filter;
        __s64 id;

        if (!file || !file_is_listener(file))
                return 0;
        /* A seccomp listener's private_data is its filter. */
        filter = kernel_word(&file->private_data);
        if (!filter)
                return 0;
        id = chain_send(filter, slot);
        if (id == -ENOSPC)
                return -ENOSPC;
        return listener_send(task_addr, fd, id < 0 ? 0 : (__u64) id);
}

/* The listeners among fds base .. base + 63 of the file table of the task at task_addr: those of
 * the set bits of bits, lowest first, each found at once (a table's open fds can be far apart: 0-2
 * and 255). The table is read again here, and no fd past its end: it may have been replaced since
 * the caller read its bitmap. A global function, checked once: as the inner loop of the table
 * walk it was checked for each state of both loops. 0, or -ENOSPC. */
__noinline int fds_word_send(__u64 task_addr, __u32 base, __u64 bits, __u32 slot) {
        struct task_struct *t = bpf_rdonly_cast((void *) task_addr, bpf_core_type_id_kernel(struct task_struct));
        struct fdtable *fdt;
        struct file **fds;
        __u64 anon_sb;
        __u32 max_fds;
        int r;

        if (!t)
                return 0;
        /* Found here for each word, not passed in by the caller: a fifth argument of a global
         * function had this kernel's verifier reject the light skeletons, whose loops use
         * may_goto ("verifier bug: global subprog unexpected regs"). */
        anon_sb = anon_sb_of_current();
        if (!anon_sb) {
                __sync_fetch_and_add(&stats.anon_unknown, 1); /* the pass fails: no listener is missed */
                return 0;
        }
        fdt = ((struct task_struct___files *) t)->files->fdt;
        fds = fdt->fd;
        max_fds = fdt->max_fds;

        bounded_while(bits, 64) {
                __u32 fd = base + lowest_bit(bits);
                __u64 file = 0;

                bits &= bits - 1;
                if (fd >= max_fds)
                        continue;
                file = kernel_word(&fds[fd]);
                if (!file_is_anon(file, anon_sb))
                        continue;
                r = listener_file_send(file, task_addr, fd, slot);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The listener fds of t's file table, as the kernel's task_file iterator finds them, without its
 * cost per file (a lock, a reference taken and dropped, a program run): each table once, with the
 * thread group leader, or with a thread that has a table of its own (that iterator skips a thread
 * whose table is its leader's). The open_fds bitmap says which slots to read; the table is read
 * with plain loads and probe reads, no reference taken, so a task that is exiting is left out (its
 * table goes away under us; a read of a freed one does not fault, only reads nonsense).
 * A global function, checked once (task_addr: the task as a number). 0, or -ENOSPC (ring buffer
 * full: the task is retried, and its listeners sent again). */
__noinline int task_listeners_send(__u64 task_addr, __u32 slot) {
        struct task_struct *t = bpf_rdonly_cast((void *) task_addr, bpf_core_type_id_kernel(struct task_struct));
        struct files_struct *files;
        unsigned long *open_fds;
        struct fdtable *fdt;
        __u32 max_fds, words;
        __u64 w;

        if (!t)
                return 0;
        files = ((struct task_struct___files *) t)->files;
        if (!files || (t->flags & PF_EXITING) || (t->pid != t->tgid && files == ((struct task_struct___files *) t->group_leader)->files))
                return 0;
        fdt = files->fdt;
        if (!fdt)
                return 0;
        max_fds = fdt->max_fds;
        open_fds = fdt->open_fds;
        words = max_fds / 64 + (max_fds % 64 != 0);
        if (words > FD_WORDS_MAX)
                words = FD_WORDS_MAX;

        bounded_for(w, words) {
                __u64 bits = kernel_word(&open_fds[w]); /* 0 also where unreadable */

                if (bits && fds_word_send(task_addr, w * 64, bits, slot) < 0)
                        return -ENOSPC;
        }
        return 0;
}

/* Whether the thread running the program is run.files_walker_tid. */
static __always_inline bool walker_is_current(void) {
        struct task_struct *t = task_plain(bpf_get_current_task_btf());

        pidns_learn();
        if (!pidns_self.inum)
                return false;
        return (pidns_self.level == 0 ? (__u32) t->pid : pidns_nr_which(t, bpf_get_current_task(), PIDNS_OF_TASK)) ==
               run.files_walker_tid;
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
#ifndef SCAN_NO_EXE
        const struct cred *cred;
#endif
        struct scan_rec_task *rec;
        __u64 head_id, head, addr;
        __s64 id;
        __u32 flags = 0, tid, tgid, ppid;
        bool files_walk, tables;
        int mode;

        /* The walk of the file tables (listeners) runs in the same program as the walk of the
         * tasks: in the same run, alone, or in a second run beside (the reading thread says which). */
        files_walk = run.files_mode == SCAN_FILES_ONLY || (run.files_mode == SCAN_FILES_BESIDE && walker_is_current());
        if (!t) {
                iter_end(files_walk);
                return 0;
        }

        /* Plain loads (relocated by CO-RE) are the fast way to read the task; its address as a
         * number only for the global functions that take it (a helper call). */
        pidns_learn();
        tables = files_walk || run.files_mode == SCAN_FILES_IN_TASKS; /* this run reads t's file table */
        addr = tables || pidns_self.level ? task_addr_of(&ctx->task) : 0;
        if (tables) {
                if (task_listeners_send(addr, files_walk ? SCRATCH_FILES : SCRATCH_TASKS) < 0)
                        return retry_object();
                if (files_walk)
                        return 0;
        }
        t = task_plain(t);
        mode = t->seccomp.mode;
        if (mode == SECCOMP_MODE_DISABLED && !run.emit_all_tasks && task_alone(t))
                return 0;
        if (!pidns_task_ids(t, addr, &tid, &tgid, &ppid))
                return 0; /* outside the daemon's pid namespace */
        if (mark_procs && mode != SECCOMP_MODE_DISABLED)
                scan_proc_mark(t);

        head_id = head_id_if_complete(t->seccomp.filter);
        if (!head_id) {
                head = kernel_word(&t->seccomp.filter); /* a global function takes a number */
                id = head ? chain_send(head, SCRATCH_TASKS) : 0;
                if (id == -ENOSPC)
                        return retry_object();
                head_id = id < 0 ? 0 : (__u64) id;
        }
#ifndef SCAN_NO_EXE
        if (run.want_exe && t->pid == t->tgid && exe_send(t, addr) < 0)
                return retry_object();
#endif

        leader = t->group_leader;
        if (t->atomic_flags & (1UL << PFA_NO_NEW_PRIVS))
                flags |= SCAN_TASK_NO_NEW_PRIVS;
        if (leader->atomic_flags & (1UL << PFA_NO_NEW_PRIVS))
                flags |= SCAN_TASK_LEADER_NO_NEW_PRIVS;
        if ((t->flags & PF_EXITING) || t->exit_state)
                flags |= SCAN_TASK_EXITING;

        rec = bpf_ringbuf_reserve(&records, sizeof(*rec), 0);
        if (!rec)
                return retry_object();
        rec->type = SCAN_REC_TASK;
        rec->tid = tid;
        rec->tgid = tgid;
        rec->ppid = ppid;
        rec->mode = mode;
        rec->flags = flags;
#ifdef SCAN_NO_EXE
        /* The text tree's unit: the tree shows no credentials and no start times, and reading
         * them was a cache miss or two of every task (the credentials, the second hottest load
         * of this program). */
        rec->uid = rec->euid = rec->gid = 0;
        rec->start_boottime = rec->leader_start_boottime = 0;
#else
        cred = leader->real_cred;
        rec->uid = cred->uid.val;
        rec->euid = cred->euid.val;
        rec->gid = cred->gid.val;
        rec->start_boottime = t->start_boottime;
        rec->leader_start_boottime = leader->start_boottime;
#endif
        rec->filter_count = t->seccomp.filter_count.counter;
        rec->filter_id = head_id;
        __builtin_memcpy(rec->comm, t->comm, sizeof(rec->comm));
        __builtin_memcpy(rec->leader_comm, leader->comm, sizeof(rec->leader_comm));
        bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
        return 0;
}

#ifndef SCAN_NO_ARGV /* the one-shot's light skeleton without it (meson.build) */
/* The command lines user space asks for (argv_want), read from the processes' memory as
 * /proc/PID/cmdline does. Sleepable, to read another process's memory; a pass of its own, after
 * the task iterator's has said which processes are reported. */
SEC("iter.s/task")
int scan_argv(struct bpf_iter__task *ctx) {
        struct task_struct *t = ctx->task;
        struct scan_rec_argv *rec;
        struct argv_buf *b;
        struct mm_struct *mm;
        __u64 *word, start, end;
        __u32 tgid, idx, zero = 0, len = 0, flags = 0;

        if (!t || t->pid != t->tgid)
                return 0;
        pidns_learn();
        tgid = pidns_tgid(t, pidns_self.level ? task_addr_of(&ctx->task) : 0);
        if (!tgid)
                return 0;
        idx = tgid / 64;
        word = bpf_map_lookup_elem(&argv_want, &idx);
        if (!word || !(*word & (1ULL << (tgid % 64))))
                return 0;
        b = bpf_map_lookup_elem(&argv_scratch, &zero);
        if (!b)
                return 0; /* user space reads /proc */
        rec = (struct scan_rec_argv *) b->out;

        mm = t->mm;
        start = mm ? mm->arg_start : 0;
        end = mm ? mm->arg_end : 0;
        if (end > start) {
                len = end - start;
                if (len >= SCAN_ARGV_MAX ||
                    bpf_copy_from_user_task(rec->args, len & (SCAN_ARGV_MAX - 1), (void *) start, t, 0) < 0 ||
                    rec->args[(len - 1) & (SCAN_ARGV_MAX - 1)] != 0) /* setproctitle(3): /proc knows how */
                        flags = SCAN_ARGV_UNKNOWN;
        }
        if (flags)
                len = 0;
        rec->type = SCAN_REC_ARGV;
        rec->tgid = tgid;
        rec->flags = flags;
        rec->len = len;
        rec->start_boottime = t->start_boottime;
        if (bpf_ringbuf_output(&records, rec, sizeof(*rec) + (len & (SCAN_ARGV_MAX - 1)), BPF_RB_NO_WAKEUP) < 0)
                return retry_object();
        return 0;
}
#endif
