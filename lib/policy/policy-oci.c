/* policy-oci.c: a chain's effective policy as an OCI runtime-spec linux.seccomp object */
#include "policy/policy-oci.h"

#include <errno.h>
#include <stdio.h>

#include "core/disasm.h"
#include "core/util.h"
#include "policy/policy-diff.h"
#include "policy/policy-format.h"
#include "policy/policy-profile.h"

#define OCI_PIECES_MAX 256  /* single comparisons one argument's set may take */
#define OCI_RULES_MAX 4096  /* rules one condition may take */
#define OCI_ARGS 6

/* libseccomp's bad-architecture action unless told otherwise (SCMP_ACT_KILL): what a runtime
 * does with an architecture the profile does not list. */
#define OCI_BADARCH_RET SECCOMP_RET_KILL_THREAD

/* ---- problems ---- */

typedef struct Oci {
        const PolicySummary *summary;
        bool approximate;
        Arena arena;
        char **problems;
        size_t n_problems;
        uint32_t default_ret;
        bool refused; /* libseccomp refused the last profile built: it is never written */
        struct OciRule *rules;
        size_t n_rules, allocated_rules;
} Oci;

_printf_(2, 3) static int oci_problem(Oci *o, const char *format, ...) {
        char *s = NULL;
        va_list ap;
        va_start(ap, format);
        int r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        char **l = realloc(o->problems, (o->n_problems + 2) * sizeof(char *));
        if (!l) {
                free(s);
                return -ENOMEM;
        }
        l[o->n_problems++] = s;
        l[o->n_problems] = NULL;
        o->problems = l;
        return 0;
}

/* ---- actions ---- */

typedef struct OciActionName {
        uint32_t action;
        const char *name;
        bool errno_ret; /* the data goes into errnoRet */
} OciActionName;

static const OciActionName oci_actions[] = {
        { SECCOMP_RET_KILL_PROCESS, "SCMP_ACT_KILL_PROCESS", false },
        { SECCOMP_RET_KILL_THREAD, "SCMP_ACT_KILL_THREAD", false },
        { SECCOMP_RET_TRAP, "SCMP_ACT_TRAP", false },
        { SECCOMP_RET_ERRNO, "SCMP_ACT_ERRNO", true },
        { SECCOMP_RET_USER_NOTIF, "SCMP_ACT_NOTIFY", false },
        { SECCOMP_RET_TRACE, "SCMP_ACT_TRACE", true },
        { SECCOMP_RET_LOG, "SCMP_ACT_LOG", false },
        { SECCOMP_RET_ALLOW, "SCMP_ACT_ALLOW", false },
};

static const OciActionName *oci_action(uint32_t ret) {
        for (size_t i = 0; i < ELEMENTSOF(oci_actions); i++)
                if (oci_actions[i].action == (policy_ret_effective(ret) & SECCOMP_RET_ACTION_FULL))
                        return &oci_actions[i];
        return NULL;
}

/* The largest errno libseccomp takes (it refuses 4095, the kernel's MAX_ERRNO). */
#define OCI_MAX_ERRNO 4094

/* The value a runtime makes of the action the profile states for ret: the data only where the
 * format keeps it (errnoRet), an errno at most what libseccomp takes. */
static uint32_t oci_stated_ret(uint32_t ret) {
        const OciActionName *a = oci_action(ret);
        if (!a)
                return SECCOMP_RET_KILL_PROCESS;
        uint32_t v = policy_ret_effective(a->action | (a->errno_ret ? ret & SECCOMP_RET_DATA : 0));
        if (a->action == SECCOMP_RET_ERRNO)
                v = SECCOMP_RET_ERRNO | MIN(v & SECCOMP_RET_DATA, (uint32_t) OCI_MAX_ERRNO);
        return v;
}

/* Can the profile give exactly this value? (what is: a syscall or architecture) */
static int oci_check_ret(Oci *o, const char *what, uint32_t ret, bool *ok) {
        char buf[ACTION_STRING_MAX];
        uint32_t action = ret & SECCOMP_RET_ACTION_FULL, data = ret & SECCOMP_RET_DATA;
        *ok = true;
        if (action == SECCOMP_RET_ERRNO && data > OCI_MAX_ERRNO) {
                *ok = false;
                return oci_problem(o, "%s: %s: the kernel returns errno %d, which libseccomp cannot state (at most %d)",
                                   what, action_to_string(ret, buf, sizeof(buf)), POLICY_MAX_ERRNO, OCI_MAX_ERRNO);
        }
        if (action == SECCOMP_RET_TRAP && data != 0) {
                *ok = false;
                return oci_problem(o, "%s: %s: the format has no TRAP data", what, action_to_string(ret, buf, sizeof(buf)));
        }
        if (!oci_action(ret) || policy_ret_effective(ret) != policy_ret_effective(oci_action(ret)->action | data)) {
                *ok = false;
                return oci_problem(o, "%s: %s is not an action the format has (the kernel kills the process)", what,
                                   action_to_string(ret, buf, sizeof(buf)));
        }
        return 0;
}

