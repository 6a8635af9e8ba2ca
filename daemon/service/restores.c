/* restores.c: restores for bus callers (see restores.h and docs/restore.md, "The daemon side").
 *
 * One Restore per call of Restore(): the snapshot is loaded from the database and written into a
 * memfd; the executor is started with the caller's credentials and a socket as its stdin; from
 * then on everything is an event source of the loop: the socket (frames of the executor's
 * protocol), the executor's pidfd (its exit), a deadline, and the verification, which runs in an
 * iteration of its own once READY and the fds came. */
#include "service/restores.h"

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan/plan-protocol.h"
#include "service/restore-check.h"
#include "service/restore-executor.h"
#include "service/log-event.h"
#include "service/restore-unit.h"
#include "snapshot/snapshot.h"
#include "service/snapshots.h"
#include "store/store-snapshot.h"

/* A frame is read whole once its header is there: the executor writes each in one go. */
#define FRAME_READ_TIMEOUT_USEC (5 * 1000000ULL)

struct Restore {
        Restores *restores; /* what it is one of */
        Manager *m;         /* restores' */
        Restore *next;
        uint64_t id, snapshot_id;
        uint64_t started_ticks; /* when the call came, as /proc's start times count */
        uid_t owner;
        Caller caller; /* who asked (its own memo of what it may see) */
        RestoreCreds creds;
        RestoreOptions o;
        RestoreState state;
        Forest *snapshot;

        pid_t executor;    /* forked: our child */
        RestoreUnit *unit; /* else a transient service of PID 1 */
        int executor_pidfd, sock;
        sd_event_source *sock_source, *exit_source, *timer, *defer;
        sd_event_source *fds_timer; /* the fds not taken in time are closed */
        void *watch; /* of the caller's connection (the bus layer's), unless o.keep */
        void (*watch_free)(void *watch);

        json_t *ready;
        int *fds;
        size_t n_fds, n_fds_expected;
        size_t fds_next;  /* the next fd to hand the caller (restore_n_pidfds() first, then listeners) */
        bool fds_expired; /* closed before the caller took them all */
        PlanMapping map;
        int *process_fd;  /* index into fds of each mapping process's pidfd */
        uint64_t *listener_id;
        int *listener_fd; /* index into fds */
        size_t n_listeners;
        bool verified;
        char **differences;

        RestoreDone done;
        void *userdata;
        RestoreReleased released;
        void *released_userdata;
        const char *end_reason;
        int end_error;     /* for done, once the executor is gone */
        char *end_message;
};

struct Restores {
        Manager *m;
        sd_bus *bus; /* for transient units (NULL: none yet) */
        Restore *list;
        uint64_t next_id;
        RestoreExecutor executor;
        RestoreFinished finished;
        void *userdata;
};

static const char *const state_table[_RESTORE_STATE_MAX] = {
        [RESTORE_EXECUTING] = "executing",
        [RESTORE_VERIFYING] = "verifying",
        [RESTORE_STARTING] = "starting",
        [RESTORE_READY] = "ready",
        [RESTORE_ENDING] = "ending",
};

const char *restore_state_to_string(RestoreState s) {
        return s >= 0 && s < _RESTORE_STATE_MAX ? state_table[s] : NULL;
}

int restores_new(Manager *m, RestoreExecutor executor, Restores **ret) {
        Restores *rs = calloc(1, sizeof(Restores));
        if (!rs)
                return log_oom();
        *rs = (Restores) { .m = m, .next_id = 1, .executor = executor };
        *ret = rs;
        return 0;
}

void restores_set_bus(Restores *rs, sd_bus *bus) {
        sd_bus_unref(rs->bus);
        rs->bus = sd_bus_ref(bus);
}

Manager *restores_manager(Restores *rs) {
        return rs->m;
}

void restores_set_finished(Restores *rs, RestoreFinished finished, void *userdata) {
        rs->finished = finished;
        rs->userdata = userdata;
}

/* ---- the life of one restore ---- */

static void close_fds(Restore *r) {
        r->fds_timer = sd_event_source_disable_unref(r->fds_timer);
        for (size_t i = 0; i < r->n_fds; i++)
                if (r->fds[i] >= 0)
                        close(r->fds[i]);
        free(r->fds);
        r->fds = NULL;
        r->n_fds = 0;
}

