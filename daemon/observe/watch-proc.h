/* watch-proc.h: the proc connector (netlink): fork, exec, exit and comm events of every task, the
 * ptrace backend's only live source */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "core/util.h"

typedef enum ProcEventType {
        PROC_EVENT_TYPE_FORK, /* a process or a thread was created */
        PROC_EVENT_TYPE_EXEC, /* a process exec'd (tid == tgid: the exec'ing thread took the leader's tid) */
        PROC_EVENT_TYPE_EXIT, /* a thread exited */
        PROC_EVENT_TYPE_COMM, /* a thread changed its comm (prctl PR_SET_NAME, /proc/TID/comm) */
        _PROC_EVENT_TYPE_MAX,
} ProcEventType;

typedef struct ProcEvent {
        ProcEventType type;
        pid_t tid, tgid;               /* the new, exec'ing, exiting or renamed thread */
        pid_t parent_tid, parent_tgid; /* FORK only: the thread that forked or cloned */
        char comm[16];                 /* COMM only */
} ProcEvent;

typedef int (*ProcEventHandler)(const ProcEvent *e, void *userdata);

typedef struct ProcWatch ProcWatch;

/* Open a NETLINK_CONNECTOR socket, join CN_IDX_PROC and subscribe (PROC_CN_MCAST_LISTEN), waiting
 * for the kernel's acknowledgement: -EPERM if refused, -ETIMEDOUT if the kernel ignores us (it
 * answers only callers in the initial user and pid namespaces; the socket must be in the initial
 * network namespace). Events of this process's own threads (the ptrace workers) are not passed on.
 * The socket is non-blocking: hand proc_watch_fd() to sd_event_add_io(). */
int proc_watch_new(ProcEventHandler handler, void *userdata, ProcWatch **ret);
ProcWatch *proc_watch_free(ProcWatch *w);
DEFINE_CLEANUP(ProcWatch *, proc_watch_free);

int proc_watch_fd(ProcWatch *w);
/* Read the waiting messages (a few thousand at most: the fd stays readable for the rest), calling
 * the handler for each event; returns the number handled, the handler's negative return (which
 * stops reading), or another negative errno. */
int proc_watch_dispatch(ProcWatch *w);
/* How often the socket overflowed (ENOBUFS: the kernel dropped events) since it was opened. When
 * this grows, the live state may be wrong: resynchronise with a full pass. */
uint64_t proc_watch_lost(ProcWatch *w);
