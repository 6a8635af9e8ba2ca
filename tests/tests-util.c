/* tests-util.c: privilege checks that turn skips into failures in CI, comparisons of a scanned
 * Forest with a scenario's ground truth, and running, spawning and reading child processes */
#include "tests-util.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-sqlite-read.h"
#include "snapshot/snapshot-sqlite.h"
#include "snapshot/snapshot-validate.h"

#define TRACEFS_MAGIC_ 0x74726163

const struct sock_filter tests_prog_allow[1] = {
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};
const struct sock_filter tests_prog_errno[1] = {
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
};
const struct sock_filter tests_prog_log[2] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_LOG),
};

bool tests_require(bool condition, const char *why) {
        if (condition)
                return true;
        if (getenv("CI")) {
                g_test_message("CI must run this test, but: %s", why);
                g_test_fail();
        } else
                g_test_skip(why);
        return false;
}

bool tests_require_root(void) {
        return tests_require(geteuid() == 0, "needs root (CAP_SYS_ADMIN, CAP_BPF, CAP_SYS_PTRACE)");
}

void tests_ensure_tracefs(void) {
        struct statfs sf;
        if (statfs("/sys/kernel/tracing", &sf) == 0 && sf.f_type == TRACEFS_MAGIC_)
                return;
        if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0)
                g_test_message("mounting tracefs: %s", g_strerror(errno));
}

static void assert_filter_matches(const Filter *flt, const ScenarioNode *node, const Scenario *s, pid_t tid,
                                  int depth) {
        if (flt->len != node->len || memcmp(flt->insns, node->insns, node->len * sizeof(struct sock_filter)) != 0)
                g_error("task %d, chain position %d: filter %" PRIu64 " has %zu insns, different from node %d (%zu insns)",
                        tid, depth, flt->id, flt->len, node->id, node->len);
        g_assert_cmpint(flt->log, ==, !!(node->flags & SECCOMP_FILTER_FLAG_LOG));
        g_assert_cmpint(flt->wait_killable_recv, ==, !!(node->flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV));
}

typedef struct Bijection {
        uint64_t *node_to_filter; /* index node id */
        GHashTable *filter_to_node;
} Bijection;

static void bijection_pair(Bijection *b, int node, uint64_t id, pid_t tid) {
        if (b->node_to_filter[node] == 0)
                b->node_to_filter[node] = id;
        if (b->node_to_filter[node] != id)
                g_error("task %d: node %d seen as filter %" PRIu64 " and as filter %" PRIu64
                        " (one kernel object reported under two ids)",
                        tid, node, b->node_to_filter[node], id);
        gpointer prev;
        if (g_hash_table_lookup_extended(b->filter_to_node, &b->node_to_filter[node], NULL, &prev)) {
                if (GPOINTER_TO_INT(prev) != node)
                        g_error("task %d: filter %" PRIu64 " stands for both node %d and node %d "
                                "(two kernel objects reported as one)",
                                tid, id, GPOINTER_TO_INT(prev), node);
        } else
                g_hash_table_insert(b->filter_to_node, &b->node_to_filter[node], GINT_TO_POINTER(node));
}

static void assert_task_matches(const Forest *f, const Scenario *s, const ScenarioTaskInfo *info, bool exact,
                                Bijection *b) {
        Process *p = NULL;
        Task *t = forest_find_task(f, info->tid, &p);
        if (!t)
                g_error("scenario task %d (process %d) missing from the scan", info->tid, info->tgid);
        g_assert_cmpint(p->pid, ==, info->tgid);
        TaskMode want = info->strict ? TASK_MODE_STRICT : info->head >= 0 ? TASK_MODE_FILTER : TASK_MODE_DISABLED;
        if (t->mode != want)
                g_error("task %d: mode %s, expected %s", info->tid, task_mode_to_string(t->mode),
                        task_mode_to_string(want));

        const Filter *flt = t->filter;
        int depth = 0;
        for (int node = info->head; node >= 0; node = scenario_node(s, node)->parent, depth++) {
                if (!flt)
                        g_error("task %d: chain ends at depth %d, expected %d", info->tid, depth,
                                scenario_node_depth(s, info->head));
                assert_filter_matches(flt, scenario_node(s, node), s, info->tid, depth);
                if (exact)
                        bijection_pair(b, node, flt->id, info->tid);
                else if (flt->identity != IDENTITY_INFERRED)
                        g_error("task %d: filter %" PRIu64 " claims exact identity from an inferring backend",
                                info->tid, flt->id);
                flt = flt->parent;
        }
        if (flt)
                g_error("task %d: chain is longer than the %d filters installed", info->tid, depth);
}

