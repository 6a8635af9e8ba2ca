/* test-completion.c: the bash and zsh completions of sectreectl load, and offer the verbs, each
 * verb's options, and the live words sectreectl lists (pids and tids with filters, filter ids,
 * snapshot ids, system calls) against the real daemon on a private bus */
#include <sys/syscall.h>

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
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add("/completion/bash", Fixture, NULL, setup, test_bash, teardown);
        g_test_add("/completion/bash-loads", Fixture, NULL, setup, test_bash_loads, teardown);
        g_test_add("/completion/zsh", Fixture, NULL, setup, test_zsh, teardown);
        return g_test_run();
}
