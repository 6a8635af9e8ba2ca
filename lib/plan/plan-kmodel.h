/* plan-kmodel.h: a pure model of what the kernel does with processes, threads and seccomp filters
 * (fork, clone, CLONE_PARENT, install with TSYNC and NEW_LISTENER, exits and reparenting to
 * subreapers, strict mode, no_new_privs, listener fds), to plan and check restores without one */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"

#define KMODEL_NONE SIZE_MAX

/* The model's first fd number given out: 0, 1 and 2 are always taken (stdio). */
#define KMODEL_FIRST_FD 3

typedef struct KFilter {
        size_t parent; /* KMODEL_NONE for a filter installed on a task without one */
        const struct sock_filter *insns; /* borrowed from the caller, who keeps them alive */
        size_t len;
        bool log, wait_killable_recv;
        size_t listener; /* the live listener object (the kernel's filter->notif), or KMODEL_NONE */
        uint64_t tag;    /* what the caller says this object stands for */
        size_t depth;    /* 1 for a root filter */
} KFilter;

typedef struct KListener {
        size_t filter;
        size_t n_fds;      /* fds referring to it in model processes */
        size_t n_outside;  /* copies held outside the model (e.g. by the executor) */
} KListener;

typedef struct KFd {
        int fd;
        size_t listener;
} KFd;

typedef struct KTask {
        size_t process;
        size_t head; /* filter, KMODEL_NONE for none */
        TaskMode mode;
        bool nnp;
        bool ids_set;    /* it became uid, gid (setresuid, setresgid): a non-root uid has no
                          * CAP_SYS_ADMIN, so its installs need no_new_privs; fork and clone copy it */
        uid_t uid;
        gid_t gid;
        bool alive;
        pid_t tid;
} KTask;

typedef struct KProcess {
        size_t parent; /* process, KMODEL_NONE: outside the model (init adopts) */
        pid_t pid;
        bool subreaper;
        bool alive;
        size_t n_alive_threads;
        size_t *threads; /* tasks, in creation order */
        size_t n_threads, n_threads_allocated;
        KFd *fds;
        size_t n_fds, n_fds_allocated;
        char comm[16];
        uint64_t tag;
} KProcess;

typedef struct KModel {
        KFilter *filters;
        size_t n_filters, n_filters_allocated;
        KListener *listeners;
        size_t n_listeners, n_listeners_allocated;
        KTask *tasks;
        size_t n_tasks, n_tasks_allocated;
        KProcess *processes;
        size_t n_processes, n_processes_allocated;
        bool privileged; /* CAP_SYS_ADMIN: installs need no no_new_privs */
        pid_t next_tid;
} KModel;

void kmodel_init(KModel *m, bool privileged);
void kmodel_deinit(KModel *m);

/* A new process from outside the model (its parent is KMODEL_NONE), with one thread without
 * filters; its first task in *ret_task. */
int kmodel_spawn_initial(KModel *m, size_t *ret_task);

/* Task t forks a process (clone without CLONE_THREAD): the child's only thread copies t's chain,
 * mode and no_new_privs; the child's fd table is a copy of t's process's. clone_parent makes the
 * child a child of t's process's parent (CLONE_PARENT). -ESRCH for a dead t; -EPERM from a task
 * in strict mode (it cannot call clone); -EINVAL for CLONE_PARENT from a process with no parent
 * in the model. */
int kmodel_fork(KModel *m, size_t t, bool clone_parent, size_t *ret_task);
/* Task t creates a thread in its own process, copying its chain, mode and no_new_privs. */
int kmodel_thread(KModel *m, size_t t, size_t *ret_task);

/* Task t installs a filter with SECCOMP_FILTER_FLAG_* flags (TSYNC, LOG, NEW_LISTENER,
 * WAIT_KILLABLE_RECV) as seccomp(2) does: -EACCES without no_new_privs unless privileged,
 * -EINVAL in strict mode or for a flag combination the kernel refuses, -EBUSY when TSYNC finds a
 * thread it cannot synchronise (*ret_busy_task says which) or NEW_LISTENER finds a filter of the
 * chain whose listener is still open. On success *ret_filter is the new
 * object (tag given), and with NEW_LISTENER *ret_fd the listener fd in t's process. */
int kmodel_install(KModel *m, size_t t, const struct sock_filter *insns, size_t len, unsigned flags, uint64_t tag,
                   size_t *ret_filter, int *ret_fd, size_t *ret_busy_task);

int kmodel_strict(KModel *m, size_t t);
int kmodel_set_nnp(KModel *m, size_t t);
/* Task t becomes uid and gid (from a privileged one: the model does not check that). */
int kmodel_set_ids(KModel *m, size_t t, uid_t uid, gid_t gid);
/* Whether task t may install without no_new_privs (CAP_SYS_ADMIN). */
bool kmodel_task_privileged(const KModel *m, size_t t);
int kmodel_set_subreaper(KModel *m, size_t process, bool on);
int kmodel_set_comm(KModel *m, size_t t, const char *comm);

/* A thread exits; the last one takes its process with it (its fds are closed, its children go
 * to the nearest living subreaper among its ancestors, or out of the model). */
int kmodel_exit_thread(KModel *m, size_t t);
/* Every thread of the process exits at once (exit_group). */
int kmodel_exit_process(KModel *m, size_t process);

/* fd table of a process: the listener at fd, close, dup3 (from -> to, closing what to held),
 * and a copy of another process's fd at the lowest free number (to_fd < 0) or at to_fd. */
size_t kmodel_fd_listener(const KModel *m, size_t process, int fd);
int kmodel_fd_close(KModel *m, size_t process, int fd);
int kmodel_fd_dup(KModel *m, size_t process, int from, int to);
int kmodel_fd_copy(KModel *m, size_t from_process, int fd, size_t to_process, int to_fd, int *ret_fd);
/* Listener object l, held outside the model, arrives in process at to_fd (SCM_RIGHTS, then dup3). */
int kmodel_fd_receive(KModel *m, size_t process, size_t l, int to_fd);
/* Hold a copy of listener object l outside the model. */
int kmodel_listener_take_outside(KModel *m, size_t l);

/* Is filter a the same object as b or one of its ancestors (a may be KMODEL_NONE: the empty chain)? */
bool kmodel_filter_is_ancestor(const KModel *m, size_t a, size_t b);

/* The state as a whole-machine snapshot of the model would see it: every living process (ppid 0
 * when its parent is outside the model) with its living threads, the filters their chains and
 * the living listeners reach (id: model index + 1), and the listeners with their holders (ids in
 * object order + 1). A valid snapshot (backend "bpf", exact identity), linked. */
int kmodel_to_forest(const KModel *m, Forest **ret);