void tests_assert_forest_matches(const Forest *f, const Scenario *s, bool exact) {
        g_assert_true(f->linked);
        Bijection b = {
                .node_to_filter = g_new0(uint64_t, scenario_n_nodes(s) + 1),
                .filter_to_node = g_hash_table_new(g_int64_hash, g_int64_equal),
        };
        for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *info = scenario_task(s, (ScenarioTask) i);
                if (info->alive)
                        assert_task_matches(f, s, info, exact, &b);
        }
        if (exact)
                for (size_t i = 0; i < f->n_filters; i++)
                        g_assert_cmpint(f->filters[i]->identity, ==, IDENTITY_EXACT);
        g_hash_table_destroy(b.filter_to_node);
        g_free(b.node_to_filter);
}

int tests_run_capture(char **argv, char **ret_out, char **ret_err) {
        g_autoptr(GError) error = NULL;
        int status;
        if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, ret_out, ret_err, &status, &error)) {
                g_test_message("spawning %s: %s", argv[0], error->message);
                return -1;
        }
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}

int tests_run_to_fd(const char *const *argv, int stdout_fd, char **ret_err) {
        g_autoptr(GError) error = NULL;
        GPid pid;
        int err_fd, status;
        if (!g_spawn_async_with_pipes_and_fds(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH, NULL,
                                              NULL, -1, stdout_fd, -1, NULL, NULL, 0, &pid, NULL, NULL, &err_fd, &error))
                g_error("spawning %s: %s", argv[0], error->message);
        g_autoptr(GIOChannel) ch = g_io_channel_unix_new(err_fd);
        g_io_channel_set_close_on_unref(ch, true);
        gsize len;
        g_assert_cmpint(g_io_channel_read_to_end(ch, ret_err, &len, &error), ==, G_IO_STATUS_NORMAL);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

GPtrArray *tests_argv_new(const char *program, const char *const *args) {
        GPtrArray *argv = g_ptr_array_new();
        g_ptr_array_add(argv, (char *) program);
        for (const char *const *a = args; *a; a++)
                g_ptr_array_add(argv, (char *) *a);
        g_ptr_array_add(argv, NULL);
        return argv;
}

char *tests_sqlite_query(const char *db, const char *sql) {
        g_autofree char *out = NULL, *err = NULL;
        g_autofree char *uri = g_strdup_printf("file:%s?mode=ro", db);
        char *argv[] = { (char *) "sqlite3", uri, (char *) sql, NULL };
        if (tests_run_capture(argv, &out, &err) != 0)
                g_error("sqlite3 %s: %s", sql, err);
        return g_strstrip(g_strdup(out));
}

void tests_remove_dir(const char *dir) {
        if (!dir)
                return;
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *n;
        while (d && (n = g_dir_read_name(d))) {
                g_autofree char *path = g_build_filename(dir, n, NULL);
                unlink(path);
        }
        rmdir(dir);
}

void tests_die_with_parent(gpointer userdata) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
}

char *tests_read_line(int fd, GString *buf, gint64 deadline) {
        for (;;) {
                char *nl = memchr(buf->str, '\n', buf->len);
                if (nl) {
                        char *line = g_strndup(buf->str, (gsize) (nl - buf->str));
                        g_string_erase(buf, 0, nl - buf->str + 1);
                        return line;
                }
                gint64 left = deadline - g_get_monotonic_time();
                if (left <= 0)
                        return NULL;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, (int) (left / 1000) + 1) <= 0)
                        continue;
                char chunk[4096];
                ssize_t n = read(fd, chunk, sizeof(chunk));
                if (n <= 0)
                        return NULL;
                g_string_append_len(buf, chunk, n);
        }
}

/* The thread left when the leader exits (userdata non-NULL: it drops its capabilities, the
 * leader's stay as they were): ready once the leader is a zombie. */
static void *exited_leader_thread(void *userdata) {
        if (userdata) {
                struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
                struct __user_cap_data_struct d[2] = {};
                if (syscall(SYS_capset, &h, d) < 0)
                        _exit(5);
        }
        for (int i = 0; i < 10000; i++) {
                char buf[512];
                _cleanup_fclose_ FILE *f = fopen("/proc/self/stat", "re"); /* the leader's */
                const char *p = f && fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
                if (p && p[1] == ' ' && p[2] == 'Z')
                        break;
                usleep(1000);
        }
        (void) !write(3, "x", 1);
        close(3);
        for (;;)
                pause();
        return NULL;
}

/* The child of tests_spawn_nobody_with(): exits 1 if it cannot become nobody as asked, 2 if the
 * filter is refused, 3 if it cannot enter a user namespace, 4 if its thread cannot start, 5 if
 * that thread cannot drop its capabilities. */
