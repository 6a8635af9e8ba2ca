/* test-readme-tour.c: the README's tour runs as written, against a real bubblewrap sandbox and
 * the real daemon on a private bus, and prints what the README says it prints.
 *
 * The tour is the part of README.md between "<!-- tour -->" and "<!-- /tour -->". In its
 * ```console blocks, a line "$ COMMAND" (continued by lines "> ...") is run in one bash session,
 * in order, and the lines after it, up to the next command or the end of the block, are what it
 * must print (stdout and stderr). Outputs are compared word by word with white space ignored (so
 * that columns may be wider) after times, sizes and start times are put aside, and numbers may
 * differ only where they are this run's pids and ids: the comment "<!-- tour-values: ... -->"
 * records the values of the run the README was written from (shell variables, filter ids, host
 * name, kernel, the tour's directory), and a number of the README that is one of them must be the
 * same value of this run. The picture (docs/tour-graph.svg) must be what Graphviz draws from the
 * README's DOT.
 *
 * SECTREE_TOUR_UPDATE=1 writes this run's outputs, values and picture into the source tree
 * instead of comparing: run it after changing the tour or the output of a verb it shows. */
#include <sys/wait.h>

#include "bus-fixture.h"
#include "tests-util.h"

#define README SECTREE_SOURCE_DIR "/README.md"
#define PICTURE SECTREE_SOURCE_DIR "/docs/tour-graph.svg"
#define COMMAND_TIMEOUT_SEC 60
#define RETRIES 20 /* a read-only query that does not print what is expected yet (the daemon may
                    * not have seen the sandbox start) is asked again, every 250 ms */

/* The shell variables of the tour whose values are pids and ids. */
static const char *const tour_variables[] = { "sandbox", "init", "worker", "helper", "id", "id2" };

typedef struct Step {
        char *command;  /* without "$ " and "> " */
        char *expected; /* the README's lines after it, each with its newline */
        GString *actual;
} Step;

typedef struct Tour {
        char *readme;      /* the whole file */
        GPtrArray *steps;  /* Step */
        GHashTable *values; /* the README's recorded values: name -> value (strings) */
        GHashTable *now;    /* this run's */
        char *dot;         /* the README's DOT of the graph step */
        char *graph_dot;   /* this run's */
} Tour;

static void step_free(Step *s) {
        g_free(s->command);
        g_free(s->expected);
        if (s->actual)
                g_string_free(s->actual, true);
        g_free(s);
}

/* ---- reading the README ---- */

static char *tour_text(const char *readme, const char **ret_start, const char **ret_end) {
        const char *start = strstr(readme, "<!-- tour -->"), *end = strstr(readme, "<!-- /tour -->");
        g_assert_nonnull(start);
        g_assert_nonnull(end);
        g_assert_true(start < end);
        *ret_start = start;
        *ret_end = end;
        return g_strndup(start, end - start);
}

static void parse_values(Tour *t, const char *text) {
        t->values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        const char *c = strstr(text, "<!-- tour-values:");
        if (!c)
                return;
        c += strlen("<!-- tour-values:");
        g_autofree char *body = g_strndup(c, strstr(c, "-->") - c);
        g_auto(GStrv) pairs = g_strsplit_set(g_strstrip(body), " \n", -1);
        for (char **p = pairs; *p; p++) {
                char *eq = strchr(*p, '=');
                if (eq)
                        g_hash_table_insert(t->values, g_strndup(*p, eq - *p), g_strdup(eq + 1));
        }
}

/* The console blocks' commands and outputs. */
static void parse_steps(Tour *t, const char *text) {
        t->steps = g_ptr_array_new_with_free_func((GDestroyNotify) step_free);
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        bool in_block = false;
        Step *cur = NULL;
        for (char **l = lines; *l; l++) {
                if (g_str_has_prefix(*l, "```")) {
                        in_block = !in_block && streq(*l, "```console");
                        cur = NULL;
                        continue;
                }
                if (!in_block)
                        continue;
                if (g_str_has_prefix(*l, "$ ")) {
                        cur = g_new0(Step, 1);
                        cur->command = g_strdup(*l + 2);
                        cur->expected = g_strdup("");
                        g_ptr_array_add(t->steps, cur);
                } else if (cur && g_str_has_prefix(*l, "> ") && !*cur->expected) {
                        char *longer = g_strconcat(cur->command, "\n", *l + 2, NULL);
                        g_free(cur->command);
                        cur->command = longer;
                } else if (cur) {
                        char *longer = g_strconcat(cur->expected, *l, "\n", NULL);
                        g_free(cur->expected);
                        cur->expected = longer;
                }
        }
        g_assert_false(in_block);
        g_assert_cmpuint(t->steps->len, >=, 10);
}

