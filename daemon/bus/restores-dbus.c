/* restores-dbus.c: Restore(), ListRestores(), ReleaseRestore() and RestoreFinished: reading the
 * caller's options and identity, answering from what restores.c reports */
#include "bus/restores-dbus.h"

#include <fcntl.h>

#include "bus/bus-args.h"
#include "bus/bus-errors.h"
#include "service/access.h"
#include "service/restores.h"
#include "snapshot/snapshot-format.h"

/* The named error for what Restore() returned (message: what the call said, may be NULL). */
static int restore_error(sd_bus_error *error, int r, const char *message) {
        int k = bus_error_set_known(error, BUS_ERROR_RESTORE, r, message);
        if (k < 0)
                return k;
        return sd_bus_error_setf(error, ERROR_RESTORE_FAILED, "Restore failed: %s", message ?: strerror(-r));
}

/* ---- options ---- */

static int invalid(sd_bus_error *error, const char *format, const char *key) {
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, format, key);
}

static int read_bool_option(sd_bus_message *msg, const char *key, bool *ret, sd_bus_error *error) {
        int b = 0, r = bus_read_option(msg, key, "b", &b, error);
        if (r >= 0)
                *ret = b;
        return r;
}

/* After reading the entries of an array in a variant: leave both (n = 2), unless r failed. */
static int exit_containers(sd_bus_message *msg, int r, int n) {
        for (int i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_exit_container(msg);
        return r;
}

static int cmp_exec_pid(const void *a, const void *b) {
        const RestoreExec *x = a, *y = b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

/* exec: a{uas}, snapshot pid -> argv. Read on the event loop, so in time linear in the entries,
 * which are no more than a snapshot's processes. */
static int read_exec_option(sd_bus_message *msg, RestoreOptions *o, sd_bus_error *error) {
        size_t allocated = 0;
        int r = sd_bus_message_enter_container(msg, 'v', "a{uas}");
        if (r == -ENXIO)
                return invalid(error, "Option \"%s\" takes a map of snapshot pids to command lines (a{uas}).", "exec");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(msg, 'a', "{uas}");
        while (r >= 0 && (r = sd_bus_message_enter_container(msg, 'e', "uas")) > 0) {
                uint32_t pid;
                char **argv = NULL;
                if (o->n_exec >= SNAPSHOT_MAX_PROCESSES)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Option \"exec\" names more than %u processes, the most a snapshot has.",
                                                 SNAPSHOT_MAX_PROCESSES);
                r = sd_bus_message_read(msg, "u", &pid);
                if (r >= 0)
                        r = sd_bus_message_read_strv(msg, &argv);
                if (r >= 0 && (pid == 0 || pid > INT32_MAX || !argv || !argv[0] || !*argv[0])) {
                        strv_free(argv);
                        return invalid(error, "Option \"%s\": every entry needs a snapshot pid and a non-empty command.",
                                       "exec");
                }
                if (r >= 0 && GROW(o->exec, allocated, o->n_exec + 1) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        o->exec[o->n_exec++] = (RestoreExec) { .pid = (pid_t) pid, .argv = TAKE_PTR(argv) };
                strv_free(argv);
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
        }
        if (r >= 0 && o->n_exec > 1) {
                qsort(o->exec, o->n_exec, sizeof(RestoreExec), cmp_exec_pid);
                for (size_t i = 1; i < o->n_exec; i++)
                        if (o->exec[i].pid == o->exec[i - 1].pid)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Option \"exec\" names process %d twice.", (int) o->exec[i].pid);
        }
        return exit_containers(msg, r, 2);
}

static int read_uids_option(sd_bus_message *msg, RestoreOptions *o, sd_bus_error *error) {
        const char *v;
        int r = sd_bus_message_read(msg, "v", "s", &v);
        if (r == -ENXIO)
                return invalid(error, "Option \"%s\" takes a string (s): \"caller\" or \"original\".", "uids");
        if (r < 0)
                return r;
        if (!streq(v, "caller") && !streq(v, "original")) {
                char q[BUS_QUOTE_MAX + 4];
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Option \"uids\" is \"caller\" or \"original\", not \"%s\".", bus_quote(v, q));
        }
        o->original_uids = streq(v, "original");
        return 0;
}

/* stdio: ah, exactly stdin, stdout and stderr for the exec'd processes; the daemon keeps copies
 * until the executor has them. */
