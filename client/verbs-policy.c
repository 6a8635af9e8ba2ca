/* verbs-policy.c: `policy TID`: everything a task's chain decides, for all arguments, as a table,
 * JSON, or an OCI profile; and what the policy verbs share */
#include "verbs-policy.h"

#include "disasm.h"
#include "json-out.h"
#include "live-forest.h"
#include "output.h"
#include "policy-format.h"
#include "policy-oci.h"
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

void task_policy_done(TaskPolicy *p) {
        chain_done(&p->chain);
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
        struct sock_filter strict[POLICY_STRICT_PROGRAM_MAX];
        _cleanup_free_ ChainProgram *progs = calloc(p->chain.n + 1, sizeof(ChainProgram));
        size_t n = p->chain.n;
        if (!progs)
                return log_oom();
        int r = chain_programs(&p->chain, progs);
        if (r < 0)
                return r;
        if (p->mode == TASK_MODE_STRICT) {
                progs[0] = (ChainProgram) { .insns = strict, .len = policy_strict_program(strict) };
                n = 1;
        }
        r = policy_summarize(progs, n, only, &p->summary);
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
        return r < 0 ? r : task_policy_summarize(ret, only);
}

/* Every filter of f gets its instructions from the daemon, checked against its digest. */
static int forest_fetch_programs(sd_bus *bus, Forest *f) {
        for (size_t i = 0; i < f->n_filters; i++) {
                Filter *x = f->filters[i];
                _cleanup_(filter_detail_done) FilterDetail d = {};
                uint8_t digest[PROG_DIGEST_SIZE];
                _cleanup_free_ char *why = NULL;
                int r = manager_get_filter(bus, x->id, &d);
                if (r < 0)
                        return r;
                if (filter_detail_lacks_program(&d))
                        return ctl_error_errno(-ENODATA, "The program of filter %" PRIu64 " was not kept: the uid "
                                               "that installed it is over sectreed's filter budget.", x->id);
                prog_digest(d.program, d.n_program, digest);
                if (memcmp(digest, x->digest, sizeof(digest)) != 0)
                        return ctl_error_errno(-EBADMSG, "Filter %" PRIu64 " changed while it was read.", x->id);
                if (prog_validate(d.program, d.n_program, &why) < 0)
                        return ctl_error_errno(-EBADMSG, "The program of filter %" PRIu64 " is not valid: %s", x->id,
                                               why ? why : "?");
                x->insns = TAKE_PTR(d.program);
                x->len = d.n_program;
        }
        return 0;
}

int policy_forest_load(Context *c, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        sd_bus *bus;
        if (c->file)
                return snapshot_file_load(c->file, ret, NULL);
        int r = ctl_bus(c, &bus);
        if (r >= 0)
                r = live_forest_fetch(bus, 0, &f);
        if (r >= 0)
                r = forest_fetch_programs(bus, f);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

/* ---- policy TID: the table ---- */

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

static Group entry_group(const PolicyDecision *d) {
        uint32_t v;
        if (!policy_decision_unconditional(d, &v))
                return GROUP_CONDITIONAL;
        v &= SECCOMP_RET_ACTION_FULL;
        return v == SECCOMP_RET_ALLOW || v == SECCOMP_RET_LOG ? GROUP_ALLOWED : GROUP_DENIED;
}

/* The case shown as "otherwise": the one with the most conditions (exact: the cases partition). */
static size_t otherwise_case(const PolicyCaseView *views, size_t n) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
                if (views[i].n_conditions >= views[best].n_conditions)
                        best = i;
        return best;
}

/* A row of the table: SYSCALL ACTION, and CONDITION in the table of the conditional ones. */
static int add_case_row(Table *t, const char *name, const PolicyCaseView *v, bool otherwise) {
        _cleanup_free_ char *action = policy_case_action_string(v->c);
        _cleanup_free_ char *cond = otherwise || v->n_conditions == 0 ? NULL : policy_case_view_string(v);
        if (!action || (!otherwise && v->n_conditions && !cond))
                return -ENOMEM;
        const char *cells[] = { name, action, otherwise ? "otherwise" : cond ? cond : "" };
        return table_add_row(t, cells);
}