/* ---- sets as masked equalities ---- */

/* (x & mask) == value: a "cube" of values, over 32 bits (one half) or 64 (a field). */
typedef struct Cube {
        uint64_t mask, value;
} Cube;

typedef struct Cubes {
        Cube items[OCI_PIECES_MAX];
        size_t n;
        bool overflow;
} Cubes;

static void cubes_add(Cubes *c, uint64_t mask, uint64_t value) {
        if (c->n == OCI_PIECES_MAX)
                c->overflow = true;
        else
                c->items[c->n++] = (Cube) { mask, value & mask };
}

/* [lo, hi] of a bits-wide value as aligned blocks, each a cube of its prefix. */
static void cubes_add_range(Cubes *c, uint64_t lo, uint64_t hi, unsigned bits) {
        unsigned __int128 a = lo, b = hi;
        uint64_t width = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
        while (a <= b && !c->overflow) {
                unsigned k = a == 0 ? bits : (unsigned) __builtin_ctzll((uint64_t) a);
                if (k > bits)
                        k = bits;
                while (k > 0 && a + (((unsigned __int128) 1 << k) - 1) > b)
                        k--;
                uint64_t low = k >= 64 ? UINT64_MAX : (UINT64_C(1) << k) - 1;
                cubes_add(c, width & ~low, (uint64_t) a);
                a += (unsigned __int128) 1 << k;
        }
}

/* c minus (x & mask) == value: each cube that meets it splits, bit by bit of mask. */
static void cubes_exclude(Cubes *c, uint64_t mask, uint64_t value) {
        Cubes *out = calloc(1, sizeof(Cubes));
        if (!out) {
                c->overflow = true;
                return;
        }
        out->overflow = c->overflow;
        for (size_t i = 0; i < c->n; i++) {
                Cube x = c->items[i];
                if (x.mask & mask & (x.value ^ value)) { /* they do not meet */
                        cubes_add(out, x.mask, x.value);
                        continue;
                }
                uint64_t fixed = x.mask, fixed_value = x.value;
                for (uint64_t free_bits = mask & ~x.mask; free_bits; free_bits &= free_bits - 1) {
                        uint64_t b = free_bits & -free_bits;
                        cubes_add(out, fixed | b, fixed_value | (~value & b));
                        fixed |= b;
                        fixed_value |= value & b;
                }
        }
        *c = *out;
        free(out);
}

/* c and (x & mask) == value. */
static void cubes_restrict(Cubes *c, uint64_t mask, uint64_t value) {
        size_t kept = 0;
        for (size_t i = 0; i < c->n; i++) {
                Cube x = c->items[i];
                if (x.mask & mask & (x.value ^ value))
                        continue;
                c->items[kept++] = (Cube) { x.mask | mask, (x.value | value) & (x.mask | mask) };
        }
        c->n = kept;
}

/* The values of one half of an argument (a RANGES or WORD constraint; NULL: any). */
static void cubes_of_half(const PolicyConstraint *k, Cubes *c) {
        c->n = 0;
        c->overflow = false;
        if (!k) {
                cubes_add(c, 0, 0);
                return;
        }
        if (k->kind == CONSTRAINT_RANGES) {
                for (size_t i = 0; i < k->n_intervals; i++)
                        cubes_add_range(c, k->intervals[i].lo, k->intervals[i].hi, 32);
                return;
        }
        const WordDomain *d = &k->domain;
        cubes_add_range(c, d->lo, d->hi, 32);
        cubes_restrict(c, d->known_mask, d->known_value);
        for (const WordExcl *e = d->excl; e != k->excl_base && d->lo != d->hi; e = e->next)
                cubes_exclude(c, e->mask, e->value);
}

/* ---- comparisons of one argument ---- */

typedef struct OciCmp {
        const char *op; /* "SCMP_CMP_EQ" ...; NULL: no comparison on this argument */
        uint64_t value, value_two;
} OciCmp;

typedef struct Pieces {
        OciCmp items[OCI_PIECES_MAX];
        size_t n;
        bool overflow;
} Pieces;

static void pieces_add(Pieces *p, OciCmp c) {
        if (p->n == OCI_PIECES_MAX)
                p->overflow = true;
        else
                p->items[p->n++] = c;
}

