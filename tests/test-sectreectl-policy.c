/* test-sectreectl-policy.c: `policy`, `who-can` and `policy-diff` against the real sectreed on a
 * private bus, with scenario tasks and real bwrap and firejail sandboxes, live and on a snapshot
 * file; what the client prints is held to lib/'s decisions of the chains the daemon serves, and
 * its OCI profiles are loaded through libseccomp and compared with the chains */
#include <jansson.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "ctl-run.h"
#include "policy/policy-baseline.h"
#include "policy-check.h"
#include "policy-filters.h"
#include "policy/policy-format.h"
#include "policy/policy-summary.h"
#include "tests-util.h"

#define WAIT_MS 10000

typedef struct Fixture {
        bool ok;
        BusFixture b;
        sd_bus *bus;
        Scenario *s;
        TestSandbox bwrap, firejail;
        ScenarioTask allow, traceme, twin1, twin1t, twin2, strict, notify, container;
        TestProg container_prog;
        char pid[8][16]; /* the tasks' tids as strings, by the indexes below */
} Fixture;

enum { T_ALLOW, T_TRACEME, T_TWIN1, T_STRICT, T_NOTIFY, T_CONTAINER, T_BWRAP, T_FIREJAIL };

static pid_t tid_of(const Fixture *fx, ScenarioTask t) {
        return scenario_task(fx->s, t)->tid;
}

static ScenarioTask fork_install(Scenario *s, const struct sock_filter *insns, size_t n, unsigned flags) {
        ScenarioTask t = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(t, >=, 0);
        g_assert_cmpint(scenario_install(s, t, insns, n, flags), >=, 0);
        return t;
}

static void build_scenario(Fixture *fx) {
        struct sock_filter notify[8];
        Scenario *s;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        fx->s = s;
        fx->allow = fork_install(s, tests_prog_allow, ELEMENTSOF(tests_prog_allow), 0);
        fx->traceme = fork_install(s, tests_prog_traceme_only, ELEMENTSOF(tests_prog_traceme_only), 0);
        /* two processes with byte-identical chains, one with two threads */
        fx->twin1 = scenario_fork(s, scenario_root(s));
        fx->twin1t = scenario_thread(s, fx->twin1);
        g_assert_cmpint(scenario_install(s, fx->twin1, tests_prog_no_ptrace, ELEMENTSOF(tests_prog_no_ptrace),
                                         SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        fx->twin2 = fork_install(s, tests_prog_no_ptrace, ELEMENTSOF(tests_prog_no_ptrace), 0);
        fx->strict = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_strict(s, fx->strict), ==, 0);
        size_t n = tests_filter_notify(notify, SYS_acct);
        fx->notify = fork_install(s, notify, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        fx->container_prog = tests_prog_container_profile();
        fx->container = fork_install(s, fx->container_prog.insns, fx->container_prog.len, 0);
}

/* Does the daemon list every task of the test? */
static bool tasks_listed(void *userdata) {
        Fixture *fx = userdata;
        g_autofree char *out = NULL;
        if (ctl_run(&fx->b, false, CTL_ARGS("--json", "ps"), &out, NULL) != 0)
                return false;
        json_t *doc = tests_json_loads_u64(out);
        size_t found = 0, i;
        const json_t *t;
        json_array_foreach(json_object_get(doc, "tasks"), i, t)
                for (size_t k = 0; k < ELEMENTSOF(fx->pid); k++)
                        found += json_integer_value(json_object_get(t, "tid")) == atoi(fx->pid[k]);
        json_decref(doc);
        return found == ELEMENTSOF(fx->pid);
}

static void fixture_setup(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) {};
        if (!tests_require_root())
                return;
        tests_ensure_tracefs();
        build_scenario(fx);
        tests_sandbox_start_bwrap(&fx->bwrap);
        tests_sandbox_start_firejail(&fx->firejail);
        const pid_t tids[] = { tid_of(fx, fx->allow), tid_of(fx, fx->traceme), tid_of(fx, fx->twin1), tid_of(fx, fx->strict),
                               tid_of(fx, fx->notify), tid_of(fx, fx->container), fx->bwrap.sleeper, fx->firejail.sleeper };
        for (size_t i = 0; i < ELEMENTSOF(tids); i++)
                snprintf(fx->pid[i], sizeof(fx->pid[i]), "%d", (int) tids[i]);
        bus_fixture_start_bus(&fx->b);
        bus_fixture_start_daemon(&fx->b, NULL, NULL, 30);
        fx->bus = bus_client_open();
        if (!tests_wait_for(tasks_listed, fx, WAIT_MS))
                g_error("the daemon does not list the test's tasks within %d ms", WAIT_MS);
        fx->ok = true;
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        fx->bus = sd_bus_flush_close_unref(fx->bus);
        tests_sandbox_stop(&fx->bwrap);
        tests_sandbox_stop(&fx->firejail);
        scenario_free(fx->s);
        test_prog_clear(&fx->container_prog);
        if (fx->b.dir)
                bus_fixture_stop(&fx->b);
}

/* ---- the reference: the daemon's chain of a task, decided with lib/ ---- */

typedef struct DaemonChain {
        TestProg progs[16]; /* oldest first */
        const TestProg *p[16];
        size_t n;
        TestChain chain;
} DaemonChain;

static void daemon_filter(sd_bus *bus, uint64_t id, TestProg *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE, "GetFilter", &error, &reply, "t",
                               id) < 0)
                g_error("GetFilter %" PRIu64 ": %s", id, error.message);
        g_assert_cmpint(sd_bus_message_skip(reply, "tusasus"), >=, 0);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(qyyu)"), >, 0);
        GArray *insns = g_array_new(false, false, sizeof(struct sock_filter));
        struct sock_filter f;
        while (sd_bus_message_read(reply, "(qyyu)", &f.code, &f.jt, &f.jf, &f.k) > 0)
                g_array_append_val(insns, f);
        *ret = test_prog_copy("daemon's", (struct sock_filter *) insns->data, insns->len);
        g_array_unref(insns);
}

static void daemon_chain(Fixture *fx, const char *tid, DaemonChain *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const uint64_t *ids;
        size_t size;
        *ret = (DaemonChain) {};
        if (sd_bus_call_method(fx->bus, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE, "GetTaskChain", &error, &reply,
                               "u", (uint32_t) atoi(tid)) < 0)
                g_error("GetTaskChain %s: %s", tid, error.message);
        g_assert_cmpint(sd_bus_message_read_array(reply, 't', (const void **) &ids, &size), >=, 0);
        ret->n = size / sizeof(uint64_t);
        g_assert_cmpuint(ret->n, <=, ELEMENTSOF(ret->progs));
        for (size_t i = 0; i < ret->n; i++) { /* ids newest first; progs oldest first */
                daemon_filter(fx->bus, ids[i], &ret->progs[ret->n - 1 - i]);
                ret->p[ret->n - 1 - i] = &ret->progs[ret->n - 1 - i];
        }
        test_chain_init(&ret->chain, tid, ret->p, ret->n);
}

static void daemon_chain_done(DaemonChain *c) {
        for (size_t i = 0; i < c->n; i++)
                test_prog_clear(&c->progs[i]);
}

/* "ACTION if CONDITION; ..." of a syscall's JSON, as policy_decision_string() writes it. */
static char *json_decision_string(const json_t *syscall) {
        GString *s = g_string_new(NULL);
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(syscall, "cases"), i, c) {
                const json_t *cond = json_object_get(c, "condition");
                g_string_append_printf(s, "%s%s", i ? "; " : "", json_string_value(json_object_get(c, "action")));
                if (json_is_string(cond))
                        g_string_append_printf(s, " if %s", json_string_value(cond));
        }
        return g_string_free(s, FALSE);
}

/* `policy --json TID` says for every syscall of every architecture what lib/ says of the chain
 * the daemon serves. */
