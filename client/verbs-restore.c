/* verbs-restore.c: sectreectl restore ID|FILE, restores, release ID, and run --like PID -- CMD:
 * restores the daemon makes (Restore, ListRestores, ReleaseRestore) */
#include "verbs-restore.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <wordexp.h>

#include "bus.h"
#include "core/escape.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "manager-calls.h"
#include "manager-snapshots.h"
#include "output.h"
#include "plan/plan.h"
#include "restore-fds.h"
#include "snapshot-load.h"
#include "pager.h"
#include "table.h"

/* The executor runs the plan, and the daemon scans the result: longer than other calls. */
#define RESTORE_CALL_TIMEOUT_USEC (300 * 1000000ULL)

typedef struct Pair {
        uint32_t a, b;
} Pair;

typedef struct RestoreReply {
        uint64_t id;
        bool verified;
        char **differences;
        Pair *processes, *threads;
        size_t n_processes, n_threads;
        uint64_t *listener_ids;
        int *listener_fds;
        size_t n_listeners;
        int *pidfds; /* copies, when asked for */
        size_t n_pidfds;
} RestoreReply;

static void restore_reply_done(RestoreReply *r) {
        strv_free(r->differences);
        free(r->processes);
        free(r->threads);
        free(r->listener_ids);
        for (size_t i = 0; i < r->n_listeners; i++)
                close(r->listener_fds[i]);
        free(r->listener_fds);
        for (size_t i = 0; i < r->n_pidfds; i++)
                close(r->pidfds[i]);
        free(r->pidfds);
        *r = (RestoreReply) {};
}

/* ---- options ---- */

/* The builders of the call return the bus's errors unlogged, and ERR_USAGE for a bad --exec (said). */

/* One entry of the exec option: snapshot pid -> argv. */
static int append_exec_entry(sd_bus_message *m, uint32_t pid, char **argv) {
        int r = sd_bus_message_open_container(m, 'e', "uas");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "u", pid);
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(m, argv);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

