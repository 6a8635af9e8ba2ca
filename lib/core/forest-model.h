/* forest-model.h: the seccomp filter forest model: filters, tasks, processes, listeners, and the
 * operations on them (building, linking, lookups, chain walk, lowest common ancestor); the bottom
 * of lib/core's forest files */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/hashmap.h"
#include "core/prog.h"
#include "core/util.h"

typedef enum IdentityKind {
        IDENTITY_EXACT,    /* ids name kernel objects: same id <=> same struct seccomp_filter */
        IDENTITY_INFERRED, /* sharing inferred from bytes, flags, parents and task relations */
        _IDENTITY_MAX,
        _IDENTITY_INVALID = -EINVAL,
} IdentityKind;
const char *identity_kind_to_string(IdentityKind k);
IdentityKind identity_kind_from_string(const char *s);

typedef enum TaskMode {
        TASK_MODE_DISABLED,
        TASK_MODE_STRICT,
        TASK_MODE_FILTER,
        _TASK_MODE_MAX,
        _TASK_MODE_INVALID = -EINVAL,
} TaskMode;
const char *task_mode_to_string(TaskMode m);
TaskMode task_mode_from_string(const char *s);

/* The kernel readers: which one produced a forest (Forest.backend, snapshots' source.backend)
 * and which one the daemon runs. */
typedef enum Backend {
        BACKEND_BPF,    /* BPF task iterators and tracepoints: exact identity */
        BACKEND_PTRACE, /* PTRACE_SECCOMP_GET_FILTER: identity inferred */
        _BACKEND_MAX,
        _BACKEND_INVALID = -EINVAL,
} Backend;
const char *backend_to_string(Backend b);
Backend backend_from_string(const char *s);

typedef struct Filter Filter;
struct Filter {
        uint64_t id;        /* > 0; opaque, never a kernel address */
        uint64_t parent_id; /* 0 = a root filter (installed on a task with none) */
        Filter *parent;     /* resolved by forest_link() */
        struct sock_filter *insns;
        size_t len;
        uint8_t digest[PROG_DIGEST_SIZE];
        bool log;
        bool wait_killable_recv;
        bool has_listener;    /* the kernel's filter->notif is set */
        uint64_t listener_id; /* 0 = none known */
        IdentityKind identity;
        uint32_t refs, users; /* kernel reference counts when the backend can see them, else 0 */
        /* The live forest's per-uid budget (lib/core/budget.h): the uid it counts against, and whether
         * its instructions were dropped (insns NULL, len and digest kept) because that uid was over
         * budget when it came in. */
        uid_t budget_uid;
        bool over_budget;
        size_t index;     /* position in Forest.filters (kept by every change) */
        /* computed by forest_link(): */
        unsigned depth;   /* 1 for a root filter */
        size_t n_tasks;   /* tasks whose head is this filter */
        size_t n_children;
};

/* A thread's own no_new_privs bit (it is per thread) where the reader knows it; else the thread
 * counts as its process's (Process.no_new_privs, the leader's, which /proc/PID/status shows). */
typedef enum TaskNnp {
        TASK_NNP_PROCESS = 0, /* not known on its own: its process's */
        TASK_NNP_OFF,
        TASK_NNP_ON,
} TaskNnp;

typedef struct Task {
        pid_t tid;
        pid_t tgid;
        uint64_t start_time; /* /proc/TID/stat field 22, clock ticks since boot */
        TaskMode mode;
        uint64_t filter_id; /* head filter (newest), 0 if none */
        Filter *filter;     /* resolved by forest_link() */
        unsigned filter_count; /* the kernel's count when known (Seccomp_filters:), else 0 */
        TaskNnp nnp;
        /* Its last known state: the observer could not read it at its last pass (another tracer
         * held it). Set by the client from the daemon's ListStaleTasks, for display only. */
        bool stale;
} Task;

typedef struct Forest Forest;

typedef struct Process {
        Forest *forest; /* the forest it is in (NULL: none): adding a thread unlinks it */
        size_t index;   /* position in Forest.processes */
        pid_t pid;
        pid_t ppid; /* real parent's tgid, 0 for none */
        uint64_t start_time;
        char comm[16];
        char *exe;   /* may be NULL */
        char **argv; /* may be NULL */
        uid_t uid;
        gid_t gid;
        bool no_new_privs;
        Task *threads;
        size_t n_threads, n_threads_allocated;
        /* A leader that exited while its threads live on (a zombie, not among threads): what
         * /proc/PID/status keeps showing of it, its seccomp mode and the number of filters it had
         * (exited_leader.mode, filter_count; the kernel released the filters themselves: filter_id
         * is 0), tid = pid. has_exited_leader false: none recorded (the leader is a thread, or the
         * reader does not know). */
        bool has_exited_leader;
        Task exited_leader;
        /* Its systemd unit ("sshd.service"), user unit ("app.service" under user@1000.service) and
         * machine (container) name, read from its cgroup when a snapshot is taken; NULL: none or not
         * recorded. Set with process_set_units() (lib/snapshot/snapshot-units.h). */
        char *unit, *user_unit, *machine;
} Process;