static OciCmp cmp_cube(uint64_t mask, uint64_t value) {
        if (mask == UINT64_MAX)
                return (OciCmp) { "SCMP_CMP_EQ", value, 0 };
        return (OciCmp) { "SCMP_CMP_MASKED_EQ", mask, value & mask };
}

/* A FIELD constraint: its intervals, each one comparison where one states it. */
static void pieces_of_field(const PolicyConstraint *k, Pieces *p) {
        const PolicyInterval *in = k->intervals;
        if (k->n_intervals == 2 && in[0].lo == 0 && in[1].hi == UINT64_MAX && in[1].lo == in[0].hi + 2) {
                pieces_add(p, (OciCmp) { "SCMP_CMP_NE", in[0].hi + 1, 0 });
                return;
        }
        for (size_t i = 0; i < k->n_intervals; i++) {
                if (in[i].lo == in[i].hi)
                        pieces_add(p, (OciCmp) { "SCMP_CMP_EQ", in[i].lo, 0 });
                else if (in[i].lo == 0)
                        pieces_add(p, (OciCmp) { "SCMP_CMP_LE", in[i].hi, 0 });
                else if (in[i].hi == UINT64_MAX)
                        pieces_add(p, (OciCmp) { "SCMP_CMP_GE", in[i].lo, 0 });
                else {
                        _cleanup_free_ Cubes *c = calloc(1, sizeof(Cubes));
                        if (!c) {
                                p->overflow = true;
                                return;
                        }
                        cubes_add_range(c, in[i].lo, in[i].hi, 64);
                        p->overflow = p->overflow || c->overflow;
                        for (size_t j = 0; j < c->n; j++)
                                pieces_add(p, cmp_cube(c->items[j].mask, c->items[j].value));
                }
        }
}

/* Two halves: every pair of their cubes is one masked equality of the argument. */
static void pieces_of_halves(const PolicyConstraint *hi, const PolicyConstraint *lo, Pieces *p) {
        _cleanup_free_ Cubes *h = calloc(1, sizeof(Cubes)), *l = calloc(1, sizeof(Cubes));
        if (!h || !l) {
                p->overflow = true;
                return;
        }
        cubes_of_half(hi, h);
        cubes_of_half(lo, l);
        p->overflow = h->overflow || l->overflow;
        for (size_t i = 0; i < h->n; i++)
                for (size_t j = 0; j < l->n; j++)
                        pieces_add(p, cmp_cube(h->items[i].mask << 32 | l->items[j].mask,
                                               h->items[i].value << 32 | l->items[j].value));
}

/* ---- rules ---- */

typedef struct OciRule {
        uint32_t ret;
        OciCmp args[OCI_ARGS];
        const char **names;
        size_t n_names;
} OciRule;

static bool rule_same(const OciRule *r, uint32_t ret, const OciCmp *args) {
        if (r->ret != ret)
                return false;
        for (size_t i = 0; i < OCI_ARGS; i++) {
                if (!r->args[i].op != !args[i].op)
                        return false;
                if (args[i].op && (!streq(r->args[i].op, args[i].op) || r->args[i].value != args[i].value ||
                                   r->args[i].value_two != args[i].value_two))
                        return false;
        }
        return true;
}

/* name: static (libseccomp's names live as long as the process). */
static int oci_rule_add(Oci *o, const char *name, uint32_t ret, const OciCmp *args) {
        OciRule *r = NULL;
        ret = oci_stated_ret(ret);
        for (size_t i = 0; i < o->n_rules && !r; i++)
                if (rule_same(&o->rules[i], ret, args))
                        r = &o->rules[i];
        if (!r) {
                if (GROW(o->rules, o->allocated_rules, o->n_rules + 1) < 0)
                        return -ENOMEM;
                r = &o->rules[o->n_rules++];
                *r = (OciRule) { .ret = ret };
                memcpy(r->args, args, sizeof(r->args));
        }
        for (size_t i = 0; i < r->n_names; i++)
                if (streq(r->names[i], name))
                        return 0;
        const char **names = realloc(r->names, (r->n_names + 2) * sizeof(char *));
        if (!names)
                return -ENOMEM;
        r->names = names;
        r->names[r->n_names++] = name;
        r->names[r->n_names] = NULL;
        return 0;
}

/* One condition of a case: the comparisons of each argument, every combination one rule.
 * Returns 1 when they would be too many (a problem is recorded). */