static int read_stdio_option(sd_bus_message *msg, RestoreOptions *o, sd_bus_error *error) {
        int fds[3], n = 0, r = sd_bus_message_enter_container(msg, 'v', "ah");

        if (r == -ENXIO)
                return invalid(error, "Option \"%s\" takes three fds (ah): stdin, stdout and stderr.", "stdio");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(msg, 'a', "h");
        while (r >= 0) {
                int fd;
                r = sd_bus_message_read(msg, "h", &fd);
                if (r <= 0)
                        break;
                if (n == 3)
                        return invalid(error, "Option \"%s\" takes three fds (ah): stdin, stdout and stderr.", "stdio");
                fds[n++] = fd;
        }
        r = exit_containers(msg, r, 2);
        if (r < 0)
                return r;
        if (n != 3 || o->has_stdio)
                return invalid(error, "Option \"%s\" takes three fds (ah): stdin, stdout and stderr.", "stdio");
        for (int k = 0; k < 3; k++) {
                o->stdio[k] = fcntl(fds[k], F_DUPFD_CLOEXEC, 3);
                if (o->stdio[k] < 0) {
                        r = -errno;
                        while (k-- > 0)
                                close(o->stdio[k]);
                        return r;
                }
        }
        o->has_stdio = true;
        return 0;
}

static int read_restore_option(sd_bus_message *msg, const char *key, void *userdata, sd_bus_error *error) {
        RestoreOptions *o = userdata;
        if (streq(key, "exec"))
                return read_exec_option(msg, o, error);
        if (streq(key, "uids"))
                return read_uids_option(msg, o, error);
        if (streq(key, "pid_namespace"))
                return read_bool_option(msg, key, &o->pid_namespace, error);
        if (streq(key, "verify"))
                return read_bool_option(msg, key, &o->verify, error);
        if (streq(key, "pidfds"))
                return read_bool_option(msg, key, &o->pidfds, error);
        if (streq(key, "keep"))
                return read_bool_option(msg, key, &o->keep, error);
        if (streq(key, "stdio"))
                return read_stdio_option(msg, o, error);
        return bus_unknown_option(error, key);
}

static int read_restore_options(sd_bus_message *msg, RestoreOptions *o, sd_bus_error *error) {
        *o = (RestoreOptions) { .verify = true, .pidfds = true };
        return bus_read_options(msg, read_restore_option, o, error);
}

/* The caller's resource limits, from its process as the bus names it (still of its uid). A
 * non-root caller whose limits cannot be read is refused: the executor never gets the daemon's. */
static int read_limits(sd_bus_message *msg, const Caller *c, RestoreLimits *ret, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        pid_t pid = 0;
        int r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_PID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_pid(creds, &pid);
        if (r >= 0)
                r = restore_limits_read(pid, c->uid, ret);
        if (r >= 0 || c->privileged)
                return 0; /* root: the daemon's own, if its process cannot be read */
        return bus_access_denied(msg, c, error, "Your resource limits could not be read from your process %d: %s.",
                                 (int) pid, strerror(-r));
}

/* The identity the executor runs as: the caller's uid as the bus says, its gid and supplementary
 * groups as its process has them, and its limits. */
static int read_creds(sd_bus_message *msg, const Caller *c, RestoreCreds *ret, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const gid_t *groups = NULL;
        int n = 0, r;

        *ret = (RestoreCreds) { .uid = c->uid, .gid = c->privileged ? 0 : c->gid };
        r = read_limits(msg, c, &ret->limits, error);
        if (r < 0)
                return r;
        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_SUPPLEMENTARY_GIDS | SD_BUS_CREDS_AUGMENT, &creds);
        if (r >= 0)
                n = sd_bus_creds_get_supplementary_gids(creds, &groups);
        if (n <= 0)
                return 0; /* none known: none given */
        ret->groups = calloc((size_t) n, sizeof(gid_t));
        if (!ret->groups)
                return -ENOMEM;
        memcpy(ret->groups, groups, (size_t) n * sizeof(gid_t));
        ret->n_groups = (size_t) n;
        return 0;
}

/* ---- Restore ---- */

