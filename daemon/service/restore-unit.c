/* restore-unit.c: see restore-unit.h. A service, not a scope: a scope's processes are forked by
 * whoever asks for it, and would keep the daemon's seccomp filters, no_new_privs, mount namespace
 * and bounding set; a service's main process is forked and set up by PID 1 itself. */
#include "service/restore-unit.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>

#include "core/util.h"

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"

struct RestoreUnit {
        sd_bus *bus;
        char *name;
        sd_bus_slot *job_match, *call;
        bool job_done; /* the start job ended */
        RestoreUnitStarted started;
        void *userdata;
};

int restore_unit_name_make(pid_t daemon, uint64_t id, char **ret) {
        return asprintf(ret, "sectree-restore-%d-%" PRIu64 ".service", (int) daemon, id) < 0 ? -ENOMEM : 0;
}

const char *restore_unit_name(const RestoreUnit *u) {
        return u->name;
}

RestoreUnit *restore_unit_free(RestoreUnit *u) {
        if (!u)
                return NULL;
        sd_bus_slot_unref(u->job_match);
        sd_bus_slot_unref(u->call);
        sd_bus_unref(u->bus);
        free(u->name);
        free(u);
        return NULL;
}

/* Tell the caller once, after dropping what the start needed. */
static void started(RestoreUnit *u, int r, int pidfd, const char *message) {
        RestoreUnitStarted cb = u->started;
        u->started = NULL;
        u->job_match = sd_bus_slot_unref(u->job_match);
        u->call = sd_bus_slot_unref(u->call);
        if (cb)
                cb(u, r, pidfd, message, u->userdata);
}

static void start_failed(RestoreUnit *u, int r, const char *what, const char *answer) {
        _cleanup_free_ char *message = NULL;
        if (asprintf(&message, "systemd could not start %s: %s%s%s", u->name, what, answer ? ": " : "",
                     answer ?: "") < 0)
                message = NULL;
        log_warning("Restore executor: %s", message ?: u->name);
        started(u, r, -1, message);
}

/* The main pid, once the start job is done (Type=exec: the executor was exec'd). 0: it exited. */
static int on_main_pid(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        RestoreUnit *u = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t pid = 0;
        int pidfd = -1, r;

        if (e) {
                start_failed(u, -ESRCH, "its main process cannot be read", e->message);
                return 0;
        }
        r = sd_bus_message_read(reply, "v", "u", &pid);
        if (r < 0) {
                start_failed(u, r, "its main process cannot be read", strerror(-r));
                return 0;
        }
        if (pid > 0) {
                pidfd = pidfd_open((pid_t) pid, 0);
                if (pidfd < 0 && errno != ESRCH) {
                        start_failed(u, -errno, "its main process cannot be watched", strerror(errno));
                        return 0;
                }
        }
        log_debug("Restore executor %s: main process %u.", u->name, pid);
        started(u, 0, pidfd, NULL);
        return 0;
}

static int ask_main_pid(RestoreUnit *u) {
        _cleanup_free_ char *path = NULL;
        int r = sd_bus_path_encode(SYSTEMD_PATH "/unit", u->name, &path);
        if (r < 0)
                return r;
        return sd_bus_call_method_async(u->bus, &u->call, SYSTEMD_DEST, path, "org.freedesktop.DBus.Properties", "Get",
                                        on_main_pid, u, "ss", "org.freedesktop.systemd1.Service", "MainPID");
}

/* JobRemoved(u id, o job, s unit, s result): the start job of our unit ended. */
static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        RestoreUnit *u = userdata;
        const char *job, *unit, *result;
        uint32_t id;
        int r;

        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0 || !streq(unit, u->name) || u->job_done)
                return 0;
        u->job_done = true;
        if (!streq(result, "done")) {
                start_failed(u, -ECHILD, "its start job ended with", result);
                return 0;
        }
        r = ask_main_pid(u);
        if (r < 0)
                start_failed(u, r, "its main process cannot be asked for", strerror(-r));
        return 0;
}

static int on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        RestoreUnit *u = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (!e)
                return 0; /* the job is queued: JobRemoved says how it ended */
        start_failed(u, -ECHILD, e->name, e->message);
        return 0;
}