typedef struct ListenerHolder {
        pid_t pid;
        int fd;
        char comm[16]; /* the holder's name when the forest has no process for it ("" if unknown) */
} ListenerHolder;

typedef struct Listener {
        Forest *forest; /* the forest it is in: adding a holder unlinks it */
        uint64_t id;
        uint64_t filter_id;
        IdentityKind identity; /* exact when the filter link came from the kernel */
        ListenerHolder *holders;
        size_t n_holders, n_holders_allocated;
} Listener;

typedef struct HostInfo {
        char *kernel;
        char *arch;
        char *hostname;
} HostInfo;

/* How a snapshot was taken. */
typedef enum SnapshotConsistency {
        SNAPSHOT_CONSISTENCY_NONE,     /* not said (live state, not a snapshot) */
        SNAPSHOT_CONSISTENCY_ITERATOR, /* bpf: one BPF iterator pass saw every task */
        SNAPSHOT_CONSISTENCY_FROZEN,   /* ptrace: every task was stopped before any was read */
        _SNAPSHOT_CONSISTENCY_MAX,
        _SNAPSHOT_CONSISTENCY_INVALID = -EINVAL,
} SnapshotConsistency;
const char *snapshot_consistency_to_string(SnapshotConsistency c);
SnapshotConsistency snapshot_consistency_from_string(const char *s);

typedef struct SnapshotInfo {
        char *name;           /* given by who took it; NULL = none */
        uint32_t taken_by_uid; /* the uid of the caller that took it */
        SnapshotConsistency consistency;
} SnapshotInfo;

struct Forest {
        Filter **filters; /* after forest_link(): parents before children, then by id */
        size_t n_filters, n_filters_allocated;
        Process **processes; /* after forest_link(): by pid */
        size_t n_processes, n_processes_allocated;
        Listener **listeners;
        size_t n_listeners, n_listeners_allocated;
        char *backend;         /* "bpf" or "ptrace" */
        IdentityKind identity; /* of the source */
        pid_t root;            /* 0 = whole machine */
        uint64_t created_at_usec; /* CLOCK_REALTIME */
        HostInfo host;
        SnapshotInfo snapshot; /* what makes a forest a snapshot: empty for live state */
        bool linked;
        /* private lookup indexes: kept current by every change */
        Hashmap filters_by_id;
        Hashmap processes_by_pid;
        /* private: built by forest_link() */
        Task **tasks_by_tid;
        size_t n_tasks;
};

Forest *forest_new(void);
Forest *forest_free(Forest *f);
DEFINE_CLEANUP(Forest *, forest_free);

/* Adding. The forest copies what it is given (insns, strings); the returned pointers stay valid
 * until the forest is freed (arrays hold pointers). A duplicate id/pid is -EEXIST. Adding
 * unlinks the forest until forest_link() runs again. */
int forest_add_filter(Forest *f, uint64_t id, uint64_t parent_id, const struct sock_filter *insns, size_t len,
                      Filter **ret);
/* The same, with the program's digest (prog_digest() of insns) known already. insns NULL with
 * len > 0: a filter whose instructions are not kept, only their number and digest. */
int forest_add_filter_with_digest(Forest *f, uint64_t id, uint64_t parent_id, const struct sock_filter *insns,
                                  size_t len, const uint8_t digest[PROG_DIGEST_SIZE], Filter **ret);
/* The same, taking *insns (malloc()ed, len of them) rather than a copy: the forest owns them once
 * the call succeeds (*insns is then NULL); on failure they stay the caller's. */
int forest_add_filter_taking(Forest *f, uint64_t id, uint64_t parent_id, struct sock_filter **insns, size_t len,
                             const uint8_t digest[PROG_DIGEST_SIZE], Filter **ret);
/* A copy of x (of another forest) with its id, parent id, program and own fields, the links left to
 * forest_link(). The listener it may have is not copied. */
int forest_add_filter_copy(Forest *f, const Filter *x, Filter **ret);
int forest_add_process(Forest *f, pid_t pid, Process **ret);
int process_add_thread(Process *p, pid_t tid, Task **ret);
int forest_add_listener(Forest *f, uint64_t id, uint64_t filter_id, Listener **ret);
int listener_add_holder(Listener *l, pid_t pid, int fd);
int process_set_argv(Process *p, char * const *argv);
int process_set_exe(Process *p, const char *exe);
int host_info_set(HostInfo *h, const char *kernel, const char *arch, const char *hostname);
int host_info_fill_local(HostInfo *h); /* from uname(2) */
int snapshot_info_set_name(SnapshotInfo *i, const char *name);
/* The same as forest_add_listener(), process_add_thread() and listener_add_holder() without their
 * linear duplicate scans, for callers that keep an index of their own (the snapshot readers):
 * adding n elements stays O(n). A duplicate makes an inconsistent forest. */