static int oci_condition_rules(Oci *o, const char *name, uint32_t ret, const PolicyCondition *cond) {
        const PolicyConstraint *field[OCI_ARGS] = {}, *hi[OCI_ARGS] = {}, *lo[OCI_ARGS] = {};
        _cleanup_free_ Pieces *pieces = calloc(OCI_ARGS, sizeof(Pieces));
        size_t total = 1;
        int r = 0;

        if (!pieces)
                return -ENOMEM;
        for (size_t i = 0; i < cond->n_constraints; i++) {
                const PolicyConstraint *k = &cond->constraints[i];
                bool high = false;
                int f = k->kind == CONSTRAINT_FIELD ? (int) k->field : policy_word_field(k->word, &high);
                if (f < 0 || f >= OCI_ARGS) /* oci_check_decision() says so */
                        return -EINVAL;
                if (k->kind == CONSTRAINT_FIELD)
                        field[f] = k;
                else if (high)
                        hi[f] = k;
                else
                        lo[f] = k;
        }
        for (size_t a = 0; a < OCI_ARGS; a++) {
                if (field[a])
                        pieces_of_field(field[a], &pieces[a]);
                else if (hi[a] || lo[a])
                        pieces_of_halves(hi[a], lo[a], &pieces[a]);
                else
                        pieces_add(&pieces[a], (OciCmp) {});
                total *= pieces[a].n;
                if (pieces[a].overflow || total > OCI_RULES_MAX) {
                        r = oci_problem(o, "%s: a condition on %s takes more than %d rules", name,
                                        policy_field_name((unsigned) a), OCI_RULES_MAX);
                        return r < 0 ? r : 1;
                }
        }
        for (size_t k = 0; r >= 0 && k < total; k++) {
                OciCmp args[OCI_ARGS];
                size_t rest = k;
                for (size_t a = 0; a < OCI_ARGS; a++) {
                        args[a] = pieces[a].items[rest % pieces[a].n];
                        rest /= pieces[a].n;
                }
                r = oci_rule_add(o, name, ret, args);
        }
        return r;
}

/* ---- one syscall ---- */

/* Why a constraint cannot be stated, or NULL. */
static const char *constraint_problem(const PolicyConstraint *k) {
        bool high;
        if (k->kind == CONSTRAINT_OPAQUE)
                return "a condition outside the forms the format has";
        int f = k->kind == CONSTRAINT_FIELD ? (int) k->field : policy_word_field(k->word, &high);
        if (f == POLICY_FIELD_IP)
                return "a condition on the instruction pointer";
        if (f < 0)
                return "a condition on the system call number or architecture";
        return NULL;
}

/* Records why a case cannot be stated; returns 1 if it cannot, 0 if it can. */
static int oci_check_case(Oci *o, const char *name, const PolicyDecision *dec, const PolicyCase *c, PolicyCaseView *v) {
        char action[ACTION_STRING_MAX];
        uint32_t ret;
        bool ok;
        int r;

        if (!policy_case_constant(c, &ret)) {
                r = oci_problem(o, "%s: the action is computed from the arguments", name);
                return r < 0 ? r : 1;
        }
        if ((r = oci_check_ret(o, name, ret, &ok)) < 0)
                return r;
        if (!ok)
                return 1;
        if ((r = policy_case_view(&o->arena, dec, c, v)) < 0)
                return r;
        for (size_t j = 0; j < v->n_conditions; j++)
                for (size_t k = 0; k < v->conditions[j].n_constraints; k++) {
                        const char *why = constraint_problem(&v->conditions[j].constraints[k]);
                        if (!why)
                                continue;
                        _cleanup_free_ char *text = policy_case_view_string(v);
                        r = oci_problem(o, "%s: %s (%s if %s)", name, why, action_to_string(ret, action, sizeof(action)),
                                        text ? text : "?");
                        return r < 0 ? r : 1;
                }
        return 0;
}

/* The most restrictive value a decision can give: what --approximate uses for all of it. */
static uint32_t decision_most_restrictive(const PolicyDecision *dec) {
        uint32_t best = SECCOMP_RET_ALLOW;
        for (size_t i = 0; i < dec->n_cases; i++) {
                uint32_t v = SECCOMP_RET_KILL_PROCESS; /* computed values: the worst they could be */
                (void) policy_case_constant(&dec->cases[i], &v);
                if (action_outranks(v, best))
                        best = v;
        }
        return oci_action(best) ? policy_ret_effective(best) : SECCOMP_RET_KILL_PROCESS;
}

