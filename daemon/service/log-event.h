/* log-event.h: the events an operator alerts on, as journal entries with a MESSAGE_ID of their own */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "core/util.h"

/* The message ids, made once (128 bits, random) and never changed: journalctl MESSAGE_ID=... finds
 * an event whatever its text says. sectreed(8) lists them with their fields. */
#define SECTREE_MESSAGE_FILTER_ATTACHED "d068d7717480476094f55516f8bf5497"
#define SECTREE_MESSAGE_RESYNCED "a0a75de09a2d44fe83ea05317ea3409f"
#define SECTREE_MESSAGE_RESTORE_STARTED "5197e0c98662419fa1961aa40b42889c"
#define SECTREE_MESSAGE_RESTORE_FINISHED "0a7ed824c86b4bd4b3506a0b2e6e8b6d"
#define SECTREE_MESSAGE_RESTORE_FAILED "dda782f24e144854ba8cd51b11f1e055"
#define SECTREE_MESSAGE_ACCESS_DENIED "7b19b64424624b9ea740179d8fdd5282"

typedef enum LogEvent {
        LOG_EVENT_FILTER_ATTACHED,
        LOG_EVENT_RESYNCED,
        LOG_EVENT_RESTORE_STARTED,
        LOG_EVENT_RESTORE_FINISHED,
        LOG_EVENT_RESTORE_FAILED,
        LOG_EVENT_ACCESS_DENIED,
        _LOG_EVENT_MAX,
        _LOG_EVENT_INVALID = -EINVAL,
} LogEvent;

/* "filter-attached", ...: the SECTREE_EVENT field's value. */
const char *log_event_to_string(LogEvent e);
LogEvent log_event_from_string(const char *s);
const char *log_event_message_id(LogEvent e);

/* One field of an event: NAME (upper case, digits and underscores, as the journal wants) = value. */
typedef struct LogField {
        const char *name;
        const char *value;
} LogField;

/* Log event e at level with message (a printf format). When stderr is the journal
 * (log_stderr_is_journal()), one journal entry: MESSAGE (escaped as any log line), PRIORITY,
 * MESSAGE_ID, SECTREE_EVENT and fields; if the journal refuses it, and elsewhere, the message as
 * an ordinary log line. Nothing when level is above the maximum level. */
void log_event(LogEvent e, LogLevel level, const LogField *fields, size_t n_fields, const char *format, ...)
        _printf_(5, 6);

/* The events with their fields, as sectreed(8) documents them. pid and tid are a process's and a
 * thread's in the daemon's pid namespace; OBJECT_PID= (the process concerned) makes journald add
 * that process's OBJECT_SYSTEMD_UNIT=, OBJECT_COMM= and the rest, so that `journalctl
 * OBJECT_SYSTEMD_UNIT=sshd.service MESSAGE_ID=...` finds a unit's events. */
/* At most 500 every 10 s, the next one saying how many were left out (SECTREE_LEFT_OUT). */
void log_event_filter_attached(uint64_t filter_id, uint64_t parent_id, pid_t tid, pid_t pid, const char *comm);
/* The same at now (CLOCK_MONOTONIC, us). */
void log_event_filter_attached_at(uint64_t now, uint64_t filter_id, uint64_t parent_id, pid_t tid, pid_t pid,
                                  const char *comm);
/* A pass that repaired the state (events lost, or inconsistent); nothing for "refresh" and "rescan". */
void log_event_resynced(const char *reason);
void log_event_restore_started(uint64_t restore_id, uint64_t snapshot_id, uid_t uid, pid_t caller_pid);
void log_event_restore_finished(uint64_t restore_id, uint64_t snapshot_id, uid_t uid, const char *reason);
void log_event_restore_failed(uint64_t restore_id, uint64_t snapshot_id, uid_t uid, const char *error);
/* A caller refused: the bus method, the caller's uid and pid, and what it was refused. At most
 * one per uid every WARN_LIMIT_INTERVAL_USEC (10 s), with how many were left out before it
 * (SECTREE_LEFT_OUT). */
void log_event_access_denied(const char *method, uid_t uid, pid_t pid, const char *what);
/* The same at now (CLOCK_MONOTONIC, us). */
void log_event_access_denied_at(uint64_t now, const char *method, uid_t uid, pid_t pid, const char *what);
