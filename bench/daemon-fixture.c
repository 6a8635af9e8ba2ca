/* daemon-fixture.c: starts a private dbus-daemon and sectreed on it, waits for READY=1, and
 * tears both down */
#include "daemon-fixture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "bench.h"

#define DEFAULT_READY_TIMEOUT_SEC 60
#define SOCKET_TIMEOUT_USEC (5ULL * 1000 * 1000)
#define STOP_TIMEOUT_USEC (10ULL * 1000 * 1000)
#define LOG_TAIL_BYTES 4096

extern char **environ;

struct DaemonFixture {
        char *dir;
        char *socket_path;
        char *address;
        pid_t bus_pid, daemon_pid;
        int notify_fd;
        uint64_t ready_nsec;
};

static char *path_join(const char *dir, const char *name) {
        char *p;
        return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

static int read_file(const char *path, char **ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t size = 0;

        if (!f)
                return log_error_errno(-errno, "Failed to open %s: %m", path);
        FILE *m = open_memstream(&buf, &size);
        if (!m)
                return log_oom();
        char chunk[4096];
        size_t n;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                fwrite(chunk, 1, n, m);
        if (fclose(m) != 0 || ferror(f)) {
                free(buf);
                return log_error_errno(-EIO, "Failed to read %s.", path);
        }
        *ret = buf;
        return 0;
}

/* template with every @NAME@ replaced: written to out. */
static void write_replaced(FILE *out, const char *template, const char *const *names, const char *const *values,
                           size_t n) {
        for (const char *p = template; *p;) {
                size_t i;
                for (i = 0; i < n; i++)
                        if (strncmp(p, names[i], strlen(names[i])) == 0)
                                break;
                if (i < n) {
                        fputs(values[i], out);
                        p += strlen(names[i]);
                } else
                        fputc(*p++, out);
        }
}

static int write_bus_config(DaemonFixture *f, char **ret_path) {
        static const char *const names[] = { "@DIR@", "@POLICY@" };
        _cleanup_free_ char *template = NULL, *path = path_join(f->dir, "bus.conf");
        int r = read_file(SECTREE_SOURCE_DIR "/dbus/private-system-bus.conf.in", &template);

        if (r < 0)
                return r;
        if (!path)
                return log_oom();
        const char *const values[] = { f->dir, SECTREE_SOURCE_DIR "/dbus/org.sectree1.conf" };
        _cleanup_fclose_ FILE *out = fopen(path, "we");
        if (!out)
                return log_error_errno(-errno, "Failed to create %s: %m", path);
        write_replaced(out, template, names, values, ELEMENTSOF(names));
        if (fflush(out) != 0)
                return log_error_errno(-errno, "Failed to write %s: %m", path);
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* In the child: die with the benchmark, stdout to /dev/null, stderr to log (or /dev/null). */
static void child_setup(pid_t parent, const char *log) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        int err = log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(127);
        if (null >= 0) {
                dup2(null, STDIN_FILENO);
                dup2(null, STDOUT_FILENO);
                dup2(err >= 0 ? err : null, STDERR_FILENO);
        }
        /* The benchmark's signal mask and dispositions are not the daemon's business. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGCHLD, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
}

static int spawn(char *const argv[], char *const envp[], const char *log, pid_t *ret) {
        pid_t parent = getpid();

        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
                return log_error_errno(-errno, "Failed to fork for %s: %m", argv[0]);
        if (pid == 0) {
                child_setup(parent, log);
                if (strchr(argv[0], '/'))
                        execve(argv[0], argv, envp);
                else
                        execvpe(argv[0], argv, envp);
                fprintf(stderr, "Failed to execute %s: %m\n", argv[0]);
                _exit(127);
        }
        *ret = pid;
        return 0;
}

/* Reap pid within timeout: 1 when it exited, 0 when it still runs. */
static int wait_exit(pid_t pid, uint64_t timeout_usec) {
        uint64_t end = now_nsec() + timeout_usec * 1000;
        struct timespec tick = { .tv_nsec = 1000 * 1000 };

        for (;;) {
                pid_t k = waitpid(pid, NULL, WNOHANG);
                if (k == pid || (k < 0 && errno == ECHILD))
                        return 1;
                if (now_nsec() > end)
                        return 0;
                nanosleep(&tick, NULL);
        }
}

static void stop_process(pid_t *pid) {
        if (*pid <= 0)
                return;
        (void) kill(*pid, SIGTERM);
        if (!wait_exit(*pid, STOP_TIMEOUT_USEC)) {
                log_warning("Process %d did not exit on SIGTERM, killing it.", (int) *pid);
                (void) kill(*pid, SIGKILL);
                (void) wait_exit(*pid, STOP_TIMEOUT_USEC);
        }
        *pid = 0;
}

static int start_bus(DaemonFixture *f) {
        _cleanup_free_ char *config = NULL, *arg = NULL;
        int r = write_bus_config(f, &config);

        if (r < 0)
                return r;
        if (asprintf(&arg, "--config-file=%s", config) < 0)
                return log_oom();
        char *argv[] = { (char *) "dbus-daemon", arg, (char *) "--nofork", (char *) "--nopidfile", NULL };
        r = spawn(argv, environ, NULL, &f->bus_pid);
        if (r < 0)
                return r;

        f->socket_path = path_join(f->dir, "system_bus_socket");
        if (!f->socket_path || asprintf(&f->address, "unix:path=%s", f->socket_path) < 0)
                return log_oom();
        for (uint64_t end = now_nsec() + SOCKET_TIMEOUT_USEC * 1000; now_nsec() < end;) {
                if (access(f->socket_path, F_OK) == 0)
                        return 0;
                if (waitpid(f->bus_pid, NULL, WNOHANG) == f->bus_pid) {
                        f->bus_pid = 0;
                        return log_error_errno(-ECHILD, "The private dbus-daemon exited while starting.");
                }
                usleep(1000);
        }
        return log_error_errno(-ETIMEDOUT, "The private dbus-daemon did not create %s.", f->socket_path);
}

static int open_notify_socket(DaemonFixture *f, char **ret_path) {
        _cleanup_free_ char *path = path_join(f->dir, "notify");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        if (!path)
                return log_oom();
        if (strlen(path) >= sizeof(sa.sun_path))
                return log_error_errno(-ENAMETOOLONG, "%s is too long for a socket.", path);
        strcpy(sa.sun_path, path);
        f->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (f->notify_fd < 0)
                return log_error_errno(-errno, "Failed to make the notify socket: %m");
        if (bind(f->notify_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return log_error_errno(-errno, "Failed to bind %s: %m", path);
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* environ, with the bus, the notify socket and extra entries set (replacing the same names). */
static char **daemon_environment(const DaemonFixture *f, const char *notify, char **extra) {
        size_t n_env = strv_length(environ), n_extra = strv_length(extra), k = 0;
        char **env = calloc(n_env + n_extra + 3, sizeof(char *));

        if (!env)
                return NULL;
        for (size_t i = 0; i < n_env; i++)
                if (strncmp(environ[i], "DBUS_SYSTEM_BUS_ADDRESS=", 24) != 0 &&
                    strncmp(environ[i], "NOTIFY_SOCKET=", 14) != 0)
                        if (!(env[k++] = strdup(environ[i])))
                                return strv_free(env);
        char *bus = NULL, *sock = NULL;
        if (asprintf(&bus, "DBUS_SYSTEM_BUS_ADDRESS=%s", f->address) < 0)
                return strv_free(env);
        env[k++] = bus;
        if (asprintf(&sock, "NOTIFY_SOCKET=%s", notify) < 0)
                return strv_free(env);
        env[k++] = sock;
        for (size_t i = 0; i < n_extra; i++)
                if (!(env[k++] = strdup(extra[i])))
                        return strv_free(env);
        return env;
}

static void print_log_tail(const DaemonFixture *f) {
        _cleanup_free_ char *path = path_join(f->dir, "sectreed.log"), *text = NULL;

        if (!path || read_file(path, &text) < 0)
                return;
        size_t n = strlen(text);
        fprintf(stderr, "--- sectreed's log (%s) ---\n%s--- end of log ---\n", path,
                n > LOG_TAIL_BYTES ? text + n - LOG_TAIL_BYTES : text);
}

/* Datagrams until one carries READY=1, the daemon dies, or the time is up. */
static int wait_ready(DaemonFixture *f, unsigned timeout_sec) {
        uint64_t end = now_nsec() + (uint64_t) timeout_sec * 1000000000ULL;
        char buf[4096];

        while (now_nsec() < end) {
                if (waitpid(f->daemon_pid, NULL, WNOHANG) == f->daemon_pid) {
                        f->daemon_pid = 0;
                        return log_error_errno(-ECHILD, "sectreed exited while starting.");
                }
                struct pollfd p = { .fd = f->notify_fd, .events = POLLIN };
                if (poll(&p, 1, 50) <= 0)
                        continue;
                ssize_t n = recv(f->notify_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
                if (n <= 0)
                        continue;
                buf[n] = 0;
                if (strstr(buf, "READY=1"))
                        return 0;
        }
        return log_error_errno(-ETIMEDOUT, "sectreed did not send READY=1 within %u s.", timeout_sec);
}

static int start_daemon(DaemonFixture *f, const DaemonFixtureOptions *o) {
        _cleanup_free_ char *notify = NULL, *state = NULL, *log = path_join(f->dir, "sectreed.log");
        _cleanup_strv_free_ char **env = NULL;
        const char *sectreed = getenv("SECTREED") ?: SECTREED_PATH;
        int r = open_notify_socket(f, &notify);

        if (r < 0)
                return r;
        if (!log || asprintf(&state, "--state-dir=%s/state", f->dir) < 0)
                return log_oom();
        if (access(sectreed, X_OK) < 0)
                return log_error_errno(-errno, "Cannot run %s (build it: ninja daemon/sectreed; or set $SECTREED): %m",
                                       sectreed);
        env = daemon_environment(f, notify, o->env);
        if (!env)
                return log_oom();
        char *argv[] = { (char *) sectreed, state, (char *) o->arg, NULL };
        uint64_t start = now_nsec();
        r = spawn(argv, env, log, &f->daemon_pid);
        if (r < 0)
                return r;
        r = wait_ready(f, o->ready_timeout_sec ?: DEFAULT_READY_TIMEOUT_SEC);
        if (r < 0) {
                print_log_tail(f);
                return r;
        }
        f->ready_nsec = now_nsec() - start;
        /* Nobody reads it from now on: once its queue was full, every sd_notify() of the daemon
         * (STATUS= at each full pass) would block its event loop. Gone, they fail at once. */
        close(f->notify_fd);
        f->notify_fd = -1;
        (void) unlink(notify);
        return 0;
}

int daemon_fixture_new(const DaemonFixtureOptions *o, DaemonFixture **ret) {
        _cleanup_(daemon_fixture_freep) DaemonFixture *f = calloc(1, sizeof(DaemonFixture));
        int r;

        if (!f)
                return log_oom();
        f->notify_fd = -1;
        r = bench_mkdtemp("bus", &f->dir);
        if (r < 0)
                return r;
        r = start_bus(f);
        if (r < 0)
                return r;
        r = start_daemon(f, o);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

DaemonFixture *daemon_fixture_free(DaemonFixture *f) {
        if (!f)
                return NULL;
        stop_process(&f->daemon_pid);
        stop_process(&f->bus_pid);
        if (f->notify_fd >= 0)
                close(f->notify_fd);
        if (f->dir) {
                bench_rm_rf(f->dir);
                free(f->dir);
        }
        free(f->socket_path);
        free(f->address);
        free(f);
        return NULL;
}

pid_t daemon_fixture_daemon_pid(const DaemonFixture *f) {
        return f->daemon_pid;
}

pid_t daemon_fixture_bus_pid(const DaemonFixture *f) {
        return f->bus_pid;
}

uint64_t daemon_fixture_ready_nsec(const DaemonFixture *f) {
        return f->ready_nsec;
}

/* page_count * page_size as a reader sees it (the WAL's frames included): the logical size, not
 * the files', whose WAL keeps its largest size. */
uint64_t daemon_fixture_state_bytes(const DaemonFixture *f) {
        _cleanup_free_ char *path = path_join(f->dir, "state/state.db");
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        uint64_t bytes = 0;

        if (path && sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size", -1, &st,
                               NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
                bytes = (uint64_t) sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close_v2(db);
        return bytes;
}

uint64_t daemon_fixture_wal_bytes(const DaemonFixture *f) {
        _cleanup_free_ char *path = path_join(f->dir, "state/state.db-wal");
        struct stat st;

        return path && stat(path, &st) == 0 ? (uint64_t) st.st_size : 0;
}

int daemon_fixture_read_log(const DaemonFixture *f, char **ret) {
        _cleanup_free_ char *path = path_join(f->dir, "sectreed.log");
        return path ? read_file(path, ret) : log_oom();
}

bool daemon_fixture_daemon_alive(DaemonFixture *f) {
        if (f->daemon_pid <= 0)
                return false;
        if (waitpid(f->daemon_pid, NULL, WNOHANG) == f->daemon_pid) {
                f->daemon_pid = 0;
                return false;
        }
        return true;
}

int daemon_fixture_connect(const DaemonFixture *f, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r = sd_bus_new(&bus);

        if (r >= 0)
                r = sd_bus_set_address(bus, f->address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, true);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return log_error_errno(r, "Failed to connect to the private bus %s: %m", f->address);
        }
        *ret = bus;
        return 0;
}