static int oci_syscall(Oci *o, const char *name, const PolicyDecision *dec) {
        static const OciCmp none[OCI_ARGS] = {};
        PolicyCaseView *views = arena_alloc(&o->arena, (dec->n_cases + 1) * sizeof(PolicyCaseView));
        size_t bad = 0;
        int r;

        if (!views)
                return -ENOMEM;
        for (size_t i = 0; i < dec->n_cases; i++) {
                r = oci_check_case(o, name, dec, &dec->cases[i], &views[i]);
                if (r < 0)
                        return r;
                bad += r;
        }
        if (bad || dec->n_cases == 1) {
                uint32_t ret = bad ? decision_most_restrictive(dec) : 0;
                if (!bad)
                        (void) policy_case_constant(&dec->cases[0], &ret);
                return oci_stated_ret(ret) == o->default_ret ? 0 : oci_rule_add(o, name, ret, none);
        }
        for (size_t i = 0; i < dec->n_cases; i++) {
                uint32_t ret;
                (void) policy_case_constant(&dec->cases[i], &ret);
                if (oci_stated_ret(ret) == o->default_ret)
                        continue;
                for (size_t j = 0; j < views[i].n_conditions; j++) {
                        r = oci_condition_rules(o, name, ret, &views[i].conditions[j]);
                        if (r < 0)
                                return r;
                        if (r > 0) /* too many rules: approximate the whole syscall */
                                return oci_rule_add(o, name, decision_most_restrictive(dec), none);
                }
        }
        return 0;
}

/* ---- architectures and the default ---- */

static const char *const scmp_arch_names[][2] = {
        { "x86_64", "SCMP_ARCH_X86_64" }, { "x86", "SCMP_ARCH_X86" }, { "x32", "SCMP_ARCH_X32" },
        { "aarch64", "SCMP_ARCH_AARCH64" }, { "arm", "SCMP_ARCH_ARM" }, { "riscv64", "SCMP_ARCH_RISCV64" },
        { "ppc64le", "SCMP_ARCH_PPC64LE" }, { "ppc64", "SCMP_ARCH_PPC64" }, { "ppc", "SCMP_ARCH_PPC" },
        { "s390x", "SCMP_ARCH_S390X" }, { "s390", "SCMP_ARCH_S390" }, { "mips", "SCMP_ARCH_MIPS" },
        { "mipsel", "SCMP_ARCH_MIPSEL" }, { "mips64", "SCMP_ARCH_MIPS64" }, { "mipsel64", "SCMP_ARCH_MIPSEL64" },
        { "mips64n32", "SCMP_ARCH_MIPS64N32" }, { "mipsel64n32", "SCMP_ARCH_MIPSEL64N32" },
        { "parisc", "SCMP_ARCH_PARISC" }, { "parisc64", "SCMP_ARCH_PARISC64" },
};

static const char *scmp_arch_name(const PolicyArch *a) {
        for (size_t i = 0; i < ELEMENTSOF(scmp_arch_names); i++)
                if (streq(scmp_arch_names[i][0], a->name))
                        return scmp_arch_names[i][1];
        return NULL;
}

/* Which architectures the profile lists: those that tell syscalls apart. One the chain refuses
 * as a whole is left out: a runtime applies its bad-architecture action to it. */
static int oci_arches(Oci *o, const PolicyArchSummary **listed, size_t *n_listed) {
        char action[ACTION_STRING_MAX];
        *n_listed = 0;
        for (size_t i = 0; i < o->summary->n_arches; i++) {
                const PolicyArchSummary *a = &o->summary->arches[i];
                if (i > 0 && a->uniform) {
                        if (policy_ret_effective(a->uniform_ret) != OCI_BADARCH_RET &&
                            oci_problem(o, "architecture %s: the chain answers every call with %s; a runtime kills the "
                                           "thread for architectures the profile does not list",
                                        a->arch->name, action_to_string(a->uniform_ret, action, sizeof(action))) < 0)
                                return -ENOMEM;
                        continue;
                }
                listed[(*n_listed)++] = a;
        }
        return 0;
}

/* defaultAction: what the listed architectures do with the numbers libseccomp does not name. */
static int oci_default(Oci *o, const PolicyArchSummary *const *listed, size_t n_listed) {
        uint32_t ret = 0;
        bool ok;
        for (size_t i = 0; i < n_listed; i++) {
                const PolicyDecision *d = listed[i]->other;
                uint32_t v;
                if (!policy_decision_unconditional(d, &v)) {
                        if (oci_problem(o, "architecture %s: the numbers libseccomp does not name are decided by number "
                                           "or argument, the format has one default action", listed[i]->arch->name) < 0)
                                return -ENOMEM;
                        v = decision_most_restrictive(d);
                }
                if (i == 0)
                        ret = v;
                else if (policy_ret_effective(v) != policy_ret_effective(ret) &&
                         oci_problem(o, "architecture %s: the numbers libseccomp does not name get another action "
                                        "than on %s", listed[i]->arch->name, listed[0]->arch->name) < 0)
                        return -ENOMEM;
        }
        int r = oci_check_ret(o, "defaultAction", ret, &ok);
        if (r < 0)
                return r;
        o->default_ret = oci_stated_ret(ok ? ret : decision_most_restrictive(listed[0]->other));
        return 0;
}

