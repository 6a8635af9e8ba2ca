/* watcher.h: live events from the kernel: tasks forking, exec'ing and exiting, filters attached */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"

typedef enum WatchEventType {
        WATCH_TASK_NEW,        /* a thread or process was created (fork/clone), with its state */
        WATCH_TASK_EXEC,       /* a process exec'd: comm (and exe) changed */
        WATCH_TASK_EXIT,       /* a thread exited */
        WATCH_FILTER_ATTACHED, /* seccomp(2)/prctl(2) installed a filter */
        WATCH_TASK_MODE,       /* a thread's seccomp mode changed: see below */
        WATCH_TASK_TSYNC,      /* after a TSYNC FILTER_ATTACHED: a thread it reached (see below) */
        WATCH_LISTENER_CLOSED, /* close(2) of a listener fd: see below */
        WATCH_TASK_ESCAPED,    /* after a process's first FILTER_ATTACHED without TSYNC: see below */
        WATCH_TASK_COMM,       /* a process's main thread was renamed: comm is the new name */
        _WATCH_EVENT_MAX,
} WatchEventType;

/* The state of one thread, as the kernel had it when the event fired. */
typedef struct WatchTask {
        pid_t tid, tgid;
        pid_t ppid; /* real parent's tgid */
        uint64_t start_time; /* clock ticks since boot, as /proc/TID/stat field 22 */
        char comm[16];
        TaskMode mode;
        uint64_t filter_id; /* head, 0 if none */
        bool no_new_privs;
        uid_t uid, euid;
        gid_t gid;
        bool dumpable; /* the mm's dumpable setting is SUID_DUMP_USER */
        bool threaded; /* its process had other threads when the event was sent */
        bool group_dead; /* TASK_EXIT: the last thread of its process */
} WatchTask;

typedef struct WatchFilter {
        uint64_t id, parent_id;
        const struct sock_filter *insns; /* valid during the callback only */
        size_t len;
        bool log, wait_killable_recv, has_listener;
        bool tsync; /* installed with SECCOMP_FILTER_FLAG_TSYNC: every thread of task.tgid now has it */
        int listener_fd; /* NEW_LISTENER: the listener's fd in the installer's process; -1 for none */
} WatchFilter;

/* WATCH_TASK_ESCAPED: the first FILTER_ATTACHED of a multi-threaded process (no thread of it had
 * a filter or strict mode), without TSYNC, is followed by one of these for each other thread of
 * it still in disabled mode when the call returned (task.mode disabled, task.filter_id 0): they
 * escaped the filter. As the kernel had them at the event. */
/* WATCH_TASK_TSYNC: a FILTER_ATTACHED with tsync is followed by one of these for each other thread
 * of the installer's process that TSYNC gave the filter and still had it as its head when the
 * installer's call returned (task.filter_id is the filter's id, task.mode filter): the threads as
 * the kernel had them at the event, not as /proc has them when the event is handled. A thread
 * that was exiting then is left out. */

/* WATCH_TASK_MODE: prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) or seccomp(SECCOMP_SET_MODE_STRICT)
 * returned 0 and took the calling thread from disabled to strict mode. task is that thread's state
 * after the call (mode TASK_MODE_STRICT, filter_id 0); no other thread changed (strict mode is
 * per thread and has no TSYNC). It is sent whatever the thread's process, like FILTER_ATTACHED:
 * from then on the thread and its process are reported by passes and by TASK_NEW/EXEC/EXIT (a
 * thread in strict mode can only read, write, exit and sigreturn: it will not fork or exec).
 * Going from disabled to filter mode is FILTER_ATTACHED, not this. */

/* WATCH_LISTENER_CLOSED: thread task (of process task.tgid) closed fd, a descriptor of the
 * listener of filter filter_id; last: it was the file's only reference, so the listener is gone
 * (and the filter's notif with it). Other ways a descriptor goes (exit, exec, dup2 over it) make no
 * such event: a process's exit is its last thread's TASK_EXIT. */
typedef struct WatchListenerClose {
        uint64_t filter_id;
        int fd;
        bool last;
} WatchListenerClose;

typedef struct WatchEvent {
        WatchEventType type;
        uint64_t ktime_ns; /* CLOCK_MONOTONIC of the event */
        WatchTask task;     /* the new/exec'ing/exiting thread, or the installer */
        WatchFilter filter; /* WATCH_FILTER_ATTACHED only */
        WatchListenerClose listener; /* WATCH_LISTENER_CLOSED only */
} WatchEvent;

typedef int (*WatchHandler)(const WatchEvent *e, void *userdata);

#define WATCH_DISPATCH_MAX_EVENTS 512U
#define WATCH_DISPATCH_MAX_USEC 10000U

/* The same by cause, for the log. */
typedef struct WatchLosses {
        uint64_t ring_full;     /* the event ring buffer had no room */
        uint64_t no_id;         /* a filter had no id (the id map was full) */
        uint64_t task_gone;     /* a task could not be looked up (a new one at its fork, a TSYNC leader) */
        uint64_t skipped_runs;  /* the kernel skipped a tracepoint program (another ran on that CPU) */
        uint64_t marks_lost;    /* a process could not be marked as a seccomp one */
} WatchLosses;
uint64_t watch_losses_total(const WatchLosses *l);
/* "ring buffer full: 3, filter id not found: 1" for the causes where now differs from before. */
char *watch_losses_describe(const WatchLosses *before, const WatchLosses *now);

