/* verbs-policy.c: `policy TID`: everything a task's chain decides, for all arguments, as a table,
 * JSON, or an OCI profile; and what the policy verbs share */
#include "verbs-policy.h"

#include "core/disasm.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "manager-policy.h"
#include "output.h"
#include "policy/policy-format.h"
#include "policy/policy-oci.h"
#include "snapshot-load.h"
#include "table.h"

/* ---- shared ---- */

int policy_arch_option(const Context *c, const PolicyArch **ret) {
        *ret = NULL;
        if (!c->arch)
                return 0;
        *ret = policy_arch_from_name(c->arch);
        if (!*ret)
                return usage_error("Unknown architecture '%s' (x86_64, x86, x32, aarch64, arm, ...)", c->arch);
        return 0;
}

int policy_kernel_of(const char *file, uint32_t *ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        *ret = 0;
        if (!file)
                return 0;
        int r = snapshot_file_load(file, &f, NULL);
        if (r < 0)
                return r;
        *ret = kernel_version_parse(f->host.kernel);
        if (*ret == 0)
                log_warning("sectreectl: Snapshot %s does not say which kernel it was taken on: its uprobe exception is taken "
                            "to be the running kernel's.", file);
        return 0;
}

void task_policy_done(TaskPolicy *p) {
        chain_done(&p->chain);
        free(p->progs);
        p->progs = NULL;
        p->summary = policy_summary_free(p->summary);
}

char *task_policy_name(const TaskPolicy *p) {
        char *s = NULL;
        if (asprintf(&s, p->source ? "task %" PRIu32 " in %s" : "task %" PRIu32, p->tid, p->source) < 0)
                return NULL;
        return s;
}

/* The programs to summarize: the chain, strict mode as a program, or none. */
static int task_policy_summarize(TaskPolicy *p, const PolicyArch *only) {
        p->progs = calloc(p->chain.n + 1, sizeof(ChainProgram));
        p->n_progs = p->chain.n;
        if (!p->progs)
                return log_oom();
        int r = chain_programs(&p->chain, p->progs);
        if (r < 0)
                return r;
        if (p->mode == TASK_MODE_STRICT) {
                p->progs[0] = (ChainProgram) { .insns = p->strict, .len = policy_strict_program(p->strict) };
                p->n_progs = 1;
        }
        r = policy_summarize_kernel(p->progs, p->n_progs, only, p->kernel, NULL, &p->summary);
        if (r == -E2BIG)
                return ctl_error_errno(r, "The chain of task %" PRIu32 " has too many paths to analyse.", p->tid);
        if (r < 0)
                return ctl_error_errno(r, "Failed to analyse the chain of task %" PRIu32 ": %m", p->tid);
        return 0;
}

int task_policy_load(Context *c, const char *file, uint32_t tid, const PolicyArch *only, TaskPolicy *ret) {
        Context tc = *c; /* the same, but for where the chain comes from */
        *ret = (TaskPolicy) { .tid = tid, .source = file };
        tc.file = file;
        int r = chain_load_task(&tc, tid, &ret->chain, &ret->mode);
        c->bus = tc.bus; /* connected on first use: kept for the next call */
        if (r >= 0)
                r = policy_kernel_of(file, &ret->kernel);
        return r < 0 ? r : task_policy_summarize(ret, only);
}

/* ---- policy TID: the table ---- */

/* What the table and JSON print: the daemon's GetPolicy, or a summary computed here. */
typedef struct PolicyView {
        uint32_t tid;
        TaskMode mode;
        const uint64_t *filters;
        size_t n_filters;
        const PolicyReport *report;
        const char *source; /* NULL: live; else the snapshot file */
} PolicyView;

typedef enum Group {
        GROUP_ALLOWED,
        GROUP_DENIED,
        GROUP_CONDITIONAL,
        _GROUP_MAX,
} Group;

static const char *const group_titles[_GROUP_MAX] = {
        [GROUP_ALLOWED] = "Always allowed",
        [GROUP_DENIED] = "Always denied",
        [GROUP_CONDITIONAL] = "Depending on the arguments",
};