/* Rules from the first listed architecture that names each syscall (the native one for most):
 * libseccomp turns them into each architecture's numbers and argument sizes, and
 * oci_verify() checks what that gives. */
static int oci_syscalls(Oci *o, const PolicyArchSummary *const *listed, size_t n_listed) {
        for (size_t i = 0; i < n_listed; i++)
                for (size_t j = 0; j < listed[i]->n_entries; j++) {
                        const PolicyEntry *e = &listed[i]->entries[j];
                        bool seen = false;
                        for (size_t k = 0; k < i && !seen; k++)
                                seen = policy_arch_summary_find(listed[k], e->syscall->name);
                        if (seen)
                                continue;
                        int r = oci_syscall(o, e->syscall->name, e->decision);
                        if (r < 0)
                                return r;
                }
        return 0;
}

#define OCI_DIFFERENCES_LISTED 8

/* Where the built filter decides otherwise than the chain, a problem (with an example). */
static int oci_compare_decisions(Oci *o, const char *name, const char *arch, const PolicyDecision *chain,
                                 const PolicyDecision *profile, size_t *n_differ) {
        PolicyDifference d;
        char a[ACTION_STRING_MAX], b[ACTION_STRING_MAX];
        int r = policy_decisions_diff(&o->arena, chain, profile, true, &d, 1);
        if (r <= 0)
                return r;
        if ((*n_differ)++ >= OCI_DIFFERENCES_LISTED)
                return 0;
        return oci_problem(o, "%s: on %s the profile gives %s where the chain gives %s (e.g. nr %" PRIu32 ", arg0 %#" PRIx64
                              ", arg1 %#" PRIx64 ", arg2 %#" PRIx64 ")",
                           name, arch, action_to_string(d.b, b, sizeof(b)), action_to_string(d.a, a, sizeof(a)),
                           (uint32_t) d.witness.nr, (uint64_t) d.witness.args[0], (uint64_t) d.witness.args[1],
                           (uint64_t) d.witness.args[2]);
}

/* The profile built through libseccomp, as a runtime builds it, must decide every syscall of
 * every architecture the chain's summary covers as the chain does; what it does not is a
 * problem. */
