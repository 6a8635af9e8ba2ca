/* test-units.c: processes in systemd units, containers and user units by name: cgroups made by hand
 * as systemd names them, a filtered process moved into each; ListProcessUnits, ps's UNIT column,
 * --unit, --machine and --user, tree restricted to a unit, and `units` with its verdicts */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "churn.h"
#include "service/cgroup-members.h"
#include "service/units.h"
#include "snapshot/snapshot.h"
#include "ctl-run.h"
#include "tests-json.h"
#include "guard.h"
#include "tests-util.h"

#define USER_UID 4242

/* The calls a child's filter answers ERRNO(EPERM); every other call is allowed. */
typedef struct Child {
        const char *cgroup; /* under the cgroup2 root, made for the test */
        int denied[3];      /* syscall numbers, -1 ends */
        pid_t pid;
} Child;

typedef struct Fixture {
        BusFixture b;
        bool ok;
        char *root; /* the cgroup2 hierarchy libsystemd reads */
        char *unit, *user_unit, *machine_scope, *machine;
        char *cgroups[3];
        Child children[3];
} Fixture;

static void child_run(const int *denied, int ready_fd) {
        struct sock_filter insns[8];
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) /* a failed test ends without its teardown */
                _exit(1);
        size_t n = 0;
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        size_t n_denied = 0;
        while (n_denied < 3 && denied[n_denied] >= 0)
                n_denied++;
        for (size_t i = 0; i < n_denied; i++) /* a match jumps to the ERRNO at the end */
                insns[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) denied[i],
                                                           (uint8_t) (n_denied - i), 0);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = insns };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(1);
        if (write(ready_fd, "x", 1) != 1)
                _exit(1);
        for (;;)
                pause();
}

static pid_t child_start(const int *denied) {
        int p[2];
        g_assert_cmpint(pipe(p), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(p[0]);
                child_run(denied, p[1]);
        }
        close(p[1]);
        char c;
        g_assert_cmpint(read(p[0], &c, 1), ==, 1);
        close(p[0]);
        return pid;
}

static void write_file(const char *path, const char *text) {
        g_autoptr(GError) error = NULL;
        if (!g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_NONE, 0644, &error))
                g_error("writing %s: %s", path, error->message);
}

/* Make the cgroup (and its parents) and move pid into it. */
static void move_into(const Fixture *fx, const char *cgroup, pid_t pid) {
        g_autofree char *dir = g_build_filename(fx->root, cgroup, NULL), *procs = g_build_filename(dir, "cgroup.procs", NULL);
        g_autofree char *text = g_strdup_printf("%d\n", pid);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        write_file(procs, text);
}

/* Back to the root cgroup, and the directories made removed, deepest first (systemd's own slices
 * stay: rmdir fails on what is in use). */
static void cgroups_remove(const Fixture *fx) {
        g_autofree char *root_procs = g_build_filename(fx->root, "cgroup.procs", NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(fx->children); i++) {
                if (fx->children[i].pid <= 0)
                        continue;
                g_autofree char *text = g_strdup_printf("%d\n", fx->children[i].pid);
                (void) g_file_set_contents(root_procs, text, -1, NULL);
                kill(fx->children[i].pid, SIGKILL);
                waitpid(fx->children[i].pid, NULL, 0);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(fx->cgroups); i++) {
                if (!fx->cgroups[i])
                        continue;
                g_autofree char *dir = g_build_filename(fx->root, fx->cgroups[i], NULL);
                while (strlen(dir) > strlen(fx->root) && rmdir(dir) == 0)
                        *strrchr(dir, '/') = 0;
        }
}