static void assert_policy_json(Fixture *fx, const char *tid, const json_t *doc, const ChainProgram *progs, size_t n) {
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        g_assert_cmpint(policy_summarize(progs, n, NULL, &s), ==, 0);
        const json_t *arches = json_object_get(doc, "architectures");
        g_assert_cmpuint(json_array_size(arches), ==, s->n_arches);
        for (size_t a = 0; a < s->n_arches; a++) {
                const json_t *ja = json_array_get(arches, a), *syscalls = json_object_get(ja, "syscalls");
                g_assert_cmpstr(json_string_value(json_object_get(ja, "architecture")), ==, s->arches[a].arch->name);
                g_assert_cmpuint(json_array_size(syscalls), ==, s->arches[a].n_entries);
                for (size_t i = 0; i < s->arches[a].n_entries; i++) {
                        Arena arena = {};
                        const json_t *x = json_array_get(syscalls, i);
                        _cleanup_free_ char *want = policy_decision_string(&arena, s->arches[a].entries[i].decision);
                        g_autofree char *got = json_decision_string(x);
                        arena_done(&arena);
                        g_assert_cmpstr(json_string_value(json_object_get(x, "name")), ==,
                                        s->arches[a].entries[i].syscall->name);
                        if (!streq(want, got))
                                g_error("policy %s, %s on %s: sectreectl says %s, lib/ %s", tid,
                                        s->arches[a].entries[i].syscall->name, s->arches[a].arch->name, got, want);
                }
        }
}

/* ---- policy ---- */

static void test_policy(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        const int targets[] = { T_ALLOW, T_TRACEME, T_TWIN1, T_NOTIFY, T_CONTAINER, T_BWRAP, T_FIREJAIL };
        for (size_t i = 0; i < ELEMENTSOF(targets); i++) {
                const char *tid = fx->pid[targets[i]];
                DaemonChain dc;
                daemon_chain(fx, tid, &dc);
                g_assert_cmpuint(dc.n, >, 0);
                json_t *doc = ctl_run_json(&fx->b, CTL_ARGS("policy", tid));
                g_assert_cmpstr(json_string_value(json_object_get(doc, "mode")), ==, "filter");
                g_assert_cmpuint(json_array_size(json_object_get(doc, "filters")), ==, dc.n);
                assert_policy_json(fx, tid, doc, dc.chain.progs, dc.chain.n);
                json_decref(doc);
                daemon_chain_done(&dc);
        }

        /* the table: groups, "otherwise", the task line */
        g_autofree char *out = ctl_run_ok(&fx->b, CTL_ARGS("policy", fx->pid[T_CONTAINER]));
        g_assert_nonnull(strstr(out, "runs under 1 filter"));
        g_assert_nonnull(strstr(out, "Always allowed ("));
        g_assert_nonnull(strstr(out, "Always denied ("));
        g_assert_nonnull(strstr(out, "Depending on the arguments ("));
        g_assert_true(g_regex_match_simple("\\npersonality +ERRNO\\(38\\) +arg0 not in \\{0, 8, 0x20000, 0x20008, "
                                           "0xffffffff\\}\\n +ALLOW +otherwise\\n", out, 0, 0));
        g_assert_true(g_regex_match_simple("\\nkexec_load +ERRNO\\(1\\)\\n", out, 0, 0));
        g_assert_nonnull(strstr(out, "Architecture x86:"));
        g_autofree char *bare = ctl_run_ok(&fx->b, CTL_ARGS("--no-legend", "policy", fx->pid[T_CONTAINER]));
        g_assert_null(strstr(bare, "SYSCALL"));
        g_assert_null(strstr(bare, "Always allowed"));

        /* strict mode, and a task without filters */
        json_t *doc = ctl_run_json(&fx->b, CTL_ARGS("policy", "--arch=x86_64", fx->pid[T_STRICT]));
        g_assert_cmpstr(json_string_value(json_object_get(doc, "mode")), ==, "strict");
        const json_t *syscalls = json_object_get(json_array_get(json_object_get(doc, "architectures"), 0), "syscalls");
        size_t i;
        const json_t *x;
        json_array_foreach(syscalls, i, x) {
                const char *name = json_string_value(json_object_get(x, "name"));
                struct seccomp_data d = { .nr = (int) json_integer_value(json_object_get(x, "nr")), .arch = AUDIT_ARCH_X86_64 };
                bool allowed = streq(name, "read") || streq(name, "write") || streq(name, "exit") || streq(name, "rt_sigreturn");
                /* and what this kernel runs without seccomp (uretprobe, uprobe) */
                allowed = allowed || ((streq(name, "uretprobe") || streq(name, "uprobe")) && seccomp_kernel_exempts(0, &d));
                g_assert_cmpstr(json_string_value(json_object_get(x, "action")), ==, allowed ? "ALLOW" : "KILL_THREAD");
        }
        json_decref(doc);
        /* check: the strict task's uprobe, as the running kernel treats it */
        struct seccomp_data up = { .nr = 336, .arch = AUDIT_ARCH_X86_64 };
        g_autofree char *up_check = ctl_run_ok(&fx->b, CTL_ARGS("check", "--arch=x86_64", fx->pid[T_STRICT], "uprobe"));
        g_assert_cmpint(strstr(up_check, "the kernel runs this call without seccomp (its uprobe exception)") != NULL, ==,
                        seccomp_kernel_exempts(0, &up));
        g_autofree char *root = g_strdup_printf("%d", (int) scenario_root_pid(fx->s));
        g_autofree char *unfiltered = ctl_run_ok(&fx->b, CTL_ARGS("policy", "--arch=x86_64", root));
        g_assert_nonnull(strstr(unfiltered, "runs under no filter"));
        g_assert_nonnull(strstr(unfiltered, "Architecture x86_64 (native): ALLOW for every system call."));
}

/* ---- policy --format=oci ---- */

static void test_policy_oci(Fixture *fx, gconstpointer data) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        if (!fx->ok)
                return;
        /* exact: loaded through libseccomp as runc does, it decides as the chain */
        DaemonChain dc;
        daemon_chain(fx, fx->pid[T_CONTAINER], &dc);
        g_autofree char *profile = ctl_run_ok(&fx->b, CTL_ARGS("policy", "--format=oci", fx->pid[T_CONTAINER]));
        g_assert_cmpuint(policy_check_profile(&dc.chain, profile, NULL, r), >, 10000);
        daemon_chain_done(&dc);

        /* not exact: refused with the reasons, unless --approximate */
        g_autofree char *err = ctl_run_fails(&fx->b, 1, "sectreectl: The policy of task ",
                                             CTL_ARGS("policy", "--format=oci", fx->pid[T_BWRAP]));
        g_assert_nonnull(strstr(err, "cannot be written as an OCI profile exactly"));
        g_assert_nonnull(strstr(err, "\n  socket: on x86 the profile gives"));
        g_autofree char *out = NULL, *warnings = NULL;
        g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("policy", "--format=oci", "--approximate", fx->pid[T_BWRAP]), &out,
                                &warnings), ==, 0);
        g_assert_true(g_str_has_prefix(warnings, "sectreectl: Not exact: "));
        json_t *p = tests_json_loads_u64(out);
        g_assert_cmpstr(json_string_value(json_object_get(p, "defaultAction")), ==, "SCMP_ACT_ALLOW");
        json_decref(p);
}

/* ---- who-can ---- */

static const json_t *who_chain_of(const json_t *doc, const char *tid) {
        size_t i, j;
        const json_t *c, *t;
        json_array_foreach(json_object_get(doc, "chains"), i, c)
                json_array_foreach(json_object_get(c, "tasks"), j, t)
                        if (json_integer_value(json_object_get(t, "tid")) == atoi(tid))
                                return c;
        return NULL;
}