static void parse_dot(Tour *t, const char *text) {
        const char *c = strstr(text, "```dot\n");
        g_assert_nonnull(c);
        c += strlen("```dot\n");
        t->dot = g_strndup(c, strstr(c, "```") - c);
}

/* ---- the bash session ---- */

typedef struct Session {
        GPid pid;
        int in, out;
        GString *buf;
        unsigned n;
} Session;

static void session_start(Session *s, const char *cwd, const char *bus) {
        g_autofree char *client = g_path_get_dirname(g_getenv("SECTREECTL"));
        g_autofree char *path = g_strdup_printf("%s:%s", client, g_getenv("PATH"));
        g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "PATH", path, true);
        env = g_environ_setenv(env, "DBUS_SYSTEM_BUS_ADDRESS", bus, true);
        env = g_environ_setenv(env, "LC_ALL", "C.UTF-8", true);
        env = g_environ_unsetenv(env, "SYSTEMD_LOG_LEVEL");
        char *argv[] = { (char *) "bash", (char *) "--norc", (char *) "--noprofile", NULL };
        g_autoptr(GError) error = NULL;
        *s = (Session) { .buf = g_string_new(NULL) };
        if (!g_spawn_async_with_pipes(cwd, argv, env, G_SPAWN_SEARCH_PATH_FROM_ENVP | G_SPAWN_DO_NOT_REAP_CHILD,
                                      tests_die_with_parent, NULL, &s->pid, &s->in, &s->out, NULL, &error))
                g_error("starting bash: %s", error->message);
        const char setup[] = "exec 2>&1\n";
        g_assert_cmpint(write(s->in, setup, strlen(setup)), ==, (ssize_t) strlen(setup));
}

/* Run command; its output (stdout and stderr). */
static char *session_run(Session *s, const char *command) {
        g_autofree char *mark = g_strdup_printf("__tour_done_%u__", ++s->n);
        g_autofree char *text = g_strdup_printf("%s\nprintf '\\n%s\\n'\n", command, mark);
        g_assert_cmpint(write(s->in, text, strlen(text)), ==, (ssize_t) strlen(text));
        g_autoptr(GString) out = g_string_new(NULL);
        gint64 end = g_get_monotonic_time() + COMMAND_TIMEOUT_SEC * G_USEC_PER_SEC;
        for (;;) {
                char *line = tests_read_line(s->out, s->buf, end);
                if (!line)
                        g_error("the tour's command '%s' did not finish within %d s; it printed:\n%s", command,
                                COMMAND_TIMEOUT_SEC, out->str);
                bool done = streq(line, mark);
                if (!done)
                        g_string_append_printf(out, "%s\n", line);
                g_free(line);
                if (done)
                        break;
        }
        /* the mark's own leading newline */
        if (out->len > 0 && out->str[out->len - 1] == '\n')
                g_string_truncate(out, out->len - 1);
        return g_string_free(g_steal_pointer(&out), false);
}

static void session_stop(Session *s) {
        close(s->in);
        int status;
        gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (waitpid(s->pid, &status, WNOHANG) == 0 && g_get_monotonic_time() < end)
                g_usleep(10000);
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, WNOHANG);
        close(s->out);
        g_string_free(s->buf, true);
}

/* This run's values: the tour's variables that are set, the filter ids of the sandbox's chains,
 * the host name, the kernel and the tour's directory. */
