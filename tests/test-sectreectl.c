/* test-sectreectl.c: every sectreectl verb against the real sectreed on a private bus, checked
 * against a scenario's ground truth, the daemon's own replies and what the kernel really does */
#include <jansson.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>

#include "bus-client.h"
#include <systemd/sd-login.h>

#include "bus-fixture.h"
#include "tests-json.h"
#include "tests-util.h"

#define DEST "org.sectree1"
#define PATH "/org/sectree1"
#define IFACE "org.sectree1.Manager"
#define COMM "test-sectreectl" /* the comm of every scenario task: this program's name */
#define WAIT_MS 5000           /* the bound of every wait */
#define QUIET_WAIT_MS 30000    /* ... but of a moment when no other work on the machine changes the forest */
#define MAX_NODES 16

/* ---- filters: (syscall, return value) pairs on the native arch, everything else allowed ---- */

typedef struct Rule {
        int nr;
        uint32_t ret;
} Rule;

static size_t build_filter(struct sock_filter *insns, const Rule *rules, size_t n_rules) {
        size_t n = 0;
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        insns[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (size_t i = 0; i < n_rules; i++) {
                insns[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned) rules[i].nr, 0, 1);
                insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, rules[i].ret);
        }
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        return n;
}

#define ERRNO(e) (SECCOMP_RET_ERRNO | (e))

/* ---- the fixture: a scenario, a private bus, the daemon, and the daemon's ids of the nodes ---- */

typedef struct Fixture {
        bool ok; /* set up; false when the test was skipped */
        BusFixture b;
        sd_bus *bus;
        Scenario *s;
        ScenarioTask root;      /* unfiltered (the scenario's subreaper) */
        ScenarioTask a, a2;     /* a installed n_a; a2 forked after it: both have n_a as head */
        ScenarioTask a1, a1t;   /* child of a with a private LOG filter n_a1 on top, and its thread */
        ScenarioTask t, t1, t2; /* a process whose thread t1 installed n_t with TSYNC */
        ScenarioTask u, ut;     /* u installed n_u after creating thread ut, which has no filter */
        ScenarioTask strict;    /* strict mode, no filter */
        ScenarioTask l;         /* holds the listener of n_l (USER_NOTIF on acct) */
        ScenarioTask mid;       /* unfiltered, between root and m1/m2 */
        ScenarioTask m1, m1c, m2; /* filtered children of mid (n_m1, n_m2), m1c a child of m1 */
        int n_a, n_a1, n_u, n_t, n_l, n_m1, n_m2;
        uint64_t id[MAX_NODES]; /* scenario node -> the daemon's filter id */
} Fixture;

static pid_t tid_of(const Fixture *fx, ScenarioTask t) {
        return scenario_task(fx->s, t)->tid;
}

static pid_t tgid_of(const Fixture *fx, ScenarioTask t) {
        return scenario_task(fx->s, t)->tgid;
}

static int head_of(const Fixture *fx, ScenarioTask t) {
        return scenario_task(fx->s, t)->head;
}

static void build_scenario(Fixture *fx) {
        struct sock_filter f[64];
        size_t n;
        Scenario *s;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        fx->s = s;
        fx->root = scenario_root(s);

        fx->a = scenario_fork(s, fx->root);
        const Rule ra[] = { { SYS_getpriority, ERRNO(1) }, { SYS_setpriority, ERRNO(3) }, { SYS_acct, SECCOMP_RET_TRAP } };
        n = build_filter(f, ra, G_N_ELEMENTS(ra));
        fx->n_a = scenario_install(s, fx->a, f, n, 0);
        g_assert_cmpint(fx->n_a, >=, 0);
        fx->a2 = scenario_fork(s, fx->a);
        fx->a1 = scenario_fork(s, fx->a);
        const Rule ra1[] = { { SYS_getpriority, ERRNO(2) }, { SYS_acct, ERRNO(4) } };
        n = build_filter(f, ra1, G_N_ELEMENTS(ra1));
        fx->n_a1 = scenario_install(s, fx->a1, f, n, SECCOMP_FILTER_FLAG_LOG);
        g_assert_cmpint(fx->n_a1, >=, 0);
        fx->a1t = scenario_thread(s, fx->a1);

        /* a thread that exists before its process installs a filter without TSYNC stays unfiltered */
        fx->u = scenario_fork(s, fx->root);
        fx->ut = scenario_thread(s, fx->u);
        const Rule ru[] = { { SYS_getpriority, ERRNO(8) } };
        n = build_filter(f, ru, G_N_ELEMENTS(ru));
        fx->n_u = scenario_install(s, fx->u, f, n, 0);
        g_assert_cmpint(fx->n_u, >=, 0);

        fx->t = scenario_fork(s, fx->root);
        fx->t1 = scenario_thread(s, fx->t);
        fx->t2 = scenario_thread(s, fx->t);
        const Rule rt[] = { { SYS_getpriority, ERRNO(5) } };
        n = build_filter(f, rt, G_N_ELEMENTS(rt));
        fx->n_t = scenario_install(s, fx->t1, f, n, SECCOMP_FILTER_FLAG_TSYNC);
        g_assert_cmpint(fx->n_t, >=, 0);

        fx->strict = scenario_fork(s, fx->root);
        g_assert_cmpint(scenario_strict(s, fx->strict), ==, 0);

        fx->l = scenario_fork(s, fx->root);
        const Rule rl[] = { { SYS_acct, SECCOMP_RET_USER_NOTIF } }; /* nobody calls acct */
        n = build_filter(f, rl, G_N_ELEMENTS(rl));
        fx->n_l = scenario_install(s, fx->l, f, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(fx->n_l, >=, 0);

        fx->mid = scenario_fork(s, fx->root);
        fx->m1 = scenario_fork(s, fx->mid);
        const Rule rm1[] = { { SYS_getpriority, ERRNO(6) } };
        n = build_filter(f, rm1, G_N_ELEMENTS(rm1));
        fx->n_m1 = scenario_install(s, fx->m1, f, n, 0);
        fx->m1c = scenario_fork(s, fx->m1);
        fx->m2 = scenario_fork(s, fx->mid);
        const Rule rm2[] = { { SYS_getpriority, ERRNO(7) } };
        n = build_filter(f, rm2, G_N_ELEMENTS(rm2));
        fx->n_m2 = scenario_install(s, fx->m2, f, n, 0);
        g_assert_cmpint(fx->n_m1, >=, 0);
        g_assert_cmpint(fx->n_m2, >=, 0);
        g_assert_cmpuint(scenario_n_nodes(s), <=, MAX_NODES);
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(s); x++)
                g_assert_cmpint(x, >=, 0);
}

/* ---- the daemon's replies, read directly with sd-bus: the reference the client is held to ---- */

typedef struct TaskRow {
        uint32_t tid, tgid, ppid, depth;
        char mode[16], comm[16];
        uint64_t head;
} TaskRow;

/* tid -> TaskRow */
static GHashTable *bus_tasks(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListTasks", &error, &reply, "") < 0)
                g_error("ListTasks: %s", error.message);
        GHashTable *h = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uuusstu)"), >, 0);
        TaskRow row;
        const char *comm, *mode;
        while (sd_bus_message_read(reply, "(uuusstu)", &row.tid, &row.tgid, &row.ppid, &comm, &mode, &row.head,
                                   &row.depth) > 0) {
                g_strlcpy(row.comm, comm, sizeof(row.comm));
                g_strlcpy(row.mode, mode, sizeof(row.mode));
                g_hash_table_insert(h, GUINT_TO_POINTER(row.tid), g_memdup2(&row, sizeof(row)));
        }
        return h;
}

static guint bus_n_filters(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListFilters", &error, &reply, "") < 0)
                g_error("ListFilters: %s", error.message);
        guint n = 0;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(ttusuas)"), >, 0);
        while (sd_bus_message_skip(reply, "(ttusuas)") > 0)
                n++;
        return n;
}

/* The ids of a task's chain, newest first; NULL (error in *ret_error) on failure. */
static GArray *bus_chain(sd_bus *bus, pid_t tid, char **ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "GetTaskChain", &error, &reply, "u", (uint32_t) tid) < 0) {
                if (ret_error)
                        *ret_error = g_strdup(error.name);
                sd_bus_error_free(&error);
                return NULL;
        }
        const void *ids;
        size_t size;
        g_assert_cmpint(sd_bus_message_read_array(reply, 't', &ids, &size), >=, 0);
        GArray *a = g_array_new(false, false, sizeof(uint64_t));
        g_array_append_vals(a, ids, (guint) (size / sizeof(uint64_t)));
        return a;
}

/* Does a live task of tgid run under seccomp? Then its unfiltered threads escaped its filters. */
static bool process_filtered(const Scenario *s, pid_t tgid) {
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(s); x++) {
                const ScenarioTaskInfo *i = scenario_task(s, x);
                if (i->alive && i->tgid == tgid && (i->head >= 0 || i->strict))
                        return true;
        }
        return false;
}

/* Has the daemon every scenario task with the mode and depth that were built (a thread that
 * escaped its process's filters as "disabled")? */
static bool scenario_listed(void *userdata) {
        Fixture *fx = userdata;
        g_autoptr(GHashTable) tasks = bus_tasks(fx->bus);
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++) {
                const ScenarioTaskInfo *i = scenario_task(fx->s, x);
                const TaskRow *row = g_hash_table_lookup(tasks, GUINT_TO_POINTER(i->tid));
                if (!i->alive)
                        continue;
                if (i->head < 0 && !i->strict) {
                        if (process_filtered(fx->s, i->tgid) ? !row || !streq(row->mode, "disabled") : row != NULL)
                                return false;
                        continue;
                }
                if (!row || !streq(row->mode, i->strict ? "strict" : "filter") ||
                    row->depth != (uint32_t) (i->head < 0 ? 0 : scenario_node_depth(fx->s, i->head)))
                        return false;
        }
        return true;
}

/* Map every node to the daemon's id through the chains of the tasks under it; a node met twice
 * must get the same id, and two nodes never share one (exact identity). */
static void map_node_ids(Fixture *fx) {
        memset(fx->id, 0, sizeof(fx->id));
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++) {
                const ScenarioTaskInfo *i = scenario_task(fx->s, x);
                if (!i->alive || i->head < 0)
                        continue;
                g_autoptr(GArray) chain = bus_chain(fx->bus, i->tid, NULL);
                g_assert_nonnull(chain);
                g_assert_cmpint(chain->len, ==, scenario_node_depth(fx->s, i->head));
                int node = i->head;
                for (guint k = 0; k < chain->len; k++, node = scenario_node(fx->s, node)->parent) {
                        uint64_t id = g_array_index(chain, uint64_t, k);
                        g_assert_cmpuint(id, >, 0);
                        if (fx->id[node] && fx->id[node] != id)
                                g_error("node %d is filter %" PRIu64 " for one task, %" PRIu64 " for another", node,
                                        fx->id[node], id);
                        fx->id[node] = id;
                }
        }
        for (size_t p = 0; p < scenario_n_nodes(fx->s); p++)
                for (size_t q = p + 1; q < scenario_n_nodes(fx->s); q++)
                        g_assert_cmpuint(fx->id[p], !=, fx->id[q]);
}

static void fixture_setup(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) {};
        if (!tests_require_root())
                return;
        tests_ensure_tracefs();
        build_scenario(fx); /* before the daemon: its start-up scan must find everything */
        bus_fixture_start_bus(&fx->b);
        bus_fixture_start_daemon(&fx->b, NULL, NULL, 30);
        fx->bus = bus_client_open();
        if (!tests_wait_for(scenario_listed, fx, WAIT_MS))
                g_error("the daemon does not list the scenario's tasks as built within %d ms", WAIT_MS);
        map_node_ids(fx);
        fx->ok = true;
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        fx->bus = sd_bus_flush_close_unref(fx->bus);
        scenario_free(fx->s);
        if (fx->b.dir)
                bus_fixture_stop(&fx->b);
}

/* ---- running the client ---- */

static int ctlv(Fixture *fx, bool as_nobody, char **out, char **err, const char *const *args) {
        g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), args);
        g_autofree char *o = NULL, *e = NULL;
        int status = bus_fixture_run(&fx->b, as_nobody, (char **) argv->pdata, &o, &e);
        if (out)
                *out = g_steal_pointer(&o);
        if (err)
                *err = g_steal_pointer(&e);
        return status;
}

/* sectreectl ARGS... (NULL-terminated); must succeed with nothing on stderr; returns stdout. */
#define CTL_OK(fx, ...) ctl_ok((fx), false, (const char *const[]) { __VA_ARGS__, NULL })
#define CTL_OK_AS_NOBODY(fx, ...) ctl_ok((fx), true, (const char *const[]) { __VA_ARGS__, NULL })

static char *ctl_ok(Fixture *fx, bool as_nobody, const char *const *args) {
        g_autofree char *out = NULL, *err = NULL, *cmd = g_strjoinv(" ", (char **) args);
        int status = ctlv(fx, as_nobody, &out, &err, args);
        if (status != 0 || !streq(err, ""))
                g_error("sectreectl %s: exit %d, stderr: %s", cmd, status, err);
        return g_steal_pointer(&out);
}

#define CTL_JSON(fx, ...) ctl_json((fx), false, (const char *const[]) { "--json", __VA_ARGS__, NULL })
#define CTL_JSON_AS_NOBODY(fx, ...) ctl_json((fx), true, (const char *const[]) { "--json", __VA_ARGS__, NULL })

static json_t *ctl_json(Fixture *fx, bool as_nobody, const char *const *args) {
        g_autofree char *out = ctl_ok(fx, as_nobody, args);
        g_autofree char *cmd = g_strjoinv(" ", (char **) args);
        return tests_json_parse_document(out, cmd);
}

#define CTL_FAILS(fx, nobody, line, ...) ctl_fails((fx), (nobody), (line), (const char *const[]) { __VA_ARGS__, NULL })

/* Exit 1, nothing on stdout, and one line on stderr: "sectreectl: " and line (what failed and the
 * daemon's message, as systemctl says it). */
static void ctl_fails(Fixture *fx, bool as_nobody, const char *line, const char *const *args) {
        g_autofree char *out = NULL, *err = NULL, *cmd = g_strjoinv(" ", (char **) args);
        int status = ctlv(fx, as_nobody, &out, &err, args);
        g_autofree char *want = g_strdup_printf("sectreectl: %s\n", line);
        if (status != 1 || !streq(out, "") || !streq(err, want))
                g_error("sectreectl %s%s: expected exit 1 and '%s', got exit %d, stdout '%s', stderr '%s'", cmd,
                        as_nobody ? " (as nobody)" : "", want, status, out, err);
}

static void assert_digest(const char *d) {
        g_assert_true(g_str_has_prefix(d, "sha256:"));
        g_assert_cmpuint(strlen(d), ==, strlen("sha256:") + 64);
        for (const char *p = d + 7; *p; p++)
                g_assert_true(g_ascii_isxdigit(*p) && !g_ascii_isupper(*p));
}

static void assert_flags(json_t *flags, bool log, bool listener) {
        g_assert_true(json_is_array(flags));
        bool has_log = false, has_listener = false;
        size_t i;
        json_t *v;
        json_array_foreach(flags, i, v) {
                const char *s = json_string_value(v);
                g_assert_nonnull(s);
                g_assert_true(streq(s, "log") || streq(s, "wait_killable_recv") || streq(s, "listener"));
                has_log |= streq(s, "log");
                has_listener |= streq(s, "listener");
        }
        g_assert_cmpint(has_log, ==, log);
        g_assert_cmpint(has_listener, ==, listener);
}