static void test_who_can(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        json_t *doc = ctl_run_json(&fx->b, CTL_ARGS("who-can", "ptrace"));
        const json_t *c = who_chain_of(doc, fx->pid[T_ALLOW]);
        g_assert_nonnull(c);
        g_assert_true(json_is_true(json_object_get(c, "always")));
        c = who_chain_of(doc, fx->pid[T_TRACEME]);
        g_assert_nonnull(c);
        g_assert_false(json_is_true(json_object_get(c, "always")));
        g_assert_cmpstr(json_string_value(json_object_get(json_array_get(json_object_get(c, "cases"), 0), "condition")), ==,
                        "arg0 == 0");
        /* the container profile allows ptrace (it leaves it to capabilities) */
        g_assert_nonnull(who_chain_of(doc, fx->pid[T_CONTAINER]));
        /* the sandboxes, the twins and strict mode may not: they are counted among the others */
        const int denied[] = { T_TWIN1, T_STRICT, T_BWRAP, T_FIREJAIL };
        for (size_t i = 0; i < ELEMENTSOF(denied); i++)
                g_assert_null(who_chain_of(doc, fx->pid[denied[i]]));
        g_assert_cmpuint(json_array_size(json_object_get(doc, "others")), >, 0);
        /* decided once per byte-distinct chain: the twins' two chains count once */
        size_t chains = json_array_size(json_object_get(doc, "chains"));
        size_t others = 0, i;
        const json_t *o;
        json_array_foreach(json_object_get(doc, "others"), i, o)
                others += (size_t) json_integer_value(json_object_get(o, "chains"));
        g_assert_cmpuint((size_t) json_integer_value(json_object_get(doc, "chains_decided")), <, chains + others);
        json_decref(doc);

        /* with the argument given: PTRACE_ATTACH is killed under the TRACEME-only chain */
        doc = ctl_run_json(&fx->b, CTL_ARGS("who-can", "ptrace", "16"));
        g_assert_nonnull(who_chain_of(doc, fx->pid[T_ALLOW]));
        g_assert_null(who_chain_of(doc, fx->pid[T_TRACEME]));
        json_decref(doc);

        /* another action: who hands acct to a supervisor; and the twins grouped by chain */
        doc = ctl_run_json(&fx->b, CTL_ARGS("who-can", "--action=USER_NOTIF", "acct"));
        g_assert_nonnull(who_chain_of(doc, fx->pid[T_NOTIFY]));
        g_assert_null(who_chain_of(doc, fx->pid[T_ALLOW]));
        json_decref(doc);
        doc = ctl_run_json(&fx->b, CTL_ARGS("who-can", "--action=ERRNO(1)", "ptrace"));
        c = who_chain_of(doc, fx->pid[T_TWIN1]);
        g_assert_nonnull(c);
        g_assert_cmpuint(json_array_size(json_object_get(c, "tasks")), ==, 2); /* the two threads of twin1 */
        g_assert_nonnull(who_chain_of(doc, fx->pid[T_BWRAP]));
        g_assert_nonnull(who_chain_of(doc, fx->pid[T_FIREJAIL]));
        json_decref(doc);

        /* the text */
        g_autofree char *out = ctl_run_ok(&fx->b, CTL_ARGS("who-can", "ptrace"));
        g_assert_true(g_str_has_prefix(out, "ptrace (x86_64 101): "));
        g_assert_nonnull(strstr(out, "): always\n"));
        g_assert_nonnull(strstr(out, "): if arg0 == 0\n"));
        /* the daemon counts the tasks without filters (this test itself is one) */
        g_assert_nonnull(strstr(out, "\nunfiltered (may call anything): "));
}

/* ---- snapshot files, policy-diff ---- */

static void test_files_and_diff(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *id = ctl_run_ok(&fx->b, CTL_ARGS("snapshot"));
        g_autofree char *file = g_build_filename(fx->b.dir, "policy.sectree", NULL);
        g_strstrip(id);
        g_free(ctl_run_ok(&fx->b, CTL_ARGS("export", id, file)));

        /* the file answers as the live daemon did */
        json_t *live = ctl_run_json(&fx->b, CTL_ARGS("policy", fx->pid[T_FIREJAIL]));
        json_t *offline = ctl_run_json(&fx->b, CTL_ARGS("policy", "--file", file, fx->pid[T_FIREJAIL]));
        json_object_del(live, "filters"); /* ids are the snapshot's own */
        json_object_del(offline, "filters");
        g_assert_true(json_equal(live, offline));
        json_decref(live);
        json_decref(offline);
        json_t *who = ctl_run_json(&fx->b, CTL_ARGS("who-can", "--file", file, "ptrace"));
        g_assert_nonnull(who_chain_of(who, fx->pid[T_ALLOW]));
        g_assert_null(who_chain_of(who, fx->pid[T_BWRAP]));
        json_decref(who);

        /* policy-diff: a task against itself in the file, and two sandboxes */
        g_autofree char *same_operand = g_strdup_printf("%s:%s", file, fx->pid[T_BWRAP]);
        g_autofree char *same = ctl_run_ok(&fx->b, CTL_ARGS("policy-diff", fx->pid[T_BWRAP], same_operand));
        g_assert_nonnull(strstr(same, "0 system calls decided differently."));
        g_autofree char *out = NULL;
        g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("policy-diff", fx->pid[T_BWRAP], fx->pid[T_FIREJAIL]), &out, NULL),
                        ==, 1);
        g_assert_nonnull(strstr(out, "\nclone\n  A: ERRNO(1) if arg0 & 0x10000000 == 0x10000000; ALLOW if "));
        const char *clone_eg = strstr(strstr(out, "\nclone\n  A: "), "  e.g. nr 56, arg0 0x20000: ");
        g_assert_nonnull(clone_eg);
        g_assert_true(g_str_has_prefix(strchr(clone_eg, ':'), ": A gives ALLOW, B gives ERRNO(1)\n"));
        /* a firejail task against itself: nothing differs (its setns rule overlaps, and is the same) */
        g_autofree char *fj = ctl_run_ok(&fx->b, CTL_ARGS("policy-diff", fx->pid[T_FIREJAIL], fx->pid[T_FIREJAIL]));
        g_assert_nonnull(strstr(fj, "0 system calls decided differently."));
        json_t *diff = NULL;
        g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("--json", "policy-diff", fx->pid[T_ALLOW], fx->pid[T_TWIN1]), &out,
                                NULL), ==, 1);
        diff = tests_json_loads_u64(out);
        const json_t *d = json_object_get(diff, "differences");
        g_assert_cmpuint(json_array_size(d), >=, 1);
        g_assert_cmpstr(json_string_value(json_object_get(json_array_get(d, 0), "syscall")), ==, "ptrace");
        json_decref(diff);
}

/* ---- audit ---- */

/* The finding of rule (and syscall) among a chain's, or NULL. */
static const json_t *audit_finding(const json_t *chain, const char *rule, const char *syscall) {
        size_t i;
        const json_t *f;
        json_array_foreach(json_object_get(chain, "findings"), i, f)
                if (streq(json_string_value(json_object_get(f, "rule")), rule) &&
                    (!syscall || streq_ptr(json_string_value(json_object_get(f, "syscall")), syscall)))
                        return f;
        return NULL;
}

static json_t *audit_json(Fixture *fx, const char *tid, const char *severity, int status) {
        g_autofree char *out = NULL;
        g_autofree char *sev = g_strdup_printf("--severity=%s", severity);
        g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("--json", "audit", sev, tid), &out, NULL), ==, status);
        json_t *doc = tests_json_loads_u64(out);
        g_assert_cmpuint(json_array_size(json_object_get(doc, "chains")), ==, 1);
        return doc;
}

/* check takes the numbers who-can takes (x32's and x86's up to 0xffffffff) and decides them as
 * policy does; policy takes FILE:TID as policy-diff does, the same as --file=FILE TID. */
static void test_operands(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        const char *tid = fx->pid[T_ALLOW];
        json_auto_t *who = ctl_run_json(&fx->b, CTL_ARGS("who-can", "--arch=x32", "0xffffffff"));
        g_assert_cmpint(json_integer_value(json_object_get(who, "nr")), ==, 0xffffffff);
        json_auto_t *chk = ctl_run_json(&fx->b, CTL_ARGS("check", "--arch=x32", tid, "0xffffffff"));
        g_assert_cmpint((uint32_t) json_integer_value(json_object_get(chk, "nr")), ==, 0xffffffffu);
        g_assert_cmpint(json_integer_value(json_object_get(chk, "arch")), ==, AUDIT_ARCH_X86_64);
        g_assert_cmpstr(json_string_value(json_object_get(chk, "action")), ==, "ALLOW");
        json_auto_t *x86 = ctl_run_json(&fx->b, CTL_ARGS("check", "--arch=x86", tid, "4294967295"));
        g_assert_cmpint(json_integer_value(json_object_get(x86, "arch")), ==, AUDIT_ARCH_I386);

        g_autofree char *dir = g_dir_make_tmp("sectree-operand-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "root.json", NULL), *file_arg = g_strdup_printf("--file=%s", path);
        g_autofree char *root = g_strdup_printf("%d", (int) tid_of(fx, scenario_root(fx->s)));
        g_autofree char *id = ctl_run_ok(&fx->b, CTL_ARGS("snapshot", root));
        g_strstrip(id);
        g_free(ctl_run_ok(&fx->b, CTL_ARGS("export", id, path)));
        g_autofree char *operand = g_strdup_printf("%s:%s", path, fx->pid[T_TRACEME]);
        g_autofree char *by_operand = ctl_run_ok(&fx->b, CTL_ARGS("policy", "--arch=x86_64", operand));
        g_autofree char *by_option = ctl_run_ok(&fx->b, CTL_ARGS("policy", "--arch=x86_64", file_arg, fx->pid[T_TRACEME]));
        g_assert_cmpstr(by_operand, ==, by_option);
        g_assert_nonnull(strstr(by_operand, "ptrace"));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Give --file=FILE or FILE:TID, not both",
                             CTL_ARGS("policy", file_arg, operand)));
        unlink(path);
        rmdir(dir);
}