/* The fds of x from next up to end (restore_fds_next() order) that are pidfds, as "ah". */
static int append_pidfds(sd_bus_message *m, const Restore *x, size_t next, size_t end) {
        int r = sd_bus_message_open_container(m, 'a', "h");
        for (size_t i = next; r >= 0 && i < end && i < restore_n_pidfds(x); i++)
                r = sd_bus_message_append(m, "h", restore_pidfd(x, i));
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* Those that are listener fds, as "a(th)". */
static int append_listeners(sd_bus_message *m, const Restore *x, size_t next, size_t end) {
        size_t first = restore_n_pidfds(x);
        int r = sd_bus_message_open_container(m, 'a', "(th)");
        for (size_t i = MAX(next, first); r >= 0 && i < end; i++) {
                uint64_t id;
                int fd = restore_listener(x, i - first, &id);
                r = sd_bus_message_append(m, "(th)", id, fd);
        }
        return r < 0 ? r : sd_bus_message_close_container(m);
}

static int append_pairs(sd_bus_message *m, const TaskPair *p, size_t n) {
        int r = sd_bus_message_open_container(m, 'a', "(uu)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(m, "(uu)", (uint32_t) p[i].a, (uint32_t) p[i].b);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* The next batch of fds of x for one message: [*next, *end), at most RESTORE_MESSAGE_MAX_FDS. */
static int fd_batch(const Restore *x, size_t *next, size_t *end) {
        size_t total = restore_n_pidfds(x) + restore_n_listeners(x);
        int r = restore_fds_next(x, next);
        if (r < 0)
                return r;
        *end = MIN(total, *next + RESTORE_MESSAGE_MAX_FDS);
        return 0;
}

/* The reply carries the first RESTORE_MESSAGE_MAX_FDS fds; *ret_end: where the next batch starts. */
static int append_reply(sd_bus_message *reply, const Restore *x, size_t *ret_end) {
        const PlanMapping *map = restore_mapping(x);
        size_t next, end;
        int r = fd_batch(x, &next, &end);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "tb", restore_id(x), restore_verified(x));
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(reply, (char **) restore_differences(x));
        if (r < 0)
                return r;
        r = append_pairs(reply, map->processes, map->n_processes);
        if (r < 0)
                return r;
        r = append_pidfds(reply, x, next, end);
        if (r < 0)
                return r;
        r = append_pairs(reply, map->threads, map->n_threads);
        if (r < 0)
                return r;
        r = append_listeners(reply, x, next, end);
        if (r < 0)
                return r;
        *ret_end = end;
        return 0;
}

static void on_restore_done(Restores *rs, int r, Restore *x, const char *message, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = userdata, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        size_t end = 0;
        int k;

        if (r >= 0) {
                k = sd_bus_message_new_method_return(msg, &reply);
                if (k >= 0)
                        k = append_reply(reply, x, &end);
                if (k >= 0)
                        restore_fds_handed(x, end); /* the message holds its own copies */
                if (k < 0) {
                        reply = sd_bus_message_unref(reply);
                        r = k;
                        message = NULL;
                }
        }
        if (r < 0) {
                (void) restore_error(&error, r, message);
                k = sd_bus_message_new_method_errorf(msg, &reply, error.name, "%s", error.message);
        } else
                k = 0;
        if (k >= 0)
                k = sd_bus_send(NULL, reply, NULL);
        if (k < 0)
                log_debug_errno(k, "Could not reply to Restore(): %m");
        if (k < 0 && r >= 0) /* nobody would ever hear of this restore: end it */
                (void) restores_release(rs, &(Caller) { .privileged = true }, restore_id(x), NULL, NULL);
}

static int on_caller_left(sd_bus_track *t, void *userdata) {
        restore_caller_left(userdata);
        return 0;
}

static void track_free(void *watch) {
        sd_bus_track_unref(watch);
}

/* Unless the restore is kept, its caller's connection is watched: when it leaves, the restore is
 * released. */
static int watch_caller(sd_bus_message *msg, Restore *restore) {
        _cleanup_(sd_bus_track_unrefp) sd_bus_track *t = NULL;
        const char *sender = sd_bus_message_get_sender(msg);
        if (!sender)
                return 0;
        int r = sd_bus_track_new(sd_bus_message_get_bus(msg), &t, on_caller_left, restore);
        if (r < 0)
                return r;
        r = sd_bus_track_add_name(t, sender);
        if (r < 0)
                return r;
        restore_set_caller_watch(restore, TAKE_PTR(t), track_free);
        return 0;
}

static void creds_done(RestoreCreds *creds) {
        free(creds->groups);
}

/* Start the restore the call asked for (o taken); answered when done. */
static int restore_call_start(sd_bus_message *msg, Restores *rs, Caller *c, const RestoreCreds *creds, uint64_t id,
                              RestoreOptions *o, sd_bus_error *error) {
        _cleanup_free_ char *message = NULL;
        bool keep = o->keep;
        Restore *restore = NULL;
        int r = restores_start(rs, c, creds, id, o, on_restore_done, sd_bus_message_ref(msg), &restore, &message);
        if (r < 0) {
                sd_bus_message_unref(msg);
                if (r == -ENOENT && !message)
                        return sd_bus_error_setf(error, ERROR_NO_SUCH_SNAPSHOT, "No snapshot with id %" PRIu64 ".", id);
                return restore_error(error, r, message);
        }
        if (!keep && watch_caller(msg, restore) < 0)
                restore_caller_left(restore); /* done hears of it: -ECANCELED */
        return 1;
}

static int method_restore(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        CALLER_CLEANUP Caller c = {};
        _cleanup_(restore_options_done) RestoreOptions o = {};
        _cleanup_(creds_done) RestoreCreds creds = {};
        uint64_t id;
        int r = sd_bus_message_read(msg, "t", &id);
        if (r < 0)
                return r;
        r = read_restore_options(msg, &o, error);
        if (r < 0)
                return r;
        r = caller_from_message(msg, &c);
        if (r < 0)
                return r;
        r = read_creds(msg, &c, &creds, error);
        if (r < 0)
                return r;
        return restore_call_start(msg, userdata, &c, &creds, id, &o, error);
}

/* ---- ListRestores, ReleaseRestore ---- */

static int method_list_restores(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Restores *rs = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ Restore **l = NULL;
        size_t n = 0;
        int r = caller_from_message(msg, &c);
        if (r < 0)
                return r;
        r = restores_list(rs, &c, &l, &n);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(ttuuubs)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(ttuuubs)", restore_id(l[i]), restore_snapshot_id(l[i]),
                                          (uint32_t) restore_owner(l[i]), (uint32_t) restore_root_pid(l[i]),
                                          (uint32_t) restore_n_processes(l[i]), restore_verified(l[i]),
                                          restore_state_to_string(restore_state(l[i])));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

static void on_released(int r, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = userdata;
        int k = sd_bus_reply_method_return(msg, NULL);
        if (k < 0)
                log_debug_errno(k, "Could not reply to ReleaseRestore(): %m");
}

static int method_release_restore(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Restores *rs = userdata;
        CALLER_CLEANUP Caller c = {};
        uint64_t id;
        int r = sd_bus_message_read(msg, "t", &id);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0)
                return r;
        r = restores_release(rs, &c, id, on_released, sd_bus_message_ref(msg));
        if (r < 0) {
                sd_bus_message_unref(msg);
                return sd_bus_error_setf(error, ERROR_NO_SUCH_RESTORE, "No restore with id %" PRIu64 ".", id);
        }
        return 1;
}

/* ---- TakeRestoreFds ---- */

/* The next fds of a restore whose reply could not carry them all: (ah pidfds, a(th) listeners,
 * u left). */
static int method_take_restore_fds(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Restores *rs = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Restore *x;
        size_t next, end;
        uint64_t id;
        int r = sd_bus_message_read(msg, "t", &id);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0)
                return r;
        x = restores_find(rs, &c, id);
        if (!x || restore_state(x) != RESTORE_READY)
                return sd_bus_error_setf(error, ERROR_NO_SUCH_RESTORE, "No restore with id %" PRIu64 ".", id);
        r = fd_batch(x, &next, &end);
        if (r == -ESTALE)
                return sd_bus_error_setf(error, ERROR_RESTORE_FAILED, "The fds of restore %" PRIu64 " were not taken "
                                         "within %llu s and are closed.", id,
                                         (unsigned long long) (RESTORE_FDS_HOLD_USEC / 1000000));
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = append_pidfds(reply, x, next, end);
        if (r < 0)
                return r;
        r = append_listeners(reply, x, next, end);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "u", (uint32_t) (restore_n_pidfds(x) + restore_n_listeners(x) - end));
        if (r < 0)
                return r;
        r = sd_bus_send(NULL, reply, NULL);
        if (r < 0)
                return r;
        restore_fds_handed(x, end);
        return 0;
}