static Group entry_group(const PolicyReportDecision *d) {
        if (!d->unconditional)
                return GROUP_CONDITIONAL;
        uint32_t v = d->ret & SECCOMP_RET_ACTION_FULL;
        return v == SECCOMP_RET_ALLOW || v == SECCOMP_RET_LOG ? GROUP_ALLOWED : GROUP_DENIED;
}

/* The case shown as "otherwise": the one with the most conditions (exact: the cases partition). */
static size_t otherwise_case(const PolicyReportCase *cases, size_t n) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
                if (cases[i].n_conditions >= cases[best].n_conditions)
                        best = i;
        return best;
}

/* A row of the table: SYSCALL ACTION, and CONDITION in the table of the conditional ones. */
static int add_case_row(Table *t, const char *name, const PolicyReportCase *c, bool otherwise) {
        const char *cells[] = { name, c->action, otherwise ? "otherwise" : c->condition ? c->condition : "" };
        return table_add_row(t, cells);
}

/* One syscall's rows: its action, or each case (the "otherwise" one last). */
static int add_decision_rows(Table *t, const char *name, const PolicyReportDecision *d) {
        size_t last = d->n_cases > 1 ? otherwise_case(d->cases, d->n_cases) : SIZE_MAX;
        for (size_t i = 0, row = 0; i < d->n_cases; i++) {
                if (i == last)
                        continue;
                int r = add_case_row(t, row++ == 0 ? name : "", &d->cases[i], false);
                if (r < 0)
                        return r;
        }
        return last == SIZE_MAX ? 0 : add_case_row(t, d->n_cases == 1 ? name : "", &d->cases[last], true);
}

static int cmp_denied(const void *a, const void *b) {
        const PolicyReportSyscall *x = *(const PolicyReportSyscall *const *) a, *y = *(const PolicyReportSyscall *const *) b;
        uint32_t vx = x->decision.ret, vy = y->decision.ret;
        if (vx != vy) /* by action, the most restrictive first */
                return (int32_t) vx < (int32_t) vy ? -1 : 1;
        return strcmp(x->name, y->name);
}

static int cmp_names(const void *a, const void *b) {
        const PolicyReportSyscall *x = *(const PolicyReportSyscall *const *) a, *y = *(const PolicyReportSyscall *const *) b;
        return strcmp(x->name, y->name);
}

static int print_group(const PolicyReportArch *a, Group g, bool legend) {
        static const char *const headers[] = { "SYSCALL", "ACTION", "CONDITION" };
        _cleanup_free_ const PolicyReportSyscall **entries = calloc(a->n_syscalls + 1, sizeof(PolicyReportSyscall *));
        /* the groups of one action per syscall have no CONDITION column */
        _cleanup_(table_freep) Table *t = table_new(headers, g == GROUP_CONDITIONAL ? 3 : 2, 0);
        size_t n = 0;
        int r = 0;

        if (!entries || !t)
                return log_oom();
        for (size_t i = 0; i < a->n_syscalls; i++)
                if (entry_group(&a->syscalls[i].decision) == g)
                        entries[n++] = &a->syscalls[i];
        if (n == 0)
                return 0;
        qsort(entries, n, sizeof(*entries), g == GROUP_DENIED ? cmp_denied : cmp_names);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = add_decision_rows(t, entries[i]->name, &entries[i]->decision);
        if (r < 0)
                return log_oom();
        if (legend)
                printf("\n%s (%zu):\n", group_titles[g], n);
        return table_print(t, stdout, legend);
}

static int print_other(const PolicyReportArch *a) {
        _cleanup_free_ char *s = policy_report_decision_string(&a->other);
        if (!s)
                return log_oom();
        printf("\nOther system call numbers (those libseccomp does not name for %s): %s\n", a->name, s);
        return 0;
}

/* first: the first architecture printed (--arch may leave out the native one); the others follow a
 * blank line. */
static int print_arch(const PolicyReportArch *a, bool first, bool legend) {
        char action[ACTION_STRING_MAX];
        if (a->uniform) {
                printf("%sArchitecture %s%s: %s for every system call.\n", first ? "" : "\n", a->name,
                       a->native ? " (native)" : "", action_to_string(a->uniform_ret, action, sizeof(action)));
                return 0;
        }
        printf("%sArchitecture %s%s:\n", first ? "" : "\n", a->name, a->native ? " (native)" : "");
        for (Group g = 0; g < _GROUP_MAX; g++) {
                int r = print_group(a, g, legend);
                if (r < 0)
                        return r;
        }
        return print_other(a);
}

