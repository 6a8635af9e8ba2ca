/* restores.h: restores for bus callers: each one runs the executor (sectree-restore) on a stored
 * snapshot, talks to it over a socket from the event loop without ever waiting on it, verifies
 * the restored tree with a scan, and ends it on release, on failure, or when its caller leaves
 * the bus. No bus code here: the bus layer (restores-dbus.c) calls in and is called back. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "plan/plan-verify.h"
#include "service/access.h"
#include "service/manager.h"
#include "service/restore-executor.h"
#include "service/restore-limits.h"
#include "service/restore-options.h"
#include "service/restore-verify.h"

/* The fds a restore hands its caller (a pidfd per process, unless pidfds is false, and a listener fd
 * per listener), at most RESTORE_MAX_FDS in all, go at most RESTORE_MESSAGE_MAX_FDS to a message: the
 * reply of Restore() carries the first ones, TakeRestoreFds() the next. dbus-daemon disconnects a
 * sender of a message with more fds than max_message_unix_fds, 16 on Debian's system bus (and
 * dbus-daemon's default), and no call asks a bus for its limit. */
#define RESTORE_MESSAGE_MAX_FDS 16
#define RESTORE_MAX_FDS 200
/* The fds not taken this long after the reply are closed: the daemon holds no listener for long. */
#define RESTORE_FDS_HOLD_USEC (60 * 1000000ULL)
/* A released or failed restore's executor that has not exited after this is killed. */
#define RESTORE_KILL_TIMEOUT_USEC (10 * 1000000ULL)


/* The restores of a manager's snapshots, and where their executor runs. */
typedef struct Restores Restores;

int restores_new(Manager *m, RestoreExecutor executor, Restores **ret);
/* Ends every restore (their stubs end) and frees. */
Restores *restores_free(Restores *rs);
DEFINE_CLEANUP(Restores *, restores_free);
/* The bus the executor's transient units are asked of (RESTORE_EXECUTOR_UNIT). */
void restores_set_bus(Restores *rs, sd_bus *bus);
Manager *restores_manager(Restores *rs);


typedef enum RestoreState {
        RESTORE_EXECUTING, /* the executor runs the plan */
        RESTORE_VERIFYING, /* READY came: the restored tree is being scanned and compared */
        RESTORE_STARTING,  /* START sent, waiting for STARTED */
        RESTORE_READY,     /* replied: the stubs are parked (or exec'd) */
        RESTORE_ENDING,    /* released or failed: the executor ends every stub and exits */
        _RESTORE_STATE_MAX,
} RestoreState;

const char *restore_state_to_string(RestoreState s);

typedef struct Restore Restore;


/* The end of Restore(): r is 0 with the restore ready to describe (restore_*() accessors below;
 * it stays alive until released), or negative: -EPROTO the executor refused or failed (message:
 * "STAGE: what failed", naming the step, the system call and the errno), -ECHILD systemd did not
 * start the executor's transient unit (message: its name and systemd's answer), -ECANCELED
 * released or its caller left meanwhile, -ETIMEDOUT, another errno. On failure every task of the restore is
 * being ended, and restore is NULL. */
typedef void (*RestoreDone)(Restores *rs, int r, Restore *restore, const char *message, void *userdata);
/* A restore ended (reason: "released", "caller-left", "failed", "executor-exited", "stopping"):
 * for RestoreFinished. */
typedef void (*RestoreFinished)(uint64_t id, uid_t owner, const char *reason, void *userdata);

void restores_set_finished(Restores *rs, RestoreFinished finished, void *userdata);

/* Start restoring snapshot id for caller c (running as creds) with options (taken: *o is emptied),
 * *ret the restore (alive at least until done is called). Returns 0 when done will be called
 * (never before this returns), or a negative errno, with *ret_message: -ENOENT no such snapshot
 * (or not the caller's), -EACCES not allowed (original uids, a pid namespace), -EUSERS too many
 * restores or tasks, -EOPNOTSUPP the executor cannot run from here. */
int restores_start(Restores *rs, Caller *c, const RestoreCreds *creds, uint64_t snapshot_id, RestoreOptions *o,
                   RestoreDone done, void *userdata, Restore **ret, char **ret_message);

/* What watches the caller's connection (the bus layer's, unless the restore is kept): watch_free()
 * is called on it when the restore ends. The caller is gone: restore_caller_left() releases the
 * restore ("caller-left"). */
void restore_set_caller_watch(Restore *r, void *watch, void (*watch_free)(void *watch));
void restore_caller_left(Restore *r);

/* End a restore's stubs; done is called once the executor has exited (every stub gone). -ENOENT:
 * no such restore, or not the caller's. */
typedef void (*RestoreReleased)(int r, void *userdata);
int restores_release(Restores *rs, Caller *c, uint64_t id, RestoreReleased done, void *userdata);

/* The caller's restore id (root: anyone's), NULL if there is none. */
Restore *restores_find(Restores *rs, Caller *c, uint64_t id);

/* The restores the caller may see (root: all; others: their own), in id order; the array is
 * malloc'ed, its elements are not. */
int restores_list(Restores *rs, Caller *c, Restore ***ret, size_t *ret_n);

uint64_t restore_id(const Restore *r);
uint64_t restore_snapshot_id(const Restore *r);
uid_t restore_owner(const Restore *r);
RestoreState restore_state(const Restore *r);
pid_t restore_root_pid(const Restore *r);
size_t restore_n_processes(const Restore *r);
/* Whether it was verified (false when not asked for), and the differences (NULL-terminated). */
bool restore_verified(const Restore *r);
char *const *restore_differences(const Restore *r);
const PlanMapping *restore_mapping(const Restore *r);
/* The fds the restore hands its caller, in order: restore_n_pidfds() pidfds (one per process of the
 * mapping, in its order, when pidfds were asked for), then restore_n_listeners() listener fds. */
size_t restore_n_pidfds(const Restore *r);
/* The pidfd of the i-th process of the mapping. Valid until the fds are handed or dropped. */
int restore_pidfd(const Restore *r, size_t i);
/* Listeners: the snapshot's listener id (0: none held it) and a copy of its fd. */
size_t restore_n_listeners(const Restore *r);
int restore_listener(const Restore *r, size_t i, uint64_t *ret_snapshot_listener);
/* The index (in that order) of the next fd to hand; -ESTALE once the fds not taken in time were
 * closed. */
int restore_fds_next(const Restore *r, size_t *ret);
/* The fds before next are handed (a message carries its own copies): the daemon closes its copies
 * of all of them once the last is handed; until then it keeps them RESTORE_FDS_HOLD_USEC at most. */
void restore_fds_handed(Restore *r, size_t next);