static void record_values(Session *s, GHashTable *now) {
        for (size_t i = 0; i < G_N_ELEMENTS(tour_variables); i++) {
                g_autofree char *cmd = g_strdup_printf("printf %%s \"$%s\"", tour_variables[i]);
                g_autofree char *v = g_strstrip(session_run(s, cmd));
                if (*v && !g_hash_table_contains(now, tour_variables[i]))
                        g_hash_table_insert(now, g_strdup(tour_variables[i]), g_strdup(v));
        }
        /* the filter ids of the chains, live and in the exported file (ids local to it) */
        static const struct {
                const char *task, *prefix, *option;
        } chains[] = {
                { "init", "init", "" },
                { "worker", "worker", "" },
                { "init", "file_init", "--file=\"$tour/sandbox.sqlite\"" },
                { "worker", "file_worker", "--file=\"$tour/sandbox.sqlite\"" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(chains); i++) {
                g_autofree char *name = g_strdup_printf("%s_filter_0", chains[i].prefix);
                if (g_hash_table_contains(now, name) || !g_hash_table_contains(now, chains[i].task))
                        continue;
                g_autofree char *cmd = g_strdup_printf("[ -z \"%s\" ] || [ -e \"$tour/sandbox.sqlite\" ] && "
                                                       "sectreectl --json=short chain %s \"$%s\" 2>/dev/null | "
                                                       "grep -o '\"id\":[0-9]*' | cut -d: -f2 | tr '\\n' ' '",
                                                       chains[i].option, chains[i].option, chains[i].task);
                g_autofree char *ids = session_run(s, cmd);
                g_auto(GStrv) each = g_strsplit(g_strstrip(ids), " ", -1);
                for (guint k = 0; each[k] && *each[k]; k++)
                        g_hash_table_insert(now, g_strdup_printf("%s_filter_%u", chains[i].prefix, k), g_strdup(each[k]));
        }
        if (!g_hash_table_contains(now, "host")) {
                g_hash_table_insert(now, g_strdup("host"), g_strstrip(session_run(s, "uname -n")));
                g_hash_table_insert(now, g_strdup("kernel"), g_strstrip(session_run(s, "uname -r")));
        }
        if (!g_hash_table_contains(now, "tour")) {
                g_autofree char *dir = g_strstrip(session_run(s, "printf %s \"$tour\""));
                if (*dir)
                        g_hash_table_insert(now, g_strdup("tour"), g_strdup(dir));
        }
}

/* ---- comparing ---- */

/* Times, relative times, sizes and start times are not the tour's to keep, nor what `show` says of
 * an installer (whether the daemon saw the install happen, and whether bwrap had exec'd before its
 * executable was read, is a race); the strings of this machine (host, kernel, directory) stand for
 * themselves. */
static char *normalise(const char *text, GHashTable *values) {
        static const struct {
                const char *pattern, *replacement;
        } volatile_parts[] = {
                { "[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z?( [A-Z]+)?", "<time>" },
                { "[0-9]+(d|h|min|s)( [0-9]+(h|min|s))? ago", "<ago>" },
                { "[0-9]+ bytes", "<size>" },
                { "start time [0-9]+", "start time <ticks>" },
                { "(?m)^ Installer: .*$", " Installer: <installer>" },
        };
        char *s = g_strdup(text);
        static const char *const strings[] = { "tour", "kernel", "host" };
        for (size_t i = 0; i < G_N_ELEMENTS(strings); i++) {
                const char *v = g_hash_table_lookup(values, strings[i]);
                if (!v || !*v)
                        continue;
                g_autofree char *placeholder = g_strdup_printf("<%s>", strings[i]);
                g_auto(GStrv) parts = g_strsplit(s, v, -1);
                g_free(s);
                s = g_strjoinv(placeholder, parts);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(volatile_parts); i++) {
                g_autoptr(GRegex) re = g_regex_new(volatile_parts[i].pattern, 0, 0, NULL);
                char *next = g_regex_replace_literal(re, s, -1, 0, volatile_parts[i].replacement, 0, NULL);
                g_free(s);
                s = next;
        }
        return s;
}

static GPtrArray *tokens(const char *text) {
        g_autoptr(GRegex) re = g_regex_new("[0-9]+|[^\\s0-9]+", 0, 0, NULL);
        g_autoptr(GMatchInfo) m = NULL;
        GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
        g_regex_match(re, text, 0, &m);
        while (g_match_info_matches(m)) {
                g_ptr_array_add(a, g_match_info_fetch(m, 0));
                g_match_info_next(m, NULL);
        }
        return a;
}

/* Is README number r, as this run's a, the same pid or id? */
static bool same_value(const char *r, const char *a, GHashTable *values, GHashTable *now) {
        if (streq(r, a))
                return true;
        GHashTableIter it;
        gpointer name, value;
        g_hash_table_iter_init(&it, values);
        while (g_hash_table_iter_next(&it, &name, &value))
                if (streq(value, r) && streq_ptr(g_hash_table_lookup(now, name), a))
                        return true;
        return false;
}

/* NULL if text (this run's) says what expected (the README's) says; else why not. */
static char *compare(const char *expected, const char *text, GHashTable *values, GHashTable *now) {
        g_autofree char *e = normalise(expected, values), *a = normalise(text, now);
        g_autoptr(GPtrArray) te = tokens(e), ta = tokens(a);
        for (guint i = 0; i < te->len || i < ta->len; i++) {
                const char *x = i < te->len ? te->pdata[i] : "(end)", *y = i < ta->len ? ta->pdata[i] : "(end)";
                bool numbers = g_ascii_isdigit(x[0]) && g_ascii_isdigit(y[0]);
                if (numbers ? !same_value(x, y, values, now) : !streq(x, y))
                        return g_strdup_printf("word %u: the README has '%s', this run '%s'", i, x, y);
        }
        return NULL;
}

static bool retry_allowed(const char *command) {
        static const char *const queries[] = { "sectreectl tree", "sectreectl ps", "sectreectl show", "sectreectl chain",
                                               "sectreectl check", "sectreectl graph" };
        for (size_t i = 0; i < G_N_ELEMENTS(queries); i++)
                if (g_str_has_prefix(command, queries[i]))
                        return true;
        return false;
}

/* ---- writing the README back (SECTREE_TOUR_UPDATE=1) ---- */

static char *values_comment(GHashTable *now) {
        g_autoptr(GList) keys = g_list_sort(g_hash_table_get_keys(now), (GCompareFunc) strcmp);
        g_autoptr(GString) s = g_string_new("<!-- tour-values:");
        for (GList *k = keys; k; k = k->next)
                g_string_append_printf(s, " %s=%s", (char *) k->data, (char *) g_hash_table_lookup(now, k->data));
        g_string_append(s, " -->");
        return g_string_free(g_steal_pointer(&s), false);
}

/* The tour with this run's outputs, and its DOT in the ```dot block. */
static char *tour_rewrite(const char *text, Tour *t, const char *dot) {
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        g_autoptr(GString) out = g_string_new(NULL);
        bool in_block = false, skipping = false, in_dot = false;
        guint step = 0;
        for (char **l = lines; *l; l++) {
                bool last = !l[1];
                if (g_str_has_prefix(*l, "<!-- tour-values:"))
                        continue;
                if (g_str_has_prefix(*l, "```")) {
                        if (in_dot)
                                g_string_append(out, dot);
                        in_dot = !in_block && !in_dot && streq(*l, "```dot");
                        in_block = !in_block && streq(*l, "```console");
                        skipping = false;
                } else if (in_dot) {
                        continue;
                } else if (in_block && g_str_has_prefix(*l, "$ ")) {
                        Step *s = t->steps->pdata[step++];
                        g_auto(GStrv) command = g_strsplit(s->command, "\n", -1);
                        g_autofree char *continued = g_strjoinv("\n> ", command);
                        g_string_append_printf(out, "$ %s\n", continued);
                        g_string_append(out, s->actual->str);
                        skipping = true;
                        continue;
                } else if (skipping) {
                        continue;
                }
                g_string_append(out, *l);
                if (!last)
                        g_string_append_c(out, '\n');
        }
        g_autofree char *comment = values_comment(t->now);
        g_string_insert(out, strlen("<!-- tour -->\n"), comment);
        g_string_insert(out, strlen("<!-- tour -->\n") + strlen(comment), "\n");
        return g_string_free(g_steal_pointer(&out), false);
}

/* The picture Graphviz draws from dot. */
static char *render(const char *dot) {
        g_autofree char *dir = g_dir_make_tmp("sectree-tour-dot-XXXXXX", NULL);
        g_autofree char *in = g_build_filename(dir, "forest.dot", NULL);
        g_assert_true(g_file_set_contents(in, dot, -1, NULL));
        char *argv[] = { (char *) "dot", (char *) "-Tsvg", in, NULL };
        char *svg = NULL;
        g_assert_cmpint(tests_run_capture(argv, &svg, NULL), ==, 0);
        tests_remove_dir(dir);
        return svg;
}

/* ---- the test ---- */

static void run_tour(Tour *t, Session *s, bool update) {
        for (guint i = 0; i < t->steps->len; i++) {
                Step *step = t->steps->pdata[i];
                g_autofree char *why = NULL;
                for (unsigned attempt = 0;; attempt++) {
                        g_autofree char *out = session_run(s, step->command);
                        record_values(s, t->now);
                        if (step->actual)
                                g_string_free(step->actual, true);
                        step->actual = g_string_new(out);
                        if (*out && !g_str_has_suffix(out, "\n"))
                                g_string_append_c(step->actual, '\n');
                        g_free(why);
                        why = update ? NULL : compare(step->expected, step->actual->str, t->values, t->now);
                        if (!why || !retry_allowed(step->command) || attempt >= RETRIES)
                                break;
                        g_usleep(250000);
                }
                if (why)
                        g_error("The README's tour does not hold: '%s' printed\n%s\ninstead of\n%s\n(%s; rewrite it with "
                                "SECTREE_TOUR_UPDATE=1 if the change is meant)",
                                step->command, step->actual->str, step->expected, why);
                /* the graph step's DOT (without what it is piped into) is what the picture is drawn from */
                if (g_str_has_prefix(step->command, "sectreectl graph") && !t->graph_dot) {
                        g_autofree char *graph = g_strndup(step->command, strcspn(step->command, "|"));
                        t->graph_dot = session_run(s, graph);
                        if (!g_str_has_suffix(t->graph_dot, "\n")) {
                                char *longer = g_strconcat(t->graph_dot, "\n", NULL);
                                g_free(t->graph_dot);
                                t->graph_dot = longer;
                        }
                }
        }
}

static void test_tour(void) {
        g_autofree char *bwrap = g_find_program_in_path("bwrap");
        if (!tests_require_root() || !tests_require(bwrap != NULL, "bubblewrap is not installed"))
                return;
        bool update = g_getenv("SECTREE_TOUR_UPDATE") != NULL;
        Tour t = { .now = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free) };
        const char *start, *end;
        g_assert_true(g_file_get_contents(README, &t.readme, NULL, NULL));
        g_autofree char *text = tour_text(t.readme, &start, &end);
        parse_values(&t, text);
        parse_steps(&t, text);
        parse_dot(&t, text);

        BusFixture b;
        g_assert_true(bus_fixture_start_all(&b, NULL, NULL));
        /* the tour runs where `build/` is this build */
        g_autofree char *cwd = g_dir_make_tmp("sectree-tour-XXXXXX", NULL);
        g_autofree char *link = g_build_filename(cwd, "build", NULL);
        g_autofree char *build = g_path_get_dirname(g_path_get_dirname(g_getenv("SECTREECTL")));
        g_assert_cmpint(symlink(build, link), ==, 0);
        Session s;
        session_start(&s, cwd, b.address);
        run_tour(&t, &s, update);

        const char *dot = t.graph_dot;
        g_assert_nonnull(dot);
        if (update) {
                g_autofree char *tour = tour_rewrite(text, &t, dot);
                g_autoptr(GString) readme = g_string_new_len(t.readme, start - t.readme);
                g_string_append(readme, tour);
                g_string_append(readme, end);
                g_assert_true(g_file_set_contents(README, readme->str, -1, NULL));
                g_autofree char *svg = render(dot);
                g_assert_true(g_file_set_contents(PICTURE, svg, -1, NULL));
                g_test_message("rewrote the tour in %s and %s", README, PICTURE);
        } else {
                g_autofree char *why = compare(t.dot, dot, t.values, t.now);
                if (why)
                        g_error("The README's DOT is not this run's graph (%s):\n%s", why, dot);
                g_autofree char *svg = render(t.dot), *committed = NULL;
                g_assert_true(g_file_get_contents(PICTURE, &committed, NULL, NULL));
                if (!streq(svg, committed))
                        g_error("%s is not what Graphviz draws from the README's DOT: SECTREE_TOUR_UPDATE=1 redraws it",
                                PICTURE);
        }

        session_stop(&s);
        unlink(link);
        rmdir(cwd);
        bus_fixture_finish(&b);
        g_ptr_array_unref(t.steps);
        g_hash_table_destroy(t.values);
        g_hash_table_destroy(t.now);
        g_free(t.readme);
        g_free(t.dot);
        g_free(t.graph_dot);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/readme/tour", test_tour);
        return g_test_run();
}
