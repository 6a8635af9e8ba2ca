/* ids.bpf.h: the in-kernel filter id map and the marks of seccomp processes, shared by the scan
 * (iterator) and watch (tracepoint) units. Each unit declares the maps and the .data.ids section;
 * the loaders make the second unit reuse the first one's (bpf_map__reuse_fd()), so that a filter
 * has one id whichever program meets it first. */
#pragma once

#include "observe/bpf/kernel.h"

#include <bpf/bpf_core_read.h>
#include <linux/errno.h>
#include <bpf/bpf_helpers.h>
#include <linux/seccomp.h>
#include <stdbool.h>

#include "observe/bpf/ids.h"

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

/* One id per filter object: at most this many filters (the map allocates its buckets up front but
 * its entries on demand, BPF_F_NO_PREALLOC). A one-shot scanner sizes it for the machine instead,
 * and its variants of the scan unit (FILTER_IDS_PREALLOC, meson.build) allocate every entry when
 * the map is made: an insert then takes an entry from a list, where one allocated on demand cost
 * about 0.4 us more (a one-shot at 20,000 processes inserts 10,000 ids: 4 ms of its pass, against
 * 0.6 ms more to make its map of 32,000 entries). */
#define MAX_FILTER_IDS (1U << 18)
#define MAX_SECCOMP_PROCS (1U << 18)

/* Shared between the units (one map, see above). Set by user space: pass before each pass; last_id
 * before load (ids continue above those a state database has used). */
__u64 pass SEC(".data.ids") = 0;
__u64 last_id SEC(".data.ids") = 0;
/* seccomp(2) calls that returned with a listener on the caller's head filter: user space runs the
 * task_file iterator when this moved (a listener fd may be all that keeps a filter alive). */
__u64 listeners_created SEC(".data.ids") = 0;
struct ids_stats ids_stats SEC(".data.ids") = {};
struct pidns_self pidns_self SEC(".data.ids") = {};

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
#ifdef FILTER_IDS_PREALLOC
        __uint(map_flags, BPF_F_WRONLY);
#else
        __uint(map_flags, BPF_F_WRONLY | BPF_F_NO_PREALLOC);
#endif
        __type(key, __u64);
        __type(value, struct filter_ent);
} filter_ids SEC(".maps");

/* Processes (tgid -> the leader's start_boottime, which tells a reused tgid apart) that have or
 * had a thread in strict or filter mode. A pass reports every thread of such a process, those
 * in disabled mode too, so their forks and exits are events as well. Marked by passes and by
 * installs, dropped when the process's last thread exits. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, MAX_SECCOMP_PROCS);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, __u64);
} seccomp_procs SEC(".maps");

/* t as a pointer the verifier does not hold trusted. Loads through it are the same exception-handled
 * loads, but the verifier no longer asks, for each pointer read through a trusted one, whether the
 * kernel declares that field trusted too (each time a search of the kernel's whole BTF, three
 * times over): the programs load several times faster. Helpers and kfuncs that take a task want
 * the trusted original. */
static __always_inline struct task_struct *task_plain(struct task_struct *t) {
        return bpf_rdonly_cast(t, bpf_core_type_id_kernel(struct task_struct));
}

/* The word at kernel address p (0 where nothing can be read), for what must be a number (an
 * argument of a global function, a key) or is indexed (a file table's slots and bitmap): where
 * the kernel can (Linux 6.17 and later), one exception-handled load, bpf_rdonly_cast() to no type
 * making read-only memory of any address, readable at any offset, whose words are numbers where a
 * load through a typed pointer gives a pointer; before, a bpf_probe_read_kernel() call, several
 * times the cost. The test is a CO-RE relocation: the verifier walks only the branch it leaves. */
#define KERNEL_READ_AS(type, p)                                                                    \
        ({                                                                                         \
                type v_ = 0;                                                                       \
                if (bpf_core_enum_value_exists(enum bpf_features, BPF_FEAT_RDONLY_CAST_TO_VOID))   \
                        v_ = *(const type *) bpf_rdonly_cast((p), 0);                              \
                else if (bpf_probe_read_kernel(&v_, sizeof(v_), (p)) < 0)                          \
                        v_ = 0;                                                                    \
                v_;                                                                                \
        })

static __always_inline __u64 kernel_word(const void *p) {
        return KERNEL_READ_AS(__u64, p);
}