static _Noreturn void nobody_child(int ready_fd, pid_t parent, const struct sock_filter *insns, size_t n,
                                   const TestsNobodyOptions *o) {
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = (struct sock_filter *) insns };
        uid_t suid = o->saved_uid ? o->saved_uid : 65534;
        gid_t sgid = o->saved_gid ? o->saved_gid : 65534;
        /* keep nothing of the test's (scenario sockets, the bus): only the pipe's end */
        if (dup2(ready_fd, 3) < 0 || close_range(4, ~0U, 0) < 0)
                _exit(1);
        if (o->keep_caps && prctl(PR_SET_KEEPCAPS, 1) < 0)
                _exit(1);
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, sgid) < 0 || setresuid(65534, 65534, suid) < 0)
                _exit(1);
        /* after the change of credentials, which clears the parent-death signal */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(1);
        if (o->comm)
                prctl(PR_SET_NAME, o->comm);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        prctl(PR_SET_DUMPABLE, o->not_dumpable ? 0 : 1);
        if (o->new_userns && unshare(CLONE_NEWUSER) < 0)
                _exit(3);
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(2);
        if (o->with_child && fork() == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (o->child_not_dumpable)
                        prctl(PR_SET_DUMPABLE, 0);
                pause();
                _exit(0);
        }
        if (o->leader_exits) {
                pthread_t thread;
                if (pthread_create(&thread, NULL, exited_leader_thread, o->thread_drops_caps ? (void *) o : NULL) != 0)
                        _exit(4);
                syscall(SYS_exit, 0); /* the leader alone */
        }
        (void) !write(3, "x", 1);
        close(3);
        pause();
        _exit(0);
}

pid_t tests_spawn_nobody_with(const TestsNobodyOptions *o) {
        struct sock_filter insns[16];
        size_t n = scenario_filter_errno(insns, SYS_acct, 3, 0);
        int pipefd[2];
        pid_t parent = getpid();
        g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                nobody_child(pipefd[1], parent, insns, n, o);
        close(pipefd[1]);
        char c;
        ssize_t r = read(pipefd[0], &c, 1);
        close(pipefd[0]);
        if (r != 1) {
                int status = 0;
                (void) waitpid(pid, &status, 0);
                g_error("the process of nobody did not get ready (exit status %d)",
                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
        return pid;
}

pid_t tests_fork_named(const char *comm) {
        pid_t pid = fork();
        if (pid < 0)
                _exit(97);
        if (pid == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_NAME, comm) < 0))
                _exit(96);
        return pid;
}

_Noreturn void tests_pause_forever(void) {
        for (;;)
                pause();
}

pid_t tests_spawn_nobody(const char *comm, bool with_child) {
        return tests_spawn_nobody_with(&(TestsNobodyOptions) { .comm = comm, .with_child = with_child });
}

void tests_become(uid_t uid) {
        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(99);
}

pid_t tests_as_uid_start(uid_t uid, void (*fn)(void *userdata), void *userdata) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                tests_become(uid);
                alarm(120);
                fn(userdata);
                _exit(0);
        }
        return pid;
}

pid_t tests_as_nobody_start(void (*fn)(void *userdata), void *userdata) {
        return tests_as_uid_start(65534, fn, userdata);
}