static void fixture_setup(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) {};
        fx->root = g_strdup(tests_cgroup2_root());
        if (!fx->root) {
                g_test_skip("no cgroup2 hierarchy: libsystemd reads units from it");
                return;
        }
        if (!bus_fixture_start_all(&fx->b, NULL, NULL))
                return;
        /* fixed names: a run that failed (its teardown does not run) leaves empty cgroups the next reuses */
        fx->unit = g_strdup("sectree-test-fake.service");
        fx->user_unit = g_strdup("sectree-test-app.service");
        fx->machine = g_strdup("sectreetestbox"); /* a '-' would be \x2d (see test_scope_names) */
        fx->machine_scope = g_strdup_printf("machine-%s.scope", fx->machine);
        fx->cgroups[0] = g_strdup_printf("system.slice/%s", fx->unit);
        fx->cgroups[1] = g_strdup_printf("user.slice/user-%d.slice/user@%d.service/app.slice/%s", USER_UID, USER_UID,
                                         fx->user_unit);
        fx->cgroups[2] = g_strdup_printf("machine.slice/%s", fx->machine_scope);
        static const int denied[3][3] = { { __NR_ptrace, __NR_bpf, -1 }, { -1 }, { __NR_mount, -1 } };
        for (size_t i = 0; i < 3; i++) {
                fx->children[i].pid = child_start(denied[i]);
                move_into(fx, fx->cgroups[i], fx->children[i].pid);
        }
        /* a full pass: the daemon lists them all */
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_assert_cmpint(bus_client_call(bus, "Rescan", NULL, NULL, ""), >=, 0);
        fx->ok = true;
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        if (fx->root)
                cgroups_remove(fx);
        if (fx->ok)
                bus_fixture_finish(&fx->b);
        for (size_t i = 0; i < G_N_ELEMENTS(fx->cgroups); i++)
                g_free(fx->cgroups[i]);
        g_free(fx->root);
        g_free(fx->unit);
        g_free(fx->user_unit);
        g_free(fx->machine);
        g_free(fx->machine_scope);
}

static char *pid_str(const Fixture *fx, size_t i) {
        return g_strdup_printf("%d", fx->children[i].pid);
}

static void test_list_process_units(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        g_assert_cmpint(bus_client_call(bus, "ListProcessUnits", NULL, &reply, ""), >=, 0);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(usssu)"), >, 0);
        const char *unit, *user_unit, *machine;
        uint32_t pid, owner;
        unsigned found = 0;
        while (sd_bus_message_read(reply, "(usssu)", &pid, &unit, &user_unit, &machine, &owner) > 0) {
                if ((pid_t) pid == fx->children[0].pid) {
                        g_assert_cmpstr(unit, ==, fx->unit);
                        g_assert_cmpstr(user_unit, ==, "");
                        g_assert_cmpstr(machine, ==, "");
                        g_assert_cmpuint(owner, ==, UINT32_MAX);
                } else if ((pid_t) pid == fx->children[1].pid) {
                        g_assert_cmpstr(unit, ==, "user@4242.service");
                        g_assert_cmpstr(user_unit, ==, fx->user_unit);
                        g_assert_cmpstr(machine, ==, "");
                        g_assert_cmpuint(owner, ==, USER_UID);
                } else if ((pid_t) pid == fx->children[2].pid) {
                        g_assert_cmpstr(unit, ==, fx->machine_scope);
                        g_assert_cmpstr(machine, ==, fx->machine);
                } else
                        continue;
                found++;
        }
        g_assert_cmpuint(found, ==, 3);
}

/* ps: the UNIT column; --unit, --machine and --user keep the processes they name. */
static void test_ps(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *p0 = pid_str(fx, 0), *p1 = pid_str(fx, 1), *p2 = pid_str(fx, 2);
        g_autofree char *out = ctl_run_ok(&fx->b, CTL_ARGS("--no-legend", "ps", p0, p1, p2));
        g_autofree char *user_label = g_strdup_printf("user@4242.service/%s", fx->user_unit);
        g_assert_nonnull(strstr(out, fx->unit));
        g_assert_nonnull(strstr(out, user_label));
        g_assert_nonnull(strstr(out, fx->machine_scope));

        g_autofree char *unit_arg = g_strdup_printf("--unit=%s", fx->unit);
        g_autofree char *by_unit = ctl_run_ok(&fx->b, CTL_ARGS("--no-legend", unit_arg, "ps"));
        g_auto(GStrv) rows = g_strsplit(by_unit, "\n", -1);
        g_assert_cmpuint(g_strv_length(rows), ==, 2); /* one row, and "" after its newline */
        g_assert_nonnull(strstr(by_unit, p0));
        /* a glob on the user unit */
        g_autofree char *by_user_unit = ctl_run_ok(&fx->b, CTL_ARGS("--no-legend", "--unit=sectree-test-app*", "ps"));
        g_assert_nonnull(strstr(by_user_unit, p1));
        g_assert_null(strstr(by_user_unit, fx->unit));
        g_autofree char *machine_arg = g_strdup_printf("--machine=%s", fx->machine);
        g_autofree char *by_machine = ctl_run_ok(&fx->b, CTL_ARGS("--no-legend", machine_arg, "ps"));
        g_assert_nonnull(strstr(by_machine, p2));
        g_assert_null(strstr(by_machine, fx->unit));
        g_autofree char *by_user = ctl_run_ok(&fx->b, CTL_ARGS("--no-legend", "--user=4242", "ps"));
        g_assert_nonnull(strstr(by_user, user_label));
        g_assert_null(strstr(by_user, fx->unit));
        g_assert_null(strstr(by_user, fx->machine_scope));
        /* --json keeps its keys; the filter applies */
        json_auto_t *doc = ctl_run_json(&fx->b, CTL_ARGS("--json", unit_arg, "ps"));
        g_assert_cmpuint(json_array_size(json_object_get(doc, "tasks")), ==, 1);
        g_assert_cmpint(json_integer_value(json_object_get(json_array_get(json_object_get(doc, "tasks"), 0), "tgid")),
                        ==, fx->children[0].pid);
}