static char **lines_of(const char *out) {
        g_assert_true(out[0] == 0 || g_str_has_suffix(out, "\n"));
        g_autofree char *copy = g_strndup(out, strlen(out) - (out[0] ? 1 : 0));
        return out[0] ? g_strsplit(copy, "\n", -1) : g_new0(char *, 1);
}

static void assert_ascii(const char *s, const char *what) {
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p >= 0x80)
                        g_error("%s: non-ASCII output on a pipe: %s", what, s);
}

/* Node -> does the scenario put a LOG / listener flag on it? */
static bool node_log(const Fixture *fx, int node) {
        return scenario_node(fx->s, node)->flags & SECCOMP_FILTER_FLAG_LOG;
}

static bool node_listener(const Fixture *fx, int node) {
        return scenario_node(fx->s, node)->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER;
}

static uint64_t parent_id(const Fixture *fx, int node) {
        int p = scenario_node(fx->s, node)->parent;
        return p < 0 ? 0 : fx->id[p];
}

/* The scenario's live process leaders (the process handles), in handle order. */
static bool is_process(const Fixture *fx, ScenarioTask x) {
        const ScenarioTaskInfo *i = scenario_task(fx->s, x);
        return i->alive && !i->is_thread;
}

/* ---- status ---- */

typedef struct StableCounts {
        Fixture *fx;
        json_t *doc;
        guint tasks, filters;
} StableCounts;

/* status --json between two identical ListTasks/ListFilters answers: a moment without churn. */
static bool status_in_quiet_moment(void *userdata) {
        StableCounts *c = userdata;
        g_autoptr(GHashTable) before = bus_tasks(c->fx->bus);
        guint filters = bus_n_filters(c->fx->bus);
        json_decref(c->doc);
        c->doc = CTL_JSON(c->fx, "status");
        g_autoptr(GHashTable) after = bus_tasks(c->fx->bus);
        c->tasks = g_hash_table_size(after);
        c->filters = bus_n_filters(c->fx->bus);
        return g_hash_table_size(before) == c->tasks && filters == c->filters &&
               jint(c->doc, "tasks") == c->tasks && jint(c->doc, "filters") == c->filters;
}

static void test_status(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        StableCounts c = { .fx = fx };
        if (!tests_wait_for(status_in_quiet_moment, &c, QUIET_WAIT_MS))
                g_error("status --json says %" JSON_INTEGER_FORMAT " tasks and %" JSON_INTEGER_FORMAT
                        " filters; ListTasks has %u, ListFilters %u", jint(c.doc, "tasks"), jint(c.doc, "filters"),
                        c.tasks, c.filters);
        json_t *doc = c.doc;
        ASSERT_KEYS(doc, "version", "backend", "identity", "tasks", "filters", "listeners", "last_scan_usec",
                    "last_scan");
        g_assert_cmpstr(jstr(doc, "backend"), ==, "bpf");
        g_assert_cmpstr(jstr(doc, "identity"), ==, "exact");
        g_assert_cmpstr(jstr(doc, "version"), !=, "");
        g_assert_cmpint(jint(doc, "listeners"), >=, 1); /* the scenario's */
        json_int_t last = jint(doc, "last_scan_usec");
        g_assert_cmpint(last, >, 0);
        g_assert_cmpint(last, <=, g_get_real_time());
        g_autoptr(GDateTime) dt = g_date_time_new_from_iso8601(jstr(doc, "last_scan"), NULL);
        g_assert_nonnull(dt);
        g_assert_true(g_str_has_suffix(jstr(doc, "last_scan"), "Z"));
        g_assert_cmpint(g_date_time_to_unix(dt) * G_USEC_PER_SEC + g_date_time_get_microsecond(dt), ==, last);

        g_autofree char *text = CTL_OK(fx, "status");
        assert_ascii(text, "status");
        g_assert_nonnull(strstr(text, "  Backend: bpf\n"));
        g_assert_nonnull(strstr(text, " Identity: exact\n"));
        g_autofree char *version = g_strdup_printf("  Version: %s\n", jstr(doc, "version"));
        g_assert_nonnull(strstr(text, version));
        g_assert_nonnull(strstr(text, "    Tasks: "));
        g_assert_nonnull(strstr(text, "  Filters: "));
        g_assert_nonnull(strstr(text, "Listeners: "));
        g_assert_nonnull(strstr(text, "Last scan: "));
        g_assert_null(strstr(text, "Last scan: never"));
        json_decref(doc);

        /* no verb is status, as systemctl without one lists units */
        g_autofree char *bare = CTL_OK(fx, "--no-pager");
        g_assert_true(g_str_has_prefix(bare, "  Version: "));
        g_assert_nonnull(strstr(bare, "  Backend: bpf\n"));

        /* --json=MODE as systemd spells it: pretty is indented even into a pipe, short is one line,
         * off is the text; --json alone into a pipe is short */
        g_autofree char *pretty = CTL_OK(fx, "--json=pretty", "status");
        g_assert_true(g_str_has_prefix(pretty, "{\n  \""));
        json_decref(tests_json_parse_document(pretty, "status --json=pretty"));
        static const char *const one_line[] = { "--json=short", "--json" };
        for (size_t i = 0; i < G_N_ELEMENTS(one_line); i++) {
                g_autofree char *out = CTL_OK(fx, one_line[i], "status");
                g_assert_true(g_str_has_prefix(out, "{\""));
                g_assert_cmpint(strchr(out, '\n') - out, ==, strlen(out) - 1);
                json_decref(tests_json_parse_document(out, one_line[i]));
        }
        g_autofree char *off = CTL_OK(fx, "--json=off", "status");
        g_assert_true(g_str_has_prefix(off, "  Version: "));
        g_autofree char *last_wins = CTL_OK(fx, "--json", "status", "--json=off");
        g_assert_true(g_str_has_prefix(last_wins, "  Version: "));
}

/* ---- ps ---- */

static const char *expected_mode(const Fixture *fx, ScenarioTask x) {
        const ScenarioTaskInfo *i = scenario_task(fx->s, x);
        return i->strict ? "strict" : i->head >= 0 ? "filter" : "disabled";
}

/* Listed: a task in strict or filter mode, and a thread that escaped its process's filters. */
static bool is_listed(const Fixture *fx, ScenarioTask x) {
        const ScenarioTaskInfo *i = scenario_task(fx->s, x);
        return i->alive && (i->strict || i->head >= 0 || process_filtered(fx->s, i->tgid));
}

/* The tids ps --json lists for args (NULL-terminated), sorted. */
static char *ps_tids(Fixture *fx, const char *const *args) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_ptr_array_add(argv, (char *) "--json");
        g_ptr_array_add(argv, (char *) "ps");
        for (; *args; args++)
                g_ptr_array_add(argv, (char *) *args);
        g_ptr_array_add(argv, NULL);
        json_t *doc = ctl_json(fx, false, (const char *const *) argv->pdata);
        g_autoptr(GString) tids = g_string_new(NULL);
        json_t *t;
        size_t i;
        json_array_foreach(jarr(doc, "tasks"), i, t)
                g_string_append_printf(tids, "%s%" JSON_INTEGER_FORMAT, i ? " " : "", jint(t, "tid"));
        json_decref(doc);
        return g_string_free(g_steal_pointer(&tids), false);
}

/* ps PID|COMM...: a number is a process or a thread, anything else a glob on the name. */
static void assert_ps_filters(Fixture *fx) {
        g_autofree char *t = g_strdup_printf("%d", tgid_of(fx, fx->t)), *t1 = g_strdup_printf("%d", tid_of(fx, fx->t1));
        g_autofree char *m1 = g_strdup_printf("%d", tgid_of(fx, fx->m1));
        g_autofree char *process = g_strdup_printf("%d %d %d", tid_of(fx, fx->t), tid_of(fx, fx->t1), tid_of(fx, fx->t2));
        g_autofree char *by_pid = ps_tids(fx, (const char *const[]) { t, NULL });
        g_assert_cmpstr(by_pid, ==, process);
        g_autofree char *by_tid = ps_tids(fx, (const char *const[]) { t1, NULL });
        g_assert_cmpstr(by_tid, ==, t1);
        g_autofree char *both = ps_tids(fx, (const char *const[]) { m1, t1, NULL });
        g_autofree char *want_both = g_strdup_printf("%s %s", t1, m1); /* ordered by tgid: t before m1 */
        g_assert_cmpstr(both, ==, want_both);
        g_autofree char *none = ps_tids(fx, (const char *const[]) { "no-such-name*", NULL });
        g_assert_cmpstr(none, ==, "");
        /* a glob on the name: every listed scenario task, and those only among the scenario's. Not
         * "test-sectree*": the tests beside this one (test-sectreed-cli, ...) have filtered tasks
         * of such names; every test-sectreectl-* is "test-sectreectl" (15 bytes), as COMM is. */
        g_autofree char *glob = ps_tids(fx, (const char *const[]) { "test-sectreec*", NULL });
        g_autofree char *exact = ps_tids(fx, (const char *const[]) { COMM, NULL });
        g_assert_cmpstr(glob, ==, exact);
        g_auto(GStrv) listed = g_strsplit(glob, " ", -1);
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++) {
                g_autofree char *tid = g_strdup_printf("%d", tid_of(fx, x));
                g_assert_cmpint(g_strv_contains((const char *const *) listed, tid), ==, is_listed(fx, x));
        }
        /* the table says how many */
        g_autofree char *text = CTL_OK(fx, "ps", t);
        g_assert_true(g_str_has_suffix(text, "\n3 tasks listed.\n"));
        g_autofree char *empty = CTL_OK(fx, "ps", "no-such-name");
        g_assert_true(g_str_has_suffix(empty, "\n0 tasks listed.\n"));
}

/* What ps's UNIT column says of process pid: its unit, "UNIT/USER_UNIT" under a user manager, "-". */
static char *unit_label_of(pid_t pid) {
        g_autofree char *unit = NULL, *user_unit = NULL;
        if (sd_pid_get_unit(pid, &unit) < 0)
                g_clear_pointer(&unit, g_free);
        if (sd_pid_get_user_unit(pid, &user_unit) < 0)
                g_clear_pointer(&user_unit, g_free);
        if (unit && user_unit)
                return g_strdup_printf("%s/%s", unit, user_unit);
        return g_strdup(unit ?: user_unit ?: "-");
}

static void test_ps(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *out = CTL_OK(fx, "ps");
        assert_ascii(out, "ps");
        g_auto(GStrv) lines = lines_of(out);
        g_auto(GStrv) header = g_strsplit_set(lines[0], " ", -1);
        g_autofree char *joined = NULL;
        {
                g_autoptr(GPtrArray) words = g_ptr_array_new();
                for (char **w = header; *w; w++)
                        if (**w)
                                g_ptr_array_add(words, *w);
                g_ptr_array_add(words, NULL);
                joined = g_strjoinv(" ", (char **) words->pdata);
        }
        g_assert_cmpstr(joined, ==, "TID TGID PPID COMM MODE DEPTH FILTER UNIT");
        guint n = g_strv_length(lines);
        g_assert_cmpuint(n, >=, 3);
        g_assert_cmpstr(lines[n - 2], ==, "");
        guint rows = n - 3;
        g_autofree char *footer = g_strdup_printf("%u task%s listed.", rows, rows == 1 ? "" : "s");
        g_assert_cmpstr(lines[n - 1], ==, footer);

        /* tid -> the row's words */
        g_autoptr(GHashTable) by_tid = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_strfreev);
        for (guint i = 1; i < n - 2; i++) {
                g_auto(GStrv) cells = g_strsplit_set(g_strstrip(lines[i]), " ", -1);
                g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
                for (char **c = cells; *c; c++)
                        if (**c)
                                g_ptr_array_add(w, g_strdup(*c));
                if (w->len != 8)
                        g_error("ps row with %u cells: '%s'", w->len, lines[i]);
                g_ptr_array_add(w, NULL);
                char **row = (char **) g_ptr_array_free(g_steal_pointer(&w), false);
                g_hash_table_insert(by_tid, GUINT_TO_POINTER(atoi(row[0])), row);
        }
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++) {
                const ScenarioTaskInfo *i = scenario_task(fx->s, x);
                char **row = g_hash_table_lookup(by_tid, GUINT_TO_POINTER(i->tid));
                if (!is_listed(fx, x)) {
                        if (row)
                                g_error("ps lists unfiltered task %d", i->tid);
                        continue;
                }
                if (!row)
                        g_error("ps does not list scenario task %d:\n%s", i->tid, out);
                g_assert_cmpint(atoi(row[1]), ==, i->tgid);
                g_assert_cmpint(atoi(row[2]), ==, i->ppid);
                g_assert_cmpstr(row[3], ==, COMM);
                g_assert_cmpstr(row[4], ==, expected_mode(fx, x));
                g_assert_cmpint(atoi(row[5]), ==, i->head < 0 ? 0 : scenario_node_depth(fx->s, i->head));
                if (i->head < 0)
                        g_assert_cmpstr(row[6], ==, "-");
                else
                        g_assert_cmpuint(g_ascii_strtoull(row[6], NULL, 10), ==, fx->id[i->head]);
                g_autofree char *unit = unit_label_of(i->tgid);
                g_assert_cmpstr(row[7], ==, unit);
        }

        /* --no-pager is accepted (nothing is paged) */
        g_autofree char *no_pager = CTL_OK(fx, "--no-pager", "ps");
        g_assert_true(g_str_has_prefix(g_strchug(no_pager), "TID "));

        /* --no-legend: the rows only */
        g_autofree char *bare = CTL_OK(fx, "--no-legend", "ps");
        g_assert_false(g_str_has_prefix(g_strchug(bare), "TID"));
        g_assert_null(strstr(bare, "listed."));

        /* --json */
        json_t *doc = CTL_JSON(fx, "ps");
        ASSERT_KEYS(doc, "tasks");
        json_t *tasks = jarr(doc, "tasks"), *t;
        size_t k;
        json_int_t last_tgid = 0, last_tid = 0;
        g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
        json_array_foreach(tasks, k, t) {
                ASSERT_KEYS(t, "tid", "tgid", "ppid", "comm", "mode", "filter", "depth", "stale", "unit", "user_unit");
                g_assert_false(json_boolean_value(json_object_get(t, "stale"))); /* bpf reads every task */
                json_int_t tid = jint(t, "tid"), tgid = jint(t, "tgid");
                g_assert_true(tgid > last_tgid || (tgid == last_tgid && tid > last_tid)); /* by tgid, then tid */
                last_tgid = tgid;
                last_tid = tid;
                g_hash_table_insert(seen, GINT_TO_POINTER((int) tid), t);
                const char *mode = jstr(t, "mode");
                g_assert_true(streq(mode, "filter") || streq(mode, "strict") || streq(mode, "disabled"));
                g_assert_cmpint(jid(t, "filter") == 0, ==, !streq(mode, "filter"));
        }
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++) {
                const ScenarioTaskInfo *i = scenario_task(fx->s, x);
                json_t *o = g_hash_table_lookup(seen, GINT_TO_POINTER(i->tid));
                g_assert_cmpint(o != NULL, ==, is_listed(fx, x));
                if (!o)
                        continue;
                g_assert_cmpint(jint(o, "tgid"), ==, i->tgid);
                g_assert_cmpint(jint(o, "ppid"), ==, i->ppid);
                g_assert_cmpstr(jstr(o, "comm"), ==, COMM);
                g_assert_cmpstr(jstr(o, "mode"), ==, expected_mode(fx, x));
                g_assert_cmpint(jint(o, "depth"), ==, i->head < 0 ? 0 : scenario_node_depth(fx->s, i->head));
                g_assert_cmpuint(jid(o, "filter"), ==, i->head < 0 ? 0 : fx->id[i->head]);
                /* the table's UNIT as two keys, null for none (it was left out of the JSON) */
                g_autofree char *unit = NULL, *user_unit = NULL;
                if (sd_pid_get_unit(i->tgid, &unit) < 0)
                        g_clear_pointer(&unit, g_free);
                if (sd_pid_get_user_unit(i->tgid, &user_unit) < 0)
                        g_clear_pointer(&user_unit, g_free);
                json_t *ju = json_object_get(o, "unit"), *juu = json_object_get(o, "user_unit");
                g_assert_cmpstr(json_is_null(ju) ? NULL : json_string_value(ju), ==, unit);
                g_assert_cmpstr(json_is_null(juu) ? NULL : json_string_value(juu), ==, user_unit);
        }
        json_decref(doc);
        assert_ps_filters(fx);
}

