/* verbs-policy-diff.c: `policy-diff A B`: the system calls two tasks' chains decide differently,
 * each side a live task or a task of a snapshot file (FILE:TID) */
#include "verbs-policy-diff.h"

#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "output.h"
#include "policy/policy-diff.h"
#include "policy/policy-format.h"
#include "verbs-policy.h"

#define DIFF_DIFFERENT 1

/* "4711" (live) or "FILE:4711"; file is a pointer into the (copied) argument. */
static int parse_operand(const char *arg, char **ret_file, uint32_t *ret_tid) {
        const char *colon = strrchr(arg, ':');
        *ret_file = NULL;
        if (!colon)
                return parse_pid_arg("task id", arg, ret_tid);
        if (colon == arg)
                return usage_error("Missing snapshot file in '%s' (FILE:TID)", arg);
        int r = parse_pid_arg("task id", colon + 1, ret_tid);
        if (r < 0)
                return r;
        *ret_file = strndup(arg, (size_t) (colon - arg));
        return *ret_file ? 0 : log_oom();
}

typedef struct Difference {
        const PolicyArch *arch;
        const char *name; /* NULL: the numbers libseccomp does not name */
        const PolicyDecision *a, *b;
} Difference;

typedef struct Differences {
        Difference *items;
        size_t n, allocated;
} Differences;

static int compare_decisions(Arena *arena, Differences *d, const PolicyArch *arch, const char *name,
                             const PolicyDecision *a, const PolicyDecision *b) {
        int r = policy_decisions_diff(arena, a, b, false, NULL, 0);
        if (r <= 0)
                return r;
        if (GROW(d->items, d->allocated, d->n + 1) < 0)
                return -ENOMEM;
        d->items[d->n++] = (Difference) { .arch = arch, .name = name, .a = a, .b = b };
        return 0;
}

/* An architecture one side's summary has and the other's lacks is compared with an empty chain
 * there: cannot happen for two summaries of the same machine type, whose native and compat ABIs
 * are always in. */
static int compare_summaries(Arena *arena, const PolicySummary *a, const PolicySummary *b, Differences *d) {
        for (size_t i = 0; i < a->n_arches; i++) {
                const PolicyArchSummary *x = &a->arches[i], *y = policy_summary_find_arch(b, x->arch->arch);
                if (!y)
                        continue;
                for (size_t j = 0; j < x->n_entries && j < y->n_entries; j++) {
                        int r = compare_decisions(arena, d, x->arch, x->entries[j].syscall->name, x->entries[j].decision,
                                                  y->entries[j].decision);
                        if (r < 0)
                                return r;
                }
                int r = compare_decisions(arena, d, x->arch, NULL, x->other, y->other);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int print_differences(Arena *arena, const TaskPolicy *pa, const TaskPolicy *pb, const Differences *d,
                             bool legend) {
        _cleanup_free_ char *na = task_policy_name(pa), *nb = task_policy_name(pb);
        const PolicyArch *arch = NULL;
        if (legend)
                printf("A: %s\nB: %s\n", na ? na : "?", nb ? nb : "?");
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *a = policy_decision_string(arena, d->items[i].a);
                _cleanup_free_ char *b = policy_decision_string(arena, d->items[i].b);
                if (!a || !b)
                        return log_oom();
                if (d->items[i].arch != arch) {
                        arch = d->items[i].arch;
                        printf("\nArchitecture %s:\n", arch->name);
                }
                printf("%s\n  A: %s\n  B: %s\n", d->items[i].name ? d->items[i].name : "(other numbers)", a, b);
        }
        if (legend)
                printf("\n%zu system call%s decided differently.\n", d->n, d->n == 1 ? "" : "s");
        return output_flush();
}

static json_t *differences_json(Arena *arena, const Differences *d) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < d->n; i++) {
                json_t *x = json_pack("{s:s, s:o, s:o, s:o}", "architecture", d->items[i].arch->name, "syscall",
                                      d->items[i].name ? json_string(d->items[i].name) : json_null(), "a",
                                      policy_decision_json(arena, d->items[i].a), "b",
                                      policy_decision_json(arena, d->items[i].b));
                if (json_array_append_new(a, x) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a ? json_pack("{s:o}", "differences", a) : NULL;
}

int verb_policy_diff(Context *c, char **args, size_t n_args) {
        _cleanup_(task_policy_done) TaskPolicy pa = {}, pb = {};
        _cleanup_free_ char *fa = NULL, *fb = NULL;
        _cleanup_free_ Difference *items = NULL;
        const PolicyArch *only;
        uint32_t ta, tb;
        Differences d = {};
        Arena arena = {};

        int r = parse_operand(args[0], &fa, &ta);
        if (r < 0)
                return r;
        r = parse_operand(args[1], &fb, &tb);
        if (r < 0)
                return r;
        r = policy_arch_option(c, &only);
        if (r < 0)
                return r;
        r = task_policy_load(c, fa, ta, only, &pa);
        if (r < 0)
                return r;
        r = task_policy_load(c, fb, tb, only, &pb);
        if (r < 0)
                return r;
        r = compare_summaries(&arena, pa.summary, pb.summary, &d);
        items = d.items;
        if (r < 0) {
                arena_done(&arena);
                return ctl_error_errno(r, "Failed to compare the policies: %m");
        }
        if (c->json) {
                json_auto_t *doc = differences_json(&arena, &d);
                r = json_print_document(doc);
        } else
                r = print_differences(&arena, &pa, &pb, &d, c->legend);
        arena_done(&arena);
        return r < 0 ? r : d.n > 0 ? DIFF_DIFFERENT : 0;
}
