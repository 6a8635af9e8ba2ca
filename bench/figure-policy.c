/* figure-policy.c: figure 6, policy analysis: who-can across a forest of tasks holding 100
 * distinct chains, next to its floor (those 100 chains evaluated once, concretely); and the whole
 * policy of the container runtime's default profile, next to evaluating each of its syscalls
 * once, concretely */
#include <linux/audit.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <systemd/sd-bus.h>

#include "core/eval.h"
#include "daemon-fixture.h"
#include "figures.h"
#include "policy/policy-profile.h"
#include "policy/policy-summary.h"
#include "policy/policy-who.h"
#include "workload.h"

/*
 * who-can: a forest in memory of size tasks (processes of threads_per_process threads), whose
 * chains are 100 distinct ones: the container profile (1,144 instructions), and on it one of 100
 * filters that differ in their bytes (ERRNO for a few syscalls, a condition on personality's
 * argument). That is the work of the analysis itself, what a WhoCan method of the daemon does;
 * sectreectl who-can adds fetching the forest over D-Bus. The floor evaluates the same 100 chains
 * once each, concretely, for one set of arguments.
 *
 * who-can through the daemon: a real workload of size tasks whose private filters come in 100
 * kinds (101 distinct chains with the shared one), the real sectreed on a private bus, and the
 * time from the WhoCan call to its reply, ptrace with its arguments free, as root. The daemon
 * answers for the whole machine: the other tasks of the machine are in its forest too, and the
 * row says how many tasks and chains it decided.
 *
 * policy: policy_summarize() of the container profile: every syscall libseccomp names on x86_64,
 * x86 and x32, and the numbers it does not name. Its floor evaluates every one of those syscalls
 * once, concretely.
 */

#define CONTAINERS_SECCOMP_JSON "/usr/share/containers/seccomp.json"
#define DISTINCT_CHAINS 100
#define WHO_CAN_TARGET_MSEC 50.0
#define POLICY_TARGET_MSEC 20.0

static const char *const podman_caps[] = {
        "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
        "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT", NULL,
};

static int container_profile(struct sock_filter **ret, size_t *ret_n) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        json_t *profile = NULL;
        size_t size;
        _cleanup_fclose_ FILE *f = fopen(CONTAINERS_SECCOMP_JSON, "re");
        if (!f)
                return log_error_errno(-errno, "Failed to open %s (package golang-github-containers-common): %m",
                                       CONTAINERS_SECCOMP_JSON);
        if (getdelim(&text, &size, 0, f) < 0)
                return log_error_errno(-EIO, "Failed to read %s.", CONTAINERS_SECCOMP_JSON);
        int r = policy_profile_parse(text, &profile, &error);
        if (r >= 0)
                r = policy_profile_build(profile, podman_caps, ret, ret_n, &error);
        json_decref(profile);
        if (r < 0)
                return log_error_errno(r, "%s: %s", CONTAINERS_SECCOMP_JSON, error ? error : "?");
        return 0;
}

/* Chain i's own filter: ERRNO(1 + i % 7) for ptrace and bpf, personality(i) allowed and other
 * personalities ERRNO(1), the rest allowed. */
static size_t chain_filter(uint32_t i, struct sock_filter *out) {
        const struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 1, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bpf, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (1 + i % 7)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_personality, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, i, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        memcpy(out, f, sizeof(f));
        return ELEMENTSOF(f);
}

static int forest_build(const struct sock_filter *base, size_t n_base, size_t n_tasks, size_t per_process, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        _cleanup_free_ char *why = NULL;
        struct sock_filter top[16];
        int r = f ? forest_add_filter(f, 1, 0, base, n_base, NULL) : -ENOMEM;

        for (uint32_t i = 0; r >= 0 && i < DISTINCT_CHAINS; i++)
                r = forest_add_filter(f, 2 + i, 1, top, chain_filter(i, top), NULL);
        for (size_t t = 0; r >= 0 && t < n_tasks; t++) {
                pid_t pid = 1000 + (pid_t) (t / per_process * per_process);
                Process *p = forest_find_process(f, pid);
                Task *x;
                if (!p && (r = forest_add_process(f, pid, &p)) >= 0)
                        snprintf(p->comm, sizeof(p->comm), "worker");
                if (r >= 0)
                        r = process_append_thread(p, 1000 + (pid_t) t, &x);
                if (r >= 0) {
                        x->mode = TASK_MODE_FILTER;
                        x->filter_id = 2 + (t / per_process) % DISTINCT_CHAINS;
                }
        }
        if (r >= 0)
                r = forest_link(f, &why);
        if (r < 0)
                return log_error_errno(r, "Failed to build the forest: %s", why ? why : "out of memory");
        *ret = TAKE_PTR(f);
        return 0;
}