/* The restore methods of org.sectree1.Manager, a table of their own with the restores as userdata
 * (sd-bus joins the tables of one interface, and their introspection). */
static const sd_bus_vtable restores_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("Restore", SD_BUS_ARGS("t", snapshot_id, "a{sv}", options),
                                SD_BUS_RESULT("t", id, "b", verified, "as", differences, "a(uu)", processes, "ah",
                                              pidfds, "a(uu)", threads, "a(th)", listeners),
                                method_restore, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListRestores", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ttuuubs)", restores),
                                method_list_restores, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ReleaseRestore", SD_BUS_ARGS("t", id), SD_BUS_NO_RESULT, method_release_restore,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("RestoreFinished", SD_BUS_ARGS("t", id, "u", owner_uid, "s", reason), 0),
        SD_BUS_METHOD_WITH_ARGS("TakeRestoreFds", SD_BUS_ARGS("t", id),
                                SD_BUS_RESULT("ah", pidfds, "a(th)", listeners, "u", left), method_take_restore_fds,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END
};

/* ---- RestoreFinished ---- */

static void on_restore_finished(uint64_t id, uid_t owner, const char *reason, void *userdata) {
        (void) sd_bus_emit_signal(userdata, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, "RestoreFinished", "tus", id,
                                          (uint32_t) owner, reason);
}

int restores_bus_connect(Restores *rs, sd_bus *bus) {
        restores_set_bus(rs, bus);
        restores_set_finished(rs, on_restore_finished, bus);
        int r = sd_bus_add_object_vtable(bus, NULL, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, restores_vtable, rs);
        if (r < 0)
                return log_error_errno(r, "Failed to add the restore methods to the bus: %m");
        return 0;
}