/* ---- tree ---- */

/* What a tree printout says: each filter's parent (0 for a top-level one) and task count, and
 * for each process the filters it is printed under (0: "without a filter") with its line. */
typedef struct TreeText {
        GHashTable *filter_parent; /* id -> parent id */
        GHashTable *filter_tasks;  /* id -> N of "[head of N, in the chains of M tasks]" */
        GHashTable *chain_tasks;   /* id -> M */
        GHashTable *process_under; /* pid -> GPtrArray of "filter-id\tline" */
        char *header;
        char *counts; /* the second line: "N filters, N processes, N threads, N listeners" */
} TreeText;

static void tree_text_free(TreeText *t) {
        g_hash_table_destroy(t->filter_parent);
        g_hash_table_destroy(t->filter_tasks);
        g_hash_table_destroy(t->chain_tasks);
        g_hash_table_destroy(t->process_under);
        g_free(t->header);
        g_free(t->counts);
}

static gpointer id_key(uint64_t id) {
        return GSIZE_TO_POINTER((gsize) id);
}

/* Parse the ASCII tree: three characters of indentation per level. */
static void tree_text_parse(const char *out, TreeText *t) {
        *t = (TreeText) {
                .filter_parent = g_hash_table_new(g_direct_hash, g_direct_equal),
                .filter_tasks = g_hash_table_new(g_direct_hash, g_direct_equal),
                .chain_tasks = g_hash_table_new(g_direct_hash, g_direct_equal),
                .process_under = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_ptr_array_unref),
        };
        g_auto(GStrv) lines = lines_of(out);
        g_assert_true(g_str_has_prefix(lines[0], "Seccomp filter forest of "));
        t->header = g_strdup(lines[0]);
        g_assert_nonnull(lines[1]);
        t->counts = g_strdup(lines[1]);
        uint64_t stack[64] = {};
        bool unfiltered = false;
        for (char **l = lines + 2; *l; l++) {
                const char *line = *l;
                if (!*line)
                        continue;
                if (streq(line, "without a filter:")) {
                        unfiltered = true;
                        continue;
                }
                size_t off = strspn(line, "|` -");
                if (g_str_has_prefix(line + off, "listener ")) /* a filter's listener and its holders */
                        continue;
                g_assert_true(off == 0 || off % 2 == 1); /* libsmartcols: two columns a level, then a space */
                size_t level = off ? (off - 1) / 2 : 0;
                g_assert_cmpuint(level, <, G_N_ELEMENTS(stack));
                if (level > 0)
                        g_assert_true(strncmp(line + off - 2, "- ", 2) == 0);
                const char *body = line + off;
                uint64_t id;
                unsigned tasks, chain;
                if (!unfiltered && sscanf(body, "filter %" SCNu64, &id) == 1) {
                        g_assert_true(level == 0 || stack[level - 1] != 0);
                        stack[level] = id;
                        g_hash_table_insert(t->filter_parent, id_key(id), id_key(level ? stack[level - 1] : 0));
                        const char *count = strrchr(body, '[');
                        g_assert_nonnull(count);
                        g_assert_cmpint(sscanf(count, "[head of %u, in the chains of %u task", &tasks, &chain), ==, 2);
                        g_hash_table_insert(t->filter_tasks, id_key(id), GUINT_TO_POINTER(tasks));
                        g_hash_table_insert(t->chain_tasks, id_key(id), GUINT_TO_POINTER(chain));
                        continue;
                }
                const char *bracket = strchr(body, '[');
                if (!bracket)
                        g_error("tree: a line that is neither a filter nor a process: '%s'", line);
                int pid = atoi(bracket + 1);
                g_assert_cmpint(pid, >, 0);
                g_assert_true(level >= 1);
                uint64_t under = unfiltered ? 0 : stack[level - 1];
                GPtrArray *a = g_hash_table_lookup(t->process_under, GINT_TO_POINTER(pid));
                if (!a) {
                        a = g_ptr_array_new_with_free_func(g_free);
                        g_hash_table_insert(t->process_under, GINT_TO_POINTER(pid), a);
                }
                g_ptr_array_add(a, g_strdup_printf("%" PRIu64 "\t%s", under, body));
        }
}

/* The line of process pid under filter id in the printout (NULL if it is not there). */
static const char *tree_process_line(const TreeText *t, pid_t pid, uint64_t id) {
        GPtrArray *a = g_hash_table_lookup(t->process_under, GINT_TO_POINTER(pid));
        g_autofree char *prefix = g_strdup_printf("%" PRIu64 "\t", id);
        for (guint i = 0; a && i < a->len; i++)
                if (g_str_has_prefix(a->pdata[i], prefix))
                        return (const char *) a->pdata[i] + strlen(prefix);
        return NULL;
}

static guint tree_process_places(const TreeText *t, pid_t pid) {
        GPtrArray *a = g_hash_table_lookup(t->process_under, GINT_TO_POINTER(pid));
        return a ? a->len : 0;
}

/* Number of listed threads of process x's tgid in the scenario, and their tids as "a b c" (a
 * thread that escaped its process's filters, ut, among them). */
static gint cmp_pid(gconstpointer a, gconstpointer b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* head: only the threads whose head is that node (-1: without a filter); -2: all of them. */
static guint scenario_threads_under(const Fixture *fx, ScenarioTask x, int head, GString *tids) {
        g_autoptr(GArray) a = g_array_new(false, false, sizeof(pid_t));
        for (ScenarioTask y = 0; (size_t) y < scenario_n_tasks(fx->s); y++)
                if (is_listed(fx, y) && scenario_task(fx->s, y)->tgid == tgid_of(fx, x) && (head == -2 || head_of(fx, y) == head))
                        g_array_append_val(a, scenario_task(fx->s, y)->tid);
        g_array_sort(a, cmp_pid); /* the client prints them by tid, which may have wrapped */
        for (guint k = 0; tids && k < a->len; k++)
                g_string_append_printf(tids, "%s%d", k ? " " : "", g_array_index(a, pid_t, k));
        return a->len;
}

static guint scenario_threads(const Fixture *fx, ScenarioTask x, GString *tids) {
        return scenario_threads_under(fx, x, -2, tids);
}

/* Process x is printed under its head filter (or without a filter when strict), with the threads
 * that share its head, and once more without a filter when threads of it escaped its filters. */
static void assert_tree_process(const Fixture *fx, const TreeText *t, ScenarioTask x) {
        int head = head_of(fx, x);
        uint64_t under = head < 0 ? 0 : fx->id[head];
        const char *line = tree_process_line(t, tgid_of(fx, x), under);
        guint escaped = head >= 0 && !scenario_task(fx->s, x)->strict ? scenario_threads_under(fx, x, -1, NULL) : 0;
        if (!line || tree_process_places(t, tgid_of(fx, x)) != 1 + (escaped > 0))
                g_error("process %d is not printed %s under filter %" PRIu64, tgid_of(fx, x), escaped ? "twice" : "once", under);
        g_autoptr(GString) tids = g_string_new(NULL);
        guint all = scenario_threads(fx, x, NULL), n = scenario_threads_under(fx, x, head, tids);
        g_autofree char *want = all > 1 ? g_strdup_printf(COMM "[%d] %u/%u threads: %s", tgid_of(fx, x), n, all, tids->str)
                                        : g_strdup_printf(COMM "[%d]%s", tgid_of(fx, x), head < 0 ? " (strict)" : "");
        g_assert_cmpstr(line, ==, want);
}

static void assert_tree_filter(const Fixture *fx, const TreeText *t, int node) {
        gpointer parent;
        if (!g_hash_table_lookup_extended(t->filter_parent, id_key(fx->id[node]), NULL, &parent))
                g_error("filter %" PRIu64 " (node %d) is not in the tree", fx->id[node], node);
        g_assert_cmpuint((uint64_t) GPOINTER_TO_SIZE(parent), ==, parent_id(fx, node));
}

static unsigned node_head_count(const Fixture *fx, int node) {
        unsigned n = 0;
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++)
                n += scenario_task(fx->s, x)->alive && head_of(fx, x) == node;
        return n;
}

/* The live tasks whose chain holds node, anywhere. */
static unsigned node_chain_count(const Fixture *fx, int node) {
        unsigned n = 0;
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++)
                for (int h = head_of(fx, x); scenario_task(fx->s, x)->alive && h >= 0; h = scenario_node(fx->s, h)->parent)
                        n += h == node;
        return n;
}

static TreeText tree_of(Fixture *fx, const char *pid) {
        g_autofree char *out = pid ? CTL_OK(fx, "tree", pid) : CTL_OK(fx, "tree");
        assert_ascii(out, "tree");
        TreeText t;
        tree_text_parse(out, &t);
        g_assert_nonnull(strstr(t.header, "(kernel "));
        g_assert_nonnull(strstr(t.header, ", bpf backend, exact identity)"));
        if (pid) {
                g_autofree char *sub = g_strdup_printf(", subtree of process %s ", pid);
                g_assert_nonnull(strstr(t.header, sub));
        }
        return t;
}

static void assert_only_processes(const Fixture *fx, const TreeText *t, const ScenarioTask *want, size_t n) {
        g_assert_cmpuint(g_hash_table_size(t->process_under), ==, n);
        for (size_t i = 0; i < n; i++)
                assert_tree_process(fx, t, want[i]);
}

static void assert_only_filters(const Fixture *fx, const TreeText *t, const int *want, size_t n) {
        g_assert_cmpuint(g_hash_table_size(t->filter_parent), ==, n);
        for (size_t i = 0; i < n; i++)
                assert_tree_filter(fx, t, want[i]);
}

static void test_tree(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        /* the whole machine: every scenario filter under its parent, every process under its head */
        TreeText all = tree_of(fx, NULL);
        for (size_t node = 0; node < scenario_n_nodes(fx->s); node++) {
                assert_tree_filter(fx, &all, (int) node);
                unsigned tasks = GPOINTER_TO_UINT(g_hash_table_lookup(all.filter_tasks, id_key(fx->id[node])));
                g_assert_cmpuint(tasks, ==, node_head_count(fx, (int) node));
                unsigned chain = GPOINTER_TO_UINT(g_hash_table_lookup(all.chain_tasks, id_key(fx->id[node])));
                g_assert_cmpuint(chain, ==, node_chain_count(fx, (int) node));
        }
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++) {
                if (!is_process(fx, x))
                        continue;
                if (x == fx->root || x == fx->mid) /* no filter, not strict: not listed */
                        g_assert_cmpuint(tree_process_places(&all, tgid_of(fx, x)), ==, 0);
                else
                        assert_tree_process(fx, &all, x);
        }
        tree_text_free(&all);

        /* the scenario's root runs without a filter: its subtree lists it, as a snapshot does */
        g_autofree char *root_pid = g_strdup_printf("%d", tgid_of(fx, fx->root));
        g_autofree char *root_out = CTL_OK(fx, "tree", root_pid);
        g_autofree char *root_line = g_strdup("\nwithout a filter:\n");
        g_autofree char *root_proc = g_strdup_printf("- " COMM "[%d]\n", tgid_of(fx, fx->root));
        if (!strstr(root_out, root_line) || !strstr(root_out, root_proc))
                g_error("tree %s does not list its unfiltered root:\n%s", root_pid, root_out);

        /* a filtered process: itself, its descendants, the filters their chains reach */
        g_autofree char *a = g_strdup_printf("%d", tgid_of(fx, fx->a));
        TreeText ta = tree_of(fx, a);
        const ScenarioTask in_a[] = { fx->a, fx->a1, fx->a2 };
        const int filters_a[] = { fx->n_a, fx->n_a1 };
        assert_only_processes(fx, &ta, in_a, G_N_ELEMENTS(in_a));
        assert_only_filters(fx, &ta, filters_a, G_N_ELEMENTS(filters_a));
        g_assert_cmpstr(ta.counts, ==, "2 filters, 3 processes, 4 threads, 0 listeners");
        tree_text_free(&ta);

        /* the listener's holder: its filter is flagged, and the header counts it */
        g_autofree char *l = g_strdup_printf("%d", tgid_of(fx, fx->l));
        TreeText tl = tree_of(fx, l);
        const ScenarioTask in_l[] = { fx->l };
        const int filters_l[] = { fx->n_l };
        assert_only_processes(fx, &tl, in_l, G_N_ELEMENTS(in_l));
        assert_only_filters(fx, &tl, filters_l, G_N_ELEMENTS(filters_l));
        g_assert_cmpstr(tl.counts, ==, "1 filter, 1 process, 1 thread, 1 listener");
        g_autofree char *l_line = g_strdup_printf("filter %" PRIu64 "  %zu insns  sha256:", fx->id[fx->n_l],
                                                  scenario_node(fx->s, fx->n_l)->len);
        g_autofree char *l_out = CTL_OK(fx, "tree", l);
        g_assert_nonnull(strstr(l_out, l_line));
        g_assert_true(g_regex_match_simple("  listener [0-9]+  \\[head of 1, in the chains of 1 task\\]\n", l_out, 0, 0));
        /* its holder, as snapshot files show it */
        g_autofree char *held = g_strdup_printf(" held by " COMM "[%d] fd %d\n", tgid_of(fx, fx->l),
                                                scenario_node(fx->s, fx->n_l)->listener_fd);
        if (!strstr(l_out, held))
                g_error("tree %s does not say '%s':\n%s", l, held, l_out);
        tree_text_free(&tl);

        /* a thread's id stands for its process */
        g_autofree char *a1t = g_strdup_printf("%d", tid_of(fx, fx->a1t));
        g_autofree char *out = CTL_OK(fx, "tree", a1t);
        g_autofree char *sub = g_strdup_printf(", subtree of process %d ", tgid_of(fx, fx->a1));
        g_assert_nonnull(strstr(out, sub));
        TreeText tt;
        tree_text_parse(out, &tt);
        const ScenarioTask in_a1[] = { fx->a1 };
        assert_only_processes(fx, &tt, in_a1, G_N_ELEMENTS(in_a1));
        assert_only_filters(fx, &tt, filters_a, G_N_ELEMENTS(filters_a));
        tree_text_free(&tt);

        /* an unfiltered process between root and filtered children: still its subtree, and it is
         * listed itself without a filter, as a snapshot of the subtree shows it */
        g_autofree char *mid = g_strdup_printf("%d", tgid_of(fx, fx->mid));
        TreeText tm = tree_of(fx, mid);
        const ScenarioTask in_mid[] = { fx->m1, fx->m1c, fx->m2 };
        const int filters_mid[] = { fx->n_m1, fx->n_m2 };
        g_assert_cmpuint(g_hash_table_size(tm.process_under), ==, G_N_ELEMENTS(in_mid) + 1);
        for (size_t i = 0; i < G_N_ELEMENTS(in_mid); i++)
                assert_tree_process(fx, &tm, in_mid[i]);
        g_autofree char *mid_line = g_strdup_printf(COMM "[%d]", tgid_of(fx, fx->mid));
        g_assert_cmpstr(tree_process_line(&tm, tgid_of(fx, fx->mid), 0), ==, mid_line);
        assert_only_filters(fx, &tm, filters_mid, G_N_ELEMENTS(filters_mid));
        g_assert_cmpstr(tm.counts, ==, "2 filters, 4 processes, 4 threads, 0 listeners");
        tree_text_free(&tm);

        /* the unfiltered scenario root: every listed process below it, m1, m1c and m2 too, which
         * hang below mid, a process the daemon does not list (ListSubtree follows /proc) */
        g_autofree char *root = g_strdup_printf("%d", scenario_root_pid(fx->s));
        TreeText tr = tree_of(fx, root);
        const ScenarioTask in_root[] = { fx->a, fx->a1, fx->a2, fx->u,  fx->t,
                                         fx->strict, fx->l, fx->m1, fx->m1c, fx->m2 };
        for (size_t i = 0; i < G_N_ELEMENTS(in_root); i++)
                assert_tree_process(fx, &tr, in_root[i]);
        const int filters_root[] = { fx->n_a, fx->n_a1, fx->n_u, fx->n_t, fx->n_l, fx->n_m1, fx->n_m2 };
        for (size_t i = 0; i < G_N_ELEMENTS(filters_root); i++)
                assert_tree_filter(fx, &tr, filters_root[i]);
        GHashTableIter it;
        gpointer pid;
        g_hash_table_iter_init(&it, tr.process_under);
        while (g_hash_table_iter_next(&it, &pid, NULL)) {
                bool ours = false;
                for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++)
                        ours |= is_process(fx, x) && tgid_of(fx, x) == GPOINTER_TO_INT(pid);
                if (!ours)
                        g_error("tree %s shows process %d, which is not in the scenario", root, GPOINTER_TO_INT(pid));
        }
        tree_text_free(&tr);

        /* errors: a process that does not exist */
        CTL_FAILS(fx, false, "Failed to get the task's chain: No task with tid 999999999.", "tree", "999999999");
}