static void restore_free(Restore *r) {
        if (!r)
                return;
        sd_event_source_disable_unref(r->sock_source);
        sd_event_source_disable_unref(r->exit_source);
        sd_event_source_disable_unref(r->timer);
        sd_event_source_disable_unref(r->defer);
        sd_event_source_disable_unref(r->fds_timer);
        if (r->watch && r->watch_free)
                r->watch_free(r->watch);
        if (r->sock >= 0)
                close(r->sock); /* the executor ends every stub when its socket closes */
        if (r->executor_pidfd >= 0)
                close(r->executor_pidfd);
        restore_unit_free(r->unit);
        close_fds(r);
        json_decref(r->ready);
        plan_mapping_done(&r->map);
        free(r->process_fd);
        free(r->listener_id);
        free(r->listener_fd);
        strv_free(r->differences);
        free(r->end_message);
        forest_free(r->snapshot);
        restore_options_done(&r->o);
        free(r->creds.groups);
        caller_deinit(&r->caller);
        free(r);
}

static void unlink_restore(Restore *r) {
        Restores *rs = r->restores;
        for (Restore **p = &rs->list; *p; p = &(*p)->next)
                if (*p == r) {
                        *p = r->next;
                        return;
                }
}

/* Tell the caller of Restore() (once). */
static void call_done(Restore *r, int k, const char *message) {
        RestoreDone done = r->done;
        if (!done)
                return;
        r->done = NULL;
        done(r->restores, k, k < 0 ? NULL : r, message, r->userdata);
}

/* The executor and, under a unit, every process of its cgroup. */
static void executor_kill(Restore *r) {
        if (r->unit)
                (void) restore_unit_kill(r->unit);
        else
                (void) pidfd_send_signal(r->executor_pidfd, SIGKILL, NULL, 0);
}

static int on_kill_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Restore *r = userdata;
        log_warning("Restore %" PRIu64 ": the executor did not exit, killing it.", r->id);
        executor_kill(r);
        return 0;
}

/* Ending: close the socket (the executor ends every stub, or it already did after an ERROR), and
 * wait for the executor's exit; it is killed if it does not exit in time (its stubs end then too:
 * their control pipe closes). A pending Restore() hears of the error once the executor is gone,
 * so that no task of the restore is left when the caller reads it. */
static void restore_drop_watch(Restore *r) {
        void *watch = TAKE_PTR(r->watch);
        if (watch && r->watch_free)
                r->watch_free(watch);
}

static void restore_end(Restore *r, const char *reason, int k, const char *message) {
        if (r->state == RESTORE_ENDING)
                return;
        r->state = RESTORE_ENDING;
        r->end_reason = reason;
        r->sock_source = sd_event_source_disable_unref(r->sock_source);
        r->defer = sd_event_source_disable_unref(r->defer);
        restore_drop_watch(r);
        if (r->sock >= 0) {
                (void) restore_frame_send(r->sock, RESTORE_FRAME_RELEASE, NULL, 0, NULL, 0);
                close(r->sock);
                r->sock = -1;
        }
        close_fds(r);
        sd_event_source_disable_unref(r->timer);
        r->timer = NULL;
        if (r->unit && r->executor_pidfd < 0)
                (void) restore_unit_stop(r->unit); /* not started yet: its start job is canceled */
        if (sd_event_add_time_relative(r->m->event, &r->timer, CLOCK_MONOTONIC, RESTORE_KILL_TIMEOUT_USEC, 0,
                                       on_kill_timer, r) < 0)
                executor_kill(r);
        r->end_error = k;
        r->end_message = message ? strdup(message) : NULL;
        if (streq(reason, "failed"))
                log_event_restore_failed(r->id, r->snapshot_id, r->owner, message ?: strerror(-k));
}

/* The executor is gone (how: its exit status, or under a unit the unit's name): the restore is
 * over. */
static void restore_gone(Restore *r, const char *how) {
        Restores *rs = r->restores;

        if (r->state != RESTORE_ENDING) {
                _cleanup_free_ char *message = NULL;
                snapshot_set_message(&message, "execute: the executor %s before the restore was %s", how,
                            r->state == RESTORE_READY ? "released" : "ready");
                log_warning("Restore %" PRIu64 ": %s.", r->id, message ?: "the executor ended");
                restore_end(r, "executor-exited", -EPROTO, message);
        }
        log_debug("Restore %" PRIu64 " ended (%s).", r->id, r->end_reason);
        unlink_restore(r);
        call_done(r, r->end_error < 0 ? r->end_error : -ECANCELED, r->end_message);
        log_event_restore_finished(r->id, r->snapshot_id, r->owner, r->end_reason);
        if (rs->finished)
                rs->finished(r->id, r->owner, r->end_reason, rs->userdata);
        if (r->released)
                r->released(0, r->released_userdata);
        restore_free(r);
}