/* A task that runs under no filter is not confined at all: audit says so and exits 1 (as for a
 * finding), with "unconfined" in JSON, live and in a snapshot file; a task in strict mode is
 * confined, with nothing found. */
static void test_audit_unconfined(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *root = g_strdup_printf("%d", (int) tid_of(fx, scenario_root(fx->s)));
        g_autofree char *dir = g_dir_make_tmp("sectree-audit-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "root.json", NULL), *file_arg = g_strdup_printf("--file=%s", path);
        g_autofree char *id = ctl_run_ok(&fx->b, CTL_ARGS("snapshot", root));
        g_strstrip(id);
        g_free(ctl_run_ok(&fx->b, CTL_ARGS("export", id, path)));
        const char *const sources[] = { "--no-pager", file_arg };
        for (size_t k = 0; k < G_N_ELEMENTS(sources); k++) {
                g_autofree char *text = NULL, *out = NULL;
                g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS(sources[k], "audit", root), &text, NULL), ==, 1);
                g_autofree char *line = g_strdup_printf("Task %s: runs under no filter, not confined.\n", root);
                if (!strstr(text, line) || strstr(text, "nothing found"))
                        g_error("audit %s %s:\n%s", sources[k], root, text);
                g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("--json", sources[k], "audit", root), &out, NULL), ==, 1);
                json_auto_t *doc = tests_json_loads_u64(out);
                json_t *chain = json_array_get(json_object_get(doc, "chains"), 0);
                g_assert_cmpuint(json_array_size(json_object_get(doc, "chains")), ==, 1);
                g_assert_true(json_is_true(json_object_get(chain, "unconfined")));
                g_assert_true(json_is_null(json_object_get(chain, "head")));
        }
        json_auto_t *strict = audit_json(fx, fx->pid[T_STRICT], "info", 0);
        g_assert_true(json_is_false(json_object_get(json_array_get(json_object_get(strict, "chains"), 0), "unconfined")));
        unlink(path);
        rmdir(dir);
}

static void test_audit(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        /* ptrace denied by x86_64 number only, no architecture check: the i386 ptrace runs */
        json_t *doc = audit_json(fx, fx->pid[T_TWIN1], "high", 1);
        const json_t *chain = json_array_get(json_object_get(doc, "chains"), 0);
        g_assert_nonnull(audit_finding(chain, "no-arch-check", NULL));
        const json_t *f = audit_finding(chain, "abi-bypass", "ptrace");
        g_assert_nonnull(f);
        const json_t *w = json_object_get(f, "witness");
        g_assert_cmpint(json_integer_value(json_object_get(w, "arch")), ==, AUDIT_ARCH_I386);
        g_assert_cmpstr(json_string_value(json_object_get(w, "action")), ==, "ALLOW");
        json_decref(doc);

        /* the containers-common profile against itself: nothing beyond its baseline */
        doc = audit_json(fx, fx->pid[T_CONTAINER], "low", 1);
        chain = json_array_get(json_object_get(doc, "chains"), 0);
        g_assert_null(audit_finding(chain, "baseline", NULL));
        g_assert_null(audit_finding(chain, "abi-bypass", NULL));
        g_assert_null(audit_finding(chain, "no-arch-check", NULL));
        g_assert_nonnull(audit_finding(chain, "dangerous-allowed", "ioctl")); /* TIOCSTI */
        json_decref(doc);

        /* bwrap's and firejail's filters: what the baseline denies and they allow, and the text form */
        doc = audit_json(fx, fx->pid[T_BWRAP], "info", 1);
        chain = json_array_get(json_object_get(doc, "chains"), 0);
        g_assert_nonnull(audit_finding(chain, "baseline", NULL));
        json_decref(doc);
        doc = audit_json(fx, fx->pid[T_FIREJAIL], "info", 1);
        json_decref(doc);
        g_autofree char *text = NULL;
        g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("audit", "--severity=info", fx->pid[T_FIREJAIL]), &text, NULL), ==, 1);
        g_assert_nonnull(strstr(text, "Chain of filter "));
        g_assert_nonnull(strstr(text, "e.g. arch 0x"));

        /* bad usage, a baseline that is no profile */
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Unknown severity 'urgent'", CTL_ARGS("audit", "--severity=urgent")));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Invalid baseline", CTL_ARGS("audit", "--baseline=/dev/null", fx->pid[T_ALLOW])));

        /* the D-Bus method: the same findings for the chain without an architecture check */
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *mode, *rule, *sev, *arch, *sys, *message;
        const void *filters, *args;
        size_t n_filters, n_args;
        int has;
        uint32_t warch, wnr, action;
        bool no_arch = false, bypass = false;
        g_assert_cmpint(sd_bus_call_method(fx->bus, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE, "Audit", &error,
                                           &reply, "ua{sv}", (uint32_t) tid_of(fx, fx->twin1), 0), >=, 0);
        g_assert_cmpint(sd_bus_message_read(reply, "s", &mode), >=, 0);
        g_assert_cmpstr(mode, ==, "filter");
        g_assert_cmpint(sd_bus_message_read_array(reply, 't', &filters, &n_filters), >=, 0);
        g_assert_cmpuint(n_filters, ==, sizeof(uint64_t));
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(sssssbuuatu)"), >, 0);
        while (sd_bus_message_enter_container(reply, 'r', "sssssbuuatu") > 0) {
                g_assert_cmpint(sd_bus_message_read(reply, "sssssbuu", &rule, &sev, &arch, &sys, &message, &has, &warch,
                                                    &wnr), >=, 0);
                g_assert_cmpint(sd_bus_message_read_array(reply, 't', &args, &n_args), >=, 0);
                g_assert_cmpint(sd_bus_message_read(reply, "u", &action), >=, 0);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                no_arch = no_arch || streq(rule, "no-arch-check");
                if (streq(rule, "abi-bypass") && streq(sys, "ptrace") && streq(arch, "x86")) {
                        bypass = true;
                        g_assert_true(has);
                        g_assert_cmphex(warch, ==, AUDIT_ARCH_I386);
                        g_assert_cmphex(action, ==, SECCOMP_RET_ALLOW);
                }
        }
        g_assert_true(no_arch && bypass);

        /* every chain of the machine at once */
        g_autofree char *all = NULL, *all_err = NULL;
        int st = ctl_run(&fx->b, false, CTL_ARGS("--json", "audit", "--severity=info"), &all, &all_err);
        if (st != 1)
                g_test_message("audit: %s", all_err);
        g_assert_cmpint(st, ==, 1);
        doc = tests_json_loads_u64(all);
        g_assert_cmpuint(json_array_size(json_object_get(doc, "chains")), >=, 6);
        json_decref(doc);
}