int tests_wait_status(pid_t pid) {
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int tests_as_nobody(void (*fn)(void *userdata), void *userdata) {
        return tests_wait_status(tests_as_nobody_start(fn, userdata));
}

void tests_handshake_open(TestsHandshake *h) {
        g_assert_cmpint(pipe2(h->held, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(h->go, O_CLOEXEC), ==, 0);
}

void tests_handshake_hold(TestsHandshake *h) {
        char c;
        g_assert_cmpint(write(h->held[1], "h", 1), ==, 1);
        g_assert_cmpint(read(h->go[0], &c, 1), ==, 1);
}

void tests_handshake_wait_held(TestsHandshake *h) {
        char c;
        close(h->held[1]);
        close(h->go[0]);
        g_assert_cmpint(read(h->held[0], &c, 1), ==, 1);
}

void tests_handshake_go(TestsHandshake *h) {
        g_assert_cmpint(write(h->go[1], "g", 1), ==, 1);
        close(h->held[0]);
        close(h->go[1]);
}

size_t tests_filter_notify(struct sock_filter *insns, int nr) {
        size_t n = 0;
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        insns[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        insns[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned) nr, 0, 1);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        return n;
}

void tests_filters_init(TestFilters *x) {
        x->na = scenario_filter_errno(x->a, SYS_getpriority, 1, 0);
        x->nb = scenario_filter_errno(x->b, SYS_acct, 2, 3);
        x->nc = scenario_filter_errno(x->c, SYS_swapon, 3, 7);
}

Scenario *tests_scenario_new(void) {
        Scenario *s = NULL;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        return s;
}

Scenario *tests_scenario_with_filters(TestFilters *x) {
        tests_filters_init(x);
        return tests_scenario_new();
}

ScenarioTask tests_fork_install(Scenario *s, ScenarioTask parent, const struct sock_filter *insns, size_t n,
                                unsigned flags) {
        ScenarioTask t = scenario_fork(s, parent);
        g_assert_cmpint(t, >=, 0);
        g_assert_cmpint(scenario_install(s, t, insns, n, flags), >=, 0);
        g_autofree char *what = g_strdup_printf("scenario agent %d", (int) scenario_task(s, t)->tgid);
        tests_fail_point("scenario", what);
        return t;
}

const Task *tests_find_task(const Forest *f, const Scenario *s, ScenarioTask t) {
        const Task *task = forest_find_task(f, scenario_task(s, t)->tid, NULL);
        g_assert_nonnull(task);
        return task;
}

void tests_assert_valid_snapshot(const Forest *f) {
        g_autofree char *json = NULL, *again = NULL, *error = NULL;
        g_autofree void *image = NULL;
        g_autoptr(Forest) g = NULL;
        g_autoptr(Forest) h = NULL;
        size_t size;

        if (snapshot_validate(f, &error) < 0)
                g_error("the scan is not a valid snapshot: %s", error);
        g_assert_cmpint(snapshot_json_format(f, 0, &json), ==, 0);
        if (snapshot_json_read(json, strlen(json), &g, &error) < 0)
                g_error("JSON: %s", error);
        g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
        if (snapshot_sqlite_read_data(image, size, &h, &error) < 0)
                g_error("SQLite: %s", error);
        g_assert_cmpint(snapshot_json_format(h, 0, &again), ==, 0);
        g_assert_cmpstr(json, ==, again);
}

bool tests_listener_has_holder(const Listener *l, pid_t pid, int fd) {
        for (size_t i = 0; i < l->n_holders; i++)
                if (l->holders[i].pid == pid && l->holders[i].fd == fd)
                        return true;
        return false;
}

const Listener *tests_listener_held_by(const Forest *f, pid_t pid, int fd) {
        for (size_t i = 0; i < f->n_listeners; i++)
                if (tests_listener_has_holder(f->listeners[i], pid, fd))
                        return f->listeners[i];
        return NULL;
}

const Process *tests_assert_holder_present(const Forest *f, const Listener *l, const Scenario *s, ScenarioTask t,
                                           int fd, size_t n_threads) {
        pid_t pid = scenario_task(s, t)->tgid;
        const Process *p = forest_find_process(f, pid);
        g_assert_true(tests_listener_has_holder(l, pid, fd));
        g_assert_true(tests_listener_held_by(f, pid, fd) == l);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->n_threads, ==, n_threads);
        for (size_t i = 0; i < p->n_threads; i++)
                g_assert_cmpint(p->threads[i].mode, ==, TASK_MODE_DISABLED);
        return p;
}

static void on_sigterm(int sig) {
        /* Diagnostics on the way out: g_test_get_path() only reads a string GLib keeps. */
        const char *path = g_test_get_path();
        static const char pre[] = "\nkilled (SIGTERM, the runner's timeout?) while running ";
        (void) !write(STDERR_FILENO, pre, sizeof(pre) - 1);
        if (path)
                (void) !write(STDERR_FILENO, path, strlen(path));
        (void) !write(STDERR_FILENO, "\n", 1);
        signal(sig, SIG_DFL);
        raise(sig);
}

void tests_init(int *argc, char ***argv) {
        tests_guard_start();
        g_test_init(argc, argv, NULL);
        signal(SIGTERM, on_sigterm);
}

bool tests_wait_for(bool (*cond)(void *userdata), void *userdata, unsigned timeout_ms) {
        gint64 end = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        do {
                if (cond(userdata))
                        return true;
                g_usleep(5000);
        } while (g_get_monotonic_time() < end);
        return cond(userdata);
}

void *tests_snapshot_sqlite_mutated(const Forest *f, const char *sql, size_t *ret_size) {
        g_autofree char *dir = g_dir_make_tmp("sectree-snapshot-XXXXXX", NULL);
        g_assert_nonnull(dir);
        g_autofree char *path = g_build_filename(dir, "s.db", NULL);
        sqlite3 *db;
        char *err = NULL;
        gchar *data;
        gsize size;

        g_assert_cmpint(snapshot_sqlite_write(f, path), ==, 0);
        g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
        if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
                g_error("test SQL failed: %s: %s", sql, err);
        g_assert_cmpint(sqlite3_close(db), ==, SQLITE_OK);
        g_assert_true(g_file_get_contents(path, &data, &size, NULL));
        tests_remove_dir(dir);
        *ret_size = size;
        return data;
}