static void print_task_line(const PolicyView *p) {
        _cleanup_free_ char *name = task_policy_name(&(TaskPolicy) { .tid = p->tid, .source = p->source });
        if (p->mode == TASK_MODE_STRICT)
                printf("The %s is in strict mode: read, write, exit and sigreturn only.\n\n", name ? name : "task");
        else if (p->n_filters == 0)
                printf("The %s runs under no filter: every system call is allowed.\n\n", name ? name : "task");
        else {
                printf("The %s runs under %zu filter%s (newest first):", name ? name : "task", p->n_filters,
                       p->n_filters == 1 ? "" : "s");
                for (size_t i = 0; i < p->n_filters; i++)
                        printf(" %" PRIu64, p->filters[i]);
                printf("\n\n");
        }
}

static int policy_print_table(const PolicyView *p, bool legend) {
        if (legend)
                print_task_line(p);
        for (size_t i = 0; i < p->report->n_arches; i++) {
                int r = print_arch(&p->report->arches[i], i == 0, legend);
                if (r < 0)
                        return r;
        }
        return output_flush();
}

/* ---- policy TID: JSON ---- */

static json_t *decision_json(const PolicyReportDecision *d) {
        char action[ACTION_STRING_MAX];
        json_t *cases = json_array();
        for (size_t i = 0; cases && i < d->n_cases; i++)
                if (json_array_append_new(cases, json_loads(d->cases[i].json, JSON_DECODE_ANY, NULL)) < 0) {
                        json_decref(cases);
                        return NULL;
                }
        return json_pack("{s:o, s:o}", "action",
                         d->unconditional ? json_string(action_to_string(d->ret, action, sizeof(action))) : json_null(),
                         "cases", cases);
}

static json_t *arch_json(const PolicyReportArch *a) {
        json_t *syscalls = json_array();
        char action[ACTION_STRING_MAX];
        for (size_t i = 0; syscalls && i < a->n_syscalls; i++) {
                json_t *x = decision_json(&a->syscalls[i].decision);
                if (json_set(x, "name", json_string(a->syscalls[i].name)) < 0 ||
                    json_set(x, "nr", json_integer(a->syscalls[i].nr)) < 0 || json_array_append_new(syscalls, x) < 0) {
                        json_decref(syscalls);
                        return NULL;
                }
        }
        return json_pack("{s:s, s:o, s:o, s:o}", "architecture", a->name, "uniform",
                         a->uniform ? json_string(action_to_string(a->uniform_ret, action, sizeof(action))) : json_null(),
                         "other", decision_json(&a->other), "syscalls", syscalls);
}

static json_t *policy_json(const PolicyView *p) {
        json_t *ids = json_array(), *arches = json_array();
        for (size_t i = 0; ids && i < p->n_filters; i++)
                if (json_array_append_new(ids, json_integer((json_int_t) p->filters[i])) < 0)
                        goto fail;
        for (size_t i = 0; arches && i < p->report->n_arches; i++)
                if (json_array_append_new(arches, arch_json(&p->report->arches[i])) < 0)
                        goto fail;
        return json_pack("{s:I, s:s, s:o, s:o}", "tid", (json_int_t) p->tid, "mode", task_mode_to_string(p->mode),
                         "filters", ids, "architectures", arches);
fail:
        json_decref(ids);
        json_decref(arches);
        return NULL;
}

/* ---- policy TID --format=oci ---- */

