/* test-budget.c: the real sectreed on a private bus with a small per-uid filter budget: a user's
 * filters beyond it keep id, parent, length and digest but no program, flagged "over-budget" on
 * the bus, with an empty program in the database and a note in sectreectl show, through events, a
 * full pass and a restart; root's filters are never counted. The budget is the whole machine's per
 * uid: the user is a uid of this program's own, which no other process has, and every assertion
 * looks at this program's processes only. */
#include <fcntl.h>
#include <pwd.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "bus/bus-errors.h"
#include "core/prog.h"
#include "ctl-run.h"
#include "observe/procinfo.h"
#include "snapshot/snapshot.h"
#include "tests-util.h"

#define N_FILTERS 20
#define FILTER_LEN 7 /* scenario_filter_errno() with no padding */
#define BUDGET 56    /* instructions: the 8 oldest filters of a uid */
#define N_KEPT (BUDGET / FILTER_LEN)

static uid_t own_uid(void);

/* Filter i of every chain: its errno tells them apart. The oldest one's is this program's own
 * (100 + its uid's offset), so that no chain of another program is byte for byte this one's: a
 * chain of the same programs decides the user's (who-can) where they cannot be read. */
static size_t test_filter(struct sock_filter *f, unsigned i) {
        int errno_value = i == 0 ? 100 + (int) (own_uid() - 61000) : 1 + (int) i;
        size_t n = scenario_filter_errno(f, SYS_acct, errno_value, 0);
        g_assert_cmpuint(n, ==, FILTER_LEN);
        return n;
}

/* In the child of a uid: stack N_FILTERS filters, say so on the pipe, and wait to be killed. */
static void install_and_wait(void *userdata) {
        int fd = GPOINTER_TO_INT(userdata);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(2);
        for (unsigned i = 0; i < N_FILTERS; i++) {
                struct sock_filter f[FILTER_LEN];
                struct sock_fprog prog = { .len = (unsigned short) test_filter(f, i), .filter = f };
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(3);
        }
        if (write(fd, "x", 1) != 1)
                _exit(4);
        for (;;)
                pause();
}

/* Does any process of the machine run under uid (real or effective)? */
static bool uid_in_use(uid_t uid) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n;
        g_assert_cmpint(proc_list_pids(&pids, &n), ==, 0);
        for (size_t i = 0; i < n; i++) {
                ProcStatus st;
                if (proc_read_status(pids[i], &st) >= 0 && (st.uid == uid || st.euid == uid))
                        return true;
        }
        return false;
}

/* The user of this program: a uid in 61000..63999 (chosen by pid, so that programs running at once
 * take different ones) that no passwd entry names and no process has. Its processes only install
 * filters: they never call the bus, which would need a passwd entry for them. */
static uid_t own_uid(void) {
        static uid_t uid = 0;
        for (unsigned i = 0; !uid && i < 3000; i++) {
                uid_t u = 61000 + ((uid_t) getpid() + i) % 3000;
                if (!getpwuid(u) && !uid_in_use(u))
                        uid = u;
        }
        g_assert_cmpuint(uid, !=, 0);
        return uid;
}

static pid_t spawn_installer(uid_t uid) {
        int p[2];
        char c;
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        pid_t pid = tests_as_uid_start(uid, install_and_wait, GINT_TO_POINTER(p[1]));
        close(p[1]);
        g_assert_cmpint(read(p[0], &c, 1), ==, 1);
        close(p[0]);
        return pid;
}

static void stop_installers(pid_t user, pid_t root) {
        kill(user, SIGKILL);
        kill(root, SIGKILL);
        waitpid(user, NULL, 0);
        waitpid(root, NULL, 0);
}

/* The task's chain from the daemon, oldest first; waits until it has N_FILTERS filters. */
static void chain_of(sd_bus *bus, pid_t tid, uint64_t ids[N_FILTERS]) {
        for (int attempt = 0; attempt < 500; attempt++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                sd_bus_error error = SD_BUS_ERROR_NULL;
                const uint64_t *chain;
                size_t size;
                if (bus_client_call(bus, "GetTaskChain", &error, &reply, "u", (uint32_t) tid) >= 0 &&
                    sd_bus_message_read_array(reply, 't', (const void **) &chain, &size) >= 0 &&
                    size == N_FILTERS * sizeof(uint64_t)) {
                        for (size_t i = 0; i < N_FILTERS; i++)
                                ids[i] = chain[N_FILTERS - 1 - i];
                        return;
                }
                sd_bus_error_free(&error);
                g_usleep(20 * 1000);
        }
        g_error("The daemon never showed the %d filters of task %d", N_FILTERS, tid);
}