/* tree --json (and graph --json, the same document) of process a. */
static void assert_forest_json(Fixture *fx, json_t *doc, pid_t root, const ScenarioTask *procs, size_t n_procs,
                               const int *nodes, size_t n_nodes) {
        ASSERT_KEYS(doc, "backend", "identity", "root", "filters", "processes", "listeners");
        g_assert_cmpuint(json_array_size(jarr(doc, "listeners")), ==, 0); /* the daemon does not say who holds them */
        g_assert_cmpstr(jstr(doc, "backend"), ==, "bpf");
        g_assert_cmpstr(jstr(doc, "identity"), ==, "exact");
        g_assert_cmpint(jint(doc, "root"), ==, root);
        json_t *filters = jarr(doc, "filters"), *processes = jarr(doc, "processes"), *x;
        size_t i;
        g_assert_cmpuint(json_array_size(filters), ==, n_nodes);
        g_autoptr(GHashTable) position = g_hash_table_new(g_direct_hash, g_direct_equal);
        json_array_foreach(filters, i, x) {
                ASSERT_KEYS(x, "id", "parent", "length", "digest", "depth", "tasks", "chain_tasks", "flags", "listener");
                uint64_t id = (uint64_t) jid(x, "id"), parent = (uint64_t) jid(x, "parent");
                g_assert_cmpuint(id, >, 0);
                /* parents first */
                g_assert_true(parent == 0 || g_hash_table_contains(position, id_key(parent)));
                g_hash_table_insert(position, id_key(id), x);
                assert_digest(jstr(x, "digest"));
        }
        for (size_t k = 0; k < n_nodes; k++) {
                int node = nodes[k];
                json_t *f = g_hash_table_lookup(position, id_key(fx->id[node]));
                g_assert_nonnull(f);
                g_assert_cmpuint(jid(f, "parent"), ==, parent_id(fx, node));
                g_assert_cmpint(jint(f, "length"), ==, scenario_node(fx->s, node)->len);
                g_assert_cmpint(jint(f, "depth"), ==, scenario_node_depth(fx->s, node));
                g_assert_cmpint(jint(f, "tasks"), ==, node_head_count(fx, node));
                g_assert_cmpint(jint(f, "chain_tasks"), ==, node_chain_count(fx, node));
                assert_flags(jget(f, "flags"), node_log(fx, node), node_listener(fx, node));
        }
        g_assert_cmpuint(json_array_size(processes), ==, n_procs);
        json_int_t last = 0;
        json_array_foreach(processes, i, x) {
                ASSERT_KEYS(x, "pid", "ppid", "comm", "threads");
                g_assert_cmpint(jint(x, "pid"), >, last); /* by pid */
                last = jint(x, "pid");
        }
        for (size_t k = 0; k < n_procs; k++) {
                ScenarioTask p = procs[k];
                json_t *found = NULL;
                json_array_foreach(processes, i, x) if (jint(x, "pid") == tgid_of(fx, p)) found = x;
                g_assert_nonnull(found);
                g_assert_cmpint(jint(found, "ppid"), ==, scenario_task(fx->s, p)->ppid);
                g_assert_cmpstr(jstr(found, "comm"), ==, COMM);
                g_autoptr(GString) tids = g_string_new(NULL);
                g_assert_cmpuint(json_array_size(jarr(found, "threads")), ==, scenario_threads(fx, p, tids));
                json_t *th;
                size_t j;
                json_array_foreach(jarr(found, "threads"), j, th) {
                        ASSERT_KEYS(th, "tid", "mode", "filter", "depth");
                        g_assert_cmpstr(jstr(th, "mode"), ==, expected_mode(fx, p));
                        int head = head_of(fx, p);
                        g_assert_cmpuint(jid(th, "filter"), ==, head < 0 ? 0 : fx->id[head]);
                        g_assert_cmpint(jint(th, "depth"), ==, head < 0 ? 0 : scenario_node_depth(fx->s, head));
                }
        }
}

static void test_tree_json(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *a = g_strdup_printf("%d", tgid_of(fx, fx->a));
        const ScenarioTask in_a[] = { fx->a, fx->a1, fx->a2 };
        const int filters_a[] = { fx->n_a, fx->n_a1 };
        json_t *doc = CTL_JSON(fx, "tree", a);
        assert_forest_json(fx, doc, tgid_of(fx, fx->a), in_a, G_N_ELEMENTS(in_a), filters_a, G_N_ELEMENTS(filters_a));
        json_decref(doc);
        doc = CTL_JSON(fx, "graph", a);
        assert_forest_json(fx, doc, tgid_of(fx, fx->a), in_a, G_N_ELEMENTS(in_a), filters_a, G_N_ELEMENTS(filters_a));
        json_decref(doc);

        g_autofree char *mid = g_strdup_printf("%d", tgid_of(fx, fx->mid));
        const ScenarioTask in_mid[] = { fx->m1, fx->m1c, fx->m2 };
        const int filters_mid[] = { fx->n_m1, fx->n_m2 };
        doc = CTL_JSON(fx, "tree", mid);
        assert_forest_json(fx, doc, tgid_of(fx, fx->mid), in_mid, G_N_ELEMENTS(in_mid), filters_mid,
                           G_N_ELEMENTS(filters_mid));
        json_decref(doc);

        /* the whole machine: root 0, and the strict process is in it with no filter */
        doc = CTL_JSON(fx, "tree");
        g_assert_cmpint(jint(doc, "root"), ==, 0);
        json_t *x;
        size_t i;
        bool strict_seen = false;
        json_array_foreach(jarr(doc, "processes"), i, x) if (jint(x, "pid") == tgid_of(fx, fx->strict)) {
                json_t *th = json_array_get(jarr(x, "threads"), 0);
                g_assert_cmpstr(jstr(th, "mode"), ==, "strict");
                g_assert_true(json_is_null(jget(th, "filter")));
                strict_seen = true;
        }
        g_assert_true(strict_seen);
        json_decref(doc);
}

/* ---- show ---- */

/* show --pid: every filter of the task's chain, head first, each as `show ID` prints it. */
static void assert_show_chain(Fixture *fx, ScenarioTask x) {
        g_autofree char *tid = g_strdup_printf("--pid=%d", tid_of(fx, x));
        int depth = scenario_node_depth(fx->s, head_of(fx, x));
        g_autofree char *out = CTL_OK(fx, "show", tid);
        g_autoptr(GString) want = g_string_new(NULL);
        g_string_append_printf(want, "Task %d: %d filter%s, the head (evaluated first) first\n", tid_of(fx, x), depth,
                               depth == 1 ? "" : "s");
        json_t *doc = CTL_JSON(fx, "show", tid);
        ASSERT_KEYS(doc, "tid", "filters");
        g_assert_cmpint(jint(doc, "tid"), ==, tid_of(fx, x));
        g_assert_cmpuint(json_array_size(jarr(doc, "filters")), ==, depth);
        int node = head_of(fx, x);
        for (int i = 0; i < depth; i++, node = scenario_node(fx->s, node)->parent) {
                g_autofree char *id = g_strdup_printf("%" PRIu64, fx->id[node]);
                g_autofree char *one = CTL_OK(fx, "show", id);
                g_string_append_printf(want, "\n--- position %d of %d%s ---\n%s", i, depth, i == 0 ? " (the head)" : "", one);
                json_t *alone = CTL_JSON(fx, "show", id);
                g_assert_true(json_equal(alone, json_array_get(jarr(doc, "filters"), (size_t) i)));
                json_decref(alone);
        }
        g_assert_cmpstr(out, ==, want->str);
        json_decref(doc);
}

static void test_show(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        for (size_t node = 0; node < scenario_n_nodes(fx->s); node++) {
                const ScenarioNode *sn = scenario_node(fx->s, (int) node);
                g_autofree char *id = g_strdup_printf("%" PRIu64, fx->id[node]);
                g_autofree char *out = CTL_OK(fx, "show", id);
                assert_ascii(out, "show");
                g_auto(GStrv) lines = lines_of(out);
                g_autofree char *title = g_strdup_printf("Filter %s", id);
                g_assert_cmpstr(lines[0], ==, title);
                g_autofree char *parent = parent_id(fx, (int) node)
                                                  ? g_strdup_printf("    Parent: %" PRIu64, parent_id(fx, (int) node))
                                                  : g_strdup("    Parent: none (a first filter)");
                g_assert_cmpstr(lines[1], ==, parent);
                g_autofree char *length = g_strdup_printf("    Length: %zu instructions", sn->len);
                g_assert_cmpstr(lines[2], ==, length);
                g_assert_true(g_str_has_prefix(lines[3], "    Digest: sha256:"));
                g_assert_null(strstr(lines[3], "does not match"));
                g_assert_cmpstr(lines[4], ==, node_log(fx, (int) node) ? "     Flags: log"
                                              : node_listener(fx, (int) node) ? "     Flags: listener"
                                                                                : "     Flags: none");
                g_autofree char *tasks = g_strdup_printf("     Tasks: %u", node_head_count(fx, (int) node));
                g_assert_cmpstr(lines[5], ==, tasks);
                g_assert_cmpstr(lines[6], ==, "  Identity: exact");
                g_assert_true(g_str_has_prefix(lines[7], " Installer: "));
                g_assert_cmpstr(lines[8], ==, "");
                /* the disassembly: one numbered line per instruction */
                guint n = g_strv_length(lines) - 9;
                g_assert_cmpuint(n, ==, sn->len);
                for (guint k = 0; k < n; k++) {
                        g_autofree char *num = g_strdup_printf("%04u: ", k);
                        g_assert_true(g_str_has_prefix(lines[9 + k], num));
                }
                g_assert_nonnull(strstr(lines[9 + n - 1], "ret"));

                json_t *doc = CTL_JSON(fx, "show", id);
                ASSERT_KEYS(doc, "id", "parent", "length", "digest", "tasks", "flags", "installer", "identity",
                            "program", "disassembly");
                g_assert_cmpuint(jid(doc, "id"), ==, fx->id[node]);
                g_assert_cmpuint(jid(doc, "parent"), ==, parent_id(fx, (int) node));
                g_assert_cmpint(jint(doc, "length"), ==, sn->len);
                g_assert_cmpstr(jstr(doc, "digest"), ==, lines[3] + strlen("    Digest: "));
                assert_digest(jstr(doc, "digest"));
                g_assert_cmpint(jint(doc, "tasks"), ==, node_head_count(fx, (int) node));
                assert_flags(jget(doc, "flags"), node_log(fx, (int) node), node_listener(fx, (int) node));
                g_assert_cmpstr(jstr(doc, "identity"), ==, "exact");
                json_t *program = jarr(doc, "program"), *disasm = jarr(doc, "disassembly"), *insn;
                g_assert_cmpuint(json_array_size(program), ==, sn->len);
                g_assert_cmpuint(json_array_size(disasm), ==, sn->len);
                size_t k;
                json_array_foreach(program, k, insn) {
                        g_assert_cmpuint(json_array_size(insn), ==, 4);
                        g_assert_cmpint(json_integer_value(json_array_get(insn, 0)), ==, sn->insns[k].code);
                        g_assert_cmpint(json_integer_value(json_array_get(insn, 1)), ==, sn->insns[k].jt);
                        g_assert_cmpint(json_integer_value(json_array_get(insn, 2)), ==, sn->insns[k].jf);
                        g_assert_cmpint(json_integer_value(json_array_get(insn, 3)), ==, sn->insns[k].k);
                        g_assert_cmpstr(json_string_value(json_array_get(disasm, k)), ==, lines[9 + k]);
                }
                json_decref(doc);

                /* --raw: CODE JT JF K before each line of the disassembly */
                g_autofree char *raw = CTL_OK(fx, "show", "--raw", id);
                g_auto(GStrv) raw_lines = lines_of(raw);
                g_assert_cmpuint(g_strv_length(raw_lines), ==, 9 + 1 + sn->len);
                g_assert_true(g_str_has_prefix(raw_lines[9], "CODE "));
                for (guint i = 0; i < sn->len; i++) {
                        g_autofree char *want = g_strdup_printf("0x%04x  %3u  %3u  0x%08x  %s", sn->insns[i].code,
                                                                sn->insns[i].jt, sn->insns[i].jf, sn->insns[i].k,
                                                                lines[9 + i]);
                        g_assert_cmpstr(raw_lines[10 + i], ==, want);
                }
        }
        CTL_FAILS(fx, false, "Failed to get the filter: No filter with id 999999.", "show", "999999");

        /* a filter installed while the daemon watches: show names its installer, who exits */
        ScenarioTask x = scenario_fork(fx->s, fx->root);
        g_assert_cmpint(x, >=, 0);
        struct sock_filter f[16];
        const Rule r[] = { { SYS_getpriority, ERRNO(9) } };
        size_t n = build_filter(f, r, G_N_ELEMENTS(r));
        g_assert_cmpint(scenario_install(fx->s, x, f, n, 0), >=, 0);
        pid_t pid = tid_of(fx, x);
        g_autofree char *exe_link = g_strdup_printf("/proc/%d/exe", pid);
        g_autofree char *exe = g_file_read_link(exe_link, NULL);
        g_assert_nonnull(exe);
        g_autoptr(GArray) ids = NULL;
        for (int tries = 0; tries < 200 && (!ids || ids->len == 0); tries++) {
                g_clear_pointer(&ids, g_array_unref);
                ids = bus_chain(fx->bus, pid, NULL);
                if (!ids || ids->len == 0)
                        g_usleep(10 * 1000);
        }
        g_assert_true(ids && ids->len == 1);
        g_autofree char *xid = g_strdup_printf("%" PRIu64, g_array_index(ids, uint64_t, 0));
        g_autofree char *shown = CTL_OK(fx, "show", xid);
        g_autofree char *installer = g_strdup_printf(" Installer: " COMM "[%d], %s, at ", pid, exe);
        g_auto(GStrv) xlines = lines_of(shown);
        g_assert_true(g_str_has_prefix(xlines[7], installer));
        json_t *doc = CTL_JSON(fx, "show", xid);
        json_t *who = jget(doc, "installer");
        ASSERT_KEYS(who, "tid", "pid", "comm", "exe", "time", "time_usec");
        g_assert_cmpint(jint(who, "tid"), ==, pid);
        g_assert_cmpint(jint(who, "pid"), ==, pid);
        g_assert_cmpstr(jstr(who, "comm"), ==, COMM);
        g_assert_cmpstr(jstr(who, "exe"), ==, exe);
        g_assert_cmpint(jint(who, "time_usec"), >, 0);
        json_decref(doc);
        g_assert_cmpint(scenario_exit(fx->s, x), ==, 0);
        assert_show_chain(fx, fx->a1);
        assert_show_chain(fx, fx->m1c);
        CTL_FAILS(fx, false, "Failed to get the task's chain: No task with tid 999999999.", "show", "--pid=999999999");
}