static int policy_print_oci(const Context *c, const TaskPolicy *p) {
        _cleanup_strv_free_ char **problems = NULL;
        json_auto_t *profile = NULL;
        _cleanup_free_ char *name = task_policy_name(p);
        int r = policy_oci_profile(p->summary, c->approximate, &profile, &problems);
        if (r == -EDOM) {
                ctl_error("The policy of %s cannot be written as an OCI profile %s:", name ? name : "the task",
                          c->approximate ? "that libseccomp loads" : "exactly");
                for (char **x = problems; x && *x; x++)
                        log_error("  %s", *x);
                if (!c->approximate)
                        log_error("With --approximate the profile is written anyway, and decides what is listed here "
                                  "otherwise than the chain (a condition it cannot state gives the most restrictive of "
                                  "the actions).");
                return -EDOM;
        }
        if (r < 0)
                return ctl_error_errno(r, "Failed to write the OCI profile: %m");
        for (char **x = problems; x && *x; x++)
                log_warning("sectreectl: Not exact: %s", *x);
        _cleanup_free_ char *text = policy_oci_dumps(profile, output_is_tty() ? JSON_INDENT(2) : JSON_COMPACT);
        if (!text)
                return log_oom();
        puts(text);
        return output_flush();
}

/* The daemon's answer, for the one architecture of only (NULL: all of them). 0 with *ret NULL when
 * the chain does not tell only apart: the caller then summarizes that architecture itself. */
static int policy_view_live(Context *c, uint32_t tid, const PolicyArch *only, TaskPolicyReply *ret) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = manager_get_policy(bus, tid, ret);
        if (r < 0 || !only)
                return r;
        PolicyReport *rep = ret->report;
        for (size_t i = 0; i < rep->n_arches; i++)
                if (streq(rep->arches[i].name, only->name)) {
                        rep->arches[0] = rep->arches[i];
                        rep->n_arches = 1;
                        return 0;
                }
        task_policy_reply_done(ret);
        return 0;
}

/* The chain summarized here (a snapshot file, --format=oci, an architecture the daemon did not
 * list). */
static int policy_view_local(Context *c, uint32_t tid, const PolicyArch *only, TaskPolicy *p, TaskPolicyReply *ret) {
        int r = task_policy_load(c, c->file, tid, only, p);
        if (r < 0)
                return r == -ENOMEM ? log_oom() : r;
        ret->mode = p->mode;
        if (p->chain.n > 0 && !(ret->filters = calloc(p->chain.n, sizeof(uint64_t))))
                return log_oom();
        for (size_t i = 0; i < p->chain.n; i++)
                ret->filters[i] = p->chain.filters[i].meta.id;
        ret->n_filters = p->chain.n;
        r = policy_report_new(p->summary, &ret->report);
        return r == -ENOMEM ? log_oom() : r;
}

static int policy_run(Context *c, uint32_t tid) {
        _cleanup_(task_policy_done) TaskPolicy p = {};
        _cleanup_(task_policy_reply_done) TaskPolicyReply reply = {};
        const PolicyArch *only;
        bool oci = c->format && streq(c->format, "oci");

        int r = policy_arch_option(c, &only);
        if (r < 0)
                return r;
        if (c->format && !oci)
                return usage_error("Unknown format '%s' for policy: oci is the one there is", c->format);
        if (c->approximate && !oci)
                return usage_error("--approximate goes with --format=oci");
        if (oci && only)
                return usage_error("--format=oci takes every architecture: leave out --arch");
        if (oci) {
                r = task_policy_load(c, c->file, tid, NULL, &p);
                return r < 0 ? r : policy_print_oci(c, &p);
        }
        if (!c->file && (r = policy_view_live(c, tid, only, &reply)) < 0)
                return r;
        if (!reply.report && (r = policy_view_local(c, tid, only, &p, &reply)) < 0)
                return r;
        PolicyView v = { .tid = tid, .mode = reply.mode, .filters = reply.filters, .n_filters = reply.n_filters,
                         .report = reply.report, .source = c->file };
        if (c->json) {
                json_auto_t *doc = policy_json(&v);
                return json_print_document(doc);
        }
        return policy_print_table(&v, c->legend);
}

int verb_policy(Context *c, char **args, size_t n_args) {
        _cleanup_free_ char *file = NULL;
        const char *given = c->file;
        uint32_t tid;
        int r = parse_task_operand(args[0], &file, &tid);
        if (r < 0)
                return r;
        if (file && given)
                return usage_error("Give --file=FILE or FILE:TID, not both");
        c->file = file ?: given; /* FILE:TID is --file=FILE TID, as policy-diff takes it */
        r = policy_run(c, tid);
        c->file = given;
        return r;
}
