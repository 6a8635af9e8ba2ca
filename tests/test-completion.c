/* test-completion.c: the bash and zsh completions of sectreectl load, and offer the verbs, each
 * verb's own options (and no other verb's), option values, and the live words sectreectl lists
 * (pids and tids with filters, filter ids, snapshot ids, a snapshot's pids, system calls of the
 * architecture given however it is spelled) against the real daemon on a private bus. Both ask
 * sectreectl (`__complete line`), which reads the command line from its verb table. With thousands
 * of filtered processes, pids and tids are offered by what is typed of them, and none at all where
 * more than a thousand would match. */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "bus-fixture.h"
#include "tests-util.h"

#define BASH_COMPLETION SECTREE_SOURCE_DIR "/shell-completion/bash/sectreectl"
#define ZSH_COMPLETIONS SECTREE_SOURCE_DIR "/shell-completion/zsh"

typedef struct Fixture {
        BusFixture b;
        Scenario *s;
        ScenarioTask filtered, thread;
        char *filtered_pid, *thread_tid, *root_pid, *path;
} Fixture;

static Scenario *build(void) {
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask p = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        g_assert_cmpint(scenario_thread(s, p), >=, 0);
        return s;
}

static void setup(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) {};
        fx->s = bus_fixture_start_with_scenario(&fx->b, build, NULL, NULL);
        if (!fx->s)
                return;
        fx->filtered = 1;
        fx->thread = 2;
        fx->filtered_pid = g_strdup_printf("%d", scenario_task(fx->s, fx->filtered)->tid);
        fx->thread_tid = g_strdup_printf("%d", scenario_task(fx->s, fx->thread)->tid);
        fx->root_pid = g_strdup_printf("%d", scenario_task(fx->s, scenario_root(fx->s))->tid);
        /* the completions run sectreectl by its name, as a user's shell would */
        g_autofree char *dir = g_path_get_dirname(g_getenv("SECTREECTL"));
        fx->path = g_strdup_printf("%s:%s", dir, g_getenv("PATH"));
}

static void teardown(Fixture *fx, gconstpointer data) {
        if (fx->s)
                bus_fixture_finish(&fx->b);
        scenario_free(fx->s);
        g_free(fx->filtered_pid);
        g_free(fx->thread_tid);
        g_free(fx->root_pid);
        g_free(fx->path);
}

/* Run argv on the fixture's bus with sectreectl on PATH; its stdout split into lines. */
static GStrv run_lines(Fixture *fx, char **argv) {
        g_auto(GStrv) envp = g_environ_setenv(g_get_environ(), "PATH", fx->path, true);
        envp = g_environ_setenv(envp, "DBUS_SYSTEM_BUS_ADDRESS", fx->b.address, true);
        g_autofree char *out = NULL, *err = NULL;
        g_autoptr(GError) error = NULL;
        int status;
        if (!g_spawn_sync(NULL, argv, envp, G_SPAWN_SEARCH_PATH_FROM_ENVP, NULL, NULL, &out, &err, &status, &error))
                g_error("running %s: %s", argv[0], error->message);
        if (!g_spawn_check_wait_status(status, NULL))
                g_error("%s %s: exit status %d: %s", argv[0], argv[1], status, err);
        return g_strsplit(g_strchomp(out), "\n", -1);
}

/* What bash offers for the words (the last one being completed). */
static GStrv bash_offers(Fixture *fx, const char *const *words) {
        g_autofree char *helper = g_build_filename(SECTREE_SOURCE_DIR, "tests", "complete-bash.sh", NULL);
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_ptr_array_add(argv, (char *) "bash");
        g_ptr_array_add(argv, helper);
        g_ptr_array_add(argv, (char *) BASH_COMPLETION);
        g_ptr_array_add(argv, (char *) "sectreectl");
        for (; *words; words++)
                g_ptr_array_add(argv, (char *) *words);
        g_ptr_array_add(argv, NULL);
        return run_lines(fx, (char **) argv->pdata);
}

