/* bus-args.c: what every handler of org.sectree1 shares: the object's names, its a{sv}
 * options read, and the live forest (or a named error) */
#include "bus/bus-args.h"

#include <string.h>

#include "bus/bus-errors.h"
#include "service/log-event.h"

int bus_store_failed(const Manager *m, sd_bus_error *error) {
        if (m->store_error >= 0)
                return 0;
        return sd_bus_error_setf(error, ERROR_SCAN_FAILED,
                                 "The state database cannot be written (%s): the daemon's view is its last stored "
                                 "state, which what changed since has not reached. It answers again once a full "
                                 "pass is stored.",
                                 strerror(-m->store_error));
}

int live_or_fail(Manager *m, const Forest **ret, sd_bus_error *error) {
        int r = bus_store_failed(m, error); /* the view is the last stored state: it would answer wrongly */
        if (r < 0)
                return r;
        r = manager_live(m, ret);
        if (r < 0)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The live state could not be rebuilt: %s",
                                         strerror(-r));
        return 0;
}

int bus_read_option(sd_bus_message *msg, const char *key, const char *want, void *ret, sd_bus_error *error) {
        const char *contents;
        int r = sd_bus_message_peek_type(msg, NULL, &contents);
        if (r < 0)
                return r;
        if (!streq(contents, want)) {
                char q[BUS_QUOTE_MAX + 4], t[BUS_QUOTE_MAX + 4];
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Option \"%s\" takes a value of type '%s', not '%s'.", bus_quote(key, q), want,
                                         bus_quote(contents, t));
        }
        return sd_bus_message_read(msg, "v", want, ret);
}

const char *bus_quote(const char *s, char buf[static BUS_QUOTE_MAX + 4]) {
        size_t n = strnlen(s, BUS_QUOTE_MAX + 1);
        if (n <= BUS_QUOTE_MAX)
                return s;
        n = BUS_QUOTE_MAX;
        while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
                n--; /* s[n] continues a character: cut before that character (the bus checked s is UTF-8) */
        memcpy(buf, s, n);
        strcpy(buf + n, "...");
        return buf;
}

int bus_unknown_option(sd_bus_error *error, const char *key) {
        char q[BUS_QUOTE_MAX + 4];
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown option \"%s\".", bus_quote(key, q));
}

int bus_read_options(sd_bus_message *msg, BusOptionReader one, void *userdata, sd_bus_error *error) {
        int r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                const char *key;
                r = sd_bus_message_read(msg, "s", &key);
                if (r >= 0)
                        r = one(msg, key, userdata, error);
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
        }
        return r < 0 ? r : sd_bus_message_exit_container(msg);
}

int bus_access_denied(sd_bus_message *msg, const Caller *c, sd_bus_error *error, const char *format, ...) {
        _cleanup_free_ char *what = NULL;
        va_list ap;
        va_start(ap, format);
        int r = vasprintf(&what, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        pid_t pid = 0;
        if (sd_bus_query_sender_creds(msg, SD_BUS_CREDS_PID, &creds) >= 0)
                (void) sd_bus_creds_get_pid(creds, &pid);
        log_event_access_denied(sd_bus_message_get_member(msg), c->uid, pid, what);
        return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, what);
}

int bus_call_begin(sd_bus_message *msg, Manager *m, Caller *c, const Forest **f, sd_bus_error *error) {
        int r = caller_from_message(msg, c);
        return r < 0 ? r : live_or_fail(m, f, error);
}

void bus_answer(sd_bus_message *msg, sd_bus_message *reply, int r, const char *what) {
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        else
                r = sd_bus_reply_method_errno(msg, r, NULL);
        if (r < 0)
                log_debug_errno(r, "Could not answer %s: %m", what);
}

int bus_list_reply_begin(sd_bus_message *msg, const char *contents, sd_bus_message **reply) {
        int r = sd_bus_message_new_method_return(msg, reply);
        if (r < 0)
                return r;
        return sd_bus_message_open_container(*reply, 'a', contents);
}

void bus_message_unref_userdata(void *userdata) {
        sd_bus_message_unref(userdata);
}

int bus_proc_walk_start(ManagerBus *b, sd_bus_message *msg, const Forest *f, Caller *c, ProcWalkKind kind,
                        pid_t root, void *l, void (*l_free)(void *l), uint64_t cpu, ProcWalkDone done,
                        sd_bus_error *error) {
        ProcWalk *j = NULL;
        int r = proc_walk_new(f, c, kind, root, &j);
        if (r < 0) {
                if (l)
                        l_free(l);
                return r;
        }
        j->userdata = l ?: sd_bus_message_ref(msg);
        j->userdata_free = l ? l_free : bus_message_unref_userdata;
        r = proc_walks_submit(b->proc_walks, j, thread_cpu_usec() - cpu, done);
        if (r == -EBUSY)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Too many calls like this one are waiting; try again later.");
        return r < 0 ? r : 1; /* answered when done */
}

int bus_list_end(sd_bus_message *reply, int r) {
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* A call waiting for its access checks. */
typedef struct CheckedCall {
        sd_bus_message *msg;
        ManagerBus *bus;
        BusCheckedReply reply;
} CheckedCall;

static void checked_call_free(void *userdata) {
        CheckedCall *l = userdata;
        sd_bus_message_unref(l->msg);
        free(l);
}

/* The worker checked every tracked process against the caller: the call answered from the live
 * forest as it is now. */
static void on_checked(ProcWalk *j, void *userdata) {
        CheckedCall *l = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const Forest *f = NULL;
        int r = j->r;
        if (r >= 0)
                r = live_or_fail(l->bus->manager, &f, &error);
        if (r >= 0)
                r = caller_seen_rebase(&j->caller, &j->tracked, f);
        if (r >= 0)
                r = l->reply(l->msg, l->bus, &j->caller, f, &error);
        if (r < 0)
                r = sd_bus_error_is_set(&error) ? sd_bus_reply_method_error(l->msg, &error)
                                                : sd_bus_reply_method_errno(l->msg, r, NULL);
        if (r < 0)
                log_debug_errno(r, "Could not answer %s(): %m", sd_bus_message_get_member(l->msg));
}

int bus_checked_call(sd_bus_message *msg, ManagerBus *b, BusCheckedReply reply, sd_bus_error *error) {
        CALLER_CLEANUP Caller c = {};
        uint64_t cpu = thread_cpu_usec();
        const Forest *f;
        int r = bus_call_begin(msg, b->manager, &c, &f, error);
        if (r < 0)
                return r;
        if (c.privileged)
                return reply(msg, b, &c, f, error);
        CheckedCall *l = calloc(1, sizeof(CheckedCall));
        if (!l)
                return -ENOMEM;
        *l = (CheckedCall) { .msg = sd_bus_message_ref(msg), .bus = b, .reply = reply };
        return bus_proc_walk_start(b, msg, f, &c, PROC_WALK_VISIBLE, 0, l, checked_call_free, cpu, on_checked, error);
}