/* The 100 distinct chains evaluated once each, concretely: ptrace with PTRACE_TRACEME. */
static double floor_who_can(const Forest *f) {
        struct seccomp_data d;
        (void) seccomp_data_from_syscall("ptrace", 0, (uint64_t[]) { 0 }, 1, &d);
        uint64_t start = now_nsec();
        uint32_t sink = 0;
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = f->filters[i];
                if (x->depth != 2)
                        continue;
                ChainProgram c[2] = { { x->insns, x->len }, { x->parent->insns, x->parent->len } };
                sink ^= chain_evaluate(c, 2, &d).ret;
        }
        double t = usec_since(start) / 1000;
        __asm__ volatile("" : : "r"(sink));
        return t;
}

static int measure_who_can(const BenchOptions *o, const Forest *f, size_t n_tasks, Report *report, double *ret_floor,
                           double *ret_msec) {
        double samples[BENCH_MAX_PASSES], floors[BENCH_MAX_PASSES];
        WhoCanQuery q = { .nr = SYS_ptrace, .allowed = true };
        int r = 0;

        for (unsigned pass = 0; pass <= o->passes && r >= 0; pass++) { /* pass 0: warm-up */
                _cleanup_(who_can_freep) WhoCan *w = NULL;
                uint64_t start = now_nsec();
                r = policy_who_can(f, &q, &w);
                if (pass > 0) {
                        samples[pass - 1] = msec_since(start);
                        floors[pass - 1] = floor_who_can(f);
                }
                if (r >= 0 && (w->n_tasks != n_tasks || w->n_decisions != DISTINCT_CHAINS))
                        report_check_failed(report, "who-can looked at %zu tasks and %zu chains, not %zu and %d",
                                            w->n_tasks, w->n_decisions, n_tasks, DISTINCT_CHAINS);
        }
        if (r < 0)
                return log_error_errno(r, "who-can failed: %m");
        double t = median(samples, o->passes), fl = median(floors, o->passes);
        *ret_floor = fl;
        *ret_msec = t;
        r = report_add(report, &(BenchRow) {
                .figure = "floor: 100 chains evaluated once",
                .tasks = n_tasks, .value = fl, .unit = "ms",
                .note = "concretely, one set of arguments",
        });
        if (r >= 0)
                r = report_add(report, &(BenchRow) {
                        .figure = "who-can ptrace (100 chains)",
                        .tasks = n_tasks, .value = t, .unit = "ms",
                        .ratio = t / fl, .ratio_to = "floor",
                        .target = "≤ 50 ms",
                        .verdict = verdict_for(o, n_tasks, t, WHO_CAN_TARGET_MSEC, false),
                        .note = "lib/ over the forest, every argument",
                });
        return r;
}

/* One WhoCan(ptrace) call, timed from the call to the reply; its task and chain counts. */
static int who_can_call(sd_bus *bus, double *ret_msec, uint32_t *ret_tasks, uint32_t *ret_decided) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *arch;
        int32_t nr;
        uint64_t start = now_nsec();
        int r = sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "WhoCan", &error,
                                   &reply, "sata{sv}", "ptrace", 0, 0);
        *ret_msec = msec_since(start);
        if (r < 0)
                return log_error_errno(r, "WhoCan failed: %s", error.message ?: strerror(-r));
        r = sd_bus_message_read(reply, "siuu", &arch, &nr, ret_tasks, ret_decided);
        return r < 0 ? log_error_errno(r, "WhoCan's reply: %m") : 0;
}

