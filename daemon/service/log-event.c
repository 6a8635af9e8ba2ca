/* log-event.c: the events an operator alerts on, as journal entries with a MESSAGE_ID of their own
 *
 * Under journald the daemon's stderr is a stream: lines get a priority (util.c) but no fields. An
 * event is sent to the journal's own socket instead (sd_journal_sendv), with its fields, so that a
 * fleet's existing journal forwarding and alerting pick it up by MESSAGE_ID. Outside the journal
 * (a terminal, a file, a container) it is the same line as ever on stderr. */
#include "service/log-event.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "core/escape.h"
#include "core/warn-limit.h"

static const char *const log_event_table[_LOG_EVENT_MAX] = {
        [LOG_EVENT_FILTER_ATTACHED] = "filter-attached",
        [LOG_EVENT_RESYNCED] = "resynced",
        [LOG_EVENT_RESTORE_STARTED] = "restore-started",
        [LOG_EVENT_RESTORE_FINISHED] = "restore-finished",
        [LOG_EVENT_RESTORE_FAILED] = "restore-failed",
        [LOG_EVENT_ACCESS_DENIED] = "access-denied",
};

static const char *const log_event_id_table[_LOG_EVENT_MAX] = {
        [LOG_EVENT_FILTER_ATTACHED] = SECTREE_MESSAGE_FILTER_ATTACHED,
        [LOG_EVENT_RESYNCED] = SECTREE_MESSAGE_RESYNCED,
        [LOG_EVENT_RESTORE_STARTED] = SECTREE_MESSAGE_RESTORE_STARTED,
        [LOG_EVENT_RESTORE_FINISHED] = SECTREE_MESSAGE_RESTORE_FINISHED,
        [LOG_EVENT_RESTORE_FAILED] = SECTREE_MESSAGE_RESTORE_FAILED,
        [LOG_EVENT_ACCESS_DENIED] = SECTREE_MESSAGE_ACCESS_DENIED,
};

const char *log_event_to_string(LogEvent e) {
        return e >= 0 && e < _LOG_EVENT_MAX ? log_event_table[e] : NULL;
}

LogEvent log_event_from_string(const char *s) {
        return (LogEvent) string_table_lookup(log_event_table, _LOG_EVENT_MAX, s);
}

const char *log_event_message_id(LogEvent e) {
        return e >= 0 && e < _LOG_EVENT_MAX ? log_event_id_table[e] : NULL;
}

/* Each "NAME=value" of the entry, malloc'ed into strings[] and pointed at by iov[]. */
#define LOG_EVENT_FIXED_FIELDS 4
/* Where journald listens for entries. sd_journal_sendv() reports success when it is missing. */
#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static int journal_send(LogEvent e, LogLevel level, const LogField *fields, size_t n_fields, const char *message) {
        if (access(JOURNAL_SOCKET, F_OK) < 0)
                return -errno;
        size_t n = LOG_EVENT_FIXED_FIELDS + n_fields;
        _cleanup_free_ char **strings = calloc(n, sizeof(char *));
        _cleanup_free_ struct iovec *iov = calloc(n, sizeof(struct iovec));
        if (!strings || !iov)
                return -ENOMEM;
        int r = 0;
        if (asprintf(&strings[0], "MESSAGE=%s", message) < 0 ||
            asprintf(&strings[1], "PRIORITY=%d", (int) level) < 0 ||
            asprintf(&strings[2], "MESSAGE_ID=%s", log_event_message_id(e)) < 0 ||
            asprintf(&strings[3], "SECTREE_EVENT=%s", log_event_to_string(e)) < 0)
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < n_fields; i++)
                if (asprintf(&strings[LOG_EVENT_FIXED_FIELDS + i], "%s=%s", fields[i].name, fields[i].value ?: "") < 0)
                        r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < n; i++)
                iov[i] = (struct iovec) { .iov_base = strings[i], .iov_len = strlen(strings[i]) };
        if (r == 0)
                r = sd_journal_sendv(iov, (int) n);
        for (size_t i = 0; i < n; i++)
                free(strings[i]);
        return r;
}

