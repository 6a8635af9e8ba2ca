/* test-sectreed-cli.c: what sectreed says to whoever runs it without what it needs: one line
 * naming the capabilities, no libbpf noise, one summary of the threads a ptrace scan could not
 * read (and exit 1 when it read nothing); --log-level and SYSTEMD_LOG_LEVEL; tracefs mounted by
 * the daemon itself is said; a scan whose output cannot be written says why, or ends quietly
 * when its reader went away */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tests-util.h"

#define NOBODY "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"

typedef struct Run {
        int status;
        char *out, *err;
} Run;

static void run_done(Run *r) {
        g_free(r->out);
        g_free(r->err);
}

/* This process's environment with extra entries (may be NULL). */
static GStrv environ_with(const char *const *env) {
        GStrv envp = g_get_environ();
        for (; env && *env; env++) {
                g_auto(GStrv) kv = g_strsplit(*env, "=", 2);
                envp = g_environ_setenv(envp, kv[0], kv[1], true);
        }
        return envp;
}

/* Run argv (NULL-terminated) with extra environment entries (may be NULL). */
static Run run(const char *const *argv, const char *const *env) {
        Run r = {};
        g_auto(GStrv) envp = environ_with(env);
        g_autoptr(GError) error = NULL;
        int status;
        if (!g_spawn_sync(NULL, (char **) argv, envp, G_SPAWN_SEARCH_PATH, NULL, NULL, &r.out, &r.err, &status, &error))
                g_error("running %s: %s", argv[0], error->message);
        r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return r;
}