/* Audit(tid, options) over the bus: its findings' rules and calls, or the error's name and message. */
static char **audit_call(Fixture *fx, uint32_t tid, const char *baseline, const char *option, char **ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        g_assert_cmpint(sd_bus_message_new_method_call(fx->bus, &call, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                       "Audit"), >=, 0);
        g_assert_cmpint(sd_bus_message_append(call, "u", tid), >=, 0);
        if (option)
                g_assert_cmpint(sd_bus_message_append(call, "a{sv}", 1, option, "b", 1), >=, 0);
        else if (baseline)
                g_assert_cmpint(sd_bus_message_append(call, "a{sv}", 1, "baseline", "s", baseline), >=, 0);
        else
                g_assert_cmpint(sd_bus_message_append(call, "a{sv}", 0), >=, 0);
        if (sd_bus_call(fx->bus, call, 0, &error, &reply) < 0) {
                *ret_error = g_strdup_printf("%s: %s", error.name, error.message);
                return NULL;
        }
        GPtrArray *found = g_ptr_array_new();
        const char *mode, *rule, *sev, *arch, *sys, *message;
        const void *filters, *args;
        size_t n_filters, n_args;
        int has;
        uint32_t warch, wnr, action;
        g_assert_cmpint(sd_bus_message_read(reply, "s", &mode), >=, 0);
        g_assert_cmpint(sd_bus_message_read_array(reply, 't', &filters, &n_filters), >=, 0);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(sssssbuuatu)"), >, 0);
        while (sd_bus_message_enter_container(reply, 'r', "sssssbuuatu") > 0) {
                g_assert_cmpint(sd_bus_message_read(reply, "sssssbuu", &rule, &sev, &arch, &sys, &message, &has, &warch,
                                                    &wnr), >=, 0);
                g_assert_cmpint(sd_bus_message_read_array(reply, 't', &args, &n_args), >=, 0);
                g_assert_cmpint(sd_bus_message_read(reply, "u", &action), >=, 0);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                g_ptr_array_add(found, g_strdup_printf("%s %s: %s", rule, sys, message));
        }
        g_ptr_array_add(found, NULL);
        *ret_error = NULL;
        return (char **) g_ptr_array_free(found, FALSE);
}

/* Audit() takes a baseline profile's text: the calls it denies that the chain allows are findings;
 * a text that is no profile is InvalidArgs saying what is wrong. The client passes --baseline so,
 * and a task that is not there is an error, not a silent nothing (the client asks the daemon, it
 * does not look into /proc). */
static void test_audit_bus(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        static const char profile[] = "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_X86_64\"], "
                                      "\"syscalls\": [{\"names\": [\"mount\"], \"action\": \"SCMP_ACT_ERRNO\"}]}";
        uint32_t tid = (uint32_t) tid_of(fx, fx->twin1);
        g_autofree char *error = NULL;
        g_auto(GStrv) plain = audit_call(fx, tid, NULL, NULL, &error);
        g_assert_null(error);
        for (char **f = plain; *f; f++)
                g_assert_false(g_str_has_prefix(*f, "baseline "));
        g_auto(GStrv) with = audit_call(fx, tid, profile, NULL, &error);
        g_assert_null(error);
        bool mount = false;
        for (char **f = with; *f; f++)
                mount = mount || (g_str_has_prefix(*f, "baseline ") && strstr(*f, "mount"));
        if (!mount) {
                g_autofree char *all = g_strjoinv("; ", with);
                g_error("no baseline finding for mount: %s", all);
        }

        static const struct {
                const char *text, *option, *expect;
        } bad[] = {
                { "not json", NULL, "Invalid baseline profile: " },
                { "{\"defaultAction\": \"SCMP_ACT_NOPE\"}", NULL, "Invalid baseline profile: " },
                { "[]", NULL, "Invalid baseline profile: " },
                { NULL, "frobnicate", "frobnicate" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_auto(GStrv) none = audit_call(fx, tid, bad[i].text, bad[i].option, &error);
                g_assert_null(none);
                g_assert_true(g_str_has_prefix(error, "org.freedesktop.DBus.Error.InvalidArgs: "));
                if (!strstr(error, bad[i].expect))
                        g_error("%s: \"%s\" lacks \"%s\"", bad[i].text ?: bad[i].option, error, bad[i].expect);
                g_clear_pointer(&error, g_free);
        }
        g_autofree char *huge = g_strnfill(POLICY_BASELINE_MAX_BYTES + 1, ' ');
        g_auto(GStrv) none = audit_call(fx, tid, huge, NULL, &error);
        g_assert_null(none);
        g_assert_nonnull(strstr(error, "Invalid baseline profile: 1048577 bytes, more than the limit of 1048576"));
        g_clear_pointer(&error, g_free);
        /* 1,900 rules comparing 6 arguments each, under 1 MiB: libseccomp would take hours over it,
         * and nothing stops it once started; refused before */
        g_autoptr(GString) heavy = g_string_new("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [");
        for (int i = 0; i < 1900; i++) {
                g_string_append_printf(heavy, "%s{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [", i ? ", " : "");
                for (int k = 0; k < 6; k++)
                        g_string_append_printf(heavy, "%s{\"index\": %d, \"value\": %d, \"valueTwo\": %d, \"op\": \"SCMP_CMP_MASKED_EQ\"}",
                                               k ? ", " : "", k, i * 7 + k, i * 13 | 1);
                g_string_append(heavy, "]}");
        }
        g_string_append(heavy, "]}");
        g_assert_cmpuint(heavy->len, <, POLICY_BASELINE_MAX_BYTES);
        none = audit_call(fx, tid, heavy->str, NULL, &error);
        g_assert_null(none);
        g_assert_nonnull(strstr(error, "Invalid baseline profile: syscalls[42]: the rules compare more than 256 arguments"));
        g_clear_pointer(&error, g_free);

        /* the client sends --baseline=FILE's text */
        g_autofree char *dir = g_dir_make_tmp("sectree-audit-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "profile.json", NULL), *arg = g_strdup_printf("--baseline=%s", path);
        g_assert_true(g_file_set_contents(path, profile, -1, NULL));
        g_autofree char *out = NULL;
        g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("--json", "audit", "--severity=info", arg, fx->pid[T_TWIN1]), &out,
                                NULL), ==, 1);
        json_t *doc = tests_json_loads_u64(out);
        const json_t *finding = audit_finding(json_array_get(json_object_get(doc, "chains"), 0), "baseline", NULL);
        g_assert_nonnull(finding);
        g_assert_nonnull(strstr(json_string_value(json_object_get(finding, "message")), "mount"));
        json_decref(doc);
        unlink(path);
        rmdir(dir);

        /* a task that is not there */
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: No task 4194303", CTL_ARGS("audit", "4194303")));
}

/* ---- the containers-common profile through crun ---- */

/* The cgroup layout crun 1.8 refuses: a cgroup2 hierarchy beside v1 ones (hybrid) with a controller
 * in it ("cgroups in hybrid mode not supported, drop all controllers from cgroupv2"). The
 * container needs no cgroup (--cgroup-manager=disabled, no resources): crun runs in a mount
 * namespace of its own where that hierarchy is unmounted, so it sees a v1 machine. */
#define CRUN_UNIFIED "/sys/fs/cgroup/unified"

/* config.json of a container running sleep from the host's read-only /usr, under profile (an
 * OCI linux.seccomp object), with no cgroup and no resources. */
static void crun_bundle(const char *dir, const char *profile) {
        static const char *const dirs[] = { "usr", "bin", "lib", "lib64", "sbin", "etc", "proc", "dev", "tmp" };
        g_autofree char *rootfs = g_build_filename(dir, "rootfs", NULL), *config = g_build_filename(dir, "config.json", NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
                g_autofree char *d = g_build_filename(rootfs, dirs[i], NULL);
                g_assert_cmpint(g_mkdir_with_parents(d, 0755), ==, 0);
        }
        json_error_t e;
        json_t *seccomp = json_loads(profile, 0, &e);
        if (!seccomp)
                g_error("policy --format=oci: %s", e.text);
        json_t *mounts = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:[s, s, s]}]", "destination", "/proc", "type", "proc",
                                   "source", "proc", "destination", "/dev", "type", "tmpfs", "source", "tmpfs", "options",
                                   "nosuid", "strictatime", "mode=755");
        for (size_t i = 0; i < 6; i++) {
                g_autofree char *dest = g_strdup_printf("/%s", dirs[i]);
                json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:[s, s]}", "destination", dest, "type", "bind",
                                                        "source", dest, "options", "rbind", "ro"));
        }
        json_t *doc = json_pack("{s:s, s:{s:b, s:{s:i, s:i}, s:[s, s], s:s, s:[s], s:b}, s:{s:s, s:b}, s:s, s:o, "
                                "s:{s:[{s:s}, {s:s}, {s:s}, {s:s}], s:o}}",
                                "ociVersion", "1.0.2",
                                "process", "terminal", 0, "user", "uid", 0, "gid", 0, "args", "/bin/sleep", "600",
                                "cwd", "/", "env", "PATH=/usr/bin:/bin", "noNewPrivileges", 1,
                                "root", "path", "rootfs", "readonly", 1,
                                "hostname", "sectree-crun",
                                "mounts", mounts,
                                "linux", "namespaces", "type", "pid", "type", "mount", "type", "ipc", "type", "uts",
                                "seccomp", seccomp);
        g_assert_nonnull(doc);
        g_assert_cmpint(json_dump_file(doc, config, JSON_INDENT(1)), ==, 0);
        json_decref(doc);
}