void log_event(LogEvent e, LogLevel level, const LogField *fields, size_t n_fields, const char *format, ...) {
        if (level > log_get_max_level() || !log_event_message_id(e))
                return;
        _cleanup_free_ char *text = NULL;
        va_list ap;
        va_start(ap, format);
        int k = vasprintf(&text, format, ap);
        va_end(ap);
        if (k < 0)
                return (void) log_oom();
        _cleanup_free_ char *escaped = str_escape(text);
        if (!escaped)
                return (void) log_oom();
        if (log_stderr_is_journal() && journal_send(e, level, fields, n_fields, escaped) >= 0)
                return;
        (void) log_internal(level, 0, "%s", text);
}

/* A number as a field's value. */
typedef struct Num {
        char s[24];
} Num;

static Num num(uint64_t v) {
        Num n;
        snprintf(n.s, sizeof(n.s), "%" PRIu64, v);
        return n;
}

/* The fields, less the last one (OBJECT_PID) when there is no such process. */
static size_t with_object_pid(size_t n, pid_t pid) {
        return pid > 0 ? n : n - 1;
}

/* Filters attached are logged at most FILTER_ATTACHED_BURST per FILTER_ATTACHED_INTERVAL_USEC: a
 * machine making filters by the thousand (a test suite, a fork bomb under a sandbox) would fill
 * the journal, and journald's rate limit (10,000 entries in 30 s by default) would then drop the
 * daemon's other messages too. The first one logged after some were left out says how many. */
#define FILTER_ATTACHED_BURST 500
#define FILTER_ATTACHED_INTERVAL_USEC WARN_LIMIT_INTERVAL_USEC

static struct {
        uint64_t start_usec; /* of the current interval */
        unsigned logged, left_out;
} attached;

void log_event_filter_attached_at(uint64_t now, uint64_t filter_id, uint64_t parent_id, pid_t tid, pid_t pid,
                                  const char *comm) {
        /* one per filter installed: an entry in the journal, where it can be searched by unit, but
         * only a debug line on a plain stderr, which it would flood */
        LogLevel level = log_stderr_is_journal() ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG;
        if (level > log_get_max_level())
                return;
        if (attached.start_usec == 0 || now - attached.start_usec >= FILTER_ATTACHED_INTERVAL_USEC)
                attached.start_usec = now, attached.logged = 0;
        if (attached.logged >= FILTER_ATTACHED_BURST) {
                attached.left_out++;
                return;
        }
        attached.logged++;
        Num id = num(filter_id), parent = num(parent_id), t = num((uint64_t) tid), p = num((uint64_t) pid),
            more = num(attached.left_out);
        const LogField f[] = {
                { "SECTREE_FILTER_ID", id.s }, { "SECTREE_PARENT_ID", parent.s }, { "SECTREE_TID", t.s },
                { "SECTREE_PID", p.s },        { "SECTREE_COMM", comm },          { "SECTREE_LEFT_OUT", more.s },
                { "OBJECT_PID", p.s },
        };
        char also[96] = "";
        if (attached.left_out > 0)
                snprintf(also, sizeof(also), " (and %u more filters attached since the last one logged)",
                         attached.left_out);
        attached.left_out = 0;
        log_event(LOG_EVENT_FILTER_ATTACHED, level, f, with_object_pid(ELEMENTSOF(f), pid),
                  "Filter %" PRIu64 " (parent %" PRIu64 ") attached to thread %d of process %d (%s).%s", filter_id,
                  parent_id, (int) tid, (int) pid, comm ?: "", also);
}

void log_event_filter_attached(uint64_t filter_id, uint64_t parent_id, pid_t tid, pid_t pid, const char *comm) {
        log_event_filter_attached_at(now_usec(CLOCK_MONOTONIC), filter_id, parent_id, tid, pid, comm);
}

void log_event_resynced(const char *reason) {
        const LogField f[] = { { "SECTREE_REASON", reason } };
        /* The periodic refresh and Rescan are routine: what an operator alerts on is a pass that
         * repairs (events lost, or that did not fit). */
        if (streq_ptr(reason, "refresh") || streq_ptr(reason, "rescan"))
                return;
        log_event(LOG_EVENT_RESYNCED, LOG_LEVEL_NOTICE, f, ELEMENTSOF(f),
                  "Resynchronised the forest with a full pass (%s).", reason ?: "");
}

