/* live.h: the live forest the daemon serves, changed only by batches of kernel events, each
 * returning the list of what changed
 *
 * live_apply() is a model step without I/O: whatever an event needs from /proc (the exe of a new
 * process, the threads a TSYNC reached and their start times, a new parent) the observing side
 * read already and put in the event. What changed comes out in order, each change with what it
 * replaced: the daemon stores the changes in one transaction, commits, and only then announces
 * them; when storing fails, live_rollback() puts the live forest back as it was before the batch,
 * so that the live forest, the database and what the bus said always agree. */
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
        char comm[16];      /* TASK_ADDED, FILTER_ATTACHED: what to announce */
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

typedef struct Live Live;

/* A live forest starting as f (taken; NULL: empty). f need not be linked. */
int live_new(Forest *f, Live **ret);
Live *live_free(Live *l);
DEFINE_CLEANUP(Live *, live_free);

/* The forest as it is: not necessarily linked. */
const Forest *live_forest(const Live *l);
/* The forest linked, for readers that walk it: -EINVAL with *error (malloc'ed, may be NULL) when
 * it cannot be linked. */
int live_linked(Live *l, const Forest **ret, char **error);

typedef struct LiveCounts {
        size_t tasks, filters, listeners;
        size_t over_budget; /* filters whose instructions were dropped */
} LiveCounts;
/* O(1): kept up to date by every change. */
LiveCounts live_counts(const Live *l);

/* Apply a batch in order, then retire the filters nothing uses any more. The changes are
 * appended to c. On failure (-ENOLINK: a filter whose parent the live forest never heard of;
 * -EUCLEAN: a thread whose head it does not have; -EBADMSG: an event that cannot be; -ENOMEM) c
 * holds what was changed before: live_rollback() it. Events about tasks the live forest does not
 * track and has no use for (a disabled thread's exit) change nothing. */
int live_apply(Live *l, const LiveEvent *events, size_t n, LiveChanges *c);
/* What live_apply_fitting() left out. */
typedef struct LiveSkipped {
        size_t n;              /* events left out */
        size_t unknown_filter; /* of which: they named a filter the live forest does not have */
        /* The first one left out: its thread, and the filter it named (0: it failed otherwise,
         * with error). */
        pid_t tid;
        uint64_t filter_id;
        int error;
} LiveSkipped;

/* live_apply(), leaving out the events that do not fit instead of failing the batch: an event that
 * names a filter the live forest does not have and no filter event of the batch brings (as head, or
 * as parent of a new filter: an event about it was lost, or it was retired), and an event that
 * fails on its own (its changes are undone). What fits is applied and its changes appended to c;
 * *skipped says what was left out, which only a full pass can tell. Fails (-ENOMEM, or -EUCLEAN
 * when what was applied still names a filter nobody brought) as live_apply() does: c then holds
 * what was changed before, for live_rollback(). */
int live_apply_fitting(Live *l, const LiveEvent *events, size_t n, LiveChanges *c, LiveSkipped *skipped);
/* Replace the whole forest with f (a full pass; taken; linked). With announce, the differences
 * that signals announce (threads gone and new by tid and start time, filters new) are appended
 * too, after LIVE_REPLACED. */
int live_replace(Live *l, Forest *f, bool announce, LiveChanges *c);
/* Undo c, newest first, and empty it. -ENOMEM if a step could not be undone: the forest is then
 * not what it was, and only a full pass (live_replace()) can be trusted. */
int live_rollback(Live *l, LiveChanges *c);

/* Keep the instructions of a uid's filters only up to insns_per_uid instructions (0: all of them;
 * uid 0 is never counted), as lib/core/budget.h says: the filters the live forest holds now are counted
 * afresh (-EINVAL when it does not link: then the next live_replace() counts them), and every
 * filter that comes in after. An event's filter counts against the uid of the
 * task that installed it (LiveTask.uid); a full pass's, the lowest uid of the processes it runs. */
int live_set_budget(Live *l, uint64_t insns_per_uid);
/* The budget live_set_budget() set. */
uint64_t live_budget_insns(const Live *l);
/* Instructions kept for uid (tests). */
uint64_t live_budget_kept(const Live *l, uid_t uid);

/* The processes of the live forest whose parent is ppid (not linked: valid until the next change). */
const pid_t *live_children(const Live *l, pid_t ppid, size_t *ret_n);
/* Every parent of a live process, with one of its children: for (size_t i = 0; live_next_parent(l, &i,
 * &ppid); ) ... */
bool live_next_parent(const Live *l, size_t *i, pid_t *ret_ppid);

/* How often the uses of the filters were counted from scratch: once after each replace or
 * rollback, otherwise kept up to date by the changes (tests). */
unsigned live_uses_rebuilds(const Live *l);