/* Run argv; its exit status, its output in *out. */
static int run_argv(const char *const *argv, char **out, char **err) {
        int status;
        g_autoptr(GError) error = NULL;
        if (!g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, out, err, &status, &error))
                g_error("%s: %s", argv[0], error->message);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

typedef struct CrunTask {
        Fixture *fx;
        const char *tid;
} CrunTask;

static bool crun_task_listed(void *userdata) {
        CrunTask *t = userdata;
        g_autofree char *out = NULL;
        if (ctl_run(&t->fx->b, false, CTL_ARGS("--no-legend", "ps", t->tid), &out, NULL) != 0)
                return false;
        return strstr(out, "filter") != NULL;
}

static gint strcmp_ptr(gconstpointer a, gconstpointer b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The findings of audit --json as "rule syscall arch" lines, sorted. */
static char *audit_lines(Fixture *fx, const char *tid) {
        g_autofree char *out = NULL;
        g_assert_cmpint(ctl_run(&fx->b, false, CTL_ARGS("--json", "audit", "--severity=info", tid), &out, NULL), ==, 1);
        json_t *doc = tests_json_loads_u64(out), *f;
        GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
        size_t i;
        json_array_foreach(json_object_get(json_array_get(json_object_get(doc, "chains"), 0), "findings"), i, f)
                g_ptr_array_add(lines, g_strdup_printf("%s %s %s", json_string_value(json_object_get(f, "rule")),
                                                       json_string_value(json_object_get(f, "syscall")) ?: "-",
                                                       json_string_value(json_object_get(f, "architecture")) ?: "-"));
        json_decref(doc);
        g_ptr_array_sort(lines, strcmp_ptr);
        g_ptr_array_add(lines, NULL);
        char *joined = g_strjoinv("\n", (char **) lines->pdata);
        g_ptr_array_free(lines, TRUE);
        return joined;
}

/* containers-common's profile, as sectree exports it (policy --format=oci), run by crun: the
 * container's task has a chain that decides every call as the original (policy-diff finds
 * nothing) and audit says the same of both. */
static void test_crun(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *crun = g_find_program_in_path("crun");
        if (!crun) {
                g_test_skip("crun is not installed (Debian package crun)");
                return;
        }
        g_autofree char *profile = ctl_run_ok(&fx->b, CTL_ARGS("policy", "--format=oci", fx->pid[T_CONTAINER]));
        g_autofree char *bundle = g_build_filename(fx->b.dir, "bundle", NULL), *state = g_build_filename(fx->b.dir, "crun", NULL);
        g_autofree char *name = g_strdup_printf("sectree-test-%d", (int) getpid());
        crun_bundle(bundle, profile);
        /* the container keeps its stdio: not the test's pipes, or reading them never ends */
        g_autofree char *log = g_build_filename(fx->b.dir, "crun.log", NULL);
        g_autofree char *script = g_strdup_printf("if grep -qs ' %s cgroup2 ' /proc/self/mounts; then umount %s || exit 1; fi; "
                                                  "exec %s --root=%s --cgroup-manager=disabled run -d --bundle=%s %s "
                                                  "</dev/null >/dev/null 2>%s",
                                                  CRUN_UNIFIED, CRUN_UNIFIED, crun, state, bundle, name, log);
        const char *const run[] = { "unshare", "--mount", "--propagation=private", "sh", "-c", script, NULL };
        if (run_argv(run, NULL, NULL) != 0) {
                g_autofree char *why = NULL;
                (void) g_file_get_contents(log, &why, NULL, NULL);
                g_error("crun run: %s", why ? why : "?");
        }
        const char *const state_argv[] = { crun, "--root", state, "state", name, NULL };
        g_autofree char *st = NULL;
        g_assert_cmpint(run_argv(state_argv, &st, NULL), ==, 0);
        json_t *sj = json_loads(st, 0, NULL);
        g_autofree char *tid = g_strdup_printf("%d", (int) json_integer_value(json_object_get(sj, "pid")));
        json_decref(sj);
        CrunTask t = { fx, tid };
        bool listed = tests_wait_for(crun_task_listed, &t, WAIT_MS);

        if (listed) {
                g_autofree char *same = NULL;
                int diff = ctl_run(&fx->b, false, CTL_ARGS("policy-diff", fx->pid[T_CONTAINER], tid), &same, NULL);
                g_autofree char *a = audit_lines(fx, fx->pid[T_CONTAINER]), *b = audit_lines(fx, tid);
                if (diff != 0)
                        g_error("policy-diff of the profile and crun's container (exit %d):\n%s", diff, same);
                g_assert_cmpstr(a, ==, b);
        }
        const char *const del[] = { crun, "--root", state, "delete", "--force", name, NULL };
        g_assert_cmpint(run_argv(del, NULL, NULL), ==, 0);
        if (!listed)
                g_error("the daemon does not list crun's container task %s with a filter", tid);
}

/* ---- errors, and who sees what ---- */

static void test_errors(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Unknown system call 'nosuchcall'", CTL_ARGS("who-can", "nosuchcall")));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Unknown action 'FOO'", CTL_ARGS("who-can", "--action=FOO", "ptrace")));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Invalid task id 'abc'", CTL_ARGS("policy", "abc")));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Unknown format 'xml'", CTL_ARGS("policy", "--format=xml", "1")));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: --approximate goes with --format=oci", CTL_ARGS("policy", "--approximate", "1")));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Unknown architecture 'vax'", CTL_ARGS("policy", "--arch=vax", "1")));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: Missing snapshot file in ':2'", CTL_ARGS("policy-diff", "1", ":2")));
        g_free(ctl_run_fails(&fx->b, 2, "sectreectl: 'policy-diff' does not take --file",
                             CTL_ARGS("policy-diff", "--file", "x", "1", "2")));
        g_free(ctl_run_fails(&fx->b, 1, "sectreectl: Failed to get the task's policy: No task with tid 999999999.\n",
                             CTL_ARGS("policy", "999999999")));
        g_free(ctl_run_fails(&fx->b, 1, "sectreectl: Failed to read /nonexistent", CTL_ARGS("policy", "--file", "/nonexistent", "1")));

        /* nobody sees its own tasks only */
        pid_t mine = tests_spawn_nobody("policy-nobody", false);
        g_autofree char *mine_s = g_strdup_printf("%d", (int) mine);
        g_autofree char *out = NULL, *err = NULL;
        for (unsigned i = 0; i < 200; i++) { /* until the daemon has it */
                g_free(out);
                out = NULL;
                g_assert_cmpint(ctl_run(&fx->b, true, CTL_ARGS("--json", "who-can", "--action=ERRNO(3)", "acct"), &out, NULL), ==, 0);
                if (strstr(out, mine_s))
                        break;
                g_usleep(20000);
        }
        json_t *doc = tests_json_loads_u64(out);
        g_assert_nonnull(who_chain_of(doc, mine_s));
        for (size_t i = 0; i < ELEMENTSOF(fx->pid); i++) /* nothing of root's */
                g_assert_null(who_chain_of(doc, fx->pid[i]));
        g_assert_cmpint(json_integer_value(json_object_get(doc, "unfiltered_count")), >=, 1); /* sectreectl itself */
        json_decref(doc);
        /* a task nobody may not see is one that does not exist */
        g_assert_cmpint(ctl_run(&fx->b, true, CTL_ARGS("policy", fx->pid[T_BWRAP]), NULL, &err), ==, 1);
        g_autofree char *hidden = g_strdup_printf("sectreectl: Failed to get the task's policy: No task with tid %s.\n",
                                                  fx->pid[T_BWRAP]);
        g_assert_cmpstr(err, ==, hidden);
        (void) kill(mine, SIGKILL);
}

