/* live-event.h: what goes into the live forest (events, in batches) and what comes out (the
 * changes, each with what it replaced); the bottom of the live forest's files */
#pragma once

#include "core/forest.h"

typedef enum LiveEventType {
        LIVE_EVENT_TASK,   /* a thread's state: created (fork, clone), entered strict mode, or read again */
        LIVE_EVENT_EXEC,   /* task's process exec'd: its other threads are gone, comm and exe changed */
        LIVE_EVENT_EXIT,   /* task exited */
        LIVE_EVENT_FILTER, /* task installed filter; with TSYNC, every thread in filter.tsync has it too */
        LIVE_EVENT_COMM,   /* task (a process's leader) renamed itself: task.comm */
        LIVE_EVENT_PARENT, /* task's process (task.tgid, task.process_start_time if known) has a new
                            * parent, task.ppid: its parent exited */
        LIVE_EVENT_LISTENER_CLOSED, /* task's process closed its fd filter.listener_fd of the listener of
                                     * filter.id; filter.has_listener: others still hold it */
        _LIVE_EVENT_TYPE_MAX,
} LiveEventType;

/* A thread, as TSYNC reached it. */
typedef struct LiveThread {
        pid_t tid;
        uint64_t start_time;
} LiveThread;

/* The state of one thread and of its process, as the observer saw it. */
typedef struct LiveTask {
        pid_t tid, tgid;
        pid_t ppid;                  /* the process's real parent (a tgid), 0 for none */
        uint64_t start_time;         /* the thread's: clock ticks since boot (/proc/TID/stat field 22) */
        uint64_t process_start_time; /* the process's, when known (0: the leader's own event says it) */
        char comm[16];
        TaskMode mode;
        uint64_t filter_id; /* head, 0 if none */
        bool no_new_privs;
        uid_t uid;
        gid_t gid;
        const char *exe; /* the process's executable, when the observer read it (NULL: as it was) */
        bool group_dead; /* LIVE_EVENT_EXIT: the last thread of its process: its file descriptors are closed */
        bool forked;     /* LIVE_EVENT_TASK: made by fork/clone just now (a new process copied its parent's fds) */
} LiveTask;

typedef struct LiveFilter {
        uint64_t id, parent_id;
        const struct sock_filter *insns;
        size_t len;
        bool log, wait_killable_recv, has_listener;
        IdentityKind identity;
        const LiveThread *tsync; /* TSYNC: the threads of task.tgid it reached (task's own may be there too) */
        size_t n_tsync;
        bool listener_held; /* has_listener, and its fd in task.tgid is listener_fd */
        int listener_fd;
} LiveFilter;

typedef struct LiveEvent {
        LiveEventType type;
        LiveTask task;
        LiveFilter filter; /* LIVE_EVENT_FILTER */
        uint64_t mono_nsec; /* CLOCK_MONOTONIC when it happened, as the kernel stamped it (0: not known) */
} LiveEvent;

/* Events that own what they point to (the observer's buffers are gone by the time they apply). */
typedef struct LiveBatch {
        LiveEvent *events;
        size_t n, allocated;
        void **owned;
        size_t n_owned, n_owned_allocated;
} LiveBatch;

/* Append a copy of e (its instructions, exe and threads copied too). */
int live_batch_add(LiveBatch *b, const LiveEvent *e);
/* Empty it, keeping its memory for the next batch. */
void live_batch_clear(LiveBatch *b);
void live_batch_done(LiveBatch *b);

typedef enum LiveChangeType {
        LIVE_PROCESS_ADDED,
        LIVE_PROCESS_UPDATED, /* ppid, start time, comm, exe, ids */
        LIVE_PROCESS_REMOVED, /* its last thread left */
        LIVE_TASK_ADDED,      /* TaskAdded */
        LIVE_TASK_UPDATED,    /* head, mode or start time */
        LIVE_TASK_EXITED,     /* TaskExited */
        LIVE_FILTER_ATTACHED, /* FilterAttached (new_filter: the filter is new to the live forest) */
        LIVE_FILTER_RETIRED,  /* no thread, child filter or listener uses it any more */
        LIVE_REPLACED,        /* a full pass replaced the whole forest */
        LIVE_LISTENER_CHANGED, /* filter_id's listener (its id is the filter's) appeared, changed holders or went */
        _LIVE_CHANGE_TYPE_MAX,
} LiveChangeType;
const char *live_change_type_to_string(LiveChangeType t);

/* A process's own fields. */
typedef struct LiveProcessFields {
        pid_t ppid;
        uint64_t start_time;
        char comm[16];
        uid_t uid;
        gid_t gid;
        bool no_new_privs;
        char *exe;
} LiveProcessFields;

typedef struct LiveChange {
        LiveChangeType type;
        bool announce_only; /* a difference a full pass made, for the signals: LIVE_REPLACED undoes it */
        pid_t tid, tgid;    /* task changes: the thread; process changes: tgid; FILTER_ATTACHED: the installer */
        uint64_t filter_id, parent_id; /* filter changes */
        char comm[16];      /* TASK_ADDED, FILTER_ATTACHED, PROCESS_UPDATED (the name now): what to announce */
        bool new_filter;    /* FILTER_ATTACHED */
        /* What it replaced, for live_rollback(), and what it holds until the changes are cleared: */
        Task old_task;             /* TASK_UPDATED, TASK_EXITED */
        LiveProcessFields old;     /* PROCESS_UPDATED (old.exe is owned when exe_changed) */
        bool exe_changed;
        Process *process;          /* PROCESS_REMOVED: taken out of the forest, owned */
        Filter *filter;            /* FILTER_ATTACHED: the filter; FILTER_RETIRED: taken out, owned */
        char *installer_exe;       /* FILTER_ATTACHED: owned */
        Forest *old_forest;        /* REPLACED: owned */
        Listener *old_listener;    /* LISTENER_CHANGED: a copy of the listener before (NULL: none), owned */
        bool old_has_listener;     /* LISTENER_CHANGED: the filter's flag before */
} LiveChange;

typedef struct LiveChanges {
        LiveChange *changes;
        size_t n, allocated;
        bool replaced; /* a full pass: the first change is LIVE_REPLACED */
} LiveChanges;

/* The changes are stored: let go of what they hold (filters retired, processes removed, the old
 * forest), keeping the memory for the next batch. */
void live_changes_clear(LiveChanges *c);
void live_changes_done(LiveChanges *c);

/* The live forest (lib/core/live.h); its fields are in lib/core/live-private.h. */
typedef struct Live Live;

/* For the live forest's files: what a change holds let go of, room for one more change before a
 * primitive changes anything, and the change recorded. */
void live_listener_dispose(Listener *l);
void live_change_release(LiveChange *x);
/* Room for one more change: taken before a primitive changes anything. */
int live_changes_reserve(LiveChanges *c);
/* Records a change; live_changes_reserve() made room. */
LiveChange *live_change_push(LiveChanges *c, LiveChangeType type);