/* GetFilter of filter i of a chain: length and digest always those of the program installed; the
 * program itself and no flag when kept, else empty and "over-budget". */
static void assert_filter(sd_bus *bus, uint64_t id, unsigned i, bool kept) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t parent;
        uint32_t len, tasks;
        const char *digest, *identity;
        char **flags = NULL;
        if (bus_client_call(bus, "GetFilter", &error, &reply, "t", id) < 0)
                g_error("GetFilter %" PRIu64 ": %s", id, error.message);
        g_assert_cmpint(sd_bus_message_read(reply, "tus", &parent, &len, &digest), >, 0);
        g_assert_cmpint(sd_bus_message_read_strv(reply, &flags), >=, 0);
        g_assert_cmpint(sd_bus_message_read(reply, "us", &tasks, &identity), >, 0);

        struct sock_filter want[FILTER_LEN];
        uint8_t raw[PROG_DIGEST_SIZE];
        char want_digest[PROG_DIGEST_STRING_MAX];
        size_t n = test_filter(want, i);
        prog_digest(want, n, raw);
        g_assert_cmpuint(len, ==, n);
        g_assert_cmpstr(digest, ==, prog_digest_to_string(raw, want_digest));
        bool flagged = flags && g_strv_contains((const char *const *) flags, "over-budget");
        if (flagged == kept)
                g_error("Filter %" PRIu64 " (%u of its chain) is %s but %s flagged over-budget", id, i,
                        kept ? "within the budget" : "over it", flagged ? "is" : "is not");
        g_strfreev(flags);

        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(qyyu)"), >, 0);
        size_t got = 0;
        struct sock_filter x;
        while (sd_bus_message_read(reply, "(qyyu)", &x.code, &x.jt, &x.jf, &x.k) > 0) {
                g_assert_cmpuint(got, <, n);
                g_assert_cmpmem(&x, sizeof(x), &want[got], sizeof(x));
                got++;
        }
        g_assert_cmpuint(got, ==, kept ? n : 0);
}

/* The user's oldest N_KEPT filters keep their programs, the rest only their length and digest;
 * root's all of theirs. */
static void assert_budget(sd_bus *bus, pid_t user, pid_t root) {
        uint64_t ids[N_FILTERS];
        chain_of(bus, user, ids);
        for (unsigned i = 0; i < N_FILTERS; i++)
                assert_filter(bus, ids[i], i, i < N_KEPT);
        chain_of(bus, root, ids);
        for (unsigned i = 0; i < N_FILTERS; i++)
                assert_filter(bus, ids[i], i, true);
}

/* A full pass; one that found no consistent reading of the machine (other processes changing
 * under it) is asked again. */
static bool rescan_once(void *userdata) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(userdata, "Rescan", &error, NULL, "") >= 0)
                return true;
        if (!sd_bus_error_has_name(&error, ERROR_SCAN_FAILED))
                g_error("Rescan: %s: %s", error.name, error.message);
        g_test_message("Rescan: %s", error.message);
        sd_bus_error_free(&error);
        return false;
}

static void rescan(sd_bus *bus) {
        if (!tests_wait_for(rescan_once, bus, TESTS_PATIENCE_MS))
                g_error("Rescan failed for %d ms", TESTS_PATIENCE_MS);
}