/* ---- the methods themselves ---- */

/* A decision of a reply (bua(ssuubs)) as "ACTION if CONDITION; ...". */
static char *read_decision_string(sd_bus_message *m) {
        GString *s = g_string_new(NULL);
        const char *action, *condition, *json;
        uint32_t n_conditions, value;
        int unconditional, constant;
        g_assert_cmpint(sd_bus_message_enter_container(m, 'r', "bua(ssuubs)"), >, 0);
        g_assert_cmpint(sd_bus_message_read(m, "bu", &unconditional, &value), >, 0);
        g_assert_cmpint(sd_bus_message_enter_container(m, 'a', "(ssuubs)"), >, 0);
        while (sd_bus_message_read(m, "(ssuubs)", &action, &condition, &n_conditions, &value, &constant, &json) > 0) {
                g_string_append_printf(s, "%s%s", s->len ? "; " : "", action);
                if (*condition)
                        g_string_append_printf(s, " if %s", condition);
                json_t *doc = json_loads(json, 0, NULL); /* the case as `policy --json` prints it */
                g_assert_nonnull(doc);
                g_assert_cmpstr(json_string_value(json_object_get(doc, "action")), ==, action);
                json_decref(doc);
        }
        g_assert_cmpint(sd_bus_message_exit_container(m), >=, 0);
        g_assert_cmpint(sd_bus_message_exit_container(m), >=, 0);
        return g_string_free(s, FALSE);
}

/* GetPolicy(tid): its mode and chain length, and the decision of syscall on the native
 * architecture as "ACTION if CONDITION; ..." (g_free()). */
static char *get_policy(sd_bus *bus, pid_t tid, const char *mode, size_t n_filters, const char *syscall) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *got_mode, *name, *arch;
        const void *ids;
        size_t size;
        int32_t nr;
        int native, uniform;
        uint32_t uniform_ret;
        char *found = NULL;
        if (bus_client_call(bus, "GetPolicy", &error, &reply, "u", (uint32_t) tid) < 0)
                g_error("GetPolicy %d: %s", (int) tid, error.message);
        g_assert_cmpint(sd_bus_message_read(reply, "s", &got_mode), >, 0);
        g_assert_cmpstr(got_mode, ==, mode);
        g_assert_cmpint(sd_bus_message_read_array(reply, 't', &ids, &size), >=, 0);
        g_assert_cmpuint(size / sizeof(uint64_t), ==, n_filters);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(sbbua(si(bua(ssuubs)))(bua(ssuubs)))"), >, 0);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'r', "sbbua(si(bua(ssuubs)))(bua(ssuubs))"), >, 0);
        g_assert_cmpint(sd_bus_message_read(reply, "sbbu", &arch, &native, &uniform, &uniform_ret), >, 0);
        g_assert_true(native); /* the native architecture first */
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(si(bua(ssuubs)))"), >, 0);
        while (sd_bus_message_enter_container(reply, 'r', "si(bua(ssuubs))") > 0) {
                g_assert_cmpint(sd_bus_message_read(reply, "si", &name, &nr), >, 0);
                char *d = read_decision_string(reply);
                if (streq(name, syscall) && !found)
                        found = d;
                else
                        g_free(d);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        }
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        g_free(read_decision_string(reply)); /* the other numbers */
        return found;
}

typedef struct WhoCanReply {
        char *arch;
        int32_t nr;
        uint32_t tasks, decided, unfiltered;
        GHashTable *always, *conditional; /* tids under chains that always / conditionally can */
        GPtrArray *conditions;            /* of the conditional chains' cases */
        uint32_t other_tasks;
} WhoCanReply;

static void who_can_reply_done(WhoCanReply *w) {
        g_free(w->arch);
        g_clear_pointer(&w->always, g_hash_table_unref);
        g_clear_pointer(&w->conditional, g_hash_table_unref);
        g_clear_pointer(&w->conditions, g_ptr_array_unref);
}

/* WhoCan(syscall, args, options): 0 and *ret, or the error's name (static). */
static const char *who_can(sd_bus *bus, const char *syscall, const uint64_t *args, size_t n_args, const char *option,
                           const char *type, const void *option_value, WhoCanReply *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(sd_bus_message_new_method_call(bus, &call, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                       "WhoCan"), >=, 0);
        g_assert_cmpint(sd_bus_message_append(call, "s", syscall), >=, 0);
        g_assert_cmpint(sd_bus_message_append_array(call, 't', args, n_args * sizeof(uint64_t)), >=, 0);
        g_assert_cmpint(sd_bus_message_open_container(call, 'a', "{sv}"), >=, 0);
        if (option) {
                g_assert_cmpint(sd_bus_message_open_container(call, 'e', "sv"), >=, 0);
                g_assert_cmpint(sd_bus_message_append(call, "s", option), >=, 0);
                g_assert_cmpint(sd_bus_message_open_container(call, 'v', type), >=, 0);
                g_assert_cmpint(sd_bus_message_append_basic(call, type[0], option_value), >=, 0);
                g_assert_cmpint(sd_bus_message_close_container(call), >=, 0);
                g_assert_cmpint(sd_bus_message_close_container(call), >=, 0);
        }
        g_assert_cmpint(sd_bus_message_close_container(call), >=, 0);
        if (sd_bus_call(bus, call, BUS_CLIENT_CALL_TIMEOUT_USEC, &error, &reply) < 0) {
                g_assert_nonnull(error.name);
                return g_intern_string(error.name);
        }
        const char *arch, *action, *condition, *json, *comm;
        uint32_t depth, n_conditions, value, pid, tid, tasks, chains;
        uint64_t head;
        int always, constant, conditional;
        *ret = (WhoCanReply) { .always = g_hash_table_new(NULL, NULL), .conditional = g_hash_table_new(NULL, NULL),
                               .conditions = g_ptr_array_new_with_free_func(g_free) };
        g_assert_cmpint(sd_bus_message_read(reply, "siuu", &arch, &ret->nr, &ret->tasks, &ret->decided), >, 0);
        ret->arch = g_strdup(arch);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(tuba(ssuubs)a(uus))"), >, 0);
        while (sd_bus_message_enter_container(reply, 'r', "tuba(ssuubs)a(uus)") > 0) {
                g_assert_cmpint(sd_bus_message_read(reply, "tub", &head, &depth, &always), >, 0);
                g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(ssuubs)"), >, 0);
                while (sd_bus_message_read(reply, "(ssuubs)", &action, &condition, &n_conditions, &value, &constant,
                                           &json) > 0)
                        if (!always)
                                g_ptr_array_add(ret->conditions, g_strdup(condition));
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uus)"), >, 0);
                while (sd_bus_message_read(reply, "(uus)", &pid, &tid, &comm) > 0)
                        g_hash_table_add(always ? ret->always : ret->conditional, GUINT_TO_POINTER(tid));
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        }
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        g_assert_cmpint(sd_bus_message_read(reply, "u", &ret->unfiltered), >, 0);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(buuu)"), >, 0);
        while (sd_bus_message_read(reply, "(buuu)", &conditional, &value, &tasks, &chains) > 0)
                ret->other_tasks += tasks;
        return NULL;
}

static bool who_can_has(const WhoCanReply *w, const char *tid) {
        gpointer key = GUINT_TO_POINTER((guint) atoi(tid));
        return g_hash_table_contains(w->always, key) || g_hash_table_contains(w->conditional, key);
}

