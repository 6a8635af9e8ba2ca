/* verbs-policy-diff.c: `policy-diff A B`: the system calls two tasks' chains decide differently,
 * each side a live task or a task of a snapshot file (FILE:TID) */
#include "verbs-policy-diff.h"

#include <inttypes.h>
#include <string.h>

#include "core/disasm.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "output.h"
#include "policy/policy-diff.h"
#include "policy/policy-format.h"
#include "verbs-policy.h"

#define DIFF_DIFFERENT 1

/* The same programs, instruction for instruction (strict mode included). */
static bool chains_identical(const TaskPolicy *a, const TaskPolicy *b) {
        if (a->n_progs != b->n_progs)
                return false;
        for (size_t i = 0; i < a->n_progs; i++)
                if (a->progs[i].len != b->progs[i].len ||
                    memcmp(a->progs[i].insns, b->progs[i].insns, a->progs[i].len * sizeof(struct sock_filter)) != 0)
                        return false;
        return true;
}

typedef struct Difference {
        const PolicyArch *arch;
        const char *name; /* NULL: the numbers libseccomp does not name */
        const PolicyDecision *a, *b;
        struct seccomp_data witness; /* an input the two chains decide differently */
        uint32_t va, vb;             /* what each chain gives on it */
} Difference;

typedef struct Differences {
        Difference *items;
        size_t n, allocated;
        const TaskPolicy *pa, *pb;
} Differences;

#define DIFF_CANDIDATES 16

/* A difference the analysis found, proven by evaluating both chains on its input. */
static bool difference_proven(const Differences *d, const PolicyDifference *x, uint32_t *va, uint32_t *vb) {
        *va = chain_evaluate(d->pa->progs, d->pa->n_progs, &x->witness).ret;
        *vb = chain_evaluate(d->pb->progs, d->pb->n_progs, &x->witness).ret;
        return *va != *vb;
}

static int compare_decisions(Arena *arena, Differences *d, const PolicyArch *arch, const char *name,
                             const PolicyDecision *a, const PolicyDecision *b) {
        PolicyDifference found[DIFF_CANDIDATES];
        int r = policy_decisions_diff(arena, a, b, false, found, ELEMENTSOF(found));
        if (r <= 0)
                return r;
        for (size_t i = 0; i < MIN((size_t) r, ELEMENTSOF(found)); i++) {
                uint32_t va, vb;
                if (!difference_proven(d, &found[i], &va, &vb))
                        continue;
                if (GROW(d->items, d->allocated, d->n + 1) < 0)
                        return -ENOMEM;
                d->items[d->n++] = (Difference) { .arch = arch, .name = name, .a = a, .b = b,
                                                  .witness = found[i].witness, .va = va, .vb = vb };
                return 0;
        }
        return 0;
}

/* An architecture one side's summary has and the other's lacks is compared with an empty chain
 * there: cannot happen for two summaries of the same machine type, whose native and compat ABIs
 * are always in. Two byte-identical chains never differ. */
static int compare_summaries(Arena *arena, const PolicySummary *a, const PolicySummary *b, Differences *d) {
        if (chains_identical(d->pa, d->pb))
                return 0;
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

/* "nr 308, arg0 0, arg1 0x2" (the arguments up to the last non-zero one, and ip when set). */
static void print_witness(const struct seccomp_data *w) {
        int last = -1;
        for (int i = 0; i < 6; i++)
                if (w->args[i])
                        last = i;
        printf("nr %d", w->nr);
        for (int i = 0; i <= last; i++)
                printf(", arg%d %#" PRIx64, i, (uint64_t) w->args[i]);
        if (w->instruction_pointer)
                printf(", ip %#" PRIx64, (uint64_t) w->instruction_pointer);
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
                char va[ACTION_STRING_MAX], vb[ACTION_STRING_MAX];
                printf("%s\n  A: %s\n  B: %s\n  e.g. ", d->items[i].name ? d->items[i].name : "(other numbers)", a, b);
                print_witness(&d->items[i].witness);
                printf(": A gives %s, B gives %s\n", action_to_string(d->items[i].va, va, sizeof(va)),
                       action_to_string(d->items[i].vb, vb, sizeof(vb)));
        }
        if (legend)
                printf("\n%zu system call%s decided differently.\n", d->n, d->n == 1 ? "" : "s");
        return output_flush();
}

/* The input, and what each chain gives on it; numbers as unsigned strings in hex (64-bit words
 * may exceed what a JSON double holds). */
static json_t *witness_json(const Difference *x) {
        char va[ACTION_STRING_MAX], vb[ACTION_STRING_MAX];
        json_t *args = json_array();
        for (size_t i = 0; args && i < 6; i++) {
                char buf[24];
                snprintf(buf, sizeof(buf), "%#" PRIx64, (uint64_t) x->witness.args[i]);
                if (json_array_append_new(args, json_string(buf)) < 0) {
                        json_decref(args);
                        return NULL;
                }
        }
        char ip[24];
        snprintf(ip, sizeof(ip), "%#" PRIx64, (uint64_t) x->witness.instruction_pointer);
        return args ? json_pack("{s:I, s:o, s:s, s:s, s:s}", "nr", (json_int_t) (uint32_t) x->witness.nr, "args", args,
                                "ip", ip, "a", action_to_string(x->va, va, sizeof(va)), "b",
                                action_to_string(x->vb, vb, sizeof(vb)))
                    : NULL;
}

static json_t *differences_json(Arena *arena, const Differences *d) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < d->n; i++) {
                json_t *x = json_pack("{s:s, s:o, s:o, s:o, s:o}", "architecture", d->items[i].arch->name, "syscall",
                                      d->items[i].name ? json_string(d->items[i].name) : json_null(), "a",
                                      policy_decision_json(arena, d->items[i].a), "b",
                                      policy_decision_json(arena, d->items[i].b), "witness", witness_json(&d->items[i]));
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
        Differences d = { .pa = &pa, .pb = &pb };
        Arena arena = {};

        int r = parse_task_operand(args[0], &fa, &ta);
        if (r < 0)
                return r;
        r = parse_task_operand(args[1], &fb, &tb);
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