static int append_identity(sd_bus_message *m, const RestoreUnitIdentity *id) {
        char uid[16], gid[16];
        int r;

        if (id->uid == 0)
                return 0;
        snprintf(uid, sizeof(uid), "%u", (unsigned) id->uid);
        snprintf(gid, sizeof(gid), "%u", (unsigned) id->gid);
        r = sd_bus_message_append(m, "(sv)(sv)", "User", "s", uid, "Group", "s", gid);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "SupplementaryGroups");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "as");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "s");
        for (size_t i = 0; r >= 0 && i < id->n_groups; i++) {
                snprintf(gid, sizeof(gid), "%u", (unsigned) id->groups[i]);
                r = sd_bus_message_append(m, "s", gid);
        }
        for (int i = 0; r >= 0 && i < 3; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* The caller's slice, and its limits: LimitX= sets both (the hard one), LimitXSoft= then the soft. */
static int append_context(sd_bus_message *m, const RestoreUnitIdentity *id) {
        char slice[32];
        int r;

        snprintf(slice, sizeof(slice), "user-%u.slice", (unsigned) id->uid);
        r = sd_bus_message_append(m, "(sv)", "Slice", "s", slice);
        for (int i = 0; r >= 0 && id->limits && id->limits->known && i < RESTORE_N_LIMITS; i++) {
                char hard[32], soft[40];
                snprintf(hard, sizeof(hard), "Limit%s", restore_limit_to_string(i));
                snprintf(soft, sizeof(soft), "Limit%sSoft", restore_limit_to_string(i));
                r = sd_bus_message_append(m, "(sv)(sv)", hard, "t", (uint64_t) id->limits->v[i].rlim_max, soft, "t",
                                          (uint64_t) id->limits->v[i].rlim_cur);
        }
        return r;
}

/* The service's properties: the executor as its only process, the socket as stdin, its stdout
 * nowhere and its stderr in the journal (stdout would otherwise be the socket too), no sandboxing
 * (none is asked for), collected when it is over, failed or not; the caller's slice and limits.
 * PID 1 gives it a clean environment of its own. */
static int append_properties(sd_bus_message *m, const char *description, const char *exe,
                             const RestoreUnitIdentity *id, int stdin_fd) {
        int r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s", description, "Type", "s",
                                          "exec", "StandardInputFileDescriptor", "h", stdin_fd, "StandardOutput", "s",
                                          "null", "StandardError", "s", "journal", "CollectMode", "s",
                                          "inactive-or-failed");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "ExecStart", "a(sasb)", 1, exe, 1, "sectree-restore", false);
        if (r >= 0)
                r = append_identity(m, id);
        if (r >= 0)
                r = append_context(m, id);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int start_call(RestoreUnit *u, const char *description, const char *exe, const RestoreUnitIdentity *id,
                      int stdin_fd) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(u->bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                               "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", u->name, "fail");
        if (r >= 0)
                r = append_properties(m, description, exe, id, stdin_fd);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r >= 0)
                r = sd_bus_call_async(u->bus, &u->call, m, on_start_reply, u, 0);
        return r;
}

int restore_unit_start(sd_bus *bus, const char *name, const char *description, const char *exe,
                       const RestoreUnitIdentity *id, int stdin_fd, RestoreUnitStarted cb, void *userdata,
                       RestoreUnit **ret) {
        RestoreUnit *u;
        int r;

        if (!bus)
                return -ENOTCONN;
        u = calloc(1, sizeof(RestoreUnit));
        if (!u)
                return -ENOMEM;
        *u = (RestoreUnit) { .bus = sd_bus_ref(bus), .name = strdup(name), .started = cb, .userdata = userdata };
        if (!u->name) {
                restore_unit_free(u);
                return -ENOMEM;
        }
        /* The match is on the bus before the call is: the job cannot end unseen. */
        r = sd_bus_match_signal_async(bus, &u->job_match, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "JobRemoved",
                                      on_job_removed, NULL, u);
        if (r >= 0)
                r = start_call(u, description, exe, id, stdin_fd);
        if (r < 0) {
                restore_unit_free(u);
                return log_error_errno(r, "Failed to ask systemd for %s: %m", name);
        }
        *ret = u;
        return 0;
}

static int unit_call(RestoreUnit *u, const char *method, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r = sd_bus_message_new_method_call(u->bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, method);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        if (r >= 0)
                r = sd_bus_message_set_expect_reply(m, false);
        if (r >= 0)
                r = sd_bus_send(u->bus, m, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to ask systemd to %s %s: %m", method, u->name);
        return r;
}

int restore_unit_stop(RestoreUnit *u) {
        return unit_call(u, "StopUnit", "ss", u->name, "replace");
}

int restore_unit_kill(RestoreUnit *u) {
        return unit_call(u, "KillUnit", "ssi", u->name, "all", SIGKILL);
}