/* tree --unit: the unit's processes and the filters they reach, nothing else. */
static void test_tree(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *unit_arg = g_strdup_printf("--unit=%s", fx->unit);
        g_autofree char *out = ctl_run_ok(&fx->b, CTL_ARGS("tree", unit_arg));
        g_autofree char *mine = g_strdup_printf("[%d]", fx->children[0].pid),
                        *other = g_strdup_printf("[%d]", fx->children[2].pid);
        g_assert_nonnull(strstr(out, mine));
        g_assert_null(strstr(out, other));
        if (!strstr(out, "\n1 filter, 1 process, 1 thread"))
                g_error("tree %s:\n%s", unit_arg, out);
}

/* Runs of spaces as one. */
static char *squeeze(const char *s) {
        g_autoptr(GRegex) re = g_regex_new(" +", 0, 0, NULL);
        return g_regex_replace_literal(re, s, -1, 0, " ", 0, NULL);
}

/* units: a row per unit with its tasks, chains and the verdict; --json says the same. */
static void test_units(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *out = ctl_run_ok(&fx->b, CTL_ARGS("units"));
        g_assert_true(g_str_has_prefix(out, "UNIT "));
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        const char *unit_row = NULL, *user_row = NULL, *machine_row = NULL;
        g_autofree char *user_label = g_strdup_printf("user@4242.service/%s ", fx->user_unit);
        g_autofree char *unit_label = g_strdup_printf("%s ", fx->unit), *scope_label = g_strdup_printf("%s ", fx->machine_scope);
        for (char **l = lines; *l; l++) {
                if (g_str_has_prefix(*l, unit_label))
                        unit_row = *l;
                if (g_str_has_prefix(*l, user_label))
                        user_row = *l;
                if (g_str_has_prefix(*l, scope_label))
                        machine_row = *l;
        }
        if (!unit_row || !user_row || !machine_row)
                g_error("units lacks a row:\n%s", out);
        g_autofree char *ur = squeeze(unit_row), *us = squeeze(user_row), *m = squeeze(machine_row);
        g_autofree char *want_u = g_strdup_printf("%s - 1 1 1 filter, denies ptrace, bpf", fx->unit);
        g_autofree char *want_us = g_strdup_printf("user@4242.service/%s - 1 1 1 filter, denies none of ptrace, bpf, "
                                                   "mount, kexec_load, init_module, perf_event_open", fx->user_unit);
        g_autofree char *want_m = g_strdup_printf("%s %s 1 1 1 filter, denies mount", fx->machine_scope, fx->machine);
        g_assert_cmpstr(ur, ==, want_u);
        g_assert_cmpstr(us, ==, want_us);
        g_assert_cmpstr(m, ==, want_m);

        g_autofree char *unit_arg = g_strdup_printf("--unit=%s", fx->unit);
        json_auto_t *doc = ctl_run_json(&fx->b, CTL_ARGS("--json", unit_arg, "units"));
        json_t *units = json_object_get(doc, "units");
        g_assert_cmpuint(json_array_size(units), ==, 1);
        json_t *u = json_array_get(units, 0);
        g_assert_cmpstr(json_string_value(json_object_get(u, "unit")), ==, fx->unit);
        g_assert_true(json_is_null(json_object_get(u, "user_unit")));
        g_assert_true(json_is_null(json_object_get(u, "machine")));
        g_assert_cmpint(json_integer_value(json_object_get(u, "tasks")), ==, 1);
        g_assert_cmpint(json_integer_value(json_object_get(u, "filters")), ==, 1);
        g_assert_cmpint(json_integer_value(json_object_get(u, "unconfined_tasks")), ==, 0);
        g_assert_cmpuint(json_array_size(json_object_get(u, "chains")), ==, 1);
        json_t *denies = json_object_get(u, "denies");
        g_assert_cmpuint(json_array_size(denies), ==, 2);
        g_assert_cmpstr(json_string_value(json_array_get(denies, 0)), ==, "ptrace");
        g_assert_cmpstr(json_string_value(json_array_get(denies, 1)), ==, "bpf");
        g_assert_cmpstr(json_string_value(json_object_get(u, "verdict")), ==, "1 filter, denies ptrace, bpf");
}