static int on_executor_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Restore *r = userdata;
        _cleanup_free_ char *how = NULL;
        siginfo_t si = {};

        if (r->unit) { /* not our child: its pidfd is readable once it exited */
                snapshot_set_message(&how, "(%s) exited", restore_unit_name(r->unit));
                restore_gone(r, how ?: "exited");
                return 0;
        }
        if (waitid(P_PIDFD, (id_t) r->executor_pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return 0;
        snapshot_set_message(&how, "%s %d", si.si_code == CLD_EXITED ? "exited with status" : "was killed by signal",
                    si.si_status);
        restore_gone(r, how ?: "exited");
        return 0;
}

static int on_gone(sd_event_source *s, void *userdata) {
        Restore *r = userdata;
        r->defer = sd_event_source_disable_unref(r->defer);
        restore_gone(r, "exited");
        return 0;
}

/* The executor never ran or is gone already: end the restore from the loop. */
static void restore_gone_soon(Restore *r) {
        r->defer = sd_event_source_disable_unref(r->defer);
        if (sd_event_add_defer(r->m->event, &r->defer, on_gone, r) < 0)
                log_oom(); /* left to the deadline */
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Restore *r = userdata;
        _cleanup_free_ char *message = NULL;
        snapshot_set_message(&message, "execute: the executor was not done after %llu s",
                    (unsigned long long) (usec / 1000000));
        restore_end(r, "failed", -ETIMEDOUT, message);
        return 0;
}

/* The executor's ERROR: "STAGE: MESSAGE". */
static void on_error_frame(Restore *r, const RestoreFrame *f) {
        json_auto_t *doc = json_loads(f->payload ?: "", 0, NULL);
        const char *stage = json_string_value(json_object_get(doc, "stage"));
        const char *what = json_string_value(json_object_get(doc, "message"));
        _cleanup_free_ char *message = NULL;

        snapshot_set_message(&message, "%s: %s", stage ?: "execute", what ?: "the executor failed without saying why");
        restore_end(r, "failed", -EPROTO, message); /* logs it */
}

/* READY's i-th process: its snapshot pid, its pid, the index of its pidfd. */
static int ready_process(Restore *r, json_t *x, size_t i) {
        pid_t a, b;
        int k = restore_ready_pid(x, "snapshot_pid", &a);
        if (k < 0)
                return k;
        k = restore_ready_pid(x, "pid", &b);
        if (k < 0)
                return k;
        k = restore_ready_fd_index(x, r->n_fds_expected, &r->process_fd[i]);
        if (k < 0)
                return k;
        return plan_mapping_add_process(&r->map, a, b);
}

static int ready_thread(Restore *r, json_t *x) {
        pid_t a, b;
        int k = restore_ready_pid(x, "snapshot_tid", &a);
        if (k < 0)
                return k;
        k = restore_ready_pid(x, "tid", &b);
        if (k < 0)
                return k;
        return plan_mapping_add_thread(&r->map, a, b);
}

/* READY's i-th listener: the snapshot's listener id (null: none held it) and its fd's index. */
static int ready_listener(Restore *r, json_t *x, size_t i) {
        json_t *id = json_object_get(x, "snapshot_listener");
        if (!json_is_null(id) && (!json_is_integer(id) || json_integer_value(id) <= 0))
                return -EBADMSG;
        r->listener_id[i] = json_is_integer(id) ? (uint64_t) json_integer_value(id) : 0;
        return restore_ready_fd_index(x, r->n_fds_expected, &r->listener_fd[i]);
}

/* The mapping READY gives. */
static int parse_ready(Restore *r) {
        json_t *procs = json_object_get(r->ready, "processes"), *threads = json_object_get(r->ready, "threads");
        json_t *listeners = json_object_get(r->ready, "listeners"), *n = json_object_get(r->ready, "n_fds"), *x;
        size_t i;
        int k = 0;

        if (!json_is_array(procs) || !json_is_array(threads) || !json_is_array(listeners) || !json_is_integer(n) ||
            json_integer_value(n) < 0 || json_integer_value(n) > 1000000)
                return -EBADMSG;
        r->n_fds_expected = (size_t) json_integer_value(n);
        k = restore_ready_pid(r->ready, "restore_root", &r->map.root_pid);
        r->process_fd = calloc(json_array_size(procs) + 1, sizeof(int));
        r->listener_id = calloc(json_array_size(listeners) + 1, sizeof(uint64_t));
        r->listener_fd = calloc(json_array_size(listeners) + 1, sizeof(int));
        if (!r->process_fd || !r->listener_id || !r->listener_fd)
                return -ENOMEM;
        json_array_foreach(procs, i, x)
                if (k >= 0)
                        k = ready_process(r, x, i);
        json_array_foreach(threads, i, x)
                if (k >= 0)
                        k = ready_thread(r, x);
        json_array_foreach(listeners, i, x) {
                if (k >= 0)
                        k = ready_listener(r, x, i);
                r->n_listeners = i + 1;
        }
        return k;
}

static int on_verify(sd_event_source *s, void *userdata);

/* Each pidfd the executor sent refers to the process the mapping names. */
static int check_pidfds(Restore *r) {
        for (size_t i = 0; r->o.pidfds && i < r->map.n_processes; i++) {
                pid_t pid = 0;
                if (restore_check_pidfd_pid(restore_pidfd(r, i), &pid) < 0 || pid != r->map.processes[i].b) {
                        _cleanup_free_ char *message = NULL;
                        snapshot_set_message(&message, "protocol: the executor's pidfd for process %d refers to "
                                             "another process", (int) r->map.processes[i].b);
                        log_warning("Restore %" PRIu64 " for uid %u refused: %s.", r->id, (unsigned) r->owner,
                                    message ?: "a forged pidfd");
                        restore_end(r, "failed", -EPROTO, message);
                        return -EPERM;
                }
        }
        return 0;
}

/* READY and every fd are here: verify (in a later iteration of the loop), or go on. */
static int after_fds(Restore *r) {
        int k;
        if (check_pidfds(r) < 0)
                return 0; /* ended */
        if (!r->o.verify)
                return on_verify(NULL, r);
        r->state = RESTORE_VERIFYING;
        k = sd_event_add_defer(r->m->event, &r->defer, on_verify, r);
        if (k < 0)
                return k;
        return sd_event_source_set_priority(r->defer, SD_EVENT_PRIORITY_IDLE);
}

/* The executor's pid, known once forked or once systemd said (0: not yet). */
static pid_t executor_pid(const Restore *r) {
        pid_t pid = 0;
        if (r->executor > 0)
                return r->executor;
        if (r->executor_pidfd >= 0 && restore_check_pidfd_pid(r->executor_pidfd, &pid) < 0)
                return 0;
        return pid;
}

/* The executor runs as the caller, who may forge READY: every task it names must be this
 * restore's, or the restore ends before anything is scanned or described. */
static int check_ready(Restore *r) {
        _cleanup_free_ char *message = NULL;
        RestoreOrigin o = { .executor = executor_pid(r), .unit = r->unit ? restore_unit_name(r->unit) : NULL,
                            .started_ticks = r->started_ticks, .check_uid = !r->o.original_uids,
                            .uid = r->creds.uid };
        int k = restore_check_mapping(&r->map, &o, &message);
        if (k >= 0)
                return 0;
        log_warning("Restore %" PRIu64 " for uid %u refused: %s.", r->id, (unsigned) r->owner, message ?: "forged READY");
        restore_end(r, "failed", -EPROTO, message);
        return k;
}

static int on_ready_frame(Restore *r, RestoreFrame *f) {
        json_error_t je;
        int k;

        r->ready = json_loads(f->payload ?: "", 0, &je);
        if (!r->ready)
                return -EBADMSG;
        k = parse_ready(r);
        if (k < 0)
                return k;
        if (check_ready(r) < 0)
                return 0; /* ended */
        if (r->n_fds_expected > RESTORE_MAX_FDS + r->map.n_processes * !r->o.pidfds ||
            (r->o.pidfds && r->n_fds_expected > RESTORE_MAX_FDS))
                return -E2BIG;
        r->fds = calloc(r->n_fds_expected + 1, sizeof(int));
        if (!r->fds)
                return -ENOMEM;
        return r->n_fds_expected == 0 ? after_fds(r) : 0;
}

static int on_fds_frame(Restore *r, RestoreFrame *f) {
        if (!r->ready || r->n_fds + f->n_fds > r->n_fds_expected)
                return -EBADMSG;
        memcpy(r->fds + r->n_fds, f->fds, f->n_fds * sizeof(int));
        r->n_fds += f->n_fds;
        f->n_fds = 0; /* kept */
        return r->n_fds == r->n_fds_expected ? after_fds(r) : 0;
}

static void ready_reply(Restore *r) {
        r->state = RESTORE_READY;
        r->timer = sd_event_source_disable_unref(r->timer);
        log_info("Restore %" PRIu64 " of snapshot %" PRIu64 " for uid %u: %zu %s, %zu %s, %s.", r->id,
                 r->snapshot_id, r->owner, r->map.n_processes, r->map.n_processes == 1 ? "process" : "processes",
                 r->map.n_threads, r->map.n_threads == 1 ? "thread" : "threads",
                 !r->o.verify ? "not verified" : r->verified ? "verified" : "NOT verified");
        call_done(r, 0, NULL);
}

/* START: the exec steps; then the reply. */
static int start_or_reply(Restore *r) {
        if (r->o.n_exec == 0) {
                ready_reply(r);
                return 0;
        }
        r->state = RESTORE_STARTING;
        return restore_frame_send(r->sock, RESTORE_FRAME_START, NULL, 0, NULL, 0);
}

static int on_verify(sd_event_source *s, void *userdata) {
        Restore *r = userdata;
        int k = 0;

        r->defer = sd_event_source_disable_unref(r->defer);
        if (r->o.verify) {
                _cleanup_free_ char *message = NULL;
                RestoreVerifyInput in = {
                        .source = r->m->source, .snapshot = r->snapshot, .map = &r->map, .caller = &r->caller,
                        .uid = r->creds.uid, .gid = r->creds.gid, .original_uids = r->o.original_uids,
                        .nnp_added = json_object_get(r->ready, "no_new_privs_added"),
                };
                k = restore_verify(&in, &r->verified, &r->differences, &message);
                if (k < 0) {
                        if (!message)
                                snapshot_set_message(&message, "verify: the scan of the restored tree failed: %s",
                                                     strerror(-k));
                        else
                                log_warning("Restore %" PRIu64 " for uid %u refused: %s.", r->id, (unsigned) r->owner,
                                            message);
                        restore_end(r, "failed", message && k == -EPERM ? -EPROTO : -EIO, message);
                        return 0;
                }
                for (char **d = r->differences; d && *d; d++)
                        log_info("Restore %" PRIu64 ": difference: %s", r->id, *d);
        } else if (!(r->differences = calloc(1, sizeof(char *))))
                k = -ENOMEM;
        if (k >= 0)
                k = start_or_reply(r);
        if (k < 0)
                restore_end(r, "failed", k, NULL);
        return 0;
}

static int on_frame(Restore *r, RestoreFrame *f) {
        switch (f->type) {
        case RESTORE_FRAME_ERROR:
                on_error_frame(r, f);
                return 0;
        case RESTORE_FRAME_READY:
                return r->state == RESTORE_EXECUTING && !r->ready ? on_ready_frame(r, f) : -EBADMSG;
        case RESTORE_FRAME_FDS:
                return r->state == RESTORE_EXECUTING ? on_fds_frame(r, f) : -EBADMSG;
        case RESTORE_FRAME_STARTED:
                if (r->state != RESTORE_STARTING)
                        return -EBADMSG;
                ready_reply(r);
                return 0;
        case RESTORE_FRAME_RELEASED:
                return 0;
        default:
                return -EBADMSG;
        }
}

static int on_socket(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Restore *r = userdata;
        RestoreFrame f = {};
        _cleanup_free_ char *message = NULL;
        int k = restore_frame_recv(r->sock, FRAME_READ_TIMEOUT_USEC, &f);

        if (k >= 0)
                k = on_frame(r, &f);
        restore_frame_done(&f);
        if (k >= 0 || r->state == RESTORE_ENDING)
                return 0;
        if (k == -ECONNRESET) {
                /* the executor closed its end: its exit says more */
                r->sock_source = sd_event_source_disable_unref(r->sock_source);
                return 0;
        }
        snapshot_set_message(&message, "%s: %s",
                    k == -E2BIG ? "reply" : "protocol",
                    k == -E2BIG ? "the restore needs more fds than a restore may hand (200; pass pidfds=false)"
                                : strerror(-k));
        restore_end(r, "failed", k == -E2BIG ? -EUSERS : -EPROTO, message);
        return 0;
}

void restore_caller_left(Restore *r) {
        log_debug("Restore %" PRIu64 ": its caller left the bus, releasing it.", r->id);
        restore_end(r, "caller-left", -ECANCELED, "the caller left the bus");
}

void restore_set_caller_watch(Restore *r, void *watch, void (*watch_free)(void *watch)) {
        restore_drop_watch(r);
        r->watch = watch;
        r->watch_free = watch_free;
}

/* ---- starting the executor ---- */

static void on_unit_started(RestoreUnit *u, int k, int pidfd, const char *message, void *userdata) {
        Restore *r = userdata;

        if (k < 0) {
                restore_end(r, "failed", k, message);
                restore_gone_soon(r);
                return;
        }
        r->executor_pidfd = pidfd;
        if (pidfd < 0) {
                restore_gone_soon(r); /* it exited already: its ERROR, if any, was read */
                return;
        }
        k = sd_event_add_io(r->m->event, &r->exit_source, pidfd, EPOLLIN, on_executor_exit, r);
        if (k >= 0)
                k = sd_event_source_set_priority(r->exit_source, SD_EVENT_PRIORITY_NORMAL + 10);
        if (k < 0) {
                restore_end(r, "failed", k, NULL);
                executor_kill(r);
        }
}

static int send_request(Restore *r);

/* The executor as a transient service: the socket's other end becomes its stdin. The request is
 * in the socket before systemd has it: a unit that fails at once cannot make the send fail. */
static int start_unit(Restore *r, int *ret_sock, char **ret_message) {
        _cleanup_free_ char *name = NULL, *description = NULL;
        RestoreUnitIdentity id = { .uid = r->creds.uid, .gid = r->creds.gid, .groups = r->creds.groups,
                                   .n_groups = r->creds.n_groups, .limits = &r->creds.limits };
        int pair[2], k;

        k = restore_unit_name_make(getpid(), r->id, &name);
        if (k >= 0 && asprintf(&description, "sectree restore %" PRIu64 " of snapshot %" PRIu64 " for uid %u", r->id,
                               r->snapshot_id, (unsigned) r->owner) < 0)
                k = -ENOMEM;
        if (k < 0)
                return k;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        r->sock = pair[0];
        k = send_request(r);
        r->sock = -1;
        if (k >= 0)
                k = restore_unit_start(r->restores->bus, name, description, restore_executor_path(), &id, pair[1], on_unit_started, r,
                               &r->unit);
        close(pair[1]); /* the message holds a copy */
        if (k < 0) {
                close(pair[0]);
                snapshot_set_message(ret_message, "The restore executor cannot be started as %s: %s", name,
                            strerror(-k));
                return k;
        }
        log_debug("Restore %" PRIu64 ": asked systemd to start %s.", r->id, name);
        *ret_sock = pair[0];
        return 0;
}

/* Forked from here: its pid, a pidfd of it, and the socket to it. */
static int spawn_executor(Restore *r, char **ret_message) {
        return restore_executor_fork(&r->creds, &r->sock, &r->executor, &r->executor_pidfd, ret_message);
}

/* The request, with the snapshot as a file in a memfd (and the caller's stdio, which the daemon
 * keeps no copy of once sent). */
static int send_request(Restore *r) {
        _cleanup_close_ int memfd = memfd_create("sectree-snapshot", MFD_CLOEXEC);
        json_auto_t *doc = restore_options_request(&r->o);
        _cleanup_free_ char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        int k;

        if (memfd < 0)
                return -errno;
        if (!text)
                return -ENOMEM;
        k = snapshot_write_fd(r->snapshot, SNAPSHOT_FORMAT_JSON, memfd);
        if (k >= 0 && lseek(memfd, 0, SEEK_SET) < 0)
                k = -errno;
        if (k >= 0) {
                int fds[4] = { memfd, r->o.stdio[0], r->o.stdio[1], r->o.stdio[2] };
                k = restore_frame_send(r->sock, RESTORE_FRAME_REQUEST, text, strlen(text), fds, r->o.has_stdio ? 4 : 1);
        }
        for (int j = 0; r->o.has_stdio && j < 3; j++) {
                close(r->o.stdio[j]);
                r->o.stdio[j] = -1;
        }
        return k;
}

static int add_sources(Restore *r) {
        sd_event *e = r->m->event;
        int k = sd_event_add_io(e, &r->sock_source, r->sock, EPOLLIN, on_socket, r);
        /* a frame the executor sent before it exited is read before its exit is handled (a unit's
         * executor: its pidfd comes once systemd started it, on_unit_started()) */
        if (k >= 0 && !r->unit)
                k = sd_event_add_io(e, &r->exit_source, r->executor_pidfd, EPOLLIN, on_executor_exit, r);
        if (k >= 0 && !r->unit)
                k = sd_event_source_set_priority(r->exit_source, SD_EVENT_PRIORITY_NORMAL + 10);
        if (k >= 0)
                k = sd_event_add_time_relative(e, &r->timer, CLOCK_MONOTONIC, restore_executor_timeout_usec(), 0, on_deadline, r);
        return k;
}

/* The restores of uid in progress or alive. */
static size_t restores_of_uid(const Restores *rs, uid_t uid) {
        size_t mine = 0;
        for (Restore *x = rs->list; x; x = x->next)
                mine += x->owner == uid;
        return mine;
}

int restores_start(Restores *rs, Caller *c, const RestoreCreds *creds, uint64_t snapshot_id, RestoreOptions *o,
                   RestoreDone done, void *userdata, Restore **ret, char **ret_message) {
        Manager *m = rs->m;
        Restore *r;
        StoredSnapshot row;
        int k, by_unit;

        if (ret_message)
                *ret_message = NULL;
        k = snapshot_find(m, c, snapshot_id, &row);
        if (k == -ENOENT)
                snapshot_set_message(ret_message, "No snapshot with id %" PRIu64 ".", snapshot_id);
        if (k < 0)
                return k;
        stored_snapshot_done(&row);
        if (!c->privileged && !c->known) {
                snapshot_set_message(ret_message, "Your credentials could not be read.");
                return -EACCES;
        }
        by_unit = restore_executor_by_unit(rs->executor, ret_message);
        if (by_unit < 0)
                return by_unit;

        r = calloc(1, sizeof(Restore));
        if (!r)
                return -ENOMEM;
        *r = (Restore) { .restores = rs, .m = m, .snapshot_id = snapshot_id, .started_ticks = restore_check_now_ticks(),
                         .owner = c->uid, .caller = *c, .o = *o, .executor_pidfd = -1,
                         .sock = -1, .creds = *creds, .done = done, .userdata = userdata };
        *o = (RestoreOptions) {};
        r->caller.seen = (Hashmap) {}; /* a memo of its own */
        r->creds.groups = NULL;
        if (creds->n_groups > 0) {
                r->creds.groups = calloc(creds->n_groups, sizeof(gid_t));
                if (!r->creds.groups) {
                        restore_free(r);
                        return -ENOMEM;
                }
                memcpy(r->creds.groups, creds->groups, creds->n_groups * sizeof(gid_t));
        }
        k = store_snapshot_load(m->store, snapshot_id, &r->snapshot);
        if (k >= 0 && !r->snapshot->linked)
                k = forest_link(r->snapshot, NULL);
        if (k >= 0)
                k = restore_check_options(c, &r->o, r->snapshot, ret_message);
        if (k >= 0)
                k = restore_check_limits(c, restores_of_uid(rs, c->uid), r->snapshot, ret_message);
        r->id = rs->next_id++;
        if (k >= 0)
                k = by_unit ? start_unit(r, &r->sock, ret_message) : spawn_executor(r, ret_message);
        if (k >= 0 && !by_unit)
                k = send_request(r);
        if (k >= 0)
                k = add_sources(r);
        if (k < 0) {
                if (r->unit)
                        (void) restore_unit_stop(r->unit);
                if (r->executor_pidfd >= 0) {
                        (void) pidfd_send_signal(r->executor_pidfd, SIGKILL, NULL, 0);
                        (void) waitid(P_PIDFD, (id_t) r->executor_pidfd, &(siginfo_t) {}, WEXITED);
                }
                r->done = NULL;
                restore_free(r);
                return k;
        }
        r->next = rs->list;
        rs->list = r;
        log_debug("Restore %" PRIu64 " of snapshot %" PRIu64 " for uid %u: executor %d%s%s.", r->id, snapshot_id,
                  c->uid, r->executor, r->unit ? " in " : "", r->unit ? restore_unit_name(r->unit) : "");
        log_event_restore_started(r->id, snapshot_id, c->uid, 0);
        if (ret)
                *ret = r;
        return 0;
}

Restore *restores_find(Restores *rs, Caller *c, uint64_t id) {
        for (Restore *r = rs->list; r; r = r->next)
                if (r->id == id && (c->privileged || r->owner == c->uid))
                        return r;
        return NULL;
}

int restores_release(Restores *rs, Caller *c, uint64_t id, RestoreReleased done, void *userdata) {
        Restore *r = restores_find(rs, c, id);
        if (!r || r->released)
                return -ENOENT;
        r->released = done;
        r->released_userdata = userdata;
        restore_end(r, "released", -ECANCELED, "released");
        return 0;
}

static int cmp_restore(const void *a, const void *b) {
        uint64_t x = restore_id(*(Restore *const *) a), y = restore_id(*(Restore *const *) b);
        return x < y ? -1 : x > y;
}

int restores_list(Restores *rs, Caller *c, Restore ***ret, size_t *ret_n) {
        Restore **l = NULL;
        size_t n = 0, allocated = 0;
        for (Restore *r = rs->list; r; r = r->next) {
                if (!c->privileged && r->owner != c->uid)
                        continue;
                if (GROW(l, allocated, n + 1) < 0) {
                        free(l);
                        return -ENOMEM;
                }
                l[n++] = r;
        }
        if (n > 1)
                qsort(l, n, sizeof(*l), cmp_restore);
        *ret = l;
        *ret_n = n;
        return 0;
}

/* End every restore (the daemon stops): their stubs end. */
Restores *restores_free(Restores *rs) {
        if (!rs)
                return NULL;
        while (rs->list) {
                Restore *r = rs->list;
                rs->list = r->next;
                r->done = NULL;
                r->released = NULL;
                restore_free(r); /* closing the socket ends its stubs */
        }
        sd_bus_unref(rs->bus);
        free(rs);
        return NULL;
}

/* ---- what a restore is ---- */

uint64_t restore_id(const Restore *r) {
        return r->id;
}
uint64_t restore_snapshot_id(const Restore *r) {
        return r->snapshot_id;
}
uid_t restore_owner(const Restore *r) {
        return r->owner;
}
RestoreState restore_state(const Restore *r) {
        return r->state;
}
pid_t restore_root_pid(const Restore *r) {
        return r->map.root_pid;
}
size_t restore_n_processes(const Restore *r) {
        return r->map.n_processes;
}
bool restore_verified(const Restore *r) {
        return r->verified;
}
char *const *restore_differences(const Restore *r) {
        return r->differences;
}
const PlanMapping *restore_mapping(const Restore *r) {
        return &r->map;
}
size_t restore_n_pidfds(const Restore *r) {
        return r->o.pidfds ? r->map.n_processes : 0;
}
int restore_pidfd(const Restore *r, size_t i) {
        if (!r->o.pidfds || !r->fds || i >= r->map.n_processes)
                return -1;
        return r->fds[r->process_fd[i]];
}
size_t restore_n_listeners(const Restore *r) {
        return r->n_listeners;
}
int restore_listener(const Restore *r, size_t i, uint64_t *ret_snapshot_listener) {
        *ret_snapshot_listener = r->listener_id[i];
        return r->fds[r->listener_fd[i]];
}

/* ---- handing the fds ---- */

int restore_fds_next(const Restore *r, size_t *ret) {
        if (r->fds_expired)
                return -ESTALE;
        *ret = r->fds ? r->fds_next : restore_n_pidfds(r) + restore_n_listeners(r);
        return 0;
}

static int on_fds_expired(sd_event_source *s, uint64_t usec, void *userdata) {
        Restore *r = userdata;
        log_info("Restore %" PRIu64 ": %zu fds were not taken in time, closing them.", r->id,
                 restore_n_pidfds(r) + restore_n_listeners(r) - r->fds_next);
        close_fds(r);
        r->fds_expired = true;
        return 0;
}

void restore_fds_handed(Restore *r, size_t next) {
        if (!r->fds)
                return;
        r->fds_next = next;
        if (next >= restore_n_pidfds(r) + restore_n_listeners(r)) {
                close_fds(r);
                return;
        }
        if (!r->fds_timer &&
            sd_event_add_time_relative(r->m->event, &r->fds_timer, CLOCK_MONOTONIC, RESTORE_FDS_HOLD_USEC, 0,
                                       on_fds_expired, r) < 0)
                on_fds_expired(NULL, 0, r); /* not kept without a bound */
}