/* One syscall's rows: its action, or each case (the "otherwise" one last). */
static int add_decision_rows(Arena *arena, Table *t, const char *name, const PolicyDecision *d) {
        PolicyCaseView *v = arena_alloc(arena, (d->n_cases + 1) * sizeof(PolicyCaseView));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < d->n_cases; i++) {
                int r = policy_case_view(arena, d, &d->cases[i], &v[i]);
                if (r < 0)
                        return r;
        }
        size_t last = d->n_cases > 1 ? otherwise_case(v, d->n_cases) : SIZE_MAX;
        for (size_t i = 0, row = 0; i < d->n_cases; i++) {
                if (i == last)
                        continue;
                int r = add_case_row(t, row++ == 0 ? name : "", &v[i], false);
                if (r < 0)
                        return r;
        }
        return last == SIZE_MAX ? 0 : add_case_row(t, d->n_cases == 1 ? name : "", &v[last], true);
}

static int cmp_denied(const void *a, const void *b) {
        const PolicyEntry *x = *(const PolicyEntry *const *) a, *y = *(const PolicyEntry *const *) b;
        uint32_t vx = 0, vy = 0;
        (void) policy_decision_unconditional(x->decision, &vx);
        (void) policy_decision_unconditional(y->decision, &vy);
        if (vx != vy) /* by action, the most restrictive first */
                return (int32_t) vx < (int32_t) vy ? -1 : 1;
        return strcmp(x->syscall->name, y->syscall->name);
}

static int cmp_names(const void *a, const void *b) {
        const PolicyEntry *x = *(const PolicyEntry *const *) a, *y = *(const PolicyEntry *const *) b;
        return strcmp(x->syscall->name, y->syscall->name);
}

static int print_group(const PolicyArchSummary *a, Group g, bool legend) {
        static const char *const headers[] = { "SYSCALL", "ACTION", "CONDITION" };
        _cleanup_free_ const PolicyEntry **entries = calloc(a->n_entries + 1, sizeof(PolicyEntry *));
        /* the groups of one action per syscall have no CONDITION column */
        _cleanup_(table_freep) Table *t = table_new(headers, g == GROUP_CONDITIONAL ? 3 : 2, 0);
        Arena arena = {};
        size_t n = 0;
        int r = 0;

        if (!entries || !t)
                return log_oom();
        for (size_t i = 0; i < a->n_entries; i++)
                if (entry_group(a->entries[i].decision) == g)
                        entries[n++] = &a->entries[i];
        if (n == 0)
                return 0;
        qsort(entries, n, sizeof(*entries), g == GROUP_DENIED ? cmp_denied : cmp_names);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = add_decision_rows(&arena, t, entries[i]->syscall->name, entries[i]->decision);
        arena_done(&arena);
        if (r < 0)
                return log_oom();
        if (legend)
                printf("\n%s (%zu):\n", group_titles[g], n);
        table_print(t, stdout, legend);
        return 0;
}

static int print_other(const PolicyArchSummary *a) {
        Arena arena = {};
        _cleanup_free_ char *s = policy_decision_string(&arena, a->other);
        arena_done(&arena);
        if (!s)
                return log_oom();
        printf("\nOther system call numbers (those libseccomp does not name for %s): %s\n", a->arch->name, s);
        return 0;
}

static int print_arch(const PolicyArchSummary *a, bool native, bool legend) {
        char action[ACTION_STRING_MAX];
        if (a->uniform) {
                printf("%sArchitecture %s%s: %s for every system call.\n", native ? "" : "\n", a->arch->name,
                       native ? " (native)" : "", action_to_string(a->uniform_ret, action, sizeof(action)));
                return 0;
        }
        printf("%sArchitecture %s%s:\n", native ? "" : "\n", a->arch->name, native ? " (native)" : "");
        for (Group g = 0; g < _GROUP_MAX; g++) {
                int r = print_group(a, g, legend);
                if (r < 0)
                        return r;
        }
        return print_other(a);
}

static void print_task_line(const TaskPolicy *p) {
        _cleanup_free_ char *name = task_policy_name(p);
        if (p->mode == TASK_MODE_STRICT)
                printf("The %s is in strict mode: read, write, exit and sigreturn only.\n\n", name ? name : "task");
        else if (p->chain.n == 0)
                printf("The %s runs under no filter: every system call is allowed.\n\n", name ? name : "task");
        else {
                printf("The %s runs under %zu filter%s (newest first):", name ? name : "task", p->chain.n,
                       p->chain.n == 1 ? "" : "s");
                for (size_t i = 0; i < p->chain.n; i++)
                        printf(" %" PRIu64, p->chain.filters[i].meta.id);
                printf("\n\n");
        }
}