/* The exec option's key and its containers, down to the map of entries; and back up. */
static int open_exec_option(sd_bus_message *m) {
        int r = sd_bus_message_open_container(m, 'e', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", "exec");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'v', "a{uas}");
        if (r < 0)
                return r;
        return sd_bus_message_open_container(m, 'a', "{uas}");
}

static int close_exec_option(sd_bus_message *m) {
        for (int i = 0; i < 3; i++) {
                int r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* --exec PID=CMD: CMD split into words as a shell would, without running anything. */
static int append_exec(sd_bus_message *m, const char *spec) {
        const char *eq = strchr(spec, '=');
        _cleanup_free_ char *pid_text = eq ? strndup(spec, (size_t) (eq - spec)) : NULL;
        uint32_t pid;
        wordexp_t w = {};
        int r;

        if (!eq || !pid_text || parse_pid_arg("snapshot pid", pid_text, &pid) < 0)
                return usage_error("Invalid --exec '%s': expected PID=COMMAND, PID a process of the snapshot", spec);
        if (wordexp(eq + 1, &w, WRDE_NOCMD | WRDE_UNDEF) != 0 || w.we_wordc == 0) {
                wordfree(&w);
                return usage_error("Invalid --exec '%s': the command is empty or cannot be split into words", spec);
        }
        r = append_exec_entry(m, pid, w.we_wordv);
        wordfree(&w);
        return r;
}

/* Every --exec of the command line, if any. */
static int append_exec_options(sd_bus_message *m, char **exec) {
        if (!exec || !exec[0])
                return 0;
        int r = open_exec_option(m);
        if (r < 0)
                return r;
        for (char **e = exec; *e; e++) {
                r = append_exec(m, *e);
                if (r < 0)
                        return r;
        }
        return close_exec_option(m);
}

/* What a restore of run --like asks for besides: the command, and the restore's life tied to this
 * process (it waits). */
typedef struct RunExec {
        uint32_t pid;
        char **argv;
} RunExec;

static int append_run_options(sd_bus_message *m, const RunExec *run) {
        int r = sd_bus_message_append(m, "{sv}", "pidfds", "b", 1);
        if (r < 0)
                return r;
        /* the command reads and writes where sectreectl does */
        r = sd_bus_message_append(m, "{sv}", "stdio", "ah", 3, STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO);
        if (r < 0)
                return r;
        r = open_exec_option(m);
        if (r < 0)
                return r;
        r = append_exec_entry(m, run->pid, run->argv);
        if (r < 0)
                return r;
        return close_exec_option(m);
}

/* restore ID|FILE: a restore that outlives sectreectl, as the command line asks for it. */
static int append_kept_options(sd_bus_message *m, const Context *c) {
        /* sectreectl leaves the bus when it returns: the restore must outlive it */
        int r = sd_bus_message_append(m, "{sv}", "keep", "b", 1);
        if (r < 0)
                return r;
        if (c->original_uids) {
                r = sd_bus_message_append(m, "{sv}", "uids", "s", "original");
                if (r < 0)
                        return r;
        }
        if (c->pid_namespace) {
                r = sd_bus_message_append(m, "{sv}", "pid_namespace", "b", 1);
                if (r < 0)
                        return r;
        }
        /* the fds of the reply mean nothing once sectreectl exits */
        r = sd_bus_message_append(m, "{sv}", "pidfds", "b", 0);
        if (r < 0)
                return r;
        return append_exec_options(m, c->exec);
}

/* A Restore call of snapshot id: run's (run --like) or the command line's options. */
static int new_restore_call(sd_bus *bus, const Context *c, uint64_t id, const RunExec *run, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(bus, &m, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, SECTREE_MANAGER_INTERFACE,
                                               "Restore");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "t", id);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        r = run ? append_run_options(m, run) : append_kept_options(m, c);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* ---- the reply ---- */

static int read_pairs(sd_bus_message *reply, Pair **ret, size_t *ret_n) {
        size_t allocated = 0;
        Pair p;
        int r = sd_bus_message_enter_container(reply, 'a', "(uu)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(uu)", &p.a, &p.b)) > 0) {
                if (GROW(*ret, allocated, *ret_n + 1) < 0)
                        return -ENOMEM;
                (*ret)[(*ret_n)++] = p;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

/* A copy of an fd of the reply, which outlives the message; logs. */
static int keep_fd(int fd, const char *what, int *ret) {
        int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
                return ctl_error_errno(-errno, "Failed to keep a %s of the reply: %m", what);
        *ret = copy;
        return 0;
}

/* The pidfds of the restored processes (when asked for). Logs. */
static int read_pidfds(sd_bus_message *reply, RestoreReply *ret) {
        size_t allocated = 0;
        int fd;
        int r = sd_bus_message_enter_container(reply, 'a', "h");
        if (r < 0)
                return bus_log_parse_error(r, "Restore");
        while ((r = sd_bus_message_read(reply, "h", &fd)) > 0) {
                if (GROW(ret->pidfds, allocated, ret->n_pidfds + 1) < 0)
                        return bus_log_parse_error(-ENOMEM, "Restore");
                r = keep_fd(fd, "pidfd", &ret->pidfds[ret->n_pidfds]);
                if (r < 0)
                        return r;
                ret->n_pidfds++;
        }
        if (r < 0)
                return bus_log_parse_error(r, "Restore");
        r = sd_bus_message_exit_container(reply);
        return r < 0 ? bus_log_parse_error(r, "Restore") : 0;
}

/* The listeners of the restored tree, each with the id it has in the snapshot. Logs. */
static int read_listeners(sd_bus_message *reply, RestoreReply *ret) {
        size_t allocated = 0, fds_allocated = 0;
        uint64_t id;
        int fd;
        int r = sd_bus_message_enter_container(reply, 'a', "(th)");
        if (r < 0)
                return bus_log_parse_error(r, "Restore");
        while ((r = sd_bus_message_read(reply, "(th)", &id, &fd)) > 0) {
                if (GROW(ret->listener_ids, allocated, ret->n_listeners + 1) < 0 ||
                    GROW(ret->listener_fds, fds_allocated, ret->n_listeners + 1) < 0)
                        return bus_log_parse_error(-ENOMEM, "Restore");
                r = keep_fd(fd, "listener fd", &ret->listener_fds[ret->n_listeners]);
                if (r < 0)
                        return r;
                ret->listener_ids[ret->n_listeners++] = id;
        }
        if (r < 0)
                return bus_log_parse_error(r, "Restore");
        r = sd_bus_message_exit_container(reply);
        return r < 0 ? bus_log_parse_error(r, "Restore") : 0;
}

/* Logs. */
static int read_restore_reply(sd_bus_message *reply, RestoreReply *ret) {
        int verified;
        int r = sd_bus_message_read(reply, "tb", &ret->id, &verified);
        if (r < 0)
                return bus_log_parse_error(r, "Restore");
        ret->verified = verified;
        r = sd_bus_message_read_strv(reply, &ret->differences);
        if (r < 0)
                return bus_log_parse_error(r, "Restore");
        r = read_pairs(reply, &ret->processes, &ret->n_processes);
        if (r < 0)
                return bus_log_parse_error(r, "Restore");
        r = read_pidfds(reply, ret);
        if (r < 0)
                return r;
        r = read_pairs(reply, &ret->threads, &ret->n_threads);
        if (r < 0)
                return bus_log_parse_error(r, "Restore");
        return read_listeners(reply, ret);
}

static json_t *pairs_json(const Pair *p, size_t n, const char *a, const char *b) {
        json_t *l = json_array();
        for (size_t i = 0; l && i < n; i++)
                json_array_append_new(l, json_pack("{s:I, s:I}", a, (json_int_t) p[i].a, b, (json_int_t) p[i].b));
        return l;
}

static int print_restore_json(const RestoreReply *r) {
        json_auto_t *doc = NULL;
        json_t *diffs = json_array(), *listeners = json_array();
        for (char **d = r->differences; diffs && d && *d; d++)
                json_array_append_new(diffs, json_string(*d));
        for (size_t i = 0; listeners && i < r->n_listeners; i++)
                json_array_append_new(listeners, json_pack("{s:I, s:i}", "snapshot_listener",
                                                           (json_int_t) r->listener_ids[i], "fd", r->listener_fds[i]));
        doc = json_pack("{s:I, s:b, s:o*, s:o*, s:o*, s:o*}", "restore_id", (json_int_t) r->id, "verified", r->verified,
                        "differences", diffs, "processes",
                        pairs_json(r->processes, r->n_processes, "snapshot_pid", "pid"), "threads",
                        pairs_json(r->threads, r->n_threads, "snapshot_tid", "tid"), "listeners", listeners);
        if (!doc)
                return log_oom();
        return json_print_document(doc);
}

static int print_pairs(const char *a, const char *b, const Pair *p, size_t n, bool legend) {
        const char *headers[] = { a, b };
        _cleanup_(table_freep) Table *t = table_new(headers, 2, TABLE_COLUMN(0) | TABLE_COLUMN(1));
        char x[16], y[16];
        if (!t)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                snprintf(x, sizeof(x), "%" PRIu32, p[i].a);
                snprintf(y, sizeof(y), "%" PRIu32, p[i].b);
                if (table_add_row(t, (const char *const[]) { x, y }) < 0)
                        return log_oom();
        }
        return table_print(t, stdout, legend);
}

static int print_restore(const Context *c, uint64_t snapshot, const RestoreReply *r) {
        printf("Restore %" PRIu64 " of snapshot %" PRIu64 ": %zu %s, %zu %s, %zu %s; %s\n", r->id, snapshot,
               r->n_processes, r->n_processes == 1 ? "process" : "processes", r->n_threads,
               r->n_threads == 1 ? "thread" : "threads", r->n_listeners,
               r->n_listeners == 1 ? "listener" : "listeners", r->verified ? "verified" : "NOT verified");
        for (char **d = r->differences; d && *d; d++) {
                fputs("  difference: ", stdout);
                fputs_escaped(*d, stdout);
                putchar('\n');
        }
        printf("\n");
        print_pairs("SNAPSHOT-PID", "PID", r->processes, r->n_processes, c->legend);
        printf("\n");
        print_pairs("SNAPSHOT-TID", "TID", r->threads, r->n_threads, c->legend);
        if (c->legend)
                printf("\nRelease it with: sectreectl release %" PRIu64 "\n", r->id);
        return output_flush();
}

/* ---- restore ID|FILE ---- */

/* An argument of only digits that names no existing file is a stored snapshot's id; anything
 * else is a file, imported first. */
static int snapshot_id_or_import(sd_bus *bus, const char *arg, uint64_t *ret, bool *ret_imported) {
        struct stat st;
        _cleanup_close_ int fd = -1;

        *ret_imported = false;
        if (arg[0] && strspn(arg, "0123456789") == strlen(arg) && stat(arg, &st) < 0)
                return parse_snapshot_id_arg(arg, ret);
        fd = streq(arg, "-") ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3) : open(arg, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return ctl_error_errno(-errno, "Failed to open %s: %m", streq(arg, "-") ? "stdin" : arg);
        int r = manager_import_snapshot(bus, fd, ret);
        if (r < 0)
                return r;
        log_info("Imported %s as snapshot %" PRIu64 ".", streq(arg, "-") ? "stdin" : arg, *ret);
        *ret_imported = true;
        return 0;
}

static int call_restore(sd_bus *bus, const Context *c, uint64_t id, const RunExec *run, RestoreReply *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = new_restore_call(bus, c, id, run, &m);
        if (r == ERR_USAGE)
                return r;
        if (r < 0)
                return ctl_error_errno(r, "Failed to build a Restore call: %m");
        r = sd_bus_call(bus, m, RESTORE_CALL_TIMEOUT_USEC, &error, &reply);
        if (r < 0)
                return bus_log_error(r, &error, "call Restore");
        r = read_restore_reply(reply, ret);
        if (r < 0 || ret->n_pidfds + ret->n_listeners < RESTORE_MESSAGE_MAX_FDS)
                return r;
        /* the reply carried as many fds as a message may: the rest are taken in batches */
        return restore_fds_take(bus, ret->id, &ret->pidfds, &ret->n_pidfds, &ret->listener_ids, &ret->listener_fds,
                                &ret->n_listeners);
}

/* *ret_restored: the daemon made the restore (verified or not: then it is kept, with its snapshot). */
static int restore_and_print(Context *c, sd_bus *bus, uint64_t id, bool *ret_restored) {
        _cleanup_(restore_reply_done) RestoreReply reply = {};
        int r = call_restore(bus, c, id, NULL, &reply);
        *ret_restored = r >= 0;
        if (r < 0)
                return r;
        r = c->json ? print_restore_json(&reply) : print_restore(c, id, &reply);
        if (r < 0)
                return r;
        return reply.verified ? 0 : -EPROTO; /* kept: its id and differences are printed */
}

/* A file is imported for the restore only: when the restore is refused, its import goes too. */
int verb_restore(Context *c, char **args, size_t n_args) {
        bool imported, restored;
        sd_bus *bus;
        uint64_t id;
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = snapshot_id_or_import(bus, args[0], &id, &imported);
        if (r < 0)
                return r;
        r = restore_and_print(c, bus, id, &restored);
        if (imported && !restored) {
                int k = manager_delete_snapshot(bus, id);
                if (k >= 0)
                        log_info("Deleted snapshot %" PRIu64 ", imported for the refused restore.", id);
        }
        return r;
}

/* ---- restores ---- */

/* One element of ListRestores. */
typedef struct RestoreRow {
        uint64_t id, snapshot;
        uint32_t owner, root, procs;
        int verified;
        const char *state;
} RestoreRow;

static int add_restore_row(Table *t, json_t *list, const RestoreRow *x) {
        char a[24], b[24], o[USER_NAME_MAX], p[16], n[16];
        snprintf(a, sizeof(a), "%" PRIu64, x->id);
        snprintf(b, sizeof(b), "%" PRIu64, x->snapshot);
        format_user(x->owner, o, sizeof(o));
        snprintf(p, sizeof(p), "%" PRIu32, x->root);
        snprintf(n, sizeof(n), "%" PRIu32, x->procs);
        if (table_add_row(t, (const char *const[]) { a, b, o, p, n, x->verified ? "yes" : "no", x->state }) < 0)
                return -ENOMEM;
        return json_array_append_new(list, json_pack("{s:I, s:I, s:I, s:I, s:I, s:b, s:s}", "id", (json_int_t) x->id,
                                                      "snapshot_id", (json_int_t) x->snapshot, "owner_uid",
                                                      (json_int_t) x->owner, "root_pid", (json_int_t) x->root,
                                                      "processes", (json_int_t) x->procs, "verified", x->verified,
                                                      "state", x->state)) < 0 ? -ENOMEM : 0;
}

int verb_restores(Context *c, char **args, size_t n_args) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        static const char *const headers[] = { "ID", "SNAPSHOT", "OWNER", "ROOT", "PROCS", "VERIFIED", "STATE" };
        _cleanup_(table_freep) Table *t = table_new(headers, ELEMENTSOF(headers),
                                                     TABLE_COLUMN(0) | TABLE_COLUMN(1) | TABLE_COLUMN(3) |
                                                             TABLE_COLUMN(4));
        json_auto_t *list = json_array();
        RestoreRow x;
        sd_bus *bus;
        int r = context_bus(c, &bus);

        if (!t || !list)
                return log_oom();
        if (r < 0)
                return r;
        r = bus_call_manager(bus, "ListRestores", &reply, "");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ttuuubs)");
        if (r < 0)
                return bus_log_parse_error(r, "ListRestores");
        while ((r = sd_bus_message_read(reply, "(ttuuubs)", &x.id, &x.snapshot, &x.owner, &x.root, &x.procs,
                                        &x.verified, &x.state)) > 0)
                if (add_restore_row(t, list, &x) < 0)
                        return log_oom();
        if (r < 0)
                return bus_log_parse_error(r, "ListRestores");
        if (c->json) {
                json_auto_t *doc = json_pack("{s:O}", "restores", list);
                return json_print_document(doc);
        }
        size_t n = json_array_size(list);
        pager_open(c->no_pager);
        r = table_print(t, stdout, c->legend);
        if (r < 0)
                return r;
        if (c->legend)
                printf("\n%zu restore%s listed.\n", n, n == 1 ? "" : "s");
        return output_flush();
}