/* ---- chain ---- */

static void assert_chain(Fixture *fx, ScenarioTask x) {
        const ScenarioTaskInfo *i = scenario_task(fx->s, x);
        g_autofree char *tid = g_strdup_printf("%d", i->tid);
        g_autoptr(GArray) ids = bus_chain(fx->bus, i->tid, NULL);
        g_assert_nonnull(ids);
        g_assert_cmpuint(ids->len, ==, i->head < 0 ? 0 : scenario_node_depth(fx->s, i->head));

        g_autofree char *out = CTL_OK(fx, "chain", tid);
        assert_ascii(out, "chain");
        g_auto(GStrv) lines = lines_of(out);
        guint n = g_strv_length(lines);
        g_assert_cmpuint(n, ==, ids->len + 3);
        g_assert_true(g_str_has_prefix(lines[0], "POS"));
        g_assert_cmpstr(lines[n - 2], ==, "");
        g_autofree char *footer = g_strdup_printf("%u filter%s, newest first.", ids->len, ids->len == 1 ? "" : "s");
        g_assert_cmpstr(lines[n - 1], ==, footer);
        int node = i->head;
        for (guint k = 0; k < ids->len; k++, node = scenario_node(fx->s, node)->parent) {
                unsigned pos, len;
                uint64_t id;
                char digest[80], flags[64];
                g_assert_cmpint(sscanf(lines[1 + k], "%u %" SCNu64 " %u %79s %63s", &pos, &id, &len, digest, flags), ==, 5);
                g_assert_cmpuint(pos, ==, k);
                g_assert_cmpuint(id, ==, g_array_index(ids, uint64_t, k));
                g_assert_cmpuint(id, ==, fx->id[node]);
                g_assert_cmpuint(len, ==, scenario_node(fx->s, node)->len);
                assert_digest(digest);
                g_assert_cmpstr(flags, ==, node_log(fx, node) ? "log" : node_listener(fx, node) ? "listener" : "-");
        }

        json_t *doc = CTL_JSON(fx, "chain", tid);
        ASSERT_KEYS(doc, "tid", "filters");
        g_assert_cmpint(jint(doc, "tid"), ==, i->tid);
        json_t *filters = jarr(doc, "filters"), *f;
        g_assert_cmpuint(json_array_size(filters), ==, ids->len);
        size_t k;
        node = i->head;
        json_array_foreach(filters, k, f) {
                ASSERT_KEYS(f, "id", "parent", "length", "digest", "tasks", "flags", "position", "identity");
                g_assert_cmpint(jint(f, "position"), ==, k);
                g_assert_cmpuint(jid(f, "id"), ==, g_array_index(ids, uint64_t, k));
                g_assert_cmpuint(jid(f, "parent"), ==, k + 1 < ids->len ? g_array_index(ids, uint64_t, k + 1) : 0);
                g_assert_cmpint(jint(f, "length"), ==, scenario_node(fx->s, node)->len);
                g_assert_cmpint(jint(f, "tasks"), ==, node_head_count(fx, node));
                assert_digest(jstr(f, "digest"));
                assert_flags(jget(f, "flags"), node_log(fx, node), node_listener(fx, node));
                g_assert_cmpstr(jstr(f, "identity"), ==, "exact");
                node = scenario_node(fx->s, node)->parent;
        }
        json_decref(doc);
}

static void test_chain(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        for (ScenarioTask x = 0; (size_t) x < scenario_n_tasks(fx->s); x++)
                if (scenario_task(fx->s, x)->alive)
                        assert_chain(fx, x); /* the unfiltered root and mid too: empty */
        CTL_FAILS(fx, false, "Failed to get the task's chain: No task with tid 999999999.", "chain", "999999999");
}

/* ---- check: the client's evaluation against the chain, and against the kernel itself ---- */

typedef enum Outcome {
        RETURNS,   /* the call ran (ALLOW) */
        FAILS,     /* -1 with errno == value (ERRNO(value)) */
        SIGNALLED, /* the task died of signal value */
        NOT_PROBED, /* USER_NOTIF would wait for the listener: not tried */
} Outcome;

/* In a child of the test: make fd the child's fd 3 and close every other fd above 2. The
 * scenario's agents exit when their channel's other end (held by the test) closes: a child must
 * not keep copies of those ends alive after the test is gone. */
static void keep_only_fd(int fd) {
        if ((fd != 3 && dup2(fd, 3) < 0) || syscall(SYS_close_range, 4, ~0U, 0) < 0)
                _exit(103);
}

/* A child process gets the chain of node head (installed oldest first, as private copies) or
 * strict mode, makes the call, and says what happened. */
static void kernel_probe(const Fixture *fx, int head, bool strict, int nr, Outcome *ret, int *ret_value) {
        int nodes[MAX_NODES], n = 0;
        for (int x = head; x >= 0; x = scenario_node(fx->s, x)->parent)
                nodes[n++] = x;
        int pipefd[2];
        g_assert_cmpint(pipe(pipefd), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                keep_only_fd(pipefd[1]);
                int null = open("/dev/null", O_RDWR | O_CLOEXEC); /* read(0, 0, 0) and write(0, 0, 0) succeed */
                if (null < 0 || dup2(null, STDIN_FILENO) < 0)
                        _exit(102);
                prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                for (int k = n - 1; k >= 0; k--) {
                        const ScenarioNode *sn = scenario_node(fx->s, nodes[k]);
                        struct sock_fprog prog = { .len = (unsigned short) sn->len, .filter = sn->insns };
                        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                                _exit(100);
                }
                if (strict && prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) < 0)
                        _exit(101);
                long r = syscall(nr, 0, 0, 0, 0, 0, 0);
                int result[2] = { r < 0 ? -1 : 0, r < 0 ? errno : 0 };
                (void) !write(3, result, sizeof(result));
                syscall(SYS_exit, 0); /* allowed in strict mode, unlike exit_group */
        }
        close(pipefd[1]);
        int result[2];
        ssize_t got = read(pipefd[0], result, sizeof(result));
        close(pipefd[0]);
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        if (got == sizeof(result)) {
                *ret = result[0] < 0 ? FAILS : RETURNS;
                *ret_value = result[1];
        } else {
                g_assert_true(WIFSIGNALED(status));
                *ret = SIGNALLED;
                *ret_value = WTERMSIG(status);
        }
}

typedef struct CheckCase {
        ScenarioTask task;
        const char *syscall;
        const char *action; /* what sectreectl must say */
        int decided_by;     /* the node, -1 for none */
        Outcome outcome;    /* what the kernel does */
        int value;
} CheckCase;

/* The text spelling of an action: the errno's name with its number, "ERRNO(2: ENOENT)". */
static char *action_text(const char *action) {
        int e;
        if (sscanf(action, "ERRNO(%d)", &e) == 1 && strerrorname_np(e))
                return g_strdup_printf("ERRNO(%d: %s)", e, strerrorname_np(e));
        return g_strdup(action);
}

static void assert_check_text(Fixture *fx, const CheckCase *c, const char *out) {
        const ScenarioTaskInfo *i = scenario_task(fx->s, c->task);
        int depth = i->head < 0 ? 0 : scenario_node_depth(fx->s, i->head);
        g_autofree char *want = NULL, *action = action_text(c->action);
        /* "—" in a UTF-8 locale, "-" otherwise: accept either */
        g_autofree char *got = g_strdup(out);
        char *dash = strstr(got, "\xe2\x80\x94");
        if (dash) {
                dash[0] = '-';
                memmove(dash + 1, dash + 3, strlen(dash + 3) + 1);
        }
        if (depth == 0)
                want = g_strdup_printf("%s - task %d has no filter%s\n", action, i->tid, i->strict ? " (strict mode)" : "");
        else if (c->decided_by < 0)
                want = g_strdup_printf("%s - every filter allows it (%d filter%s)\n", action, depth, depth == 1 ? "" : "s");
        else {
                int pos = 0;
                for (int x = i->head; x != c->decided_by; x = scenario_node(fx->s, x)->parent)
                        pos++;
                want = g_strdup_printf("%s - decided by filter %" PRIu64 " (position %d of %d)\n", action,
                                       fx->id[c->decided_by], pos, depth);
        }
        g_assert_cmpstr(got, ==, want);
}

static void assert_check_json(Fixture *fx, const CheckCase *c, json_t *doc, const char *const *args, size_t n_args) {
        const ScenarioTaskInfo *i = scenario_task(fx->s, c->task);
        int depth = i->head < 0 ? 0 : scenario_node_depth(fx->s, i->head);
        ASSERT_KEYS(doc, "tid", "syscall", "nr", "arch", "args", "mode", "action", "errno", "ret", "decided_by",
                    "chain_length", "filters");
        g_assert_cmpint(jint(doc, "tid"), ==, i->tid);
        g_assert_cmpstr(jstr(doc, "syscall"), ==, c->syscall);
        g_assert_cmpint(jint(doc, "arch"), ==, AUDIT_ARCH_X86_64);
        g_assert_cmpstr(jstr(doc, "mode"), ==, depth ? "filter" : i->strict ? "strict" : "disabled");
        g_assert_cmpstr(jstr(doc, "action"), ==, c->action);
        if (c->outcome == FAILS)
                g_assert_cmpstr(jstr(doc, "errno"), ==, strerrorname_np(c->value));
        else
                g_assert_true(json_is_null(jget(doc, "errno")));
        g_assert_cmpint(jint(doc, "chain_length"), ==, depth);
        json_t *a = jarr(doc, "args");
        g_assert_cmpuint(json_array_size(a), ==, n_args);
        for (size_t k = 0; k < n_args; k++)
                g_assert_cmpint(json_integer_value(json_array_get(a, k)), ==, g_ascii_strtoll(args[k], NULL, 0));
        json_t *decided = jget(doc, "decided_by");
        json_t *filters = jarr(doc, "filters"), *f;
        g_assert_cmpuint(json_array_size(filters), ==, depth);
        size_t k;
        int node = i->head, pos = -1;
        json_array_foreach(filters, k, f) {
                ASSERT_KEYS(f, "position", "id", "action", "errno", "ret");
                g_assert_cmpint(jint(f, "position"), ==, k);
                g_assert_cmpuint(jid(f, "id"), ==, fx->id[node]);
                if (node == c->decided_by) {
                        pos = (int) k;
                        g_assert_cmpint(jint(f, "ret"), ==, jint(doc, "ret"));
                }
                node = scenario_node(fx->s, node)->parent;
        }
        if (c->decided_by < 0)
                g_assert_true(json_is_null(decided));
        else {
                ASSERT_KEYS(decided, "id", "position");
                g_assert_cmpuint(jid(decided, "id"), ==, fx->id[c->decided_by]);
                g_assert_cmpint(jint(decided, "position"), ==, pos);
        }
}

static void run_check_case(Fixture *fx, const CheckCase *c, const char *const *args, size_t n_args) {
        const ScenarioTaskInfo *i = scenario_task(fx->s, c->task);
        g_autofree char *tid = g_strdup_printf("%d", i->tid);
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_ptr_array_add(argv, (char *) "check");
        g_ptr_array_add(argv, tid);
        g_ptr_array_add(argv, (char *) c->syscall);
        if (n_args)
                g_ptr_array_add(argv, (char *) "--");
        for (size_t k = 0; k < n_args; k++)
                g_ptr_array_add(argv, (char *) args[k]);
        g_ptr_array_add(argv, NULL);
        g_autofree char *out = ctl_ok(fx, false, (const char *const *) argv->pdata);
        assert_check_text(fx, c, out);

        g_ptr_array_insert(argv, 0, (char *) "--json");
        g_autofree char *json = ctl_ok(fx, false, (const char *const *) argv->pdata);
        json_t *doc = tests_json_parse_document(json, "check --json");
        assert_check_json(fx, c, doc, args, n_args);
        json_int_t nr = jint(doc, "nr");
        json_decref(doc);

        if (c->outcome == NOT_PROBED)
                return;
        Outcome got;
        int value;
        kernel_probe(fx, i->head, i->strict, (int) nr, &got, &value);
        if (got != c->outcome || (got != RETURNS && value != c->value))
                g_error("check %s %s says %s, but the kernel's outcome is %d/%d (expected %d/%d)", tid, c->syscall,
                        c->action, got, value, c->outcome, c->value);
}

