/* bus-fixture.c: a private system-like dbus-daemon with sectree's bus policy, and the real sectreed
 * started on it */
#include "bus-fixture.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "tests-util.h"

/* dbus/private-system-bus.conf.in with its placeholders filled in. */
static char *private_bus_config(const char *dir, const char *policy) {
        g_autofree char *path = g_build_filename(SECTREE_SOURCE_DIR, "dbus", "private-system-bus.conf.in", NULL);
        g_autofree char *template = NULL;
        g_assert_true(g_file_get_contents(path, &template, NULL, NULL));
        g_auto(GStrv) a = g_strsplit(template, "@DIR@", -1);
        g_autofree char *with_dir = g_strjoinv(dir, a);
        g_auto(GStrv) b = g_strsplit(with_dir, "@POLICY@", -1);
        return g_strjoinv(policy, b);
}

static void wait_for_socket(const char *path) {
        for (int i = 0; i < 5000; i++) {
                if (g_file_test(path, G_FILE_TEST_EXISTS))
                        return;
                g_usleep(1000);
        }
        g_error("the private dbus-daemon did not create %s", path);
}

/* A copy of /etc/passwd with passwd_line added, in b->dir. */
static char *passwd_with(const BusFixture *b, const char *passwd_line) {
        g_autofree char *passwd = NULL;
        g_assert_true(g_file_get_contents("/etc/passwd", &passwd, NULL, NULL));
        g_autofree char *contents = g_strdup_printf("%s%s\n", passwd, passwd_line);
        char *path = g_build_filename(b->dir, "passwd", NULL);
        g_assert_true(g_file_set_contents(path, contents, -1, NULL));
        return path;
}

static void spawn_bus(BusFixture *b, const char *config_path, const char *passwd_line) {
        g_autofree char *arg = g_strdup_printf("--config-file=%s", config_path);
        g_autofree char *passwd = passwd_line ? passwd_with(b, passwd_line) : NULL;
        char *plain[] = { (char *) "dbus-daemon", arg, (char *) "--nofork", (char *) "--nopidfile", NULL };
        /* the same dbus-daemon (unshare and sh exec it), in a mount namespace of its own */
        char *with_user[] = { (char *) "unshare", (char *) "--mount", (char *) "sh", (char *) "-c",
                              (char *) "mount --bind \"$0\" /etc/passwd && exec dbus-daemon \"$@\"", passwd, arg,
                              (char *) "--nofork", (char *) "--nopidfile", NULL };
        g_autoptr(GError) error = NULL;
        /* Its output would keep meson's pipe open if it outlived an aborted test: it dies with us. */
        if (!g_spawn_async(NULL, passwd ? with_user : plain, NULL,
                           G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                                   G_SPAWN_STDERR_TO_DEV_NULL,
                           tests_die_with_parent, NULL, &b->bus_pid, &error))
                g_error("starting dbus-daemon: %s", error->message);
}

void bus_fixture_start_bus_knowing(BusFixture *b, const char *passwd_line) {
        *b = (BusFixture) { .notify_fd = -1 };
        b->dir = g_dir_make_tmp("sectree-bus-XXXXXX", NULL);
        g_assert_nonnull(b->dir);
        g_assert_cmpint(chmod(b->dir, 0755), ==, 0);
        g_autofree char *policy = g_build_filename(SECTREE_SOURCE_DIR, "dbus", "org.sectree1.conf", NULL);
        g_autofree char *config = private_bus_config(b->dir, policy);
        g_autofree char *config_path = g_build_filename(b->dir, "bus.conf", NULL);
        g_assert_true(g_file_set_contents(config_path, config, -1, NULL));
        spawn_bus(b, config_path, passwd_line);
        g_autofree char *sock = g_build_filename(b->dir, "system_bus_socket", NULL);
        wait_for_socket(sock);
        b->address = g_strdup_printf("unix:path=%s", sock);
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", b->address, true);
        b->state_dir = g_build_filename(b->dir, "state", NULL);
}

void bus_fixture_start_bus(BusFixture *b) {
        bus_fixture_start_bus_knowing(b, NULL);
}

