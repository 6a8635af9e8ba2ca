/* access.h: who may see what: a bus caller sees the tasks it could ptrace itself */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "core/forest.h"
#include "core/hashmap.h"

typedef struct Caller {
        uid_t uid;       /* the uid the caller connected to the bus with (the bus's, not /proc's) */
        bool privileged; /* uid 0: sees everything */
        /* Read from the caller's process (the bus gives its pid) when its real and effective uid
         * are uid; known is false otherwise, and then a non-root caller sees nothing. */
        bool known;
        gid_t gid;              /* its real gid */
        uint64_t cap_permitted; /* its permitted capabilities (CapPrm:) */
        dev_t userns_dev;       /* its user namespace */
        ino_t userns_ino;
        Hashmap seen; /* tgid -> (void*) 1 visible / 2 not, memoised for one request */
} Caller;

/* From the message's sender: uid and pid from the bus, the rest from /proc/PID. */
int caller_from_message(sd_bus_message *m, Caller *ret);
void caller_deinit(Caller *c);

/* The rule of the kernel's ptrace_may_access(task, PTRACE_MODE_READ_REALCREDS), for a caller that
 * is not root and holds no CAP_SYS_PTRACE that counts (see access.c): the task's real, effective
 * and saved uid are the caller's uid and its real, effective and saved gid the caller's gid; the
 * task is dumpable (or its memory belongs to a user namespace whose root is the caller); and its
 * permitted capabilities are a subset of the caller's, both in one user namespace (or the caller
 * owns the task's user namespace). Read from /proc/PID through one directory fd, so that every
 * fact comes from one process even if the pid is reused meanwhile. */
bool caller_may_see_process(Caller *c, pid_t tgid);
/* The same for a process of a forest: also false if the pid now names another process than the
 * one that was scanned (its start time differs). */
bool caller_may_see(Caller *c, const Process *p);
/* The same for process tgid that started at start_time (0: any), off the loop too (c is the
 * thread's own). */
bool caller_may_see_started(Caller *c, pid_t tgid, uint64_t start_time);
/* The same for the process whose /proc/PID directory is proc_fd, if it started at start_time (0:
 * any): 1 yes, 0 no, -ESRCH it is gone (or is not that process). Not memoised. */
int caller_check_proc(Caller *c, int proc_fd, uint64_t start_time);

/* Filters reachable from the chains of the threads the caller may see: a hashmap of id -> filter.
 * For a privileged caller every filter. In the same walk, unless ret_counts is NULL, the tasks the
 * caller may see whose head each filter is: head filter id -> count as a pointer, left empty for a
 * privileged caller, who sees them all (visible_task_count() reads it). */
int caller_visible_filters(Caller *c, const Forest *f, Hashmap *ret, Hashmap *ret_counts);

#define CALLER_CLEANUP _cleanup_(caller_deinit)