static void test_over_budget(void) {
        BusFixture b;
        char *args[] = { (char *) "--filter-budget=" G_STRINGIFY(BUDGET), NULL };
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=3600000000", NULL };
        if (!bus_fixture_start_all(&b, args, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();

        /* installed while the daemon watches: events */
        pid_t user = spawn_installer(own_uid()), root = spawn_installer(0);
        assert_budget(bus, user, root);

        /* a full pass keeps it so (and the scanner keeps no program the live forest does not) */
        rescan(bus);
        rescan(bus);
        assert_budget(bus, user, root);

        /* a snapshot holds every program: the scanner asks the kernel again for those it dropped */
        g_autoptr(Forest) f = bus_client_export_forest(bus, bus_client_create_ok(bus, user, NULL));
        const Task *t = forest_find_task(f, user, NULL);
        g_assert_nonnull(t);
        g_assert_cmpuint(t->filter->depth, ==, N_FILTERS);
        unsigned i = N_FILTERS;
        for (const Filter *x = t->filter; x; x = x->parent) {
                struct sock_filter want[FILTER_LEN];
                size_t n = test_filter(want, --i);
                g_assert_nonnull(x->insns);
                g_assert_cmpmem(x->insns, x->len * sizeof(struct sock_filter), want, n * sizeof(struct sock_filter));
        }
        /* and the live state is as it was */
        rescan(bus);
        assert_budget(bus, user, root);

        /* the database: an empty program, the length kept */
        g_autofree char *db = g_build_filename(b.state_dir, "state.db", NULL);
        g_autofree char *sql = g_strdup_printf("SELECT count(*) FROM task_chains c JOIN filters f ON f.id = c.filter "
                                               "WHERE c.tid = %d AND f.length = " G_STRINGIFY(FILTER_LEN)
                                               " AND length(f.program) = 0", user);
        g_autofree char *over = tests_sqlite_query(db, sql);
        g_autofree char *want = g_strdup_printf("%d", N_FILTERS - N_KEPT);
        g_assert_cmpstr(g_strstrip(over), ==, want);

        /* sectreectl show says so instead of disassembling nothing */
        uint64_t ids[N_FILTERS];
        chain_of(bus, user, ids);
        g_autofree char *id = g_strdup_printf("%" PRIu64, ids[N_FILTERS - 1]), *out = NULL, *err = NULL;
        char *show[] = { (char *) g_getenv("SECTREECTL"), (char *) "show", id, NULL };
        g_assert_cmpint(bus_fixture_run(&b, false, show, &out, &err), ==, 0);
        if (!strstr(out, "program not kept"))
                g_error("sectreectl show %s of a filter over budget:\n%s", id, out);
        g_clear_pointer(&out, g_free);
        g_clear_pointer(&err, g_free);
        g_autofree char *pid_arg = g_strdup_printf("%d", user);
        char *policy[] = { (char *) g_getenv("SECTREECTL"), (char *) "check", pid_arg, (char *) "acct", NULL };
        if (bus_fixture_run(&b, false, policy, &out, &err) == 0)
                g_error("sectreectl check of a chain without programs succeeded:\n%s", out);
        if (!strstr(err, "not kept"))
                g_error("sectreectl check of a chain without programs: %s", err);

        /* a restart finds it so in the database, and its first pass keeps it so */
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        bus_fixture_start_daemon(&b, args, env, 30);
        sd_bus_flush_close_unref(bus);
        bus = bus_client_open();
        assert_budget(bus, user, root);
        stop_installers(user, root);
        bus_fixture_finish(&b);
}


/* Filters that were there before the daemon started: its first full pass meets them all at once,
 * and keeps to the budget as events do. */
static void test_before_start(void) {
        BusFixture b;
        char *args[] = { (char *) "--filter-budget=" G_STRINGIFY(BUDGET), NULL };
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=3600000000", NULL };
        if (!tests_require_root())
                return;
        pid_t user = spawn_installer(own_uid()), root = spawn_installer(0);
        if (!bus_fixture_start_all(&b, args, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        assert_budget(bus, user, root);
        rescan(bus);
        assert_budget(bus, user, root);
        stop_installers(user, root);
        bus_fixture_finish(&b);
}

/* The chain of a who-can --json array (chains or undecided) that lists task tid, or NULL. */
static json_t *who_chain_with(json_t *doc, const char *array, pid_t tid) {
        size_t i, j;
        json_t *c, *t;
        json_array_foreach(json_object_get(doc, array), i, c)
                json_array_foreach(json_object_get(c, "tasks"), j, t)
                        if (json_integer_value(json_object_get(t, "tid")) == tid)
                                return c;
        return NULL;
}

/* acct as the newest filter of each chain answers it: ERRNO(N_FILTERS) */
#define NEWEST_ERRNO "ERRNO(" G_STRINGIFY(N_FILTERS) ")"

static void assert_decided(json_t *doc, pid_t tid, uint64_t head) {
        json_t *c = who_chain_with(doc, "chains", tid);
        if (!c) {
                g_autofree char *text = json_dumps(doc, JSON_INDENT(1));
                g_error("who-can does not name task %d among the chains that get " NEWEST_ERRNO ":\n%s", tid, text);
        }
        g_assert_cmpint(json_integer_value(json_object_get(c, "filter")), ==, (json_int_t) head);
        g_assert_true(json_is_true(json_object_get(c, "always")));
        g_assert_null(who_chain_with(doc, "undecided", tid));
}

/* Root's WhoCan and GetPolicy see through the budget: the user's chain, whose newest filters the
 * daemon keeps without their programs, is decided on the programs read again from the kernel; and
 * where they cannot be (here: SECTREE_TEST_NO_PROGRAM_FETCH), its tasks are named as not decided,
 * and the rest of the answer stands. */
/* The undecided tasks and chains of a who-can --json answer. */
static void undecided_counts(json_t *doc, size_t *ret_tasks, size_t *ret_chains) {
        size_t i;
        json_t *c;
        *ret_tasks = 0;
        *ret_chains = json_array_size(json_object_get(doc, "undecided"));
        json_array_foreach(json_object_get(doc, "undecided"), i, c)
                *ret_tasks += json_array_size(json_object_get(c, "tasks"));
}

typedef struct UndecidedText {
        BusFixture *b;
        char *text; /* who-can's text */
        char *want; /* its count line, as the JSON answers before and after it had it */
} UndecidedText;

/* Other processes of the machine (of other uids over the budget) may be undecided as well, and
 * come and go: true once the JSON answers before and after the text agree. */
static bool undecided_text_read(void *userdata) {
        UndecidedText *u = userdata;
        size_t tasks, chains, tasks_after, chains_after;
        json_t *doc = ctl_run_json(u->b, CTL_ARGS("who-can", "--action=" NEWEST_ERRNO, "acct"));
        undecided_counts(doc, &tasks, &chains);
        json_decref(doc);
        g_free(u->text);
        u->text = ctl_run_ok(u->b, CTL_ARGS("who-can", "--action=" NEWEST_ERRNO, "acct"));
        doc = ctl_run_json(u->b, CTL_ARGS("who-can", "--action=" NEWEST_ERRNO, "acct"));
        undecided_counts(doc, &tasks_after, &chains_after);
        json_decref(doc);
        g_free(u->want);
        u->want = g_strdup_printf("not decided (program not available): %zu task%s under %zu chain%s", tasks,
                                  tasks == 1 ? "" : "s", chains, chains == 1 ? "" : "s");
        return tasks == tasks_after && chains == chains_after;
}

static void test_who_can(void) {
        BusFixture b;
        char *args[] = { (char *) "--filter-budget=" G_STRINGIFY(BUDGET), NULL };
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=3600000000", NULL };
        char *no_fetch[] = { env[0], (char *) "SECTREE_TEST_NO_PROGRAM_FETCH=1", NULL };
        if (!bus_fixture_start_all(&b, args, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        pid_t user = spawn_installer(own_uid()), root = spawn_installer(0);
        uint64_t ids[N_FILTERS], root_ids[N_FILTERS];
        chain_of(bus, user, ids);
        chain_of(bus, root, root_ids);
        assert_filter(bus, ids[N_FILTERS - 1], N_FILTERS - 1, false);

        json_t *doc = ctl_run_json(&b, CTL_ARGS("who-can", "--action=" NEWEST_ERRNO, "acct"));
        assert_decided(doc, user, ids[N_FILTERS - 1]);
        assert_decided(doc, root, root_ids[N_FILTERS - 1]);
        g_assert_cmpuint(json_array_size(json_object_get(doc, "undecided")), ==, 0);
        json_decref(doc);
        /* the user's task may not make it: counted among the others, not listed as able */
        doc = ctl_run_json(&b, CTL_ARGS("who-can", "acct"));
        g_assert_null(who_chain_with(doc, "chains", user));
        g_assert_null(who_chain_with(doc, "undecided", user));
        json_decref(doc);

        g_autofree char *pid = g_strdup_printf("%d", user);
        g_autofree char *policy = ctl_run_ok(&b, CTL_ARGS("policy", "--arch=x86_64", pid));
        if (!strstr(policy, NEWEST_ERRNO))
                g_error("sectreectl policy of a chain over budget does not say " NEWEST_ERRNO ":\n%s", policy);

        /* programs that cannot be had: named, not hidden, and the call does not fail (root's
         * byte-identical chain goes first: its programs would decide the user's) */
        kill(root, SIGKILL);
        waitpid(root, NULL, 0);
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        bus_fixture_start_daemon(&b, args, no_fetch, 30);
        sd_bus_flush_close_unref(bus);
        bus = bus_client_open();
        chain_of(bus, user, ids);
        doc = ctl_run_json(&b, CTL_ARGS("who-can", "--action=" NEWEST_ERRNO, "acct"));
        json_t *u = who_chain_with(doc, "undecided", user);
        if (!u)
                g_error("who-can does not name task %d as not decided", user);
        g_assert_cmpint(json_integer_value(json_object_get(u, "filter")), ==, (json_int_t) ids[N_FILTERS - 1]);
        g_assert_cmpstr(json_string_value(json_object_get(u, "reason")), ==, "program not available");
        g_assert_null(who_chain_with(doc, "chains", user));
        json_decref(doc);
        UndecidedText ut = { .b = &b };
        g_assert_true(tests_wait_for(undecided_text_read, &ut, TESTS_PATIENCE_MS));
        g_autofree char *line = g_strdup_printf(" %d ", user);
        const char *at = strstr(ut.text, ut.want);
        if (!at || !strstr(at, line))
                g_error("who-can's text does not name task %d as not decided under \"%s\":\n%s", user, ut.want, ut.text);
        g_free(ut.text);
        g_free(ut.want);
        g_free(ctl_run_fails(&b, 1, "sectreectl: ", CTL_ARGS("policy", pid)));

        kill(user, SIGKILL);
        waitpid(user, NULL, 0);
        bus_fixture_finish(&b);
}

static gint cmp_u64(gconstpointer a, gconstpointer b) {
        guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
        return x < y ? -1 : x > y;
}

/* The ids of the BPF programs process pid holds (its fds of programs and links), sorted, joined
 * by ' '. */
static char *held_program_ids(pid_t pid) {
        g_autofree char *dir = g_strdup_printf("/proc/%d/fdinfo", pid);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        g_assert_nonnull(d);
        g_autoptr(GArray) ids = g_array_new(false, false, sizeof(guint64));
        for (const char *name; (name = g_dir_read_name(d));) {
                g_autofree char *path = g_build_filename(dir, name, NULL), *text = NULL;
                if (!g_file_get_contents(path, &text, NULL, NULL))
                        continue; /* closed meanwhile */
                const char *at = strstr(text, "prog_id:");
                if (!at)
                        continue;
                guint64 id = g_ascii_strtoull(at + strlen("prog_id:"), NULL, 10);
                bool seen = false;
                for (guint i = 0; i < ids->len; i++)
                        seen |= g_array_index(ids, guint64, i) == id;
                if (!seen)
                        g_array_append_val(ids, id);
        }
        g_array_sort(ids, cmp_u64);
        GString *out = g_string_new(NULL);
        for (guint i = 0; i < ids->len; i++)
                g_string_append_printf(out, "%s%" G_GUINT64_FORMAT, i ? " " : "", g_array_index(ids, guint64, i));
        return g_string_free(out, false);
}

/* Programs over budget are read again through the source's detached scanner, which stays loaded:
 * the first WhoCan that needs them loads it (the daemon holds more BPF programs than before), the
 * next one uses it again (the same programs, none loaded anew), and both decide nobody's chain. */
static void test_who_can_reuses_scanner(void) {
        BusFixture b;
        char *args[] = { (char *) "--filter-budget=" G_STRINGIFY(BUDGET), NULL };
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=3600000000", NULL };
        if (!bus_fixture_start_all(&b, args, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        pid_t nobody = spawn_installer(65534);
        uint64_t ids[N_FILTERS];
        chain_of(bus, nobody, ids);
        g_autofree char *before = held_program_ids(b.daemon_pid), *first = NULL, *second = NULL;
        for (int call = 0; call < 2; call++) {
                json_t *doc = ctl_run_json(&b, CTL_ARGS("who-can", "--action=" NEWEST_ERRNO, "acct"));
                assert_decided(doc, nobody, ids[N_FILTERS - 1]);
                json_decref(doc);
                *(call == 0 ? &first : &second) = held_program_ids(b.daemon_pid);
        }
        g_test_message("BPF programs of sectreed: before %s; after one WhoCan %s; after two %s", before, first, second);
        g_assert_cmpstr(first, !=, before);
        g_assert_cmpstr(second, ==, first);
        kill(nobody, SIGKILL);
        waitpid(nobody, NULL, 0);
        bus_fixture_finish(&b);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/budget/over-budget", test_over_budget);
        g_test_add_func("/budget/before-start", test_before_start);
        g_test_add_func("/budget/who-can", test_who_can);
        g_test_add_func("/budget/who-can-reuses-scanner", test_who_can_reuses_scanner);
        return g_test_run();
}