static void open_notify_socket(BusFixture *b) {
        if (b->notify_fd >= 0)
                return;
        b->notify_path = g_build_filename(b->dir, "notify", NULL);
        b->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        g_assert_cmpint(b->notify_fd, >=, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        g_strlcpy(sa.sun_path, b->notify_path, sizeof(sa.sun_path));
        g_assert_cmpint(bind(b->notify_fd, (struct sockaddr *) &sa, sizeof(sa)), ==, 0);
}

/* Read datagrams until one carries READY=1, or the daemon dies, or time runs out. */
static bool wait_ready(BusFixture *b, unsigned timeout_sec) {
        gint64 end = g_get_monotonic_time() + (gint64) timeout_sec * G_USEC_PER_SEC;
        char buf[4096];
        while (g_get_monotonic_time() < end) {
                int status;
                if (waitpid(b->daemon_pid, &status, WNOHANG) == b->daemon_pid) {
                        b->daemon_pid = 0;
                        return false;
                }
                struct timeval tv = { .tv_usec = 50000 };
                setsockopt(b->notify_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                ssize_t n = recv(b->notify_fd, buf, sizeof(buf) - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = 0;
                if (strstr(buf, "READY=1"))
                        return true;
        }
        return false;
}

void bus_fixture_start_daemon(BusFixture *b, char **args, char **env, unsigned timeout_sec) {
        open_notify_socket(b);
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
        g_ptr_array_add(argv, g_strdup(g_getenv("SECTREED")));
        g_ptr_array_add(argv, g_strdup_printf("--state-dir=%s", b->state_dir));
        for (char **a = args; a && *a; a++)
                g_ptr_array_add(argv, g_strdup(*a));
        g_ptr_array_add(argv, NULL);
        g_auto(GStrv) envp = g_get_environ();
        envp = g_environ_setenv(envp, "NOTIFY_SOCKET", b->notify_path, true);
        for (char **e = env; e && *e; e++) {
                g_auto(GStrv) kv = g_strsplit(*e, "=", 2);
                envp = g_environ_setenv(envp, kv[0], kv[1], true);
        }
        g_autoptr(GError) error = NULL;
        if (!g_spawn_async(NULL, (char **) argv->pdata, envp, G_SPAWN_DO_NOT_REAP_CHILD, tests_die_with_parent, NULL,
                           &b->daemon_pid, &error))
                g_error("starting sectreed: %s", error->message);
        if (!wait_ready(b, timeout_sec))
                g_error("sectreed did not send READY=1 within %u s", timeout_sec);
        g_autofree char *what = g_strdup_printf("dbus-daemon %d, sectreed %d", (int) b->bus_pid, (int) b->daemon_pid);
        tests_fail_point("daemon", what);
        /* Nobody reads the socket from now on: a daemon sending STATUS= lines into a full queue
         * would block in sd_notify(). Without the socket it gets an error and goes on. */
        close(b->notify_fd);
        b->notify_fd = -1;
        (void) unlink(b->notify_path);
        g_clear_pointer(&b->notify_path, g_free);
}

bool bus_fixture_start_all(BusFixture *b, char **args, char **env) {
        if (!tests_require_root())
                return false;
        tests_ensure_tracefs();
        bus_fixture_start_bus(b);
        bus_fixture_start_daemon(b, args, env, 30);
        return true;
}

Scenario *bus_fixture_start_with_scenario(BusFixture *b, Scenario *(*build)(void), char **args, char **env) {
        if (!tests_require_root())
                return NULL;
        Scenario *s = build();
        g_assert_true(bus_fixture_start_all(b, args, env));
        return s;
}

int bus_fixture_stop_daemon(BusFixture *b, int sig) {
        if (b->daemon_pid <= 0)
                return -1;
        int status = 0;
        kill(b->daemon_pid, sig);
        g_assert_cmpint(waitpid(b->daemon_pid, &status, 0), ==, b->daemon_pid);
        b->daemon_pid = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void bus_fixture_stop(BusFixture *b) {
        if (b->daemon_pid > 0)
                (void) bus_fixture_stop_daemon(b, SIGKILL);
        if (b->bus_pid > 0) {
                kill(b->bus_pid, SIGTERM);
                waitpid(b->bus_pid, NULL, 0);
        }
        if (b->notify_fd >= 0)
                close(b->notify_fd);
        if (b->dir) {
                g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", b->dir);
                (void) !system(cmd);
        }
        g_free(b->dir);
        g_free(b->address);
        g_free(b->state_dir);
        g_free(b->notify_path);
        g_unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
        *b = (BusFixture) { .notify_fd = -1 };
}

void bus_fixture_finish(BusFixture *b) {
        g_assert_cmpint(bus_fixture_stop_daemon(b, SIGTERM), ==, 0);
        bus_fixture_stop(b);
}

int bus_fixture_run(BusFixture *b, bool as_nobody, char **argv, char **out, char **err) {
        g_autoptr(GPtrArray) full = g_ptr_array_new();
        if (as_nobody) {
                static char *setpriv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", NULL };
                for (char **a = setpriv; *a; a++)
                        g_ptr_array_add(full, *a);
        }
        for (char **a = argv; *a; a++)
                g_ptr_array_add(full, *a);
        g_ptr_array_add(full, NULL);
        g_auto(GStrv) envp = g_environ_setenv(g_get_environ(), "DBUS_SYSTEM_BUS_ADDRESS", b->address, true);
        g_autoptr(GError) error = NULL;
        int status;
        if (!g_spawn_sync(NULL, (char **) full->pdata, envp, G_SPAWN_SEARCH_PATH, NULL, NULL, out, err, &status,
                          &error))
                g_error("running %s: %s", argv[0], error->message);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}


void daemon_log_begin(DaemonLog *l) {
        g_autoptr(GError) error = NULL;
        int fd = g_file_open_tmp("sectree-daemon-XXXXXX.log", &l->path, &error);
        if (fd < 0)
                g_error("daemon log: %s", error->message);
        l->saved_fd = dup(STDERR_FILENO);
        g_assert_cmpint(l->saved_fd, >=, 0);
        g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
        close(fd);
}

void daemon_log_started(DaemonLog *l) {
        g_assert_cmpint(dup2(l->saved_fd, STDERR_FILENO), ==, STDERR_FILENO);
        close(l->saved_fd);
        l->saved_fd = -1;
}

char *daemon_log_text(const DaemonLog *l) {
        char *text = NULL;
        if (!g_file_get_contents(l->path, &text, NULL, NULL))
                return g_strdup("");
        return text;
}

unsigned daemon_log_count(const DaemonLog *l, const char *what) {
        g_autofree char *text = daemon_log_text(l);
        unsigned n = 0;
        for (const char *at = text; (at = strstr(at, what)); at += strlen(what))
                n++;
        return n;
}

bool daemon_log_has(void *userdata) {
        const DaemonLog *l = userdata;
        g_autofree char *text = daemon_log_text(l);
        const char *at = text;
        for (const char *const *line = l->lines; *line && at; line++)
                if ((at = strstr(at, *line)))
                        at += strlen(*line);
        return at != NULL;
}

void daemon_log_end(DaemonLog *l) {
        g_autofree char *text = daemon_log_text(l);
        fputs(text, stderr);
        unlink(l->path);
        g_free(l->path);
}