static guint count_lines(const char *s) {
        guint n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

/* A process of root's under a filter: something a ptrace scan by nobody cannot read. *ret_root
 * gets "--root=PID" for the scans of its subtree: a scan of the whole machine would read the
 * processes of nobody that other programs run meanwhile (a parallel test run) and take its time
 * on a loaded machine. */
static Scenario *filtered_scenario(pid_t *ret_pid, char **ret_root) {
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask t = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        if (ret_pid)
                *ret_pid = scenario_task(s, t)->tid;
        *ret_root = g_strdup_printf("--root=%d", (int) scenario_root_pid(s));
        return s;
}

static void test_not_root(void) {
        if (!tests_require_root())
                return;
        const char *sectreed = g_getenv("SECTREED");
        pid_t filtered;
        g_autofree char *root = NULL;
        Scenario *s = filtered_scenario(&filtered, &root);

        /* the bpf backend, one-shot and as the service: one line naming what is missing */
        const char *bpf_scan[] = { NOBODY, sectreed, "scan", NULL };
        const char *service[] = { NOBODY, sectreed, "--state-dir=/nonexistent/sectree-test", NULL };
        const char *const *bpf_cases[] = { bpf_scan, service };
        for (size_t i = 0; i < G_N_ELEMENTS(bpf_cases); i++) {
                Run r = run(bpf_cases[i], NULL);
                g_test_message("exit %d, stderr: %s", r.status, r.err);
                g_assert_cmpint(r.status, ==, 1);
                g_assert_cmpstr(r.out, ==, "");
                g_assert_cmpuint(count_lines(r.err), ==, 1);
                g_assert_true(g_str_has_prefix(r.err, "The bpf backend needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN"));
                g_assert_nonnull(strstr(r.err, "lacks CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN: run sectreed as root"));
                g_assert_null(strstr(r.err, "libbpf"));
                run_done(&r);
        }

        /* CAP_BPF and CAP_PERFMON without CAP_SYS_ADMIN: the line names only what is missing */
        const char *split_caps[] = { NOBODY, "--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon", sectreed,
                                     "scan", NULL };
        Run split = run(split_caps, NULL);
        g_test_message("exit %d, stderr: %s", split.status, split.err);
        g_assert_cmpint(split.status, ==, 1);
        g_assert_cmpstr(split.err, ==, "The bpf backend needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN to load its BPF "
                                       "programs, and this process lacks CAP_SYS_ADMIN: run sectreed as root (its "
                                       "unit does).\n");
        run_done(&split);

        /* ptrace without CAP_SYS_ADMIN reads nothing: one line */
        const char *ptrace_scan[] = { NOBODY, sectreed, "scan", "--backend=ptrace", root, NULL };
        Run r = run(ptrace_scan, NULL);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_cmpstr(r.out, ==, "");
        g_assert_cmpstr(r.err, ==, "The ptrace backend needs CAP_SYS_ADMIN to read filters (PTRACE_SECCOMP_GET_FILTER), "
                                   "and this process lacks it: run sectreed as root.\n");
        run_done(&r);

        /* with CAP_SYS_ADMIN but not CAP_SYS_PTRACE, root's filtered processes stay unreadable: a
         * warning, one summary of them, and exit 1 since it read nothing */
        const char *admin_scan[] = { NOBODY, "--inh-caps=+sys_admin", "--ambient-caps=+sys_admin", sectreed, "scan",
                                     "--backend=ptrace", root, NULL };
        r = run(admin_scan, NULL);
        g_test_message("exit %d, stderr: %s", r.status, r.err);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_cmpstr(r.out, ==, "");
        g_assert_cmpuint(count_lines(r.err), ==, 2);
        g_assert_true(g_str_has_prefix(r.err, "Without CAP_SYS_PTRACE only this user's own processes can be read.\n"
                                              "Could not read the filters of "));
        g_assert_nonnull(strstr(r.err, " (Operation not permitted: "));
        g_assert_true(g_str_has_suffix(r.err, "); the log at debug level names them.\n"));
        run_done(&r);

        /* ... and at debug level each of them, as many as the summary counts, root's scenario
         * process among them */
        const char *debug_env[] = { "SYSTEMD_LOG_LEVEL=debug", NULL };
        r = run(admin_scan, debug_env);
        g_test_message("%.300s", r.err);
        g_autoptr(GRegex) re = g_regex_new("^Could not read the filters of ([0-9]+) threads? \\(", G_REGEX_MULTILINE, 0, NULL);
        g_autoptr(GMatchInfo) m = NULL;
        g_assert_true(g_regex_match(re, r.err, 0, &m));
        g_autofree char *count = g_match_info_fetch(m, 1);
        guint n = (guint) g_ascii_strtoull(count, NULL, 10);
        guint named = 0;
        g_auto(GStrv) lines = g_strsplit(r.err, "\n", -1);
        for (char **l = lines; *l; l++)
                named += g_str_has_prefix(*l, "Could not read the filters of thread ");
        g_assert_cmpuint(n, >, 0);
        g_assert_cmpuint(named, ==, n);
        g_autofree char *ours = g_strdup_printf("Could not read the filters of thread %d: ", filtered);
        g_assert_nonnull(strstr(r.err, ours));
        run_done(&r);
        scenario_free(s);
}

/* PID 1 of a pid namespace with its own /proc: a child of root's (pid 2) under a filter, then argv
 * with envp, its standard output and error on out and err. */
__attribute__((noreturn)) static void ns_init(const char *const *argv, char **envp, int out, int err) {
        struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = { .len = 1, .filter = &allow };
        int ready[2];
        char byte;

        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mount("proc", "/proc", "proc", 0, NULL) < 0 ||
            pipe(ready) < 0)
                _exit(120);
        if (fork() == 0) {
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(1);
                (void) !write(ready[1], "x", 1);
                pause();
                _exit(0);
        }
        if (read(ready[0], &byte, 1) != 1 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
                _exit(121);
        execvpe(argv[0], (char **) argv, envp);
        _exit(127);
}

static char *read_all(int fd) {
        GString *text = g_string_new(NULL);
        char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                g_string_append_len(text, buf, n);
        close(fd);
        return g_string_free(text, false);
}

/* run() in a pid namespace of its own whose pid 2 is a process of root's under a filter: a scan
 * there (--root=2) meets no process of another program's (a holder of a listener of nobody's,
 * say, which a ptrace scan of any subtree reads too), only what the test made. */
static Run run_in_pid_namespace(const char *const *argv, const char *const *env) {
        g_auto(GStrv) envp = environ_with(env);
        int out[2], err[2], status;
        Run r = {};

        g_assert_cmpint(pipe2(out, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(err, O_CLOEXEC), ==, 0);
        pid_t helper = fork();
        g_assert_cmpint(helper, >=, 0);
        if (helper == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
                        _exit(122);
                pid_t init = fork();
                if (init == 0)
                        ns_init(argv, envp, out[1], err[1]);
                _exit(init > 0 && waitpid(init, &status, 0) == init && WIFEXITED(status) ? WEXITSTATUS(status) : 123);
        }
        close(out[1]);
        close(err[1]);
        r.out = read_all(out[0]);
        r.err = read_all(err[0]);
        g_assert_cmpint(waitpid(helper, &status, 0), ==, helper);
        g_assert_true(WIFEXITED(status));
        r.status = WEXITSTATUS(status);
        g_assert_cmpint(r.status, <, 120); /* the namespace's set-up worked */
        return r;
}

static void test_log_level(void) {
        if (!tests_require_root())
                return;
        const char *sectreed = g_getenv("SECTREED");
        const char *admin_scan_err[] = { NOBODY, "--inh-caps=+sys_admin", "--ambient-caps=+sys_admin", sectreed, "scan",
                                         "--backend=ptrace", "--log-level=err", "--root=2", NULL };
        const char *admin_scan[] = { NOBODY, "--inh-caps=+sys_admin", "--ambient-caps=+sys_admin", sectreed, "scan",
                                     "--backend=ptrace", "--root=2", NULL };
        /* what there is to keep quiet: the warnings of a scan that read nothing */
        Run r = run_in_pid_namespace(admin_scan, NULL);
        g_test_message("exit %d, stderr: %s", r.status, r.err);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_nonnull(strstr(r.err, "Could not read the filters of 1 thread (Operation not permitted: 1)"));
        run_done(&r);
        r = run_in_pid_namespace(admin_scan_err, NULL);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_cmpstr(r.err, ==, ""); /* the warnings are below err */
        run_done(&r);
        const char *env_err[] = { "SYSTEMD_LOG_LEVEL=3", NULL };
        r = run_in_pid_namespace(admin_scan, env_err);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_cmpstr(r.err, ==, "");
        run_done(&r);
        /* the option wins over the environment */
        const char *env_debug[] = { "SYSTEMD_LOG_LEVEL=debug", NULL };
        r = run_in_pid_namespace(admin_scan_err, env_debug);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_cmpstr(r.err, ==, "");
        run_done(&r);

        const char *bad_option[] = { sectreed, "--log-level=loud", "scan", NULL };
        r = run(bad_option, NULL);
        g_assert_cmpint(r.status, ==, 2);
        g_assert_true(g_str_has_prefix(r.err, "Invalid --log-level=loud: expected emerg, alert, crit, err, warning, "));
        g_assert_cmpuint(count_lines(r.err), ==, 1);
        run_done(&r);
        const char *env_bad[] = { "SYSTEMD_LOG_LEVEL=loud", NULL };
        const char *help[] = { sectreed, "--help", NULL };
        r = run(help, env_bad);
        g_assert_cmpint(r.status, ==, 0);
        g_assert_true(g_str_has_prefix(r.err, "Ignoring SYSTEMD_LOG_LEVEL=loud: expected a level"));
        g_assert_nonnull(strstr(r.out, "--log-level=LEVEL"));
        run_done(&r);
}

/* In a mount namespace of its own where tracefs is not mounted, the daemon mounts it and says so. */
static void test_tracefs_said(void) {
        if (!tests_require_root())
                return;
        g_autofree char *dir = g_dir_make_tmp("sectreed-cli-XXXXXX", NULL);
        g_autofree char *state = g_strdup_printf("--state-dir=%s", dir);
        const char *argv[] = { "unshare", "--mount", "--propagation=private", "sh", "-c",
                               "umount -R /sys/kernel/tracing 2>/dev/null; umount -R /sys/kernel/debug 2>/dev/null; "
                               "if mountpoint -q /sys/kernel/tracing; then echo 'tracefs stays mounted' >&2; exit 77; fi; "
                               "exec \"$0\" \"$1\"",
                               g_getenv("SECTREED"), state, NULL };
        /* no bus at that address: it gets as far as its BPF programs (tracefs first), then fails */
        const char *env[] = { "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/sectree-test/bus", NULL };
        Run r = run(argv, env);
        g_test_message("exit %d, stderr: %s", r.status, r.err);
        if (!tests_require(r.status != 77, "tracefs cannot be unmounted in a mount namespace here"))
                return;
        g_assert_nonnull(strstr(r.err, "Mounted tracefs on /sys/kernel/tracing (it was not mounted; the BPF "
                                       "tracepoints need it).\n"));
        g_assert_cmpint(r.status, !=, 0);
        run_done(&r);
        tests_remove_dir(dir);
}

/* Run argv with stdout_fd as its standard output: its stderr and how it ended. */
static Run run_to_fd(const char *const *argv, int stdout_fd) {
        Run r = {};
        r.status = tests_run_to_fd(argv, stdout_fd, &r.err);
        return r;
}

/* The output of a one-shot scan cannot be written: a full device is named as such (not as an
 * input/output error), and a pipe nobody reads any more ends it by SIGPIPE, as it ends any filter
 * of a pipeline, without a word. */
static void test_output_errors(void) {
        if (!tests_require_root())
                return;
        g_autofree char *root = g_strdup_printf("--root=%d", (int) getpid());
        const char *tree[] = { g_getenv("SECTREED"), "scan", "--no-argv", root, NULL };
        const char *json[] = { g_getenv("SECTREED"), "scan", "--no-argv", "--format=json", root, NULL };
        const char *const *cases[] = { tree, json };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
                g_assert_cmpint(full, >=, 0);
                Run r = run_to_fd(cases[i], full);
                close(full);
                g_test_message("to /dev/full: exit %d, stderr: %s", r.status, r.err);
                g_assert_cmpint(r.status, ==, 1);
                g_assert_cmpstr(r.err, ==, "Failed to write the output: No space left on device\n");
                run_done(&r);

                int p[2];
                g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
                close(p[0]); /* the reader that went away */
                r = run_to_fd(cases[i], p[1]);
                close(p[1]);
                g_test_message("to a pipe without a reader: exit %d, stderr: %s", r.status, r.err);
                g_assert_cmpint(r.status, ==, 128 + SIGPIPE);
                g_assert_cmpstr(r.err, ==, "");
                run_done(&r);
        }
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/sectreed-cli/not-root", test_not_root);
        g_test_add_func("/sectreed-cli/log-level", test_log_level);
        g_test_add_func("/sectreed-cli/tracefs-said", test_tracefs_said);
        g_test_add_func("/sectreed-cli/output-errors", test_output_errors);
        return g_test_run();
}