static int oci_verify(Oci *o, const json_t *profile) {
        _cleanup_free_ struct sock_filter *insns = NULL;
        _cleanup_free_ char *error = NULL;
        size_t n_insns = 0;
        int r = policy_profile_build(profile, NULL, &insns, &n_insns, &error);
        o->refused = r == -EINVAL;
        if (r == -EINVAL)
                return oci_problem(o, "libseccomp refuses the profile: %s", error ? error : "?");
        if (r < 0)
                return r;
        ChainProgram prog = { .insns = insns, .len = n_insns };
        for (size_t i = 0; i < o->summary->n_arches; i++) {
                const PolicyArchSummary *c = &o->summary->arches[i];
                _cleanup_(policy_summary_freep) PolicySummary *one = NULL;
                size_t n_differ = 0;
                r = policy_summarize_kernel(&prog, 1, c->arch, c->other->query.kernel, NULL, &one);
                if (r < 0)
                        return r;
                const PolicyArchSummary *b = &one->arches[0];
                for (size_t j = 0; j < c->n_entries && j < b->n_entries; j++)
                        if ((r = oci_compare_decisions(o, c->entries[j].syscall->name, c->arch->name,
                                                       c->entries[j].decision, b->entries[j].decision, &n_differ)) < 0)
                                return r;
                if ((r = oci_compare_decisions(o, "the numbers libseccomp does not name", c->arch->name, c->other, b->other,
                                               &n_differ)) < 0)
                        return r;
                if (n_differ > OCI_DIFFERENCES_LISTED &&
                    oci_problem(o, "architecture %s: %zu system calls in all are decided otherwise by the profile",
                                c->arch->name, n_differ) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* ---- JSON ---- */

/* Values above INT64_MAX do not fit jansson's integers: they are held as a marked string that
 * policy_oci_dumps() turns back into a plain number. */
#define U64_MARK POLICY_PROFILE_U64_MARK

static json_t *json_u64(uint64_t v) {
        if (v <= INT64_MAX)
                return json_integer((json_int_t) v);
        char buf[64];
        snprintf(buf, sizeof(buf), U64_MARK "%" PRIu64, v);
        return json_string(buf);
}

/* The multiplexers of the 32-bit ABIs: libseccomp makes their rules from those of the calls they
 * multiplex (socket, ...), and a rule of their own can spoil those on the other architectures
 * (it is applied to every architecture of the profile). */
static bool name_is_multiplexer(const char *name) {
        return streq(name, "socketcall") || streq(name, "ipc");
}

/* NULL with *ret_skip when no name is left once the multiplexers are left out (skip_mux). */
static json_t *rule_json(const OciRule *r, bool skip_mux, bool *ret_skip) {
        const OciActionName *a = oci_action(r->ret);
        json_t *names = json_array(), *args = json_array();
        *ret_skip = false;
        for (size_t i = 0; names && i < r->n_names; i++)
                if (!(skip_mux && name_is_multiplexer(r->names[i])) &&
                    json_array_append_new(names, json_string(r->names[i])) < 0)
                        goto fail;
        if (names && json_array_size(names) == 0) {
                *ret_skip = true;
                json_decref(names);
                json_decref(args);
                return NULL;
        }
        for (size_t i = 0; args && i < OCI_ARGS; i++) {
                if (!r->args[i].op)
                        continue;
                if (json_array_append_new(args, json_pack("{s:I, s:o, s:o, s:s}", "index", (json_int_t) i, "value",
                                                          json_u64(r->args[i].value), "valueTwo",
                                                          json_u64(r->args[i].value_two), "op", r->args[i].op)) < 0)
                        goto fail;
        }
        json_t *o = json_pack("{s:o, s:s}", "names", names, "action", a->name);
        /* the errno as the kernel returns it: libseccomp refuses one above 4095 */
        if (o && a->errno_ret && json_object_set_new(o, "errnoRet", json_integer(oci_stated_ret(r->ret) & SECCOMP_RET_DATA)) < 0) {
                json_decref(o);
                o = NULL;
        }
        if (o && json_array_size(args) > 0 && json_object_set_new(o, "args", args) < 0) {
                json_decref(o);
                return NULL;
        }
        if (!o || json_array_size(args) == 0)
                json_decref(args);
        return o;
fail:
        json_decref(names);
        json_decref(args);
        return NULL;
}

/* The orders the rules are tried in (runtimes add them in the order of the profile). The most
 * restrictive first: libseccomp (2.5) can lose a more restrictive rule added after a more
 * permissive one that overlaps it on some arguments; in this order it keeps them. But it also
 * refuses (EEXIST) some rules added after a more restrictive one that overlaps them; then the
 * most permissive first may load, and decide alike. Every order is checked by loading it. */
typedef enum OciOrder {
        OCI_ORDER_RESTRICTIVE_FIRST,
        OCI_ORDER_PERMISSIVE_FIRST,
        OCI_ORDER_BY_NAME_RESTRICTIVE_FIRST, /* the rules of one syscall together */
        OCI_ORDER_BY_NAME_PERMISSIVE_FIRST,
        _OCI_ORDER_MAX,
} OciOrder;

static int cmp_rules(const void *a, const void *b) {
        const OciRule *x = a, *y = b;
        int32_t rx = (int32_t) (x->ret & SECCOMP_RET_ACTION_FULL), ry = (int32_t) (y->ret & SECCOMP_RET_ACTION_FULL);
        if (rx != ry)
                return rx < ry ? -1 : 1;
        if (x->ret != y->ret)
                return x->ret < y->ret ? -1 : 1;
        return strcmp(x->names[0], y->names[0]);
}

static int cmp_rules_permissive(const void *a, const void *b) {
        const OciRule *x = a, *y = b;
        if ((x->ret & SECCOMP_RET_ACTION_FULL) != (y->ret & SECCOMP_RET_ACTION_FULL) || x->ret != y->ret)
                return -cmp_rules(a, b);
        return cmp_rules(a, b);
}

static int cmp_rules_by_name(const void *a, const void *b) {
        const OciRule *x = a, *y = b;
        int c = strcmp(x->names[0], y->names[0]);
        return c != 0 ? c : cmp_rules(a, b);
}

static int cmp_rules_by_name_permissive(const void *a, const void *b) {
        const OciRule *x = a, *y = b;
        int c = strcmp(x->names[0], y->names[0]);
        return c != 0 ? c : cmp_rules_permissive(a, b);
}

static int (*const rule_orders[_OCI_ORDER_MAX])(const void *, const void *) = {
        [OCI_ORDER_RESTRICTIVE_FIRST] = cmp_rules,
        [OCI_ORDER_PERMISSIVE_FIRST] = cmp_rules_permissive,
        [OCI_ORDER_BY_NAME_RESTRICTIVE_FIRST] = cmp_rules_by_name,
        [OCI_ORDER_BY_NAME_PERMISSIVE_FIRST] = cmp_rules_by_name_permissive,
};

static json_t *oci_json(Oci *o, const PolicyArchSummary *const *listed, size_t n_listed, OciOrder order, bool skip_mux) {
        const OciActionName *d = oci_action(o->default_ret);
        json_t *arches = json_array(), *syscalls = json_array();
        for (size_t i = 0; arches && i < n_listed; i++) {
                const char *name = scmp_arch_name(listed[i]->arch);
                if (name && json_array_append_new(arches, json_string(name)) < 0)
                        goto fail;
        }
        qsort_safe(o->rules, o->n_rules, sizeof(OciRule), rule_orders[order]);
        for (size_t i = 0; syscalls && i < o->n_rules; i++) {
                bool skip;
                json_t *rule = rule_json(&o->rules[i], skip_mux, &skip);
                if (!skip && json_array_append_new(syscalls, rule) < 0)
                        goto fail;
        }
        json_t *p = json_pack("{s:s}", "defaultAction", d->name);
        if (p && d->errno_ret && json_object_set_new(p, "defaultErrnoRet", json_integer(oci_stated_ret(o->default_ret) & SECCOMP_RET_DATA)) < 0)
                goto fail_p;
        if (p && (json_object_set_new(p, "architectures", arches) < 0 || json_object_set_new(p, "syscalls", syscalls) < 0)) {
                arches = syscalls = NULL;
                goto fail_p;
        }
        return p;
fail_p:
        json_decref(p);
fail:
        json_decref(arches);
        json_decref(syscalls);
        return NULL;
}

static void oci_done(Oci *o) {
        for (size_t i = 0; i < o->n_rules; i++)
                free(o->rules[i].names);
        free(o->rules);
        strv_free(o->problems);
        arena_done(&o->arena);
}

/* Forget the problems after the first n. */
static void oci_problems_truncate(Oci *o, size_t n) {
        for (size_t i = n; i < o->n_problems; i++)
                free(o->problems[i]);
        o->n_problems = MIN(n, o->n_problems);
        if (o->problems)
                o->problems[o->n_problems] = NULL;
}

/* The profile in the first order (with the multiplexers' own rules, then without them) that
 * libseccomp loads and that decides as the chain does; else the first one tried, with its
 * problems. */
static int oci_json_verified(Oci *o, const PolicyArchSummary *const *listed, size_t n_listed, json_t **ret) {
        size_t before = o->n_problems;
        *ret = NULL;
        for (unsigned attempt = 0; attempt <= 2 * _OCI_ORDER_MAX; attempt++) {
                /* the last attempt: the first again, for its problems */
                unsigned k = attempt == 2 * _OCI_ORDER_MAX ? 0 : attempt;
                oci_problems_truncate(o, before);
                json_decref(*ret);
                *ret = oci_json(o, listed, n_listed, (OciOrder) (k % _OCI_ORDER_MAX), k >= _OCI_ORDER_MAX);
                if (!*ret)
                        return -ENOMEM;
                int r = oci_verify(o, *ret);
                if (r < 0)
                        return r;
                if (o->n_problems == before)
                        return 0;
        }
        return 0;
}

int policy_oci_profile(const PolicySummary *s, bool approximate, json_t **ret, char ***ret_problems) {
        _cleanup_(oci_done) Oci o = { .summary = s, .approximate = approximate };
        const PolicyArchSummary *listed[POLICY_ARCH_MAX];
        size_t n_listed;

        json_t *profile = NULL;
        int r = oci_arches(&o, listed, &n_listed);
        if (r >= 0)
                r = oci_default(&o, listed, n_listed);
        if (r >= 0)
                r = oci_syscalls(&o, listed, n_listed);
        if (r >= 0)
                r = oci_json_verified(&o, listed, n_listed, &profile);
        if (r < 0) {
                json_decref(profile);
                return r;
        }
        *ret = NULL;
        if (o.n_problems == 0 || (approximate && !o.refused))
                *ret = TAKE_PTR(profile);
        json_decref(profile);
        if (ret_problems)
                *ret_problems = TAKE_PTR(o.problems);
        return !*ret ? -EDOM : 0;
}

char *policy_oci_dumps(const json_t *profile, size_t flags) {
        _cleanup_free_ char *s = json_dumps(profile, flags);
        if (!s)
                return NULL;
        /* "\u0001u64:N" -> N */
        const char *mark = "\"\\u0001u64:";
        char *out = malloc(strlen(s) + 1), *w = out;
        if (!out)
                return NULL;
        for (const char *p = s; *p;) {
                if (strncmp(p, mark, strlen(mark)) == 0) {
                        p += strlen(mark);
                        while (*p && *p != '"')
                                *w++ = *p++;
                        if (*p)
                                p++;
                } else
                        *w++ = *p++;
        }
        *w = 0;
        return out;
}