static int measure_who_can_daemon(const BenchOptions *o, size_t n_tasks, double floor_msec, double lib_msec,
                                  Report *report) {
        _cleanup_(workload_freep) Workload *w = NULL;
        _cleanup_(daemon_fixture_freep) DaemonFixture *d = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        WorkloadOptions wo = {
                .n_tasks = n_tasks,
                .threads_per_process = o->threads_per_process,
                .filter_len = o->filter_len,
                .private_kinds = DISTINCT_CHAINS,
        };
        DaemonFixtureOptions fo = { .ready_timeout_sec = 120 };
        double samples[BENCH_MAX_PASSES];
        uint32_t tasks = 0, decided = 0;
        char note[128];
        int r = workload_new(&wo, &w);
        if (r >= 0)
                r = daemon_fixture_new(&fo, &d); /* its first pass finds the workload */
        if (r >= 0)
                r = daemon_fixture_connect(d, &bus);
        for (unsigned pass = 0; r >= 0 && pass <= o->passes; pass++) { /* pass 0: warm-up */
                double t;
                r = who_can_call(bus, &t, &tasks, &decided);
                if (pass > 0)
                        samples[pass - 1] = t;
        }
        if (r < 0)
                return r;
        if (tasks < n_tasks || decided < DISTINCT_CHAINS)
                report_check_failed(report, "WhoCan looked at %" PRIu32 " tasks and %" PRIu32 " chains, fewer than the "
                                    "workload's %zu and %d", tasks, decided, n_tasks, DISTINCT_CHAINS + 1);
        double t = median(samples, o->passes);
        snprintf(note, sizeof(note), "%" PRIu32 " tasks, %" PRIu32 " chains decided; %.1f× lib/", tasks, decided,
                 t / lib_msec);
        return report_add(report, &(BenchRow) {
                .figure = "WhoCan ptrace over D-Bus (101 chains)",
                .tasks = n_tasks, .value = t, .unit = "ms",
                .ratio = t / floor_msec, .ratio_to = "floor",
                .target = "≤ 50 ms",
                .verdict = verdict_for(o, n_tasks, t, WHO_CAN_TARGET_MSEC, false),
                .note = note,
        });
}

/* Every named syscall of the profile's architectures, and one unnamed number, evaluated once. */
static double floor_policy(const ChainProgram *c, const PolicySummary *s) {
        uint32_t sink = 0;
        uint64_t start = now_nsec();
        for (size_t a = 0; a < s->n_arches; a++)
                for (size_t i = 0; i < s->arches[a].n_entries; i++) {
                        struct seccomp_data d = { .nr = s->arches[a].entries[i].syscall->nr,
                                                  .arch = s->arches[a].arch->token };
                        sink ^= chain_evaluate(c, 1, &d).ret;
                }
        double t = usec_since(start) / 1000;
        __asm__ volatile("" : : "r"(sink));
        return t;
}

static int measure_policy(const BenchOptions *o, const struct sock_filter *insns, size_t n, Report *report) {
        double samples[BENCH_MAX_PASSES], floors[BENCH_MAX_PASSES];
        ChainProgram c = { insns, n };
        char name[64];
        int r = 0;

        for (unsigned pass = 0; pass <= o->passes && r >= 0; pass++) { /* pass 0: warm-up (libseccomp's names) */
                _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
                uint64_t start = now_nsec();
                r = policy_summarize(&c, 1, NULL, &s);
                if (r >= 0 && pass > 0) {
                        samples[pass - 1] = msec_since(start);
                        floors[pass - 1] = floor_policy(&c, s);
                }
        }
        if (r < 0)
                return log_error_errno(r, "The policy of the container profile failed: %m");
        double t = median(samples, o->passes), fl = median(floors, o->passes);
        snprintf(name, sizeof(name), "policy, container profile (%zu insns)", n);
        r = report_add(report, &(BenchRow) {
                .figure = "floor: each of its syscalls evaluated once",
                .tasks = o->target_size, .value = fl, .unit = "ms",
                .note = "x86_64, x86 and x32, concretely",
        });
        if (r >= 0)
                r = report_add(report, &(BenchRow) {
                        .figure = name,
                        .tasks = o->target_size, .value = t, .unit = "ms",
                        .ratio = t / fl, .ratio_to = "floor",
                        .target = "≤ 20 ms",
                        .verdict = verdict_for(o, o->target_size, t, POLICY_TARGET_MSEC, false),
                        .note = "one chain (no tasks): every syscall, every argument",
                });
        return r;
}

int figure_policy_run(const BenchOptions *o, Report *report) {
        _cleanup_free_ struct sock_filter *base = NULL;
        size_t n_base;
        int r = container_profile(&base, &n_base);
        if (r < 0)
                return r;
        for (size_t i = 0; i < o->n_sizes; i++) {
                _cleanup_(forest_freep) Forest *f = NULL;
                double fl = 0, t = 0;
                r = forest_build(base, n_base, o->sizes[i], o->threads_per_process, &f);
                if (r >= 0)
                        r = measure_who_can(o, f, o->sizes[i], report, &fl, &t);
                if (r >= 0)
                        r = measure_who_can_daemon(o, o->sizes[i], fl, t, report);
                if (r < 0)
                        return r;
        }
        return measure_policy(o, base, n_base, report);
}