/* The same for a 32-bit number. */
static __always_inline __u32 kernel_u32(const void *p) {
        return KERNEL_READ_AS(__u32, p);
}

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
        __sync_fetch_and_add(&ids_stats.ids_assigned, 1);
        r = bpf_map_update_elem(&filter_ids, &key, &e, replace ? BPF_EXIST : BPF_NOEXIST);
        if (r < 0 && replace && r == -ENOENT) { /* the stale entry went away meanwhile */
                replace = false;
                r = bpf_map_update_elem(&filter_ids, &key, &e, BPF_NOEXIST);
        }
        *ret_error = r;
        if (r < 0)
                return 0;
        if (replace)
                __sync_fetch_and_add(&ids_stats.addresses_reused, 1);
        else
                __sync_fetch_and_add(&ids_stats.ids_stored, 1);
        return e.id;
}

/* Whether entry e is no longer to be trusted, whatever its check says: a unit may say so before it
 * includes this file (scan.bpf.c: a one-shot scanner's entries of earlier passes). */
#ifndef FILTER_ENT_STALE
#define FILTER_ENT_STALE(e) false
#endif

/* The entry of filter f, with a new id if it has none yet (or a stale one). NULL if the id map is
 * full. */
static struct filter_ent *filter_ent_get(struct seccomp_filter *f) {
        __u64 key = (__u64) f;
        struct filter_check c;
        struct filter_ent *e;
        long r;

        filter_check_read(f, &c);
        e = bpf_map_lookup_elem(&filter_ids, &key);
        if (e && filter_ent_matches(e, &c) && !FILTER_ENT_STALE(e))
                return e;

        if (filter_id_new(f, &c, e != NULL, &r) > 0 || r == -EEXIST) {
                /* Ours, or one a tracepoint or another walker stored between lookup and update. */
                e = bpf_map_lookup_elem(&filter_ids, &key);
                if (e && filter_ent_matches(e, &c))
                        return e;
        }
        __sync_fetch_and_add(&ids_stats.map_full, 1);
        return NULL;
}

/* The id of filter f, given now if it has none yet. 0 if the id map is full. */
static __always_inline __u64 filter_id_get(struct seccomp_filter *f) {
        struct filter_ent *e = filter_ent_get(f);

        return e ? e->id : 0;
}

/* Marks of processes with threads in strict or filter mode (seccomp_procs). Every task pointer
 * here comes from task_plain(): plain loads, not helper calls. */

static __always_inline bool seccomp_proc_marked(struct task_struct *t) {
        __u32 tgid = t->tgid;
        __u64 *start = bpf_map_lookup_elem(&seccomp_procs, &tgid);

        return start && *start == t->group_leader->start_boottime;
}

static __always_inline void seccomp_proc_unmark(struct task_struct *t) {
        __u32 tgid = t->tgid;

        if (bpf_map_lookup_elem(&seccomp_procs, &tgid)) /* cheaper than deleting what is not there */
                bpf_map_delete_elem(&seccomp_procs, &tgid);
}

/* Whether t is the only thread of its process: alone in its signal struct's list of threads. The
 * list, not signal->nr_threads (both change together, under the process's siglock), so that the
 * scan unit reads no struct signal_struct: the kernel's cache of CO-RE candidates keeps it in the
 * slot of struct files_struct, which the file-table walk reads (pidns.bpf.h says why it matters). */
static __always_inline bool task_alone(struct task_struct *t) {
        return t->thread_node.next == t->thread_node.prev;
}

/* Only a multi-threaded process needs the mark: a single thread in strict or filter mode is
 * reported for its mode alone, and every thread it goes on to create inherits that mode. */
static __always_inline void seccomp_proc_mark(struct task_struct *t) {
        __u32 tgid = t->tgid;
        __u64 start = t->group_leader->start_boottime;
        __u64 *old;

        if (task_alone(t))
                return;
        old = bpf_map_lookup_elem(&seccomp_procs, &tgid);
        if (old && *old == start)
                return;
        /* Without the mark only the disabled threads of a multi-threaded process go unreported. */
        if (bpf_map_update_elem(&seccomp_procs, &tgid, &start, BPF_ANY) < 0)
                __sync_fetch_and_add(&ids_stats.marks_lost, 1);
}

/* What ptrace_may_access() would call dumpable: the mm's setting is SUID_DUMP_USER. */
static __always_inline bool task_dumpable(struct task_struct *t) {
        struct mm_struct *mm;
        unsigned long flags;

        if (t->flags & PF_KTHREAD)
                return false;
        mm = t->mm;
        if (!mm)
                return false;
        if (bpf_core_type_exists(mm_flags_t))
                flags = mm->flags.__mm_flags[0];
        else
                flags = ((struct mm_struct___ulong_flags *) mm)->flags;
        return (flags & MMF_DUMPABLE_MASK) == SUID_DUMP_USER;
}