/* What zsh offers after typing line and a tab. */
static GStrv zsh_offers(Fixture *fx, const char *line) {
        g_autofree char *helper = g_build_filename(SECTREE_SOURCE_DIR, "tests", "complete-zsh.zsh", NULL);
        char *argv[] = { (char *) "timeout", (char *) "60", (char *) "zsh", (char *) "-f", helper,
                         (char *) ZSH_COMPLETIONS, (char *) line, NULL };
        return run_lines(fx, argv);
}

static void assert_offers(GStrv offered, const char *const *want, const char *const *not, const char *what) {
        g_autofree char *all = g_strjoinv(" ", offered);
        for (; want && *want; want++)
                if (!g_strv_contains((const char *const *) offered, *want))
                        g_error("%s: '%s' is not offered: %s", what, *want, all);
        for (; not && *not; not++)
                if (g_strv_contains((const char *const *) offered, *not))
                        g_error("%s: '%s' is offered: %s", what, *not, all);
}

#define WORDS(...) ((const char *const[]) { __VA_ARGS__, NULL })
#define BASH(fx, want, not, ...)                                                                  \
        do {                                                                                      \
                g_auto(GStrv) o = bash_offers((fx), WORDS(__VA_ARGS__));                          \
                assert_offers(o, (want), (not), "bash: " #__VA_ARGS__);                           \
        } while (0)

static void test_bash(Fixture *fx, gconstpointer data) {
        if (!fx->s)
                return;
        /* verbs, not the hidden one; a prefix narrows them */
        BASH(fx, WORDS("status", "tree", "ps", "show", "check", "snapshot", "diff", "help"), WORDS("__complete"), "");
        g_auto(GStrv) tr = bash_offers(fx, WORDS("tr"));
        g_assert_cmpuint(g_strv_length(tr), ==, 1);
        g_assert_cmpstr(tr[0], ==, "tree");
        BASH(fx, WORDS("check"), NULL, "help", "ch");
        /* each verb's options */
        BASH(fx, WORDS("--json", "--file=", "--help"), WORDS("--raw", "--name="), "tree", "--");
        BASH(fx, WORDS("--raw", "--pid=", "--file="), WORDS("--counts"), "show", "--");
        BASH(fx, WORDS("--name=", "--no-argv"), WORDS("--file="), "snapshot", "--");
        BASH(fx, WORDS("--arch="), NULL, "check", "--a");
        BASH(fx, WORDS("pretty", "short", "off"), NULL, "--json", "=", "");
        BASH(fx, WORDS("sqlite", "json"), NULL, "export", "--format", "");
        BASH(fx, WORDS("x86", "x86_64"), NULL, "check", "--arch", "=", "x");
        /* live pids with filters (not the unfiltered root), tids, filter ids */
        BASH(fx, WORDS(fx->filtered_pid), WORDS(fx->root_pid, fx->thread_tid), "tree", "");
        BASH(fx, WORDS(fx->filtered_pid), NULL, "ps", "");
        BASH(fx, WORDS(fx->filtered_pid, fx->thread_tid), WORDS(fx->root_pid), "chain", "");
        BASH(fx, WORDS(fx->filtered_pid, fx->thread_tid), NULL, "show", "--pid", "=", "");
        g_auto(GStrv) filters = run_lines(fx, (char *[]) { (char *) "sectreectl", (char *) "__complete", (char *) "filters", NULL });
        g_assert_cmpuint(g_strv_length(filters), >=, 1);
        g_autofree char *first_filter = g_strndup(filters[0], strcspn(filters[0], "\t"));
        BASH(fx, WORDS(first_filter), NULL, "show", "");
        /* system calls of the architecture given */
        BASH(fx, WORDS("openat", "open"), WORDS("socket"), "check", fx->filtered_pid, "open");
        BASH(fx, WORDS("socketcall"), NULL, "check", "--arch=x86", fx->filtered_pid, "socketc");
        /* snapshot ids */
        g_auto(GStrv) id = run_lines(fx, (char *[]) { (char *) "sectreectl", (char *) "snapshot", (char *) "--name=completion", NULL });
        BASH(fx, WORDS(id[0]), NULL, "rm", "");
        BASH(fx, WORDS(id[0]), NULL, "export", "");
        /* files */
        BASH(fx, WORDS(SECTREE_SOURCE_DIR "/README.md"), NULL, "validate", SECTREE_SOURCE_DIR "/READ");

        /* --option=value as bash splits it ("--arch" "=" "i386") does not shift the arguments */
        BASH(fx, WORDS("socketcall"), NULL, "check", "--arch", "=", "i386", fx->filtered_pid, "socketc");
        BASH(fx, WORDS("socketcall"), NULL, "check", "--arch", "i386", fx->filtered_pid, "socketc");
        BASH(fx, WORDS(fx->filtered_pid), NULL, "check", "--arch", "=", "x86", "");
        BASH(fx, WORDS("socketcall"), NULL, "who-can", "--arch", "=", "i386", "socketc");
        /* each verb's --format */
        BASH(fx, WORDS("oci"), WORDS("sqlite", "json"), "policy", "--format", "=", "");
        BASH(fx, WORDS("sqlite", "json"), WORDS("oci"), "export", "--format", "=", "");
        /* policy, who-can, policy-diff, --like, --action */
        BASH(fx, WORDS(fx->filtered_pid, fx->thread_tid), NULL, "policy", "");
        BASH(fx, WORDS("--approximate", "--format=", "--arch=", "--file="), WORDS("--name=", "--raw"), "policy", "--");
        BASH(fx, WORDS("openat", "open"), WORDS(fx->filtered_pid), "who-can", "open");
        BASH(fx, WORDS("--action=", "--arch="), WORDS("--approximate"), "who-can", "--");
        BASH(fx, WORDS("USER_NOTIF"), WORDS("ALLOW"), "who-can", "--action", "=", "U");
        BASH(fx, WORDS(fx->filtered_pid), NULL, "policy-diff", "");
        BASH(fx, WORDS(fx->filtered_pid), NULL, "policy-diff", fx->filtered_pid, "");
        BASH(fx, WORDS(fx->filtered_pid, fx->thread_tid), NULL, "run", "--like", "=", "");
        BASH(fx, WORDS("--like="), WORDS("--exec="), "run", "--");
        /* restore's options, and --exec: a process of the snapshot named, then a command */
        BASH(fx, WORDS("--exec=", "--original-uids", "--pid-namespace"), WORDS("--like="), "restore", "--");
        g_autofree char *root_exec = g_strdup_printf("%s=", fx->root_pid);
        g_auto(GStrv) tree_id = run_lines(fx, (char *[]) { (char *) "sectreectl", (char *) "snapshot", fx->root_pid, NULL });
        BASH(fx, WORDS(root_exec), NULL, "restore", tree_id[0], "--exec", "=", "");
        BASH(fx, WORDS("sleep"), NULL, "restore", tree_id[0], "--exec", "=", fx->root_pid, "=", "slee");
        /* after the command of run, its arguments are files */
        BASH(fx, WORDS("sleep"), NULL, "run", "--like", "=", fx->filtered_pid, "--", "slee");
}

/* The words the verb table's architectures resolve to, and __complete syscalls takes each. */
static void test_syscalls_arch(Fixture *fx, gconstpointer data) {
        if (!fx->s)
                return;
        static const char *const arches[] = { "x86_64", "x86", "i386", "x32" };
        for (size_t i = 0; i < G_N_ELEMENTS(arches); i++) {
                g_auto(GStrv) calls = run_lines(fx, (char *[]) { (char *) "sectreectl", (char *) "__complete",
                                                                 (char *) "syscalls", (char *) arches[i], NULL });
                g_assert_cmpuint(g_strv_length(calls), >, 100);
        }
        g_auto(GStrv) arch = run_lines(fx, (char *[]) { (char *) "sectreectl", (char *) "__complete", (char *) "line",
                                                        (char *) "--", (char *) "check", (char *) "--arch=", NULL });
        for (char **a = arch; *a; a++) {
                g_autofree char *word = g_strndup(*a, strcspn(*a, "\t"));
                g_auto(GStrv) calls = run_lines(fx, (char *[]) { (char *) "sectreectl", (char *) "__complete",
                                                                 (char *) "syscalls", word, NULL });
                g_assert_cmpuint(g_strv_length(calls), >, 100);
        }
}

static void test_bash_loads(Fixture *fx, gconstpointer data) {
        if (!fx->s)
                return;
        /* alone, and after the bash-completion package's own functions */
        char *alone[] = { (char *) "bash", (char *) "-c", (char *) "source \"$0\" && complete -p sectreectl",
                          (char *) BASH_COMPLETION, NULL };
        g_auto(GStrv) a = run_lines(fx, alone);
        g_assert_cmpstr(a[0], ==, "complete -F _sectreectl sectreectl");
        char *with[] = { (char *) "bash", (char *) "-c",
                         (char *) "source /usr/share/bash-completion/bash_completion && source \"$0\" && "
                                  "complete -p sectreectl",
                         (char *) BASH_COMPLETION, NULL };
        g_auto(GStrv) w = run_lines(fx, with);
        g_assert_cmpstr(w[0], ==, "complete -F _sectreectl sectreectl");
}

static void test_zsh(Fixture *fx, gconstpointer data) {
        if (!fx->s)
                return;
        char *syntax[] = { (char *) "zsh", (char *) "-n", (char *) ZSH_COMPLETIONS "/_sectreectl", NULL };
        g_auto(GStrv) ok = run_lines(fx, syntax);
        g_auto(GStrv) verbs = zsh_offers(fx, "sectreectl ");
        assert_offers(verbs, WORDS("status", "tree", "check", "snapshot"), WORDS("__complete"), "zsh: verbs");
        g_auto(GStrv) tr = zsh_offers(fx, "sectreectl tr");
        assert_offers(tr, WORDS("tree"), WORDS("status"), "zsh: tr");
        g_auto(GStrv) pids = zsh_offers(fx, "sectreectl tree ");
        assert_offers(pids, WORDS(fx->filtered_pid), WORDS(fx->root_pid), "zsh: tree PID");
        g_autofree char *line = g_strdup_printf("sectreectl check --arch=x86 %s socketc", fx->filtered_pid);
        g_auto(GStrv) calls = zsh_offers(fx, line);
        assert_offers(calls, WORDS("socketcall"), NULL, "zsh: check --arch=x86 PID socketc");
        g_auto(GStrv) modes = zsh_offers(fx, "sectreectl --json=");
        assert_offers(modes, WORDS("pretty", "short", "off"), NULL, "zsh: --json=");

        /* --arch=i386 (the name check takes) */
        g_autofree char *i386 = g_strdup_printf("sectreectl check --arch=i386 %s socketc", fx->filtered_pid);
        g_auto(GStrv) calls386 = zsh_offers(fx, i386);
        assert_offers(calls386, WORDS("socketcall"), NULL, "zsh: check --arch=i386 PID socketc");
        /* each verb its own options, and no other verb's */
        g_auto(GStrv) check_opts = zsh_offers(fx, "sectreectl check --");
        assert_offers(check_opts, WORDS("--arch=", "--file="), WORDS("--name=", "--approximate", "--like=", "--exec="),
                      "zsh: check --");
        g_auto(GStrv) policy_opts = zsh_offers(fx, "sectreectl policy --");
        assert_offers(policy_opts, WORDS("--approximate", "--format="), WORDS("--raw", "--counts"), "zsh: policy --");
        g_auto(GStrv) run_opts = zsh_offers(fx, "sectreectl run --");
        assert_offers(run_opts, WORDS("--like="), WORDS("--exec=", "--arch="), "zsh: run --");
        g_auto(GStrv) restore_opts = zsh_offers(fx, "sectreectl restore --");
        assert_offers(restore_opts, WORDS("--exec=", "--original-uids", "--pid-namespace"), WORDS("--like=", "--file="),
                      "zsh: restore --");
        g_auto(GStrv) formats = zsh_offers(fx, "sectreectl policy --format=");
        assert_offers(formats, WORDS("oci"), WORDS("sqlite", "json"), "zsh: policy --format=");
        g_auto(GStrv) actions = zsh_offers(fx, "sectreectl who-can --action=");
        assert_offers(actions, WORDS("USER_NOTIF", "ERRNO"), NULL, "zsh: who-can --action=");
        g_autofree char *like = g_strdup_printf("sectreectl run --like=");
        g_auto(GStrv) likes = zsh_offers(fx, like);
        assert_offers(likes, WORDS(fx->filtered_pid), NULL, "zsh: run --like=");
        g_auto(GStrv) diff_tids = zsh_offers(fx, "sectreectl policy-diff ");
        assert_offers(diff_tids, WORDS(fx->filtered_pid), NULL, "zsh: policy-diff");
        g_auto(GStrv) who = zsh_offers(fx, "sectreectl who-can opena");
        assert_offers(who, WORDS("openat"), WORDS("socketcall"), "zsh: who-can SYSCALL");
        g_auto(GStrv) id = run_lines(fx, (char *[]) { (char *) "sectreectl", (char *) "snapshot", fx->root_pid, NULL });
        g_autofree char *exec_line = g_strdup_printf("sectreectl restore %s --exec=", id[0]);
        g_autofree char *root_exec = g_strdup_printf("%s=", fx->root_pid);
        g_auto(GStrv) exec_pids = zsh_offers(fx, exec_line);
        assert_offers(exec_pids, WORDS(root_exec), NULL, "zsh: restore ID --exec=");
        g_autofree char *exec_cmd = g_strdup_printf("sectreectl restore %s --exec=%s=slee", id[0], fx->root_pid);
        g_auto(GStrv) exec_cmds = zsh_offers(fx, exec_cmd);
        assert_offers(exec_cmds, WORDS("sleep"), NULL, "zsh: restore ID --exec=PID=slee");
}

/* ---- thousands of filtered processes ---- */

#define MANY_TASKS 2500
#define COMPLETE_TASKS_MAX 1000 /* verbs-complete.c's bound */

typedef struct Many {
        BusFixture b;
        pid_t holder;         /* the process group of the many */
        pid_t *pids;          /* its children, each under the holder's filter */
        char *path;
} Many;

/* In the forked holder: a filter, n children that pause under it, their pids written to fd. */
static _Noreturn void many_holder(int fd, size_t n) {
        struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = { .len = 1, .filter = &allow };
        if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(2);
        for (size_t i = 0; i < n; i++) {
                pid_t pid = fork();
                if (pid < 0)
                        _exit(3);
                if (pid == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        pause();
                        _exit(0);
                }
                if (write(fd, &pid, sizeof(pid)) != sizeof(pid))
                        _exit(4);
        }
        pause();
        _exit(0);
}

static void many_setup(Many *m, gconstpointer data) {
        *m = (Many) {};
        if (!tests_require_root())
                return;
        int pipefd[2];
        g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
        m->holder = fork();
        g_assert_cmpint(m->holder, >=, 0);
        if (m->holder == 0) {
                close(pipefd[0]);
                many_holder(pipefd[1], MANY_TASKS);
        }
        close(pipefd[1]);
        m->pids = g_new0(pid_t, MANY_TASKS);
        for (size_t i = 0; i < MANY_TASKS; i++)
                g_assert_cmpint(read(pipefd[0], &m->pids[i], sizeof(pid_t)), ==, sizeof(pid_t));
        close(pipefd[0]);
        /* the daemon's start-up pass finds them all before READY=1 */
        g_assert_true(bus_fixture_start_all(&m->b, NULL, NULL));
        g_autofree char *dir = g_path_get_dirname(g_getenv("SECTREECTL"));
        m->path = g_strdup_printf("%s:%s", dir, g_getenv("PATH"));
}

static void many_teardown(Many *m, gconstpointer data) {
        if (m->holder > 0) {
                kill(-m->holder, SIGKILL);
                waitpid(m->holder, NULL, 0);
                bus_fixture_finish(&m->b);
        }
        g_free(m->pids);
        g_free(m->path);
}

/* The words sectreectl offers for the command line words (the last one being completed). */
static GStrv many_offers(Many *m, const char *const *words) {
        Fixture fx = { .b = m->b, .path = m->path };
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_ptr_array_add(argv, (char *) "sectreectl");
        g_ptr_array_add(argv, (char *) "__complete");
        g_ptr_array_add(argv, (char *) "line");
        g_ptr_array_add(argv, (char *) "--");
        for (; *words; words++)
                g_ptr_array_add(argv, (char *) *words);
        g_ptr_array_add(argv, NULL);
        g_auto(GStrv) lines = run_lines(&fx, (char **) argv->pdata);
        GStrv offered = g_new0(char *, g_strv_length(lines) + 1);
        for (size_t i = 0, k = 0; lines[i]; i++)
                if (lines[i][0])
                        offered[k++] = g_strndup(lines[i], strcspn(lines[i], "\t"));
        return offered;
}

/* Exactly what begins with prefix: each offered word does, and each of the many whose pid does is
 * offered (other processes of the machine may be offered too, if their pid begins with it). */
static void assert_prefix_exact(Many *m, GStrv offered, const char *prefix, const char *what) {
        g_assert_cmpuint(g_strv_length(offered), <=, COMPLETE_TASKS_MAX);
        for (char **o = offered; *o; o++)
                if (!g_str_has_prefix(*o, prefix))
                        g_error("%s: '%s' is offered for '%s'", what, *o, prefix);
        for (size_t i = 0; i < MANY_TASKS; i++) {
                g_autofree char *pid = g_strdup_printf("%d", (int) m->pids[i]);
                if (g_str_has_prefix(pid, prefix) && !g_strv_contains((const char *const *) offered, pid))
                        g_error("%s: '%s' is not offered for '%s'", what, pid, prefix);
        }
}

static void test_many_tasks(Many *m, gconstpointer data) {
        if (m->holder <= 0)
                return;
        /* nothing for a new word: thousands would match */
        g_auto(GStrv) tree = many_offers(m, WORDS("tree", ""));
        g_assert_cmpuint(g_strv_length(tree), <=, COMPLETE_TASKS_MAX);
        g_auto(GStrv) chain = many_offers(m, WORDS("chain", ""));
        g_assert_cmpuint(g_strv_length(chain), <=, COMPLETE_TASKS_MAX);
        g_auto(GStrv) like = many_offers(m, WORDS("run", "--like="));
        g_assert_cmpuint(g_strv_length(like), <=, COMPLETE_TASKS_MAX);
        /* with the first digits of a pid, the matches only, and each of them */
        g_autofree char *pid = g_strdup_printf("%d", (int) m->pids[MANY_TASKS / 2]);
        g_autofree char *prefix = g_strndup(pid, strlen(pid) - 1);
        g_auto(GStrv) ps = many_offers(m, WORDS("ps", prefix));
        assert_prefix_exact(m, ps, prefix, "ps PREFIX");
        g_assert_true(g_strv_contains((const char *const *) ps, pid));
        g_auto(GStrv) show = many_offers(m, WORDS("show", "--pid", prefix));
        assert_prefix_exact(m, show, prefix, "show --pid PREFIX");
        g_autofree char *inline_value = g_strdup_printf("--pid=%s", prefix);
        g_auto(GStrv) show_inline = many_offers(m, WORDS("show", inline_value));
        assert_prefix_exact(m, show_inline, prefix, "show --pid=PREFIX");
        g_auto(GStrv) whole = many_offers(m, WORDS("chain", pid));
        assert_prefix_exact(m, whole, pid, "chain PID");
        /* a word no pid begins with */
        g_auto(GStrv) none = many_offers(m, WORDS("tree", "x"));
        g_assert_cmpuint(g_strv_length(none), ==, 0);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add("/completion/bash", Fixture, NULL, setup, test_bash, teardown);
        g_test_add("/completion/bash-loads", Fixture, NULL, setup, test_bash_loads, teardown);
        g_test_add("/completion/syscalls-arch", Fixture, NULL, setup, test_syscalls_arch, teardown);
        g_test_add("/completion/zsh", Fixture, NULL, setup, test_zsh, teardown);
        g_test_add("/completion/many-tasks", Many, NULL, many_setup, test_many_tasks, many_teardown);
        return g_test_run();
}