void log_event_restore_started(uint64_t restore_id, uint64_t snapshot_id, uid_t uid, pid_t caller_pid) {
        Num id = num(restore_id), snap = num(snapshot_id), u = num(uid), p = num((uint64_t) caller_pid);
        const LogField f[] = {
                { "SECTREE_RESTORE_ID", id.s }, { "SECTREE_SNAPSHOT_ID", snap.s },
                { "SECTREE_UID", u.s },         { "OBJECT_PID", p.s },
        };
        log_event(LOG_EVENT_RESTORE_STARTED, LOG_LEVEL_INFO, f, with_object_pid(ELEMENTSOF(f), caller_pid),
                  "Restore %" PRIu64 " of snapshot %" PRIu64 " for uid %u started.", restore_id, snapshot_id,
                  (unsigned) uid);
}

void log_event_restore_finished(uint64_t restore_id, uint64_t snapshot_id, uid_t uid, const char *reason) {
        Num id = num(restore_id), snap = num(snapshot_id), u = num(uid);
        const LogField f[] = {
                { "SECTREE_RESTORE_ID", id.s }, { "SECTREE_SNAPSHOT_ID", snap.s },
                { "SECTREE_UID", u.s },         { "SECTREE_REASON", reason },
        };
        log_event(LOG_EVENT_RESTORE_FINISHED, LOG_LEVEL_INFO, f, ELEMENTSOF(f),
                  "Restore %" PRIu64 " of snapshot %" PRIu64 " for uid %u finished (%s).", restore_id, snapshot_id,
                  (unsigned) uid, reason ?: "");
}

void log_event_restore_failed(uint64_t restore_id, uint64_t snapshot_id, uid_t uid, const char *error) {
        Num id = num(restore_id), snap = num(snapshot_id), u = num(uid);
        const LogField f[] = {
                { "SECTREE_RESTORE_ID", id.s }, { "SECTREE_SNAPSHOT_ID", snap.s },
                { "SECTREE_UID", u.s },         { "SECTREE_ERROR", error },
        };
        log_event(LOG_EVENT_RESTORE_FAILED, LOG_LEVEL_WARNING, f, ELEMENTSOF(f),
                  "Restore %" PRIu64 " of snapshot %" PRIu64 " for uid %u failed: %s", restore_id, snapshot_id,
                  (unsigned) uid, error ?: "");
}

/* The uids whose refusals were logged last, each logged at most once per WARN_LIMIT_INTERVAL_USEC:
 * a caller that asks again and again for what it is refused (12,000 times in 5 s) would
 * otherwise fill the journal, and journald's rate limit would then drop the daemon's other
 * messages too. A uid not among them takes the place of the one logged longest ago. Used from the
 * event loop's thread only. */
#define ACCESS_DENIED_UIDS 64

typedef struct DeniedUid {
        uid_t uid;
        WarnLimit limit;
} DeniedUid;

static DeniedUid denied_uids[ACCESS_DENIED_UIDS];

static WarnLimit *denied_limit(uid_t uid) {
        DeniedUid *oldest = &denied_uids[0];
        for (size_t i = 0; i < ACCESS_DENIED_UIDS; i++) {
                DeniedUid *d = &denied_uids[i];
                if (d->limit.last_usec != 0 && d->uid == uid)
                        return &d->limit;
                if (d->limit.last_usec < oldest->limit.last_usec)
                        oldest = d;
        }
        *oldest = (DeniedUid) { .uid = uid };
        return &oldest->limit;
}

void log_event_access_denied_at(uint64_t now, const char *method, uid_t uid, pid_t pid, const char *what) {
        unsigned more;
        if (!warn_limit_pass(denied_limit(uid), now, &more))
                return;
        Num u = num(uid), p = num((uint64_t) pid), m = num(more);
        const LogField f[] = {
                { "SECTREE_METHOD", method }, { "SECTREE_UID", u.s },         { "SECTREE_DENIED", what },
                { "SECTREE_LEFT_OUT", m.s },  { "OBJECT_PID", p.s },
        };
        char also[96] = "";
        if (more > 0)
                snprintf(also, sizeof(also), " (and %u more refusals of uid %u since the last one logged)", more,
                         (unsigned) uid);
        log_event(LOG_EVENT_ACCESS_DENIED, LOG_LEVEL_NOTICE, f, with_object_pid(ELEMENTSOF(f), pid),
                  "Access denied to uid %u (pid %d) calling %s: %s%s", (unsigned) uid, (int) pid, method ?: "",
                  what ?: "", also);
}

void log_event_access_denied(const char *method, uid_t uid, pid_t pid, const char *what) {
        log_event_access_denied_at(now_usec(CLOCK_MONOTONIC), method, uid, pid, what);
}