/* ---- release ID ---- */

int verb_release(Context *c, char **args, size_t n_args) {
        uint64_t id;
        sd_bus *bus;
        if (safe_atou64(args[0], &id) < 0 || id == 0)
                return usage_error("Invalid restore id '%s': expected a number > 0", args[0]);
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        return bus_call_manager(bus, "ReleaseRestore", NULL, "t", id);
}

/* ---- run --like TID -- COMMAND [ARGS] ---- */

/* The process of a task the daemon lists. */
static int tgid_of(sd_bus *bus, uint32_t tid, uint32_t *ret) {
        _cleanup_(task_list_done) TaskList tasks = {};
        int r = manager_list_tasks(bus, &tasks);
        if (r < 0)
                return r;
        const TaskRecord *t = task_list_find(&tasks, tid);
        if (!t)
                return ctl_error_errno(-ESRCH, "Task %" PRIu32 " runs no seccomp filter the daemon knows of (or is not "
                                               "one you could trace).", tid);
        *ret = t->tgid;
        return 0;
}

/* A snapshot of tid's process, cut down to that one thread's chain, stored as the caller's. */
static int store_one_task_snapshot(sd_bus *bus, uint32_t tid, uint32_t tgid, uint64_t *ret_id) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int memfd = -1;
        /* the process alone: a child the caller cannot trace has nothing to do with the chain */
        SnapshotOptions o = { .root_pid = tgid, .include_argv = false, .alone = true };
        uint64_t whole;
        int r = manager_create_snapshot(bus, &o, &whole);
        if (r < 0)
                return r;
        r = snapshot_fetch(bus, whole, &f);
        (void) manager_delete_snapshot(bus, whole);
        if (r < 0)
                return r;
        r = plan_snapshot_keep_task(f, (pid_t) tid, &error);
        if (r < 0)
                return ctl_error_errno(r, "Cannot copy the chain of task %" PRIu32 ": %s", tid, error ?: strerror(-r));
        /* A call the chain passes to a listener waits for an answer: the copy's listener is kept by
         * the restore, and nothing here answers it. Said before the command starts. */
        for (size_t i = 0; i < f->n_filters; i++)
                if (f->filters[i]->has_listener || f->filters[i]->listener_id != 0) {
                        log_warning("sectreectl: The chain of task %" PRIu32 " passes calls to a user-notification "
                                    "listener (filter %" PRIu64 "), which nothing answers here: such a call waits "
                                    "until the command gets a signal (^C or SIGTERM to sectreectl passes it on).",
                                    tid, f->filters[i]->id);
                        break;
                }
        memfd = memfd_create("sectree-run-like", MFD_CLOEXEC);
        if (memfd < 0)
                return ctl_error_errno(-errno, "Failed to create a memfd: %m");
        r = snapshot_write_fd(f, SNAPSHOT_FORMAT_JSON, memfd);
        if (r < 0)
                return ctl_error_errno(r, "Failed to write the one-task snapshot: %m");
        if (lseek(memfd, 0, SEEK_SET) < 0)
                return ctl_error_errno(-errno, "Failed to write the one-task snapshot: %m");
        return manager_import_snapshot(bus, memfd, ret_id);
}