static void test_check(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        const CheckCase cases[] = {
                /* equal actions: the newest filter's data wins */
                { fx->a1, "getpriority", "ERRNO(2)", fx->n_a1, FAILS, 2 },
                { fx->a1t, "getpriority", "ERRNO(2)", fx->n_a1, FAILS, 2 },
                /* only the older filter objects */
                { fx->a1, "setpriority", "ERRNO(3)", fx->n_a, FAILS, 3 },
                /* TRAP in the older filter beats ERRNO in the newer */
                { fx->a1, "acct", "TRAP", fx->n_a, SIGNALLED, SIGSYS },
                { fx->a1, "getpid", "ALLOW", -1, RETURNS, 0 },
                { fx->a, "getpriority", "ERRNO(1)", fx->n_a, FAILS, 1 },
                { fx->a2, "getpriority", "ERRNO(1)", fx->n_a, FAILS, 1 },
                { fx->a2, "acct", "TRAP", fx->n_a, SIGNALLED, SIGSYS },
                { fx->u, "getpriority", "ERRNO(8)", fx->n_u, FAILS, 8 },
                { fx->ut, "getpriority", "ALLOW", -1, RETURNS, 0 },
                { fx->t, "getpriority", "ERRNO(5)", fx->n_t, FAILS, 5 },
                { fx->t2, "getpriority", "ERRNO(5)", fx->n_t, FAILS, 5 },
                { fx->l, "acct", "USER_NOTIF", fx->n_l, NOT_PROBED, 0 },
                { fx->l, "getpriority", "ALLOW", -1, RETURNS, 0 },
                { fx->m1c, "getpriority", "ERRNO(6)", fx->n_m1, FAILS, 6 },
                { fx->m2, "getpriority", "ERRNO(7)", fx->n_m2, FAILS, 7 },
                /* strict mode: read, write, exit, rt_sigreturn; anything else kills */
                { fx->strict, "getpriority", "KILL_THREAD", -1, SIGNALLED, SIGKILL },
                { fx->strict, "write", "ALLOW", -1, RETURNS, 0 },
                /* no filter at all */
                { fx->root, "getpriority", "ALLOW", -1, RETURNS, 0 },
                { fx->mid, "acct", "ALLOW", -1, NOT_PROBED, 0 },
        };
        for (size_t k = 0; k < G_N_ELEMENTS(cases); k++)
                run_check_case(fx, &cases[k], NULL, 0);

        /* arguments (decimal, hex, negative after --) and a syscall given by number */
        const char *args[] = { "0", "0x0", "-1" };
        const CheckCase with_args = { fx->a1, "getpriority", "ERRNO(2)", fx->n_a1, FAILS, 2 };
        run_check_case(fx, &with_args, args, G_N_ELEMENTS(args));
        g_autofree char *nr = g_strdup_printf("%d", SYS_getpriority);
        const CheckCase by_number = { fx->a1, nr, "ERRNO(2)", fx->n_a1, FAILS, 2 };
        run_check_case(fx, &by_number, NULL, 0);
        g_autofree char *hex = g_strdup_printf("0x%x", SYS_getpriority);
        const CheckCase by_hex = { fx->a1, hex, "ERRNO(2)", fx->n_a1, FAILS, 2 };
        run_check_case(fx, &by_hex, NULL, 0);
        g_autofree char *a1 = g_strdup_printf("%d", tid_of(fx, fx->a1));
        g_autofree char *text = CTL_OK(fx, "check", a1, "getpriority");
        g_assert_true(g_str_has_prefix(text, "ERRNO(2: ENOENT) "));

        /* another architecture: the scenario's filters allow every call that is not x86-64's */
        json_t *doc = CTL_JSON(fx, "check", "--arch=i386", a1, "getpriority");
        g_assert_cmpint(jint(doc, "arch"), ==, AUDIT_ARCH_I386);
        g_assert_cmpint(jint(doc, "nr"), ==, 96); /* getpriority on i386 */
        g_assert_cmpstr(jstr(doc, "action"), ==, "ALLOW");
        json_decref(doc);
        doc = CTL_JSON(fx, "check", "--arch=x86_64", a1, "getpriority");
        g_assert_cmpint(jint(doc, "arch"), ==, AUDIT_ARCH_X86_64);
        g_assert_cmpstr(jstr(doc, "action"), ==, "ERRNO(2)");
        json_decref(doc);
        g_autofree char *x86 = CTL_OK(fx, "check", a1, "socketcall", "--arch", "x86");
        g_assert_true(g_str_has_prefix(x86, "ALLOW "));

        CTL_FAILS(fx, false, "Failed to get the task's chain: No task with tid 999999999.", "check", "999999999", "getpid");
}

/* ---- graph ---- */

typedef struct Dot {
        GHashTable *nodes; /* name -> attributes */
        GPtrArray *edges;  /* "from -> to" */
} Dot;

static void dot_free(Dot *d) {
        g_hash_table_destroy(d->nodes);
        g_ptr_array_unref(d->edges);
}

/* The DOT the client writes: a digraph of node and edge statements, one per line; every edge
 * must join declared nodes. */
static Dot dot_parse(const char *out) {
        Dot d = { g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free), g_ptr_array_new_with_free_func(g_free) };
        g_autoptr(GRegex) node = g_regex_new("^([A-Za-z_][A-Za-z0-9_]*) \\[(.*)\\];$", 0, 0, NULL);
        g_autoptr(GRegex) edge = g_regex_new("^([A-Za-z_][A-Za-z0-9_]*) -> ([A-Za-z_][A-Za-z0-9_]*)( \\[[^]]*\\])?;$", 0, 0, NULL);
        g_autoptr(GRegex) attribute = g_regex_new("^[a-z]+=(\"[^\"]*\"|[A-Za-z]+);$", 0, 0, NULL);
        g_auto(GStrv) lines = lines_of(out);
        guint n = g_strv_length(lines);
        g_assert_cmpuint(n, >=, 2);
        g_assert_cmpstr(lines[0], ==, "digraph sectree {");
        g_assert_cmpstr(lines[n - 1], ==, "}");
        unsigned clusters = 0; /* open "subgraph cluster_N {" of a unit's processes */
        for (guint i = 1; i + 1 < n; i++) {
                const char *l = g_strstrip(lines[i]);
                g_autoptr(GMatchInfo) m = NULL;
                if (g_str_has_prefix(l, "subgraph cluster_") && g_str_has_suffix(l, " {")) {
                        clusters++;
                        continue;
                }
                if (streq(l, "}")) {
                        g_assert_cmpuint(clusters, >, 0);
                        clusters--;
                        continue;
                }
                /* the graph's own attributes, and the defaults of nodes and edges: one font for all */
                if (g_regex_match(attribute, l, 0, NULL) || g_str_has_prefix(l, "node [") || g_str_has_prefix(l, "edge [") ||
                    (clusters > 0 && g_str_has_prefix(l, "label="))) {
                        g_assert_true(g_str_has_suffix(l, ";"));
                        if (strstr(l, "fontname="))
                                g_assert_nonnull(strstr(l, "fontname=\"monospace\""));
                        continue;
                }
                if (g_regex_match(edge, l, 0, &m)) {
                        g_autofree char *from = g_match_info_fetch(m, 1), *to = g_match_info_fetch(m, 2);
                        g_ptr_array_add(d.edges, g_strdup_printf("%s -> %s", from, to));
                        continue;
                }
                g_clear_pointer(&m, g_match_info_free);
                if (g_regex_match(node, l, 0, &m)) {
                        g_autofree char *name = g_match_info_fetch(m, 1);
                        char *attrs = g_match_info_fetch(m, 2);
                        /* quoted strings balanced: an even number of unescaped quotes */
                        unsigned quotes = 0;
                        for (const char *p = attrs; *p; p++)
                                if (*p == '\\' && p[1])
                                        p++;
                                else
                                        quotes += *p == '"';
                        g_assert_cmpuint(quotes % 2, ==, 0);
                        if (g_hash_table_contains(d.nodes, name))
                                g_error("graph: node %s declared twice", name);
                        g_hash_table_insert(d.nodes, g_steal_pointer(&name), attrs);
                        continue;
                }
                g_error("graph: not a DOT statement this client writes: '%s'", l);
        }
        for (guint i = 0; i < d.edges->len; i++) {
                g_auto(GStrv) ends = g_strsplit(d.edges->pdata[i], " -> ", 2);
                if (!g_hash_table_contains(d.nodes, ends[0]) || !g_hash_table_contains(d.nodes, ends[1]))
                        g_error("graph: edge %s joins an undeclared node", (char *) d.edges->pdata[i]);
        }
        return d;
}

static guint dot_filter_nodes(const Dot *d) {
        guint n = 0;
        GHashTableIter it;
        gpointer name, attrs;
        g_hash_table_iter_init(&it, d->nodes);
        while (g_hash_table_iter_next(&it, &name, &attrs))
                if (!strstr(attrs, "shape=ellipse")) {
                        g_assert_true(g_str_has_prefix(name, "f"));
                        n++;
                }
        return n;
}

static bool dot_has_edge(const Dot *d, const char *edge) {
        for (guint i = 0; i < d->edges->len; i++)
                if (streq(d->edges->pdata[i], edge))
                        return true;
        return false;
}

static void assert_graph_scenario(const Fixture *fx, const Dot *d, const int *nodes, size_t n_nodes,
                                  const ScenarioTask *procs, size_t n_procs, bool counts) {
        for (size_t k = 0; k < n_nodes; k++) {
                g_autofree char *name = g_strdup_printf("f%" PRIu64, fx->id[nodes[k]]);
                const char *attrs = g_hash_table_lookup(d->nodes, name);
                g_assert_nonnull(attrs);
                g_autofree char *label = g_strdup_printf("label=\"filter %" PRIu64 "\\n%zu insns\\nsha256:", fx->id[nodes[k]],
                                                         scenario_node(fx->s, nodes[k])->len);
                g_assert_true(g_str_has_prefix(attrs, label));
                g_assert_cmpint(strstr(attrs, "\\nlog") != NULL, ==, node_log(fx, nodes[k]));
                g_assert_cmpint(strstr(attrs, "\\nlistener") != NULL, ==, node_listener(fx, nodes[k]));
                unsigned n = node_head_count(fx, nodes[k]);
                g_autofree char *tasks = g_strdup_printf("\\n%u task%s\"", n, n == 1 ? "" : "s");
                g_assert_cmpint(strstr(attrs, tasks) != NULL, ==, counts);
                if (parent_id(fx, nodes[k])) {
                        g_autofree char *e = g_strdup_printf("%s -> f%" PRIu64, name, parent_id(fx, nodes[k]));
                        g_assert_true(dot_has_edge(d, e));
                }
        }
        for (size_t k = 0; k < n_procs; k++) {
                g_autofree char *name = g_strdup_printf("p%d", tgid_of(fx, procs[k]));
                const char *attrs = g_hash_table_lookup(d->nodes, name);
                int head = head_of(fx, procs[k]);
                if (counts || head < 0) {
                        g_assert_null(attrs);
                        continue;
                }
                g_assert_nonnull(attrs);
                g_autofree char *label = g_strdup_printf("label=\"" COMM "[%d]\"", tgid_of(fx, procs[k]));
                g_assert_nonnull(strstr(attrs, label));
                g_autofree char *e = g_strdup_printf("%s -> f%" PRIu64, name, fx->id[head]);
                g_assert_true(dot_has_edge(d, e));
        }
}

/* Two processes with byte-identical filters of their own (copies, distinct objects) are filled
 * with one colour; a filter whose bytes are its own is not filled. Left to right. */
static void assert_graph_copies(Fixture *fx) {
        ScenarioTask x = scenario_fork(fx->s, fx->root), y = scenario_fork(fx->s, fx->root);
        struct sock_filter f[16];
        const Rule r[] = { { SYS_getpriority, ERRNO(11) } };
        size_t n = build_filter(f, r, G_N_ELEMENTS(r));
        int nx = scenario_install(fx->s, x, f, n, 0), ny = scenario_install(fx->s, y, f, n, 0);
        g_assert_cmpint(nx, >=, 0);
        g_assert_cmpint(ny, >=, 0);

        uint64_t ix = 0, iy = 0;
        for (int i = 0; i < 500 && (!ix || !iy); i++) {
                g_autoptr(GArray) cx = bus_chain(fx->bus, tid_of(fx, x), NULL), cy = bus_chain(fx->bus, tid_of(fx, y), NULL);
                ix = cx && cx->len ? g_array_index(cx, uint64_t, 0) : 0;
                iy = cy && cy->len ? g_array_index(cy, uint64_t, 0) : 0;
                g_usleep(10000);
        }
        g_assert_cmpuint(ix, !=, iy);
        g_autofree char *root = g_strdup_printf("%d", tgid_of(fx, fx->root));
        g_autofree char *all = CTL_OK(fx, "graph", root);
        g_assert_nonnull(strstr(all, "rankdir=RL;"));
        Dot d = dot_parse(all);
        g_autofree char *fx_name = g_strdup_printf("f%" PRIu64, ix), *fy_name = g_strdup_printf("f%" PRIu64, iy);
        g_autofree char *fa_name = g_strdup_printf("f%" PRIu64, fx->id[fx->n_a]);
        const char *ax = g_hash_table_lookup(d.nodes, fx_name), *ay = g_hash_table_lookup(d.nodes, fy_name),
                   *aa = g_hash_table_lookup(d.nodes, fa_name);
        g_assert_nonnull(ax);
        g_assert_nonnull(ay);
        g_assert_nonnull(aa);
        const char *cx = strstr(ax, "fillcolor="), *cy = strstr(ay, "fillcolor=");
        g_assert_nonnull(cx);
        g_assert_nonnull(cy);
        g_assert_cmpstr(cx, ==, cy);
        g_assert_null(strstr(aa, "fillcolor="));
        dot_free(&d);
        scenario_exit(fx->s, x);
        scenario_exit(fx->s, y);
}

static void test_graph(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        const int all_nodes[] = { fx->n_a, fx->n_a1, fx->n_u, fx->n_t, fx->n_l, fx->n_m1, fx->n_m2 };
        const ScenarioTask all_procs[] = { fx->a, fx->a1, fx->a2, fx->u, fx->t, fx->strict, fx->l, fx->m1, fx->m1c, fx->m2 };
        g_autofree char *out = CTL_OK(fx, "graph", "--all"); /* each process its own node */
        assert_ascii(out, "graph");
        Dot d = dot_parse(out);
        assert_graph_scenario(fx, &d, all_nodes, G_N_ELEMENTS(all_nodes), all_procs, G_N_ELEMENTS(all_procs), false);
        /* a1's two threads share one head: one edge, labelled */
        g_autofree char *a1 = g_strdup_printf("p%d -> f%" PRIu64, tgid_of(fx, fx->a1), fx->id[fx->n_a1]);
        g_assert_true(dot_has_edge(&d, a1));
        dot_free(&d);

        /* --counts: one box per filter of the scenario's subtree (the whole machine's filters may
         * churn with other work), no processes, task counts in the boxes */
        g_autofree char *root = g_strdup_printf("%d", tgid_of(fx, fx->root));
        g_autofree char *counts = CTL_OK(fx, "graph", "--counts", root);
        d = dot_parse(counts);
        g_assert_cmpuint(dot_filter_nodes(&d), ==, G_N_ELEMENTS(all_nodes));
        g_assert_cmpuint(g_hash_table_size(d.nodes), ==, G_N_ELEMENTS(all_nodes));
        assert_graph_scenario(fx, &d, all_nodes, G_N_ELEMENTS(all_nodes), all_procs, G_N_ELEMENTS(all_procs), true);
        dot_free(&d);

        /* graph PID: exactly the subtree's filters and processes */
        g_autofree char *mid = g_strdup_printf("%d", tgid_of(fx, fx->mid));
        g_autofree char *sub = CTL_OK(fx, "graph", mid);
        d = dot_parse(sub);
        const int mid_nodes[] = { fx->n_m1, fx->n_m2 };
        const ScenarioTask mid_procs[] = { fx->m1, fx->m1c, fx->m2 };
        g_assert_cmpuint(dot_filter_nodes(&d), ==, G_N_ELEMENTS(mid_nodes));
        g_assert_cmpuint(g_hash_table_size(d.nodes), ==, G_N_ELEMENTS(mid_nodes) + G_N_ELEMENTS(mid_procs));
        g_assert_cmpuint(d.edges->len, ==, G_N_ELEMENTS(mid_procs)); /* two root filters: process edges only */
        assert_graph_scenario(fx, &d, mid_nodes, G_N_ELEMENTS(mid_nodes), mid_procs, G_N_ELEMENTS(mid_procs), false);
        dot_free(&d);
        assert_graph_copies(fx); /* last: it adds processes to the scenario */
}

/* ---- monitor ---- */

typedef struct Monitor {
        GPid pid;
        int out, err;
        GString *buf;
        bool json;
} Monitor;