int forest_append_listener(Forest *f, uint64_t id, uint64_t filter_id, Listener **ret);
int process_append_thread(Process *p, pid_t tid, Task **ret);
int listener_append_holder(Listener *l, pid_t pid, int fd);
/* Room for n_filters and n_processes more, allocated at once, for a caller that knows how many it
 * will add (a scan, a reader): no array or index grows on the way. -ENOMEM, or 0. */
int forest_reserve(Forest *f, size_t n_filters, size_t n_processes);
/* For an empty forest whose filter ids and pids come in runs from the kernel and this program (a
 * scanner's): its indexes place them by value, neighbours in neighbouring slots
 * (hashmap_set_dense_keys()). Never for a forest read from a file or the bus. */
void forest_set_dense_keys(Forest *f);
/* Room for n threads in all (exactly n where p has none yet: a process of one thread takes one
 * Task, not the eight a first append allocates). */
int process_reserve_threads(Process *p, size_t n);

/* Resolve links and check consistency: every parent and thread filter exists, no parent cycle,
 * listeners point at existing filters. Sorts filters parents-first, processes by pid, threads by
 * tid, listeners by id, and computes depth, n_tasks, n_children. -EINVAL with *error (malloc'ed,
 * may be NULL) naming the offending element. */
int forest_link(Forest *f, char **error);

Filter *forest_find_filter(const Forest *f, uint64_t id);
Process *forest_find_process(const Forest *f, pid_t pid);
Task *process_find_thread(const Process *p, pid_t tid);
Task *forest_find_task(const Forest *f, pid_t tid, Process **ret_process);
Listener *forest_find_listener(const Forest *f, uint64_t id);

/* Chain of a filter, newest (the filter itself) first: fills up to max pointers and returns the
 * full length (the filter's depth). */
size_t filter_chain(const Filter *head, const Filter **ret, size_t max);

/* The length of the chain of the filter with id head (0: none), by ids: the forest need not be
 * linked. A parent the forest lacks ends the chain; a cycle ends it after n_filters steps. */
size_t forest_chain_length(const Forest *f, uint64_t head);

/* Lowest common ancestor of two filters (either may be NULL: result NULL). */
const Filter *filter_lca(const Filter *a, const Filter *b);

/* kcmp-shaped comparison of two filters of the same forest: 0 if a and b are the same filter
 * object, otherwise 1 (a < b) or 2 (a > b), ordered by id (NULL sorts first). *ret_exact says whether the answer is a fact (both exact) or inferred. */
int filter_cmp(const Filter *a, const Filter *b, bool *ret_exact);

/* Incremental changes for a live forest (they unlink it; forest_link() again before using the
 * linked fields). Removing a process's last thread removes the process. -ENOENT if absent. */
int forest_remove_thread(Forest *f, pid_t tgid, pid_t tid);
/* Take a filter or a process out of the forest without freeing it (NULL if absent), and put one
 * taken out back in (-EEXIST if its id or pid is taken meanwhile): for changes that may have to be
 * undone. Both are O(1); they unlink the forest. */
Filter *forest_take_filter(Forest *f, uint64_t id);
int forest_put_filter(Forest *f, Filter *flt);
Process *forest_take_process(Forest *f, pid_t pid);
int forest_put_process(Forest *f, Process *p);
/* Free what was taken out (NULL is fine). */
Filter *filter_free(Filter *flt);
Process *process_free(Process *p);
void listener_free(Listener *l);
DEFINE_CLEANUP(Filter *, filter_free);
DEFINE_CLEANUP(Process *, process_free);
/* Record p's exited leader's state (tid p->pid). */
void process_set_exited_leader(Process *p, TaskMode mode, unsigned filter_count);
/* Thread t's no_new_privs: its own where known, else its process's. */
bool task_no_new_privs(const Process *p, const Task *t);
/* Whether t's own bit is known and differs from its process's (what the snapshot formats write). */
bool task_no_new_privs_differs(const Process *p, const Task *t);
/* Set t's own bit. */
void task_set_no_new_privs(Task *t, bool on);
/* Whether a thread of p is in strict or filter mode (false for NULL). */
bool process_has_seccomp(const Process *p);
/* A thread of one forest and its counterpart in another (tids). */
typedef struct TaskPair {
        pid_t a, b;
} TaskPair;