/* PIDFD_GET_INFO of Linux 6.15's linux/pidfd.h, which Debian 12's headers predate: the first 64
 * bytes of struct pidfd_info. */
struct run_pidfd_info {
        uint64_t mask, cgroupid;
        uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
        int32_t exit_code;
};
#define RUN_PIDFD_GET_INFO _IOWR(0xFF, 11, struct run_pidfd_info)
#define RUN_PIDFD_INFO_EXIT (UINT64_C(1) << 3)
#define RUN_EXIT_WAIT_USEC (5 * 1000000ULL)

/* The wait status of the ended process of pidfd. The kernel keeps it for pidfds once the parent
 * reaped the process: the executor does, when released (or PID 1 after it). */
static int pidfd_exit_status(int pidfd, int *ret) {
        for (uint64_t waited = 0; waited < RUN_EXIT_WAIT_USEC; waited += 10000) {
                struct run_pidfd_info info = { .mask = RUN_PIDFD_INFO_EXIT };
                if (ioctl(pidfd, RUN_PIDFD_GET_INFO, &info) < 0 && errno != ESRCH)
                        return errno == ENOTTY || errno == EINVAL ? -EOPNOTSUPP : -errno;
                if (info.mask & RUN_PIDFD_INFO_EXIT) {
                        *ret = info.exit_code;
                        return 0;
                }
                usleep(10000);
        }
        return -ETIMEDOUT;
}