static int policy_print_table(const TaskPolicy *p, bool legend) {
        if (legend)
                print_task_line(p);
        for (size_t i = 0; i < p->summary->n_arches; i++) {
                int r = print_arch(&p->summary->arches[i], p->summary->arches[i].arch == policy_arch_native(), legend);
                if (r < 0)
                        return r;
        }
        return output_flush();
}

/* ---- policy TID: JSON ---- */

static json_t *decision_json(Arena *arena, const PolicyDecision *d) {
        uint32_t v;
        bool unconditional = policy_decision_unconditional(d, &v);
        char action[ACTION_STRING_MAX];
        return json_pack("{s:o, s:o}", "action",
                         unconditional ? json_string(action_to_string(v, action, sizeof(action))) : json_null(),
                         "cases", policy_decision_json(arena, d));
}

static json_t *arch_json(Arena *arena, const PolicyArchSummary *a) {
        json_t *syscalls = json_array();
        char action[ACTION_STRING_MAX];
        for (size_t i = 0; syscalls && i < a->n_entries; i++) {
                json_t *x = decision_json(arena, a->entries[i].decision);
                if (json_set(x, "name", json_string(a->entries[i].syscall->name)) < 0 ||
                    json_set(x, "nr", json_integer(a->entries[i].syscall->nr)) < 0 ||
                    json_array_append_new(syscalls, x) < 0) {
                        json_decref(syscalls);
                        return NULL;
                }
        }
        return json_pack("{s:s, s:o, s:o, s:o}", "architecture", a->arch->name, "uniform",
                         a->uniform ? json_string(action_to_string(a->uniform_ret, action, sizeof(action))) : json_null(),
                         "other", decision_json(arena, a->other), "syscalls", syscalls);
}

static json_t *policy_json(const TaskPolicy *p) {
        Arena arena = {};
        json_t *ids = json_array(), *arches = json_array();
        for (size_t i = 0; ids && i < p->chain.n; i++)
                if (json_array_append_new(ids, json_integer((json_int_t) p->chain.filters[i].meta.id)) < 0)
                        goto fail;
        for (size_t i = 0; arches && i < p->summary->n_arches; i++)
                if (json_array_append_new(arches, arch_json(&arena, &p->summary->arches[i])) < 0)
                        goto fail;
        arena_done(&arena);
        return json_pack("{s:I, s:s, s:o, s:o}", "tid", (json_int_t) p->tid, "mode", task_mode_to_string(p->mode),
                         "filters", ids, "architectures", arches);
fail:
        arena_done(&arena);
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
                ctl_error("The policy of %s cannot be written as an OCI profile exactly:", name ? name : "the task");
                for (char **x = problems; x && *x; x++)
                        log_error("  %s", *x);
                log_error("With --approximate the profile is written anyway, and decides what is listed here "
                          "otherwise than the chain (a condition it cannot state gives the most restrictive of the "
                          "actions).");
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

int verb_policy(Context *c, char **args, size_t n_args) {
        _cleanup_(task_policy_done) TaskPolicy p = {};
        const PolicyArch *only;
        uint32_t tid;
        bool oci = c->format && streq(c->format, "oci");

        int r = parse_pid_arg("task id", args[0], &tid);
        if (r >= 0)
                r = policy_arch_option(c, &only);
        if (r < 0)
                return r;
        if (c->format && !oci)
                return usage_error("Unknown format '%s' for policy: oci is the one there is", c->format);
        if (c->approximate && !oci)
                return usage_error("--approximate goes with --format=oci");
        if (oci && only)
                return usage_error("--format=oci takes every architecture: leave out --arch");
        r = task_policy_load(c, c->file, tid, only, &p);
        if (r < 0)
                return r;
        if (oci)
                return policy_print_oci(c, &p);
        if (c->json) {
                json_auto_t *doc = policy_json(&p);
                return json_print_document(doc);
        }
        return policy_print_table(&p, c->legend);
}