/* As root: GetPolicy of filtered, strict and unfiltered tasks; WhoCan's groups, counts and errors. */
static void test_methods(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_autofree char *traceme = get_policy(fx->bus, tid_of(fx, fx->traceme), "filter", 1, "ptrace");
        g_assert_cmpstr(traceme, ==, "KILL_PROCESS if arg0 != 0; ALLOW if arg0 == 0");
        g_autofree char *strict = get_policy(fx->bus, tid_of(fx, fx->strict), "strict", 0, "read");
        g_assert_cmpstr(strict, ==, "ALLOW");
        g_autofree char *unfiltered = get_policy(fx->bus, getpid(), "disabled", 0, "ptrace");
        g_assert_cmpstr(unfiltered, ==, "ALLOW");
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(bus_client_call(fx->bus, "GetPolicy", &error, NULL, "u", (uint32_t) 0), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpint(bus_client_call(fx->bus, "GetPolicy", &error, NULL, "u", (uint32_t) INT32_MAX), <, 0);
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchTask");

        WhoCanReply w;
        g_assert_null(who_can(fx->bus, "ptrace", NULL, 0, NULL, NULL, NULL, &w));
        g_assert_cmpstr(w.arch, ==, "x86_64");
        g_assert_cmpint(w.nr, ==, SYS_ptrace);
        g_assert_true(g_hash_table_contains(w.always, GUINT_TO_POINTER(tid_of(fx, fx->allow))));
        g_assert_true(g_hash_table_contains(w.conditional, GUINT_TO_POINTER(tid_of(fx, fx->traceme))));
        g_assert_false(who_can_has(&w, fx->pid[T_BWRAP]));
        g_assert_cmpuint(w.unfiltered, >=, 1); /* this test, at least */
        g_assert_cmpuint(w.tasks, >=, g_hash_table_size(w.always) + g_hash_table_size(w.conditional) + w.other_tasks +
                                          w.unfiltered);
        g_assert_cmpuint(w.decided, >=, 1);
        who_can_reply_done(&w);

        const uint64_t attach = 16;
        g_assert_null(who_can(fx->bus, "101", &attach, 1, "arch", "s", "x86_64", &w));
        g_assert_true(who_can_has(&w, fx->pid[T_ALLOW]));
        g_assert_false(who_can_has(&w, fx->pid[T_TRACEME]));
        who_can_reply_done(&w);
        g_assert_null(who_can(fx->bus, "ptrace", NULL, 0, "action", "s", "ERRNO", &w));
        g_assert_true(who_can_has(&w, fx->pid[T_BWRAP]) && who_can_has(&w, fx->pid[T_FIREJAIL]));
        g_assert_false(who_can_has(&w, fx->pid[T_ALLOW]));
        g_assert_cmpuint(w.unfiltered, >=, 1); /* counted, whatever the action asked for */
        who_can_reply_done(&w);

        /* calls at once: queued in the lane, each answered */
        BusPending pending[8] = {};
        for (size_t i = 0; i < ELEMENTSOF(pending); i++) {
                int k = i % 2 ? sd_bus_call_method_async(fx->bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                         "WhoCan", bus_client_on_reply, &pending[i], "sata{sv}",
                                                         "ptrace", 0, 0)
                              : sd_bus_call_method_async(fx->bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                         "GetPolicy", bus_client_on_reply, &pending[i], "u",
                                                         (uint32_t) tid_of(fx, fx->container));
                g_assert_cmpint(k, >=, 0);
        }
        for (size_t i = 0; i < ELEMENTSOF(pending); i++) {
                bus_client_wait(fx->bus, &pending[i], WAIT_MS, "a policy call among several");
                g_assert_false(sd_bus_error_is_set(&pending[i].error));
        }
        const uint64_t seven[7] = {};
        const uint32_t one = 1;
        g_assert_cmpstr(who_can(fx->bus, "nosuchcall", NULL, 0, NULL, NULL, NULL, &w), ==, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpstr(who_can(fx->bus, "ptrace", seven, 7, NULL, NULL, NULL, &w), ==, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpstr(who_can(fx->bus, "ptrace", NULL, 0, "colour", "s", "red", &w), ==, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpstr(who_can(fx->bus, "ptrace", NULL, 0, "action", "u", &one, &w), ==, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpstr(who_can(fx->bus, "ptrace", NULL, 0, "action", "s", "SOMETIMES", &w), ==, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpstr(who_can(fx->bus, "ptrace", NULL, 0, "arch", "s", "vax", &w), ==, SD_BUS_ERROR_INVALID_ARGS);
}

typedef struct NobodyCheck {
        Fixture *fx;
        pid_t mine;
} NobodyCheck;

/* As nobody: WhoCan lists nobody's tasks only, and GetPolicy of a hidden task fails as that of a
 * missing one. */
static void nobody_methods(void *userdata) {
        NobodyCheck *n = userdata;
        /* dumpable again after the change of uid: this process, without filters, is visible to
         * itself and counted among the unfiltered */
        g_assert_cmpint(prctl(PR_SET_DUMPABLE, 1), ==, 0);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_autofree char *mine_s = g_strdup_printf("%d", (int) n->mine);
        WhoCanReply w;
        /* the test's tasks are root's: none of them is listed, visible or counted */
        g_assert_null(who_can(bus, "acct", NULL, 0, NULL, NULL, NULL, &w));
        for (size_t i = 0; i < ELEMENTSOF(n->fx->pid); i++)
                g_assert_false(who_can_has(&w, n->fx->pid[i]));
        who_can_reply_done(&w);
        g_assert_null(who_can(bus, "acct", NULL, 0, "action", "s", "ERRNO(3)", &w));
        g_assert_true(who_can_has(&w, mine_s));
        g_assert_cmpuint(w.unfiltered, >=, 1); /* this process, at least */
        who_can_reply_done(&w);

        g_autofree char *d = get_policy(bus, n->mine, "filter", 1, "acct");
        g_assert_cmpstr(d, ==, "ERRNO(3)");
        sd_bus_error hidden = SD_BUS_ERROR_NULL, missing = SD_BUS_ERROR_NULL;
        g_assert_cmpint(bus_client_call(bus, "GetPolicy", &hidden, NULL, "u", (uint32_t) atoi(n->fx->pid[T_BWRAP])), <, 0);
        g_assert_cmpint(bus_client_call(bus, "GetPolicy", &missing, NULL, "u", (uint32_t) INT32_MAX), <, 0);
        g_assert_cmpstr(hidden.name, ==, "org.sectree1.Error.NoSuchTask");
        g_assert_cmpstr(hidden.name, ==, missing.name);
        sd_bus_error_free(&hidden);
        sd_bus_error_free(&missing);
}

static bool nobody_listed(void *userdata) {
        NobodyCheck *n = userdata;
        WhoCanReply w;
        g_autofree char *mine_s = g_strdup_printf("%d", (int) n->mine);
        g_assert_null(who_can(n->fx->bus, "acct", NULL, 0, "action", "s", "ERRNO(3)", &w));
        bool listed = who_can_has(&w, mine_s);
        who_can_reply_done(&w);
        return listed;
}

static void test_methods_nobody(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        NobodyCheck n = { .fx = fx, .mine = tests_spawn_nobody("policy-methods", false) };
        if (!tests_wait_for(nobody_listed, &n, WAIT_MS))
                g_error("the daemon does not list nobody's task within %d ms", WAIT_MS);
        g_assert_cmpint(tests_as_nobody(nobody_methods, &n), ==, 0);
        (void) kill(n.mine, SIGKILL);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add("/sectreectl-policy/policy", Fixture, NULL, fixture_setup, test_policy, fixture_teardown);
        g_test_add("/sectreectl-policy/oci", Fixture, NULL, fixture_setup, test_policy_oci, fixture_teardown);
        g_test_add("/sectreectl-policy/who-can", Fixture, NULL, fixture_setup, test_who_can, fixture_teardown);
        g_test_add("/sectreectl-policy/files", Fixture, NULL, fixture_setup, test_files_and_diff, fixture_teardown);
        g_test_add("/sectreectl-policy/audit", Fixture, NULL, fixture_setup, test_audit, fixture_teardown);
        g_test_add("/sectreectl-policy/operands", Fixture, NULL, fixture_setup, test_operands, fixture_teardown);
        g_test_add("/sectreectl-policy/audit-unconfined", Fixture, NULL, fixture_setup, test_audit_unconfined, fixture_teardown);
        g_test_add("/sectreectl-policy/audit-bus", Fixture, NULL, fixture_setup, test_audit_bus, fixture_teardown);
        g_test_add("/sectreectl-policy/crun", Fixture, NULL, fixture_setup, test_crun, fixture_teardown);
        g_test_add("/sectreectl-policy/errors", Fixture, NULL, fixture_setup, test_errors, fixture_teardown);
        g_test_add("/sectreectl-policy/methods", Fixture, NULL, fixture_setup, test_methods, fixture_teardown);
        g_test_add("/sectreectl-policy/methods-nobody", Fixture, NULL, fixture_setup, test_methods_nobody,
                   fixture_teardown);
        return g_test_run();
}