/* What a shell makes of a wait status: the exit status, or 128 + the signal. */
static int run_exit_code(int pidfd) {
        int status = 0, r = pidfd_exit_status(pidfd, &status);
        if (r < 0)
                return ctl_error_errno(r, "The command ended; its exit status cannot be read: %s",
                                       r == -EOPNOTSUPP ? "this kernel has no PIDFD_INFO_EXIT (Linux 6.15)" : strerror(-r));
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}

/* Wait for the command (pidfd) to end, handing it the signals that would have ended sectreectl:
 * it runs in the executor's session, which a terminal's ^C does not reach. */
static int run_wait(int pidfd, const sigset_t *forwarded) {
        _cleanup_close_ int sfd = signalfd(-1, forwarded, SFD_CLOEXEC);
        struct pollfd pfd[2] = { { .fd = pidfd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
        if (sfd < 0)
                return ctl_error_errno(-errno, "Failed to watch for signals: %m");
        for (;;) {
                if (poll(pfd, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return ctl_error_errno(-errno, "Failed to wait for the command: %m");
                }
                if (pfd[0].revents)
                        return 0;
                struct signalfd_siginfo si;
                if (pfd[1].revents && read(sfd, &si, sizeof(si)) == sizeof(si) &&
                    syscall(SYS_pidfd_send_signal, pidfd, (int) si.ssi_signo, NULL, 0) < 0 && errno != ESRCH)
                        log_warning("sectreectl: Failed to pass signal %u on to the command: %m", si.ssi_signo);
        }
}

/* COMMAND as given, or, with a slash but not absolute, from the caller's directory: the command
 * runs in the executor's, not here. */
static int run_command_path(char **args, char **ret_path) {
        *ret_path = NULL;
        if (args[0][0] == '/' || !strchr(args[0], '/'))
                return 0;
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        if (!cwd)
                return ctl_error_errno(-errno, "Failed to get the current directory: %m");
        if (asprintf(ret_path, "%s/%s", cwd, args[0]) < 0) {
                *ret_path = NULL;
                return log_oom();
        }
        args[0] = *ret_path;
        return 0;
}

int verb_run(Context *c, char **args, size_t n_args) {
        _cleanup_(restore_reply_done) RestoreReply reply = {};
        _cleanup_free_ char *path = NULL;
        uint32_t tgid = 0;
        uint64_t snapshot;
        sd_bus *bus;
        sigset_t forwarded;
        int r;

        if (c->like == 0)
                return usage_error("run needs --like=TID: the task whose chain the command runs under");
        r = run_command_path(args, &path);
        if (r < 0)
                return r;
        /* from now on, for the command: as sectreectl it would have ended on them */
        sigemptyset(&forwarded);
        sigaddset(&forwarded, SIGINT);
        sigaddset(&forwarded, SIGTERM);
        sigaddset(&forwarded, SIGHUP);
        sigaddset(&forwarded, SIGQUIT);
        (void) sigprocmask(SIG_BLOCK, &forwarded, NULL);
        r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = tgid_of(bus, c->like, &tgid);
        if (r < 0)
                return r;
        r = store_one_task_snapshot(bus, c->like, tgid, &snapshot);
        if (r < 0)
                return r;
        RunExec run = { .pid = tgid, .argv = args };
        r = call_restore(bus, c, snapshot, &run, &reply);
        (void) manager_delete_snapshot(bus, snapshot);
        if (r < 0)
                return r;
        if (!reply.verified || reply.n_pidfds != 1) {
                for (char **d = reply.differences; d && *d; d++)
                        log_error("sectreectl: difference: %s", *d);
                (void) bus_call_manager(bus, "ReleaseRestore", NULL, "t", reply.id);
                return ctl_error_errno(-EPROTO, "The copy of the chain of task %" PRIu32 " was not verified.", c->like);
        }
        log_info("Running %s as pid %" PRIu32 " under a verified copy of the chain of task %" PRIu32 " (restore %" PRIu64
                 ").",
                 args[0], reply.processes[0].b, c->like, reply.id);
        r = run_wait(reply.pidfds[0], &forwarded);
        if (r < 0)
                return r;
        r = bus_call_manager(bus, "ReleaseRestore", NULL, "t", reply.id);
        if (r < 0)
                return r;
        return run_exit_code(reply.pidfds[0]);
}