static void monitor_start(Monitor *m, bool json) {
        const char *argv_json[] = { g_getenv("SECTREECTL"), "--json", "monitor", NULL };
        const char *argv_text[] = { g_getenv("SECTREECTL"), "monitor", NULL };
        g_autoptr(GError) error = NULL;
        *m = (Monitor) { .buf = g_string_new(NULL), .json = json };
        if (!g_spawn_async_with_pipes(NULL, (char **) (json ? argv_json : argv_text), NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                                      tests_die_with_parent, NULL, &m->pid, NULL, &m->out, &m->err, &error))
                g_error("starting sectreectl monitor: %s", error->message);
        g_autoptr(GString) errbuf = g_string_new(NULL);
        g_autofree char *line = tests_read_line(m->err, errbuf, g_get_monotonic_time() + WAIT_MS * 1000);
        if (!line || !g_str_has_prefix(line, "Monitoring org.sectree1; "))
                g_error("sectreectl monitor did not say it is subscribed: %s", line ? line : "(nothing)");
}

/* SIGTERM ends it with exit 0, within the bound. */
static void monitor_stop(Monitor *m) {
        kill(m->pid, SIGTERM);
        int status = 0;
        gint64 end = g_get_monotonic_time() + WAIT_MS * 1000;
        pid_t r;
        while ((r = waitpid(m->pid, &status, WNOHANG)) == 0 && g_get_monotonic_time() < end)
                g_usleep(5000);
        if (r != m->pid) {
                kill(m->pid, SIGKILL);
                waitpid(m->pid, NULL, 0);
                g_error("sectreectl monitor did not end within %d ms of SIGTERM", WAIT_MS);
        }
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        close(m->out);
        close(m->err);
        g_string_free(m->buf, true);
}

typedef struct Expected {
        const char *signal;
        pid_t tid, tgid; /* tgid: for TaskAdded */
        bool seen;
} Expected;

/* Check one JSON line; mark what it is among the expected. */
static void monitor_json_line(const Fixture *fx, const char *line, Expected *want, size_t n, uint64_t filter_id,
                              uint64_t filter_parent) {
        json_error_t error;
        json_t *o = json_loads(line, 0, &error);
        if (!o || !json_is_object(o))
                g_error("monitor --json: not one JSON object per line: '%s'", line);
        const char *signal = jstr(o, "signal");
        g_autoptr(GDateTime) dt = g_date_time_new_from_iso8601(jstr(o, "time"), NULL);
        g_assert_nonnull(dt);
        g_assert_cmpint(g_date_time_to_unix(dt) * G_USEC_PER_SEC + g_date_time_get_microsecond(dt), ==,
                        jint(o, "time_usec"));
        if (streq(signal, "FilterAttached"))
                ASSERT_KEYS(o, "signal", "id", "parent", "tid", "pid", "comm", "time", "time_usec");
        else if (streq(signal, "TaskAdded"))
                ASSERT_KEYS(o, "signal", "tid", "tgid", "comm", "time", "time_usec");
        else if (streq(signal, "TaskExited"))
                ASSERT_KEYS(o, "signal", "tid", "pid", "comm", "time", "time_usec");
        else if (streq(signal, "Resynced"))
                ASSERT_KEYS(o, "signal", "reason", "time", "time_usec");
        else if (streq(signal, "PropertiesChanged"))
                ASSERT_KEYS(o, "signal", "changed", "invalidated", "time", "time_usec");
        else
                g_error("monitor --json: unexpected signal %s", line);
        for (size_t k = 0; k < n; k++) {
                if (!streq(signal, want[k].signal) || jint(o, "tid") != want[k].tid)
                        continue;
                if (streq(signal, "FilterAttached")) {
                        if ((uint64_t) jid(o, "parent") != filter_parent)
                                g_error("FilterAttached for %d with parent %" JSON_INTEGER_FORMAT ", expected %" PRIu64,
                                        want[k].tid, jid(o, "parent"), filter_parent);
                        g_assert_cmpuint(jid(o, "id"), >, 0);
                        g_assert_cmpuint(jid(o, "id"), !=, filter_id);
                }
                if (streq(signal, "TaskAdded")) {
                        g_assert_cmpint(jint(o, "tgid"), ==, want[k].tgid);
                        g_assert_cmpstr(jstr(o, "comm"), ==, COMM);
                }
                want[k].seen = true;
        }
        json_decref(o);
}

static bool all_seen(const Expected *want, size_t n) {
        for (size_t k = 0; k < n; k++)
                if (!want[k].seen)
                        return false;
        return true;
}

static void monitor_expect(const Fixture *fx, Monitor *m, Expected *want, size_t n, uint64_t parent) {
        gint64 end = g_get_monotonic_time() + WAIT_MS * 1000;
        while (!all_seen(want, n)) {
                g_autofree char *line = tests_read_line(m->out, m->buf, end);
                if (!line)
                        break;
                if (m->json) {
                        monitor_json_line(fx, line, want, n, 0, parent);
                        continue;
                }
                /* "2026-12-03 07:20:49.123456 Signal field=value ..." */
                g_auto(GStrv) w = g_strsplit(line, " ", -1);
                g_assert_cmpuint(g_strv_length(w), >=, 3);
                g_assert_cmpuint(strlen(w[0]), ==, 10);
                g_assert_cmpuint(strlen(w[1]), ==, 15);
                for (size_t k = 0; k < n; k++) {
                        g_autofree char *tid = g_strdup_printf("tid=%d", want[k].tid);
                        if (!streq(w[2], want[k].signal) || !g_strv_contains((const char *const *) w, tid))
                                continue;
                        if (streq(w[2], "FilterAttached")) {
                                g_autofree char *p = g_strdup_printf("parent=%" PRIu64, parent);
                                g_assert_cmpstr(w[4], ==, p);
                        }
                        want[k].seen = true;
                }
        }
        for (size_t k = 0; k < n; k++)
                if (!want[k].seen)
                        g_error("monitor%s: no %s for tid %d within %d ms", m->json ? " --json" : "", want[k].signal,
                                want[k].tid, WAIT_MS);
}

/* Read the monitor's lines up to the first that holds until (included); NULL-terminated. */
static GStrv monitor_lines_until(Monitor *m, const char *until) {
        gint64 end = g_get_monotonic_time() + WAIT_MS * 1000;
        g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
        for (;;) {
                char *l = tests_read_line(m->out, m->buf, end);
                if (!l) {
                        g_ptr_array_add(lines, NULL);
                        g_autofree char *seen = g_strjoinv("\n  ", (char **) lines->pdata);
                        g_error("monitor: no line with '%s' within %d ms; it printed:\n  %s", until, WAIT_MS, seen);
                }
                g_ptr_array_add(lines, l);
                if (strstr(l, until))
                        break;
        }
        g_ptr_array_add(lines, NULL);
        return (GStrv) g_ptr_array_free(g_steal_pointer(&lines), false);
}

static Monitor monitor_start_args(const char *const *extra) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_ptr_array_add(argv, (char *) g_getenv("SECTREECTL"));
        for (; *extra; extra++)
                g_ptr_array_add(argv, (char *) *extra);
        g_ptr_array_add(argv, NULL);
        Monitor m = { .buf = g_string_new(NULL), .json = g_strv_contains((const char *const *) argv->pdata, "--json") };
        g_autoptr(GError) error = NULL;
        if (!g_spawn_async_with_pipes(NULL, (char **) argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD, tests_die_with_parent,
                                      NULL, &m.pid, NULL, &m.out, &m.err, &error))
                g_error("starting sectreectl monitor: %s", error->message);
        g_autoptr(GString) errbuf = g_string_new(NULL);
        g_autofree char *line = tests_read_line(m.err, errbuf, g_get_monotonic_time() + WAIT_MS * 1000);
        if (!line || !g_str_has_prefix(line, "Monitoring org.sectree1; "))
                g_error("sectreectl monitor did not say it is subscribed: %s", line ? line : "(nothing)");
        return m;
}

/* FilterAttached and TaskExited name the task's process and name; a first filter has parent
 * "none" in text as null in JSON; --pid and --comm keep one process's events (and Resynced). */
static void test_monitor_filters(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        Monitor all = monitor_start_args((const char *const[]) { "monitor", NULL });
        Monitor json = monitor_start_args((const char *const[]) { "--json", "monitor", NULL });
        /* x: a first filter on an unfiltered task; y: another process's events */
        ScenarioTask x = scenario_fork(fx->s, fx->root), y = scenario_fork(fx->s, fx->a);
        g_assert_cmpint(x, >=, 0);
        g_assert_cmpint(y, >=, 0);
        g_autofree char *xpid = g_strdup_printf("%d", tid_of(fx, x));
        Monitor by_pid = monitor_start_args((const char *const[]) { "monitor", "--pid", xpid, NULL });
        Monitor by_comm = monitor_start_args((const char *const[]) { "monitor", "--comm=no-such-*", NULL });
        Monitor by_glob = monitor_start_args((const char *const[]) { "monitor", "--comm=test-sectree*", "--pid", xpid, NULL });
        g_autofree char *apid = g_strdup_printf("%d", tgid_of(fx, fx->a));
        Monitor by_subtree = monitor_start_args((const char *const[]) { "monitor", "--subtree", apid, NULL });

        struct sock_filter f[16];
        const Rule r[] = { { SYS_getpriority, ERRNO(9) } };
        size_t n = build_filter(f, r, G_N_ELEMENTS(r));
        g_assert_cmpint(scenario_install(fx->s, x, f, n, 0), >=, 0);
        g_assert_cmpint(scenario_install(fx->s, y, f, n, 0), >=, 0);
        g_autofree char *x_attached = g_strdup_printf("parent=none tid=%s pid=%s comm=" COMM, xpid, xpid);
        g_auto(GStrv) all1 = monitor_lines_until(&all, x_attached);
        g_auto(GStrv) mine1 = monitor_lines_until(&by_pid, x_attached);
        g_auto(GStrv) globbed1 = monitor_lines_until(&by_glob, x_attached);
        /* --subtree of a: y's events (a child of a), not x's (a child of root) */
        g_autofree char *ypid = g_strdup_printf("%d", tid_of(fx, y));
        g_autofree char *y_attached = g_strdup_printf("parent=%" PRIu64 " tid=%s pid=%s comm=" COMM, fx->id[fx->n_a], ypid,
                                                      ypid);
        g_auto(GStrv) sub1 = monitor_lines_until(&by_subtree, y_attached);
        g_autofree char *x_tid = g_strdup_printf(" tid=%s ", xpid);
        for (char **l = sub1; *l; l++)
                if (strstr(*l, x_tid))
                        g_error("monitor --subtree %s shows '%s'", apid, *l);
        g_assert_cmpint(scenario_exit(fx->s, x), ==, 0);
        g_assert_cmpint(scenario_exit(fx->s, y), ==, 0);
        g_autofree char *rescan = CTL_OK(fx, "rescan"); /* Resynced ends every monitor's part */

        g_autofree char *x_exited = g_strdup_printf("TaskExited tid=%s pid=%s comm=" COMM, xpid, xpid);
        g_autofree char *y_tid = g_strdup_printf("tid=%d ", tid_of(fx, y));
        g_auto(GStrv) all2 = monitor_lines_until(&all, "Resynced reason=rescan");
        bool seen_exited = false;
        for (char **l = all2; *l; l++)
                seen_exited |= g_str_has_suffix(*l, x_exited);
        if (!seen_exited)
                g_error("monitor does not name x's process and comm:\n%s\n%s", g_strjoinv("\n", all1),
                        g_strjoinv("\n", all2));
        g_auto(GStrv) mine2 = monitor_lines_until(&by_pid, "Resynced reason=rescan");
        g_autofree char *mine = g_strconcat(g_strjoinv("\n", mine1), "\n", g_strjoinv("\n", mine2), NULL);
        g_auto(GStrv) mine_lines = g_strsplit(mine, "\n", -1);
        bool x_seen = false;
        for (char **l = mine_lines; *l; l++) {
                if (strstr(*l, y_tid) || strstr(*l, "PropertiesChanged"))
                        g_error("monitor --pid %s shows '%s'", xpid, *l);
                x_seen |= g_str_has_suffix(*l, x_exited);
        }
        g_assert_true(x_seen);
        g_auto(GStrv) globbed2 = monitor_lines_until(&by_glob, "Resynced reason=rescan");
        g_autofree char *globbed = g_strconcat(g_strjoinv("\n", globbed1), "\n", g_strjoinv("\n", globbed2), NULL);
        /* the same events, told apart only by the local time each monitor saw them */
        g_autoptr(GRegex) time = g_regex_new("^[0-9-]+ [0-9:.]+ ", G_REGEX_MULTILINE, 0, NULL);
        g_autofree char *globbed_events = g_regex_replace_literal(time, globbed, -1, 0, "", 0, NULL);
        g_autofree char *mine_events = g_regex_replace_literal(time, mine, -1, 0, "", 0, NULL);
        g_assert_cmpstr(globbed_events, ==, mine_events);
        g_auto(GStrv) nothing = monitor_lines_until(&by_comm, "Resynced reason=rescan");
        g_assert_cmpuint(g_strv_length(nothing), ==, 1); /* the Resynced line alone */

        /* JSON: the same, with null for none */
        gint64 end = g_get_monotonic_time() + WAIT_MS * 1000;
        bool json_seen = false;
        while (!json_seen) {
                g_autofree char *l = tests_read_line(json.out, json.buf, end);
                if (!l)
                        g_error("monitor --json: no FilterAttached for %s", xpid);
                json_t *o = json_loads(l, 0, NULL);
                g_assert_nonnull(o);
                if (streq(jstr(o, "signal"), "FilterAttached") && jint(o, "tid") == tid_of(fx, x)) {
                        ASSERT_KEYS(o, "signal", "id", "parent", "tid", "pid", "comm", "time", "time_usec");
                        g_assert_true(json_is_null(jget(o, "parent")));
                        g_assert_cmpint(jint(o, "pid"), ==, tid_of(fx, x));
                        g_assert_cmpstr(jstr(o, "comm"), ==, COMM);
                        json_seen = true;
                }
                json_decref(o);
        }
        monitor_stop(&all);
        monitor_stop(&json);
        monitor_stop(&by_pid);
        monitor_stop(&by_comm);
        monitor_stop(&by_glob);
        monitor_stop(&by_subtree);
}

/* A child of the scenario's root with a filter of its own (getpriority gets EBADF). */
static ScenarioTask fork_with_filter(Fixture *fx) {
        ScenarioTask x = scenario_fork(fx->s, fx->root);
        g_assert_cmpint(x, >=, 0);
        struct sock_filter f[16];
        const Rule r[] = { { SYS_getpriority, ERRNO(9) } };
        size_t n = build_filter(f, r, G_N_ELEMENTS(r));
        g_assert_cmpint(scenario_install(fx->s, x, f, n, 0), >=, 0);
        return x;
}

/* --comm matches the name after an exec, as the daemon's ProcessRenamed tells it (not /proc, which
 * the monitor may read after x is gone): read late, the monitor still names x's exit "sleep". The
 * FilterAttached before the exec names x as it was: --comm=sleep leaves it out, --comm=COMM keeps
 * it; both keep the rename (its old name and its new one). */