/* A process without filters, paused until killed. */
static pid_t bare_start(void) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                        _exit(1);
                for (;;)
                        pause();
        }
        return pid;
}

static void bare_stop(const Fixture *fx, pid_t pid) {
        g_autofree char *root_procs = g_build_filename(fx->root, "cgroup.procs", NULL);
        g_autofree char *text = g_strdup_printf("%d\n", pid);
        (void) g_file_set_contents(root_procs, text, -1, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* The verdict of units' one row for --unit=unit (NULL: no row), its tasks into *ret_tasks. */
static char *units_verdict(Fixture *fx, const char *unit, json_int_t *ret_tasks) {
        g_autofree char *unit_arg = g_strdup_printf("--unit=%s", unit);
        json_auto_t *doc = ctl_run_json(&fx->b, CTL_ARGS(unit_arg, "units"));
        json_t *units = json_object_get(doc, "units");
        g_assert_cmpuint(json_array_size(units), <=, 1);
        if (json_array_size(units) == 0)
                return NULL;
        *ret_tasks = json_integer_value(json_object_get(json_array_get(units, 0), "tasks"));
        return g_strdup(json_string_value(json_object_get(json_array_get(units, 0), "verdict")));
}

/* who-can --unit: the total is the unit's tasks under filters (live) or all its tasks (a snapshot),
 * not only those of the chains that let the call run: two tasks of the unit, both denied ptrace,
 * are "0 of their 2". */
static void test_who_can_unit_total(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        static const int denied[] = { __NR_ptrace, __NR_bpf, -1 };
        pid_t second = child_start(denied);
        move_into(fx, fx->cgroups[0], second);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_assert_cmpint(bus_client_call(bus, "Rescan", NULL, NULL, ""), >=, 0);
        g_autofree char *unit_arg = g_strdup_printf("--unit=%s", fx->unit);
        g_autofree char *path = g_build_filename(fx->b.dir, "who-total.json", NULL), *file_arg = g_strdup_printf("--file=%s", path);
        g_autofree char *id = ctl_run_ok(&fx->b, CTL_ARGS("snapshot"));
        g_strstrip(id);
        g_free(ctl_run_ok(&fx->b, CTL_ARGS("export", id, path)));
        json_auto_t *live = ctl_run_json(&fx->b, CTL_ARGS(unit_arg, "who-can", "ptrace"));
        json_auto_t *file = ctl_run_json(&fx->b, CTL_ARGS(file_arg, unit_arg, "who-can", "ptrace"));
        json_auto_t *errno_live = ctl_run_json(&fx->b, CTL_ARGS(unit_arg, "who-can", "--action=ERRNO", "ptrace"));
        g_autofree char *text = ctl_run_ok(&fx->b, CTL_ARGS(unit_arg, "who-can", "ptrace"));
        bare_stop(fx, second);
        unlink(path);

        g_assert_cmpuint(json_array_size(json_object_get(live, "chains")), ==, 0);
        g_assert_cmpint(json_integer_value(json_object_get(live, "tasks")), ==, 2);
        g_assert_cmpuint(json_array_size(json_object_get(file, "chains")), ==, 0);
        g_assert_cmpint(json_integer_value(json_object_get(file, "tasks")), ==, 2);
        g_assert_cmpint(json_integer_value(json_object_get(errno_live, "tasks")), ==, 2);
        if (!strstr(text, "0 of their 2 tasks under filters may make it"))
                g_error("who-can %s ptrace:\n%s", unit_arg, text);
}

/* units counts a unit's processes without filters (the daemon does not list them): unconfined
 * beside the filtered one, and a unit asked for whose processes all run without filters is
 * listed as unconfined; without --unit, such a unit is left out. */
static void test_units_unconfined(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        static const char bare_unit[] = "sectree-test-bare.service";
        g_autofree char *bare_cgroup = g_strdup_printf("system.slice/%s", bare_unit);
        pid_t mixed = bare_start(), bare = bare_start();
        move_into(fx, fx->cgroups[0], mixed);
        move_into(fx, bare_cgroup, bare);
        json_int_t tasks = 0;
        g_autofree char *verdict = units_verdict(fx, fx->unit, &tasks);
        g_autofree char *bare_verdict = NULL;
        json_int_t bare_tasks = 0;
        bare_verdict = units_verdict(fx, bare_unit, &bare_tasks);
        g_autofree char *all = ctl_run_ok(&fx->b, CTL_ARGS("units"));
        bare_stop(fx, mixed);
        bare_stop(fx, bare);
        g_autofree char *dir = g_build_filename(fx->root, bare_cgroup, NULL);
        rmdir(dir);

        g_assert_cmpstr(verdict, ==, "1 filter, denies ptrace, bpf; 1 task unconfined");
        g_assert_cmpint(tasks, ==, 2);
        g_assert_cmpstr(bare_verdict, ==, "unconfined");
        g_assert_cmpint(bare_tasks, ==, 1);
        if (strstr(all, bare_unit))
                g_error("units lists %s, which has no process the daemon lists:\n%s", bare_unit, all);
}

/* units while processes come and go: a process listed by ListTasks that exits before
 * ListProcessUnits, or before its chain is read, is dropped; never a second "(no unit)" row, nor
 * a row with an empty verdict. */
static void test_units_churn(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        Churn *churn = NULL;
        g_autofree char *bad = NULL;
        g_assert_cmpint(churn_start(&(ChurnOptions) { .workers = 4 }, &churn), ==, 0);
        for (int run = 0; run < 60 && !bad; run++) {
                g_autofree char *out = NULL, *err = NULL;
                int status = ctl_run(&fx->b, false, CTL_ARGS("--json", "units"), &out, &err);
                json_auto_t *doc = json_loads(out ?: "", 0, NULL);
                json_t *units = json_object_get(doc, "units"), *u, *v;
                size_t i, j;
                if (status != 0 || (err && *err) || !json_is_array(units)) {
                        bad = g_strdup_printf("run %d: exit %d, stderr: %s", run, status, err ?: "");
                        break;
                }
                json_array_foreach(units, i, u) {
                        const char *verdict = json_string_value(json_object_get(u, "verdict"));
                        g_autofree char *row = json_dumps(u, JSON_COMPACT);
                        if (!bad && (!verdict || !*verdict || json_integer_value(json_object_get(u, "tasks")) <= 0))
                                bad = g_strdup_printf("run %d: a row without tasks or verdict: %s", run, row);
                        json_array_foreach(units, j, v)
                                if (!bad && j > i && json_equal(json_object_get(u, "unit"), json_object_get(v, "unit")) &&
                                    json_equal(json_object_get(u, "user_unit"), json_object_get(v, "user_unit")) &&
                                    json_equal(json_object_get(u, "machine"), json_object_get(v, "machine")))
                                        bad = g_strdup_printf("run %d: the same unit twice: %s", run, row);
                }
        }
        churn_free(churn); /* before failing: its workers would outlive the test */
        if (bad)
                g_error("%s", bad);
}

/* Where machined does not run, the machine's name is the scope's, unescaped as systemd escapes. */
static void test_scope_names(void) {
        static const struct {
                const char *unit, *machine;
        } cases[] = {
                { "machine-web.scope", "web" },
                { "machine-my\\x2dbox.scope", "my-box" },
                { "machine-a\\x2fb.scope", NULL },  /* a '/' in a name is refused */
                { "machine-a\\x1b.scope", NULL },   /* so is a control character */
                { "machine-a\\x2.scope", NULL },    /* and a cut escape */
                { "machine-.scope", NULL },
                { "machine-web.service", NULL },
                { "sshd.service", NULL },
                { NULL, NULL },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *name = NULL;
                g_assert_cmpint(machine_name_from_scope(cases[i].unit, &name), ==, 0);
                g_assert_cmpstr(name, ==, cases[i].machine);
        }
}

/* Take a snapshot of child i, export it in format, read it back. */
static Forest *snapshot_of(Fixture *fx, size_t i, const char *format, char **ret_path) {
        g_autofree char *p = pid_str(fx, i), *dir = g_dir_make_tmp("sectree-units-XXXXXX", NULL);
        g_autofree char *out = ctl_run_ok(&fx->b, CTL_ARGS("snapshot", p));
        g_strstrip(out);
        g_autofree char *path = g_strdup_printf("%s/snap.%s", dir, format), *format_arg = g_strdup_printf("--format=%s", format);
        g_free(ctl_run_ok(&fx->b, CTL_ARGS("export", out, path, format_arg)));
        Forest *f = NULL;
        g_autofree char *error = NULL;
        if (snapshot_read_path(path, &f, &error) < 0)
                g_error("reading the %s export: %s", format, error ? error : "?");
        *ret_path = g_steal_pointer(&path);
        return f;
}

static void remove_export(char *path) {
        g_autofree char *dir = g_path_get_dirname(path);
        unlink(path);
        rmdir(dir);
        g_free(path);
}

/* A snapshot records each process's unit, user unit and machine, in both formats (version 2), and
 * show --file lists them. */
static void test_snapshot(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        static const char *const formats[] = { "json", "sqlite" };
        for (size_t k = 0; k < G_N_ELEMENTS(formats); k++) {
                for (size_t i = 0; i < 3; i++) {
                        char *path = NULL;
                        _cleanup_(forest_freep) Forest *f = snapshot_of(fx, i, formats[k], &path);
                        const Process *p = forest_find_process(f, fx->children[i].pid);
                        g_assert_nonnull(p);
                        if (i == 0) {
                                g_assert_cmpstr(p->unit, ==, fx->unit);
                                g_assert_null(p->user_unit);
                                g_assert_null(p->machine);
                                g_autofree char *file_arg = g_strdup_printf("--file=%s", path);
                                g_autofree char *show = ctl_run_ok(&fx->b, CTL_ARGS("show", file_arg));
                                g_autofree char *line = g_strdup_printf("             %s: 1 process\n", fx->unit);
                                if (!strstr(show, "      Units: 1\n") || !strstr(show, line))
                                        g_error("show %s lacks the unit:\n%s", file_arg, show);
                                /* tree and graph of the file by the units it records */
                                g_autofree char *unit_arg = g_strdup_printf("--unit=%s", fx->unit);
                                g_autofree char *pid = g_strdup_printf("[%d]", (int) fx->children[i].pid);
                                g_autofree char *tree = ctl_run_ok(&fx->b, CTL_ARGS("tree", file_arg, unit_arg));
                                g_autofree char *other = ctl_run_ok(&fx->b, CTL_ARGS("tree", file_arg, "--unit=none-such.service"));
                                if (!strstr(tree, pid) || strstr(other, pid))
                                        g_error("tree %s %s should list %s, and not for another unit:\n%s\n--\n%s", file_arg,
                                                unit_arg, pid, tree, other);
                                g_autofree char *graph = ctl_run_ok(&fx->b, CTL_ARGS("graph", file_arg));
                                g_autofree char *label = g_strdup_printf("label=\"%s\"", fx->unit);
                                if (!strstr(graph, label))
                                        g_error("graph %s draws no cluster of %s:\n%s", file_arg, fx->unit, graph);
                        } else if (i == 1) {
                                g_assert_cmpstr(p->unit, ==, "user@4242.service");
                                g_assert_cmpstr(p->user_unit, ==, fx->user_unit);
                                g_assert_null(p->machine);
                        } else {
                                g_assert_cmpstr(p->unit, ==, fx->machine_scope);
                                g_assert_cmpstr(p->machine, ==, fx->machine);
                                /* imported back, stored and exported again: the units stay */
                                g_autofree char *id = ctl_run_ok(&fx->b, CTL_ARGS("import", path));
                                g_strstrip(id);
                                g_autofree char *again = g_strdup_printf("%s.again.json", path);
                                g_free(ctl_run_ok(&fx->b, CTL_ARGS("export", id, again)));
                                _cleanup_(forest_freep) Forest *g = NULL;
                                g_assert_cmpint(snapshot_read_path(again, &g, NULL), ==, 0);
                                const Process *q = forest_find_process(g, fx->children[i].pid);
                                g_assert_nonnull(q);
                                g_assert_cmpstr(q->unit, ==, fx->machine_scope);
                                g_assert_cmpstr(q->machine, ==, fx->machine);
                                unlink(again);
                        }
                        remove_export(path);
                }
        }
}

/* The key a snapshot keeps units by: the path of /proc/PID/cgroup's "0::" line, first or last,
 * as the walk of the hierarchy names the cgroup; a text without one stays whole. */
static void test_cgroup_text_key(void) {
        static const struct {
                const char *text, *key;
        } cases[] = {
                { "0::/system.slice/sshd.service\n", "/system.slice/sshd.service" },
                { "0::/\n", "/" },
                { "9:name=systemd:/user.slice\n1:cpu:/\n0::/user.slice/user-1000.slice/session-2.scope\n",
                  "/user.slice/user-1000.slice/session-2.scope" },
                { "2:pids:/\n1:name=systemd:/\n", "2:pids:/\n1:name=systemd:/\n" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *text = g_strdup(cases[i].text);
                cgroup_text_key(text);
                g_assert_cmpstr(text, ==, cases[i].key);
        }
}

#define MANY 300 /* over the number of processes from which a snapshot walks the cgroups at once */

/* The leader of MANY processes: in the fixture's unit once it is told to go on, it forks MANY - 1
 * children, which inherit its cgroup and pause without filters (a snapshot of a subtree has its
 * processes without filters too), then installs a filter. */
static pid_t many_start(Fixture *fx, pid_t *children) {
        int ready[2], go[2];
        g_assert_cmpint(pipe(ready), ==, 0);
        g_assert_cmpint(pipe(go), ==, 0);
        pid_t leader = fork();
        g_assert_cmpint(leader, >=, 0);
        if (leader == 0) {
                char c;
                close(ready[0]);
                close(go[1]);
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || read(go[0], &c, 1) != 1)
                        _exit(1);
                static const int none[] = { __NR_acct, -1 };
                for (int i = 1; i < MANY; i++) {
                        pid_t pid = fork();
                        if (pid == 0) {
                                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                                        _exit(1);
                                for (;;)
                                        pause();
                        }
                        if (pid < 0 || write(ready[1], &pid, sizeof(pid)) != sizeof(pid))
                                _exit(1);
                }
                child_run(none, ready[1]); /* the leader's filter, and ready */
        }
        close(ready[1]);
        close(go[0]);
        move_into(fx, fx->cgroups[0], leader);
        g_assert_cmpint(write(go[1], "x", 1), ==, 1);
        close(go[1]);
        for (int i = 1; i < MANY; i++)
                g_assert_cmpint(read(ready[0], &children[i - 1], sizeof(pid_t)), ==, sizeof(pid_t));
        char c;
        g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        close(ready[0]);
        return leader;
}

/* A snapshot of that many processes takes their cgroups from one walk of the hierarchy: each is in
 * its unit, and the one moved to the container's scope in that. */
static void test_snapshot_many(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        pid_t children[MANY - 1];
        pid_t leader = many_start(fx, children);
        pid_t moved = children[MANY / 2];
        move_into(fx, fx->cgroups[2], moved);
        g_autofree char *root = g_strdup_printf("%d", leader), *dir = g_dir_make_tmp("sectree-units-XXXXXX", NULL);
        g_autofree char *id = ctl_run_ok(&fx->b, CTL_ARGS("snapshot", root));
        g_strstrip(id);
        g_autofree char *path = g_strdup_printf("%s/many.json", dir);
        g_free(ctl_run_ok(&fx->b, CTL_ARGS("export", id, path)));
        _cleanup_(forest_freep) Forest *f = NULL;
        g_assert_cmpint(snapshot_read_path(path, &f, NULL), ==, 0);
        g_assert_cmpuint(f->n_processes, >=, MANY);
        size_t in_unit = 0;
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (p->pid == moved) {
                        g_assert_cmpstr(p->unit, ==, fx->machine_scope);
                        g_assert_cmpstr(p->machine, ==, fx->machine);
                } else if (!streq_ptr(p->unit, fx->unit))
                        g_error("process %d of the snapshot: unit %s, not %s", (int) p->pid, p->unit ?: "(none)", fx->unit);
                else
                        in_unit++;
        }
        g_assert_cmpuint(in_unit, ==, f->n_processes - 1);
        unlink(path);
        rmdir(dir);
        g_autofree char *root_procs = g_build_filename(fx->root, "cgroup.procs", NULL);
        g_autofree char *text = g_strdup_printf("%d\n", moved);
        (void) g_file_set_contents(root_procs, text, -1, NULL);
        kill(leader, SIGKILL); /* its children die with it */
        waitpid(leader, NULL, 0);
        for (int i = 0; i < MANY - 1; i++)
                while (kill(children[i], 0) == 0)
                        g_usleep(1000);
}

/* The tasks of who-can's JSON chains, each checked to be process only's with that unit. */
static size_t who_tasks(json_t *doc, pid_t only, const char *unit) {
        size_t n = 0, i, j;
        json_t *ch, *t;
        json_array_foreach(json_object_get(doc, "chains"), i, ch)
                json_array_foreach(json_object_get(ch, "tasks"), j, t) {
                        g_assert_cmpint(json_integer_value(json_object_get(t, "pid")), ==, only);
                        g_assert_cmpstr(json_string_value(json_object_get(t, "unit")), ==, unit);
                        n++;
                }
        return n;
}

/* who-can shows each task's unit and keeps those of --unit; audit --unit audits the unit's chains
 * and names their units; both live and on a whole-machine snapshot's file. */
static void test_who_can_audit(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *unit_arg = g_strdup_printf("--unit=%s", fx->unit);
        g_autofree char *id = ctl_run_ok(&fx->b, CTL_ARGS("snapshot"));
        g_strstrip(id);
        g_autofree char *path = g_build_filename(fx->b.dir, "machine.json", NULL), *file_arg = g_strdup_printf("--file=%s", path);
        g_free(ctl_run_ok(&fx->b, CTL_ARGS("export", id, path)));

        for (int file = 0; file < 2; file++) {
                const char *src = file ? file_arg : "--no-pager";
                /* mount: the unit's task may (its filter denies ptrace and bpf), with its unit */
                json_t *doc = ctl_run_json(&fx->b, CTL_ARGS("--json", src, unit_arg, "who-can", "mount"));
                g_assert_cmpuint(who_tasks(doc, fx->children[0].pid, fx->unit), ==, 1);
                json_decref(doc);
                /* ptrace: nobody of the unit; without --unit the user unit's task may, with its units */
                doc = ctl_run_json(&fx->b, CTL_ARGS("--json", src, unit_arg, "who-can", "ptrace"));
                g_assert_cmpuint(json_array_size(json_object_get(doc, "chains")), ==, 0);
                json_decref(doc);
                g_autofree char *user_arg = g_strdup_printf("--unit=%s", fx->user_unit);
                doc = ctl_run_json(&fx->b, CTL_ARGS("--json", src, user_arg, "who-can", "ptrace"));
                g_assert_cmpuint(who_tasks(doc, fx->children[1].pid, "user@4242.service"), ==, 1);
                json_decref(doc);
                g_autofree char *text = ctl_run_ok(&fx->b, CTL_ARGS(src, unit_arg, "who-can", "mount"));
                if (!strstr(text, "UNIT") || !strstr(text, fx->unit))
                        g_error("who-can %s %s lacks the unit:\n%s", src, unit_arg, text);

                /* audit: the unit's one chain, its task and unit */
                g_autofree char *out = NULL;
                g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("--json", src, unit_arg, "audit", "--severity=info"), &out,
                                        NULL), ==, 1);
                doc = json_loads(out, 0, NULL);
                json_t *chains = json_object_get(doc, "chains");
                g_assert_cmpuint(json_array_size(chains), ==, 1);
                json_t *ch = json_array_get(chains, 0);
                g_assert_cmpuint(json_array_size(json_object_get(ch, "tasks")), ==, 1);
                g_assert_cmpint(json_integer_value(json_array_get(json_object_get(ch, "tasks"), 0)), ==, fx->children[0].pid);
                g_assert_cmpuint(json_array_size(json_object_get(ch, "units")), ==, 1);
                g_assert_cmpstr(json_string_value(json_array_get(json_object_get(ch, "units"), 0)), ==, fx->unit);
                g_assert_cmpuint(json_array_size(json_object_get(ch, "findings")), >, 0);
                json_decref(doc);
                g_autofree char *audit_text = NULL;
                g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS(src, unit_arg, "audit", "--severity=info"), &audit_text,
                                        NULL), ==, 1);
                g_autofree char *tail = g_strdup_printf(", task %d; unit %s:\n", fx->children[0].pid, fx->unit);
                if (!strstr(audit_text, tail))
                        g_error("audit %s %s:\n%s", src, unit_arg, audit_text);
        }
        unlink(path);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/units/scope-names", test_scope_names);
        g_test_add_func("/units/cgroup-text-key", test_cgroup_text_key);
        g_test_add("/units/list-process-units", Fixture, NULL, fixture_setup, test_list_process_units, fixture_teardown);
        g_test_add("/units/ps", Fixture, NULL, fixture_setup, test_ps, fixture_teardown);
        g_test_add("/units/tree", Fixture, NULL, fixture_setup, test_tree, fixture_teardown);
        g_test_add("/units/units", Fixture, NULL, fixture_setup, test_units, fixture_teardown);
        g_test_add("/units/who-can-unit-total", Fixture, NULL, fixture_setup, test_who_can_unit_total, fixture_teardown);
        g_test_add("/units/units-unconfined", Fixture, NULL, fixture_setup, test_units_unconfined, fixture_teardown);
        g_test_add("/units/units-churn", Fixture, NULL, fixture_setup, test_units_churn, fixture_teardown);
        g_test_add("/units/snapshot", Fixture, NULL, fixture_setup, test_snapshot, fixture_teardown);
        g_test_add("/units/snapshot-many", Fixture, NULL, fixture_setup, test_snapshot_many, fixture_teardown);
        g_test_add("/units/who-can-audit", Fixture, NULL, fixture_setup, test_who_can_audit, fixture_teardown);
        return g_test_run();
}
