/* bus-args.h: what every handler of org.sectree1 shares: the object's names, its a{sv}
 * options read, and the live forest (or a named error) */
#pragma once

#include <systemd/sd-bus.h>

#include "service/access.h"
#include "service/manager.h"
#include "service/policy-jobs.h"
#include "service/snapshot-transfers.h"
#include "service/proc-walks.h"

#define MANAGER_BUS_NAME "org.sectree1"
#define MANAGER_OBJECT_PATH "/org/sectree1"
#define MANAGER_INTERFACE "org.sectree1.Manager"

/* Counts of the live forest that PropertiesChanged reports when they change. */
typedef struct ManagerCounts {
        uint32_t tasks, filters, listeners;
        uint64_t last_scan_usec;
} ManagerCounts;

/* The org.sectree1.Manager object: its connection, and the services its handlers call (the
 * daemon, sectreed.c, owns them, and frees them after the object). The userdata of its table;
 * restores have a table of their own (restores-dbus.h). */
typedef struct ManagerBus {
        sd_bus *bus;
        Manager *manager;
        SnapshotTransfers *transfers;
        WorkerLanes *policy_jobs; /* policy-jobs.h */
        WorkerLanes *proc_walks;  /* proc-walks.h */
        ManagerCounts announced;  /* what PropertiesChanged said last */
        sd_bus_message **rescans; /* Rescan() calls whose pass waits for a snapshot's scan (ptrace) */
        size_t n_rescans, n_rescans_allocated;
} ManagerBus;

/* The live forest for a method (manager_live()), or ScanFailed set in error. */
int live_or_fail(Manager *m, const Forest **ret, sd_bus_error *error);
/* ScanFailed set in error, naming why, while the state database cannot be written (the live view
 * is then only the last stored state); else 0. */
int bus_store_failed(const Manager *m, sd_bus_error *error);

/* The caller read and the live forest (or ScanFailed set in error). */
int bus_call_begin(sd_bus_message *msg, Manager *m, Caller *c, const Forest **f, sd_bus_error *error);
/* Answer msg with reply, or with the error r where r < 0; a failure to answer is logged (debug) as
 * one to answer what. */
void bus_answer(sd_bus_message *msg, sd_bus_message *reply, int r, const char *what);

/* The start of a reply that lists what the caller may see: the reply with its array of contents
 * opened. */
int bus_list_reply_begin(sd_bus_message *msg, const char *contents, sd_bus_message **reply);

/* Its end: unless r (what filling it returned) failed, the array closed and the reply sent. */
int bus_list_end(sd_bus_message *reply, int r);
/* sd_bus_message_unref() as a job's userdata_free: the call it answers when done. */
void bus_message_unref_userdata(void *userdata);

/* A call's reply, built and sent for a caller whose access checks can be made (or are made: c->seen,
 * bus_checked_call()); r < 0 with a named error set in error, or not. A reply that starts more work
 * (a policy analysis) returns 1, and that work answers the call. */
typedef int (*BusCheckedReply)(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest *f, sd_bus_error *error);
/* A call that checks each tracked process against the caller (a listing, GetFilter, WhoCan): root's
 * answered at once; anyone else's checks, one or more calls into /proc per process, made in a
 * worker lane (proc-walks.h), and reply() called on the loop when they are done, with the live
 * forest as it is then and the answers kept for the processes still there (caller_seen_rebase()). */
int bus_checked_call(sd_bus_message *msg, ManagerBus *b, BusCheckedReply reply, sd_bus_error *error);

/* A walk of /proc for msg's call (proc-walks.h) started: the caller (taken: the worker's now) over
 * the live forest f; its userdata is l (freed by l_free), or msg itself where l is NULL, and
 * done() answers the call. cpu: thread_cpu_usec() when the handler began. 1 (answered when done),
 * LimitsExceeded set in error when its lane is full, or a negative errno. */
int bus_proc_walk_start(ManagerBus *b, sd_bus_message *msg, const Forest *f, Caller *c, ProcWalkKind kind,
                        pid_t root, void *l, void (*l_free)(void *l), uint64_t cpu, ProcWalkDone done,
                        sd_bus_error *error);

/* Refuse the call with AccessDenied and the message, and log the operator's access-denied event
 * (the method, the caller's uid and pid, the message). */
int bus_access_denied(sd_bus_message *msg, const Caller *c, sd_bus_error *error, const char *format, ...)
        _printf_(4, 5);

/* A method's a{sv} of options: for each entry, one() is called with its key and must read the
 * variant that follows (bus_read_option() reads one of a basic type) or refuse the key with
 * bus_unknown_option(). */
typedef int (*BusOptionReader)(sd_bus_message *msg, const char *key, void *userdata, sd_bus_error *error);
int bus_read_options(sd_bus_message *msg, BusOptionReader one, void *userdata, sd_bus_error *error);
int bus_read_option(sd_bus_message *msg, const char *key, const char *want, void *ret, sd_bus_error *error);
int bus_unknown_option(sd_bus_error *error, const char *key);

/* A caller's string as an error message quotes it: its first BUS_QUOTE_MAX bytes, cut where a
 * character ends, and "..." when there was more (a 100 KB argument would otherwise come back
 * whole in the error). Into buf. */
#define BUS_QUOTE_MAX 80
const char *bus_quote(const char *s, char buf[static BUS_QUOTE_MAX + 4]);