static void test_monitor_comm_after_exec(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        Monitor m = monitor_start_args((const char *const[]) { "monitor", "--comm=sleep", NULL });
        Monitor was = monitor_start_args((const char *const[]) { "monitor", "--comm=" COMM, NULL });
        g_assert_cmpint(kill(m.pid, SIGSTOP), ==, 0);
        ScenarioTask x = fork_with_filter(fx);
        g_autofree char *xpid = g_strdup_printf("%d", tid_of(fx, x));
        g_assert_cmpint(scenario_exec_sleep(fx->s, x), ==, 0);
        g_autofree char *attached = g_strdup_printf("parent=none tid=%s pid=%s comm=" COMM, xpid, xpid);
        g_autofree char *renamed = g_strdup_printf("ProcessRenamed pid=%s comm=sleep", xpid);
        g_auto(GStrv) before = monitor_lines_until(&was, attached);
        g_auto(GStrv) rename_seen = monitor_lines_until(&was, renamed);
        g_assert_cmpint(scenario_exit(fx->s, x), ==, 0);
        g_autofree char *exited = g_strdup_printf("TaskExited tid=%s pid=%s comm=sleep", xpid, xpid);
        g_assert_cmpint(kill(m.pid, SIGCONT), ==, 0); /* x is gone: only the signals can name it */
        g_auto(GStrv) lines = monitor_lines_until(&m, renamed);
        for (char **l = lines; *l; l++)
                if (strstr(*l, attached))
                        g_error("monitor --comm=sleep shows the FilterAttached of x named " COMM ": '%s'", *l);
        g_auto(GStrv) more = monitor_lines_until(&m, exited);
        monitor_stop(&m);
        monitor_stop(&was);
}

/* FilterAttached names its installer itself: a monitor that reads it only after the installer
 * exited (and the daemon stopped listing it) still says who it was. */
static void test_monitor_installer_gone(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        Monitor m = monitor_start_args((const char *const[]) { "monitor", NULL });
        g_assert_cmpint(kill(m.pid, SIGSTOP), ==, 0);
        ScenarioTask x = fork_with_filter(fx);
        g_autofree char *xpid = g_strdup_printf("%d", tid_of(fx, x));
        g_assert_cmpint(scenario_exit(fx->s, x), ==, 0);
        g_autofree char *rescan = CTL_OK(fx, "rescan"); /* the exit is stored: ListTasks no longer lists x */
        g_assert_cmpint(kill(m.pid, SIGCONT), ==, 0);
        g_autofree char *attached = g_strdup_printf("parent=none tid=%s pid=%s comm=" COMM, xpid, xpid);
        g_auto(GStrv) lines = monitor_lines_until(&m, attached);
        monitor_stop(&m);
}

static void test_monitor(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        Monitor json, text;
        monitor_start(&json, true);
        monitor_start(&text, false);

        /* a fork of a filtered process, a filter stacked on it, a thread, and exits */
        ScenarioTask x = scenario_fork(fx->s, fx->a);
        g_assert_cmpint(x, >=, 0);
        struct sock_filter f[16];
        const Rule r[] = { { SYS_getpriority, ERRNO(9) } };
        size_t n = build_filter(f, r, G_N_ELEMENTS(r));
        g_assert_cmpint(scenario_install(fx->s, x, f, n, 0), >=, 0);
        ScenarioTask xt = scenario_thread(fx->s, x);
        g_assert_cmpint(xt, >=, 0);
        pid_t tid = tid_of(fx, x), thread = tid_of(fx, xt);
        g_assert_cmpint(scenario_exit(fx->s, xt), ==, 0);
        g_assert_cmpint(scenario_exit(fx->s, x), ==, 0);

        for (int k = 0; k < 2; k++) {
                Expected want[] = {
                        { "TaskAdded", tid, tid }, { "FilterAttached", tid }, { "TaskAdded", thread, tid },
                        { "TaskExited", thread }, { "TaskExited", tid },
                };
                monitor_expect(fx, k == 0 ? &json : &text, want, G_N_ELEMENTS(want), fx->id[fx->n_a]);
        }
        monitor_stop(&json);
        monitor_stop(&text);
}

/* ---- on a terminal: box drawing in a UTF-8 locale, ASCII otherwise, indented JSON ---- */

/* Run sectreectl ARGS under script(1), which gives it a pseudo-terminal, in locale lc, without a
 * pager (a terminal would get one). */
static char *ctl_on_tty(Fixture *fx, const char *lc, const char *args) {
        g_autofree char *cmd = g_strdup_printf("%s %s", g_getenv("SECTREECTL"), args);
        g_autofree char *locale = g_strdup_printf("LC_ALL=%s", lc);
        char *argv[] = { (char *) "env", locale, (char *) "SYSTEMD_PAGER=", (char *) "script", (char *) "-qec", cmd,
                         (char *) "/dev/null", NULL };
        g_autofree char *out = NULL, *err = NULL;
        int status = bus_fixture_run(&fx->b, false, argv, &out, &err);
        if (status != 0)
                g_error("script -qec '%s': exit %d: %s%s", cmd, status, out, err);
        /* the terminal turns "\n" into "\r\n" */
        g_autoptr(GString) s = g_string_new(out);
        g_string_replace(s, "\r\n", "\n", 0);
        return g_string_free(g_steal_pointer(&s), false);
}

static void test_tty(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        /* --all: on a terminal, a and a2 (alike under n_a) would share a line */
        g_autofree char *args = g_strdup_printf("tree --all %d", tgid_of(fx, fx->a));
        g_autofree char *utf8 = ctl_on_tty(fx, "C.UTF-8", args);
        g_autofree char *ascii = ctl_on_tty(fx, "C", args);
        g_autofree char *piped = CTL_OK(fx, "tree", args + strlen("tree --all "));
        /* a: two children under n_a, n_a1 nested in n_a */
        g_assert_nonnull(strstr(utf8, "\xe2\x94\x9c\xe2\x94\x80 ")); /* "├─ " */
        g_assert_nonnull(strstr(utf8, "\xe2\x94\x94\xe2\x94\x80 ")); /* "└─ " */
        g_assert_null(strstr(utf8, "|- "));
        assert_ascii(ascii, "tree on a terminal in the C locale");
        g_assert_cmpstr(ascii, ==, piped);
        /* the same tree, glyph for glyph */
        g_autoptr(GString) back = g_string_new(utf8);
        g_string_replace(back, "\xe2\x94\x9c\xe2\x94\x80 ", "|- ", 0);
        g_string_replace(back, "\xe2\x94\x94\xe2\x94\x80 ", "`- ", 0);
        g_string_replace(back, "\xe2\x94\x82 ", "| ", 0);
        g_assert_cmpstr(back->str, ==, piped);
        /* without --all, a terminal gets alike siblings on one line, as pstree shows them */
        g_autofree char *a_only = g_strdup_printf("tree %d", tgid_of(fx, fx->a));
        g_autofree char *collapsed = ctl_on_tty(fx, "C", a_only);
        if (!strstr(collapsed, "- 2*[" COMM "]\n"))
                g_error("tree on a terminal does not collapse a and a2:\n%s", collapsed);

        g_autofree char *json = ctl_on_tty(fx, "C.UTF-8", "--json status");
        g_assert_true(g_str_has_prefix(json, "{\n  \""));
        json_t *doc = tests_json_parse_document(json, "status --json on a terminal");
        g_assert_cmpstr(jstr(doc, "backend"), ==, "bpf");
        json_decref(doc);
}

/* ---- an unprivileged caller ---- */

static bool owned_by_nobody(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/status", pid), *status = NULL;
        if (!g_file_get_contents(path, &status, NULL, NULL))
                return true; /* gone since: nothing to hold against the daemon */
        return strstr(status, "\nUid:\t65534\t65534\t65534\t65534\n") != NULL;
}

static bool nobody_task_listed(void *userdata) {
        Fixture *fx = ((void **) userdata)[0];
        pid_t pid = GPOINTER_TO_INT(((void **) userdata)[1]);
        g_autoptr(GHashTable) tasks = bus_tasks(fx->bus);
        return g_hash_table_contains(tasks, GINT_TO_POINTER(pid));
}

static void test_unprivileged(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        pid_t mine = tests_spawn_nobody(NULL, false);
        void *arg[] = { fx, GINT_TO_POINTER(mine) };
        if (!tests_wait_for(nobody_task_listed, arg, WAIT_MS))
                g_error("the daemon does not list nobody's filtered task %d", mine);

        /* ps: nobody's own task, nothing of root's */
        json_t *doc = CTL_JSON_AS_NOBODY(fx, "ps");
        json_t *t;
        size_t i;
        bool seen = false;
        json_array_foreach(jarr(doc, "tasks"), i, t) {
                pid_t tgid = (pid_t) jint(t, "tgid");
                if (!owned_by_nobody(tgid))
                        g_error("nobody is shown task %" JSON_INTEGER_FORMAT " of another user", jint(t, "tid"));
                seen |= tgid == mine;
        }
        g_assert_true(seen);
        json_decref(doc);
        /* the table, without legend: rows "TID TGID PPID COMM MODE DEPTH FILTER" */
        g_autofree char *ps = CTL_OK_AS_NOBODY(fx, "--no-legend", "ps");
        g_auto(GStrv) rows = lines_of(ps);
        seen = false;
        for (char **l = rows; *l; l++) {
                int tid, tgid, ppid;
                g_assert_cmpint(sscanf(*l, "%d %d %d", &tid, &tgid, &ppid), ==, 3);
                g_assert_true(owned_by_nobody(tgid));
                seen |= tid == mine && tgid == mine && ppid == getpid();
        }
        g_assert_true(seen);

        /* the properties are everyone's */
        json_t *status = CTL_JSON_AS_NOBODY(fx, "status");
        g_assert_cmpstr(jstr(status, "backend"), ==, "bpf");
        json_decref(status);

        /* its own chain and filter: yes; root's: AccessDenied */
        g_autofree char *me = g_strdup_printf("%d", mine);
        json_t *chain = CTL_JSON_AS_NOBODY(fx, "chain", me);
        g_assert_cmpuint(json_array_size(jarr(chain, "filters")), ==, 1);
        g_autofree char *own_id = g_strdup_printf("%" JSON_INTEGER_FORMAT, jid(json_array_get(jarr(chain, "filters"), 0), "id"));
        json_decref(chain);
        g_autofree char *own = CTL_OK_AS_NOBODY(fx, "show", own_id);
        g_assert_true(g_str_has_prefix(own, "Filter "));
        g_autofree char *check = CTL_OK_AS_NOBODY(fx, "check", me, "acct");
        g_assert_true(g_str_has_prefix(check, "ERRNO(3: ESRCH) "));
        g_autofree char *tree = CTL_OK_AS_NOBODY(fx, "tree");
        g_autofree char *mine_line = g_strdup_printf(COMM "[%d]", mine);
        g_assert_nonnull(strstr(tree, mine_line));
        g_autofree char *root_line = g_strdup_printf("[%d]", tgid_of(fx, fx->a));
        g_assert_null(strstr(tree, root_line));

        g_autofree char *theirs = g_strdup_printf("%d", tid_of(fx, fx->a));
        g_autofree char *their_filter = g_strdup_printf("%" PRIu64, fx->id[fx->n_a]);
        g_autofree char *task_denied = g_strdup_printf("Failed to get the task's chain: Task %s is not one you could trace.", theirs);
        g_autofree char *filter_denied = g_strdup_printf("Failed to get the filter: Filter %s runs no task you could trace.", their_filter);
        CTL_FAILS(fx, true, task_denied, "chain", theirs);
        CTL_FAILS(fx, true, task_denied, "check", theirs, "getpid");
        CTL_FAILS(fx, true, filter_denied, "show", their_filter);
        CTL_FAILS(fx, true, task_denied, "tree", theirs);
        CTL_FAILS(fx, true, "Failed to rescan: Only root may ask for a rescan.", "rescan");

        /* root may rescan; it returns once stored, and nothing of the scenario is lost */
        g_autofree char *rescan = CTL_OK(fx, "rescan");
        g_assert_cmpstr(rescan, ==, "");
        g_assert_true(scenario_listed(fx));
        kill(mine, SIGKILL);
        waitpid(mine, NULL, 0);
}

/* ---- a process that names itself with terminal escapes ---- */

/* ESC ] 0 ; PWN BEL (set the window title) ESC [ 2 J (clear the screen) */
#define EVIL "\033]0;PWN\a\033[2J"
#define EVIL_ESCAPED "\\e]0;PWN\\x07\\e[2J"

static void assert_no_control(const char *out, const char *what) {
        for (const char *p = out; *p; p++)
                if (((unsigned char) *p < 0x20 && *p != '\n') || *p == 0x7f)
                        g_error("%s: byte 0x%02x reaches the terminal:\n%s", what, (unsigned char) *p, out);
}

static void test_escapes(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        Monitor text;
        monitor_start(&text, false);
        pid_t evil = tests_spawn_nobody(EVIL, true); /* its child, forked under its filter, is a TaskAdded */
        void *arg[] = { fx, GINT_TO_POINTER(evil) };
        if (!tests_wait_for(nobody_task_listed, arg, WAIT_MS))
                g_error("the daemon does not list the task %d", evil);
        g_autofree char *pid = g_strdup_printf("%d", evil);
        g_autofree char *line = g_strdup_printf(EVIL_ESCAPED "[%d]", evil);

        g_autofree char *ps = CTL_OK(fx, "ps");
        assert_no_control(ps, "ps");
        g_assert_nonnull(strstr(ps, EVIL_ESCAPED));
        g_autofree char *tree = CTL_OK(fx, "tree");
        assert_no_control(tree, "tree");
        g_assert_nonnull(strstr(tree, line));
        g_autofree char *sub = CTL_OK(fx, "tree", pid);
        assert_no_control(sub, "tree PID");
        g_assert_nonnull(strstr(sub, line));
        g_autofree char *graph = CTL_OK(fx, "graph", pid);
        assert_no_control(graph, "graph PID");

        /* the daemon's signal names it too */
        gint64 end = g_get_monotonic_time() + WAIT_MS * 1000;
        g_autofree char *want = g_strdup("comm=" EVIL_ESCAPED);
        for (;;) {
                g_autofree char *l = tests_read_line(text.out, text.buf, end);
                if (!l)
                        g_error("monitor: no '%s' within %d ms", want, WAIT_MS);
                assert_no_control(l, "monitor");
                if (strstr(l, " TaskAdded ") && strstr(l, want))
                        break;
        }
        monitor_stop(&text);

        /* a snapshot named with escapes */
        g_autofree char *id = CTL_OK(fx, "snapshot", pid, "--name", "snap" EVIL);
        g_autofree char *list = CTL_OK(fx, "snapshots");
        assert_no_control(list, "snapshots");
        g_assert_nonnull(strstr(list, "snap" EVIL_ESCAPED));

        /* JSON keeps the exact strings */
        json_t *doc = CTL_JSON(fx, "ps");
        json_t *t;
        size_t i;
        bool seen = false;
        json_array_foreach(jarr(doc, "tasks"), i, t)
                if (jint(t, "tid") == evil) {
                        g_assert_cmpstr(jstr(t, "comm"), ==, EVIL);
                        seen = true;
                }
        g_assert_true(seen);
        json_decref(doc);
        doc = CTL_JSON(fx, "snapshots");
        g_assert_cmpstr(jstr(json_array_get(jarr(doc, "snapshots"), 0), "name"), ==, "snap" EVIL);
        json_decref(doc);
        kill(evil, SIGKILL);
        waitpid(evil, NULL, 0);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
#define ADD(name, fn) g_test_add("/sectreectl/" name, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD("status", test_status);
        ADD("ps", test_ps);
        ADD("tree", test_tree);
        ADD("tree-json", test_tree_json);
        ADD("show", test_show);
        ADD("chain", test_chain);
        ADD("check", test_check);
        ADD("graph", test_graph);
        ADD("monitor", test_monitor);
        ADD("monitor-filters", test_monitor_filters);
        ADD("monitor-installer-gone", test_monitor_installer_gone);
        ADD("monitor-comm-after-exec", test_monitor_comm_after_exec);
        ADD("tty", test_tty);
        ADD("unprivileged", test_unprivileged);
        ADD("escapes", test_escapes);
        return g_test_run();
}
