/* policy-audit.c: the weaknesses of a chain, each proven by an input found in the decisions and
 * checked by evaluating the chain on it */
#include "policy/policy-audit.h"

#include <linux/audit.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/util.h"
#include "policy/policy-exec.h"
#include "policy/policy-format.h"

static const char *const audit_severity_table[_AUDIT_SEVERITY_MAX] = {
        [AUDIT_SEVERITY_INFO] = "info",
        [AUDIT_SEVERITY_LOW] = "low",
        [AUDIT_SEVERITY_MEDIUM] = "medium",
        [AUDIT_SEVERITY_HIGH] = "high",
};
DEFINE_STRING_TABLE_LOOKUP(audit_severity, AuditSeverity, _AUDIT_SEVERITY_MAX);

static const char *const audit_rule_table[_AUDIT_RULE_MAX] = {
        [AUDIT_RULE_ABI_BYPASS] = "abi-bypass",
        [AUDIT_RULE_NO_ARCH_CHECK] = "no-arch-check",
        [AUDIT_RULE_EQUIVALENT_OPEN] = "equivalent-open",
        [AUDIT_RULE_DANGEROUS] = "dangerous-allowed",
        [AUDIT_RULE_NOTIF_NO_LISTENER] = "notify-without-listener",
        [AUDIT_RULE_LOG_ONLY] = "log-only",
        [AUDIT_RULE_BASELINE] = "baseline",
};
DEFINE_STRING_TABLE_LOOKUP(audit_rule, AuditRule, _AUDIT_RULE_MAX);

void audit_findings_done(AuditFindings *f) {
        for (size_t i = 0; i < f->n; i++)
                free(f->items[i].message);
        free(f->items);
        *f = (AuditFindings) {};
}

typedef struct Audit {
        const AuditInput *in;
        AuditFindings *out;
        Arena arena;
} Audit;

/* ---- actions ---- */

static bool ret_allows(uint32_t v) {
        uint32_t a = policy_ret_effective(v) & SECCOMP_RET_ACTION_FULL;
        return a == SECCOMP_RET_ALLOW || a == SECCOMP_RET_LOG;
}

static bool ret_denies(uint32_t v) {
        uint32_t a = policy_ret_effective(v) & SECCOMP_RET_ACTION_FULL;
        return a == SECCOMP_RET_KILL_PROCESS || a == SECCOMP_RET_KILL_THREAD || a == SECCOMP_RET_TRAP ||
               a == SECCOMP_RET_ERRNO;
}

static bool ret_notifies(uint32_t v) {
        return (policy_ret_effective(v) & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF;
}

/* Denied for every input: every case a constant that denies. */
static bool always_denied(const PolicyDecision *dec) {
        for (size_t i = 0; i < dec->n_cases; i++) {
                uint32_t v;
                if (!policy_case_constant(&dec->cases[i], &v) || !ret_denies(v))
                        return false;
        }
        return dec->n_cases > 0;
}

/* ---- finding inputs ---- */

/* An input of dec on which it gives a value want() accepts and where the n_extra atoms of extra
 * hold, checked by evaluating the chain on it: true and *ret, *ret_action. */
static bool find_input_where(Audit *a, const PolicyDecision *dec, bool (*want)(uint32_t), const Atom *extra,
                             size_t n_extra, struct seccomp_data *ret, uint32_t *ret_action) {
        for (size_t i = 0; i < dec->n_cases; i++) {
                uint32_t v;
                if (policy_case_constant(&dec->cases[i], &v) && !want(v))
                        continue;
                for (size_t j = 0; j < dec->cases[i].n_terms; j++) {
                        PolicyTerm t = dec->cases[i].terms[j];
                        struct seccomp_data d;
                        int r = SAT_YES;
                        for (size_t k = 0; k < n_extra && r >= 0 && r != SAT_NO; k++)
                                r = policy_term_apply(&a->arena, &t, &extra[k]);
                        if (r >= 0 && r != SAT_NO)
                                r = policy_term_settle(&a->arena, &t, &dec->base);
                        if (r < 0 || r == SAT_NO)
                                continue;
                        policy_term_witness(&t, &d);
                        if (n_extra > 0 && !policy_term_holds(&t, &d))
                                continue;
                        uint32_t e = chain_evaluate_kernel(a->in->chain, a->in->n, &d, a->in->kernel).ret;
                        if (!want(e))
                                continue;
                        *ret = d;
                        *ret_action = e;
                        return true;
                }
        }
        return false;
}

static bool find_input(Audit *a, const PolicyDecision *dec, bool (*want)(uint32_t), const Atom *extra,
                       struct seccomp_data *ret, uint32_t *ret_action) {
        return find_input_where(a, dec, want, extra, extra ? 1 : 0, ret, ret_action);
}

/* ---- findings ---- */

_printf_(6, 7) static int finding_add(Audit *a, AuditRule rule, AuditSeverity sev, const PolicyArch *arch,
                                      const char *syscall, const char *format, ...) {
        char *msg = NULL;
        va_list ap;
        va_start(ap, format);
        int r = vasprintf(&msg, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (GROW(a->out->items, a->out->allocated, a->out->n + 1) < 0) {
                free(msg);
                return -ENOMEM;
        }
        a->out->items[a->out->n++] = (AuditFinding) { .rule = rule, .severity = sev, .arch = arch ? arch->name : NULL,
                                                      .syscall = syscall, .message = msg };
        return 0;
}

static void finding_witness(Audit *a, const struct seccomp_data *d, uint32_t action) {
        AuditFinding *f = &a->out->items[a->out->n - 1];
        f->has_witness = true;
        f->witness = *d;
        f->action = action;
}

static const PolicyArchSummary *native_summary(Audit *a) {
        return a->in->summary->n_arches > 0 ? &a->in->summary->arches[0] : NULL;
}

static const PolicyDecision *decision_of(const PolicyArchSummary *s, const char *name) {
        const PolicyEntry *e = s ? policy_arch_summary_find(s, name) : NULL;
        return e ? e->decision : NULL;
}

/* The condition under which dec gives what want() accepts, as text (malloc'ed; NULL: OOM). */
static char *condition_text(Audit *a, const PolicyDecision *dec) {
        return policy_decision_string(&a->arena, dec);
}

/* ---- ABI bypasses ---- */

/* The calls socketcall(2) multiplexes on x86, by their SYS_* number. */
static const struct {
        const char *name;
        uint32_t call;
} socketcalls[] = {
        { "socket", 1 }, { "bind", 2 }, { "connect", 3 }, { "listen", 4 }, { "accept", 5 }, { "accept4", 18 },
};

static int audit_socketcall(Audit *a, const PolicyArchSummary *native, const PolicyArchSummary *x86) {
        const PolicyDecision *sc = decision_of(x86, "socketcall");
        if (!sc)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(socketcalls); i++) {
                const PolicyDecision *d = decision_of(native, socketcalls[i].name);
                Atom call = { .kind = ATOM_RANGE, .word = policy_field_word(0, false), .a = socketcalls[i].call,
                              .b = socketcalls[i].call };
                struct seccomp_data w;
                uint32_t action;
                if (!d || !always_denied(d) || !find_input(a, sc, ret_allows, &call, &w, &action))
                        continue;
                int r = finding_add(a, AUDIT_RULE_ABI_BYPASS, AUDIT_SEVERITY_HIGH, x86->arch, "socketcall",
                                    "%s is denied on %s, but socketcall(%" PRIu32 ", ...) on x86 (int 0x80) runs it",
                                    socketcalls[i].name, native->arch->name, socketcalls[i].call);
                if (r < 0)
                        return r;
                finding_witness(a, &w, action);
        }
        return 0;
}

static int audit_abi(Audit *a) {
        const PolicyArchSummary *native = native_summary(a);
        if (!native)
                return 0;
        for (size_t k = 1; k < a->in->summary->n_arches; k++) {
                const PolicyArchSummary *other = &a->in->summary->arches[k];
                bool x86 = other->arch->arch == SCMP_ARCH_X86;
                for (size_t i = 0; i < native->n_entries; i++) {
                        const PolicyEntry *e = &native->entries[i];
                        const PolicyDecision *o = decision_of(other, e->syscall->name);
                        struct seccomp_data w;
                        uint32_t action;
                        if (!o || !always_denied(e->decision) || !find_input(a, o, ret_allows, NULL, &w, &action))
                                continue;
                        int r = finding_add(a, AUDIT_RULE_ABI_BYPASS, x86 ? AUDIT_SEVERITY_HIGH : AUDIT_SEVERITY_MEDIUM,
                                            other->arch, e->syscall->name, "%s is denied on %s but allowed on %s%s",
                                            e->syscall->name, native->arch->name, other->arch->name,
                                            x86 ? " (int 0x80)" : " (where the kernel runs x32)");
                        if (r < 0)
                                return r;
                        finding_witness(a, &w, action);
                }
                if (x86) {
                        int r = audit_socketcall(a, native, other);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int audit_arch_check(Audit *a) {
        const PolicyArchSummary *native = native_summary(a);
        bool denies = false;
        if (!native || policy_chain_checks_arch(a->in->chain, a->in->n))
                return 0;
        for (size_t i = 0; i < native->n_entries && !denies; i++) {
                uint32_t v;
                denies = !policy_decision_unconditional(native->entries[i].decision, &v) || !ret_allows(v);
        }
        if (!denies)
                return 0;
        return finding_add(a, AUDIT_RULE_NO_ARCH_CHECK, AUDIT_SEVERITY_HIGH, NULL, NULL,
                           "no filter of the chain looks at the architecture: the numbers of the other ABIs "
                           "(x86 through int 0x80, x32) are decided as if they were %s's",
                           native->arch->name);
}

/* ---- equivalents left open ---- */

static const struct {
        const char *denied, *open;
} equivalents[] = {
        { "open", "openat" }, { "open", "openat2" }, { "openat", "openat2" }, { "execve", "execveat" },
        { "creat", "openat" }, { "rename", "renameat2" }, { "unlink", "unlinkat" }, { "mkdir", "mkdirat" },
        { "chmod", "fchmodat" }, { "chown", "fchownat" }, { "dup2", "dup3" }, { "pipe", "pipe2" },
};

/* What io_uring does for its submitter without a system call, hence without seccomp. */
static const char *const io_uring_ops[] = {
        "openat", "openat2", "read", "write", "readv", "writev", "connect", "accept", "accept4", "socket", "sendmsg",
        "recvmsg", "sendto", "recvfrom", "statx", "renameat2", "unlinkat", "mkdirat", "symlinkat", "linkat", "fsync",
        "fallocate", "splice", "tee", "madvise", "fadvise64", "close", "shutdown", "bind", "listen",
};

static int audit_pairs(Audit *a, const PolicyArchSummary *native) {
        for (size_t i = 0; i < ELEMENTSOF(equivalents); i++) {
                const PolicyDecision *d = decision_of(native, equivalents[i].denied),
                                     *o = decision_of(native, equivalents[i].open);
                struct seccomp_data w;
                uint32_t action;
                if (!d || !o || !always_denied(d) || !find_input(a, o, ret_allows, NULL, &w, &action))
                        continue;
                _cleanup_free_ char *cond = condition_text(a, o);
                int r = finding_add(a, AUDIT_RULE_EQUIVALENT_OPEN, AUDIT_SEVERITY_MEDIUM, native->arch,
                                    equivalents[i].open, "%s is denied, but %s does the same and is allowed: %s",
                                    equivalents[i].denied, equivalents[i].open, cond ? cond : "?");
                if (r < 0)
                        return r;
                finding_witness(a, &w, action);
        }
        return 0;
}

static int audit_clone3(Audit *a, const PolicyArchSummary *native) {
        const PolicyDecision *c = decision_of(native, "clone"), *c3 = decision_of(native, "clone3");
        struct seccomp_data w;
        uint32_t action, v;
        if (!c || !c3 || policy_decision_unconditional(c, &v) || !find_input(a, c3, ret_allows, NULL, &w, &action))
                return 0;
        int r = finding_add(a, AUDIT_RULE_EQUIVALENT_OPEN, AUDIT_SEVERITY_MEDIUM, native->arch, "clone3",
                            "clone's flags are checked, but clone3 (whose flags are in memory, where no filter "
                            "can read them) is allowed, rather than failed with ENOSYS");
        if (r < 0)
                return r;
        finding_witness(a, &w, action);
        return 0;
}

static int audit_io_uring(Audit *a, const PolicyArchSummary *native) {
        const PolicyDecision *s = decision_of(native, "io_uring_setup");
        struct seccomp_data w;
        uint32_t action;
        _cleanup_free_ char *denied = NULL;
        size_t len = 0;
        if (!s || !find_input(a, s, ret_allows, NULL, &w, &action))
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(io_uring_ops); i++) {
                const PolicyDecision *d = decision_of(native, io_uring_ops[i]);
                if (!d || !always_denied(d))
                        continue;
                char *n = realloc(denied, len + strlen(io_uring_ops[i]) + 3);
                if (!n)
                        return -ENOMEM;
                denied = n;
                len += (size_t) sprintf(denied + len, "%s%s", len ? ", " : "", io_uring_ops[i]);
        }
        if (!denied)
                return 0;
        int r = finding_add(a, AUDIT_RULE_EQUIVALENT_OPEN, AUDIT_SEVERITY_MEDIUM, native->arch, "io_uring_setup",
                            "io_uring_setup is allowed, and io_uring performs without a system call (so without "
                            "seccomp) what the chain denies: %s",
                            denied);
        if (r < 0)
                return r;
        finding_witness(a, &w, action);
        return 0;
}

/* ---- dangerous calls ---- */

#define CLONE_NEWUSER_FLAG 0x10000000U
#define TIOCSTI_REQUEST 0x5412U
#define READ_IMPLIES_EXEC_FLAG 0x0400000U

typedef enum ArgCheck {
        ARG_ANY,
        ARG_BITS, /* (arg & value) != 0 */
        ARG_EQ,   /* arg == value */
} ArgCheck;

static const struct {
        const char *name;
        AuditSeverity severity;
        ArgCheck check;
        unsigned arg;
        uint32_t value;
        const char *what;
        bool not_query; /* and not arg == 0xffffffff (personality's query, which changes nothing) */
} dangerous[] = {
        { "ptrace", AUDIT_SEVERITY_HIGH, ARG_ANY, 0, 0, "reads and writes other processes" },
        { "process_vm_writev", AUDIT_SEVERITY_HIGH, ARG_ANY, 0, 0, "writes other processes' memory" },
        { "bpf", AUDIT_SEVERITY_HIGH, ARG_ANY, 0, 0, "loads BPF programs" },
        { "perf_event_open", AUDIT_SEVERITY_MEDIUM, ARG_ANY, 0, 0, "opens performance events" },
        { "kexec_load", AUDIT_SEVERITY_HIGH, ARG_ANY, 0, 0, "loads a new kernel" },
        { "kexec_file_load", AUDIT_SEVERITY_HIGH, ARG_ANY, 0, 0, "loads a new kernel" },
        { "init_module", AUDIT_SEVERITY_HIGH, ARG_ANY, 0, 0, "loads kernel modules" },
        { "finit_module", AUDIT_SEVERITY_HIGH, ARG_ANY, 0, 0, "loads kernel modules" },
        { "userfaultfd", AUDIT_SEVERITY_MEDIUM, ARG_ANY, 0, 0, "stalls kernel accesses to user memory" },
        { "keyctl", AUDIT_SEVERITY_MEDIUM, ARG_ANY, 0, 0, "reaches the kernel keyrings" },
        { "add_key", AUDIT_SEVERITY_MEDIUM, ARG_ANY, 0, 0, "reaches the kernel keyrings" },
        { "mount", AUDIT_SEVERITY_MEDIUM, ARG_ANY, 0, 0, "mounts file systems" },
        { "unshare", AUDIT_SEVERITY_MEDIUM, ARG_BITS, 0, CLONE_NEWUSER_FLAG, "with CLONE_NEWUSER: a user namespace" },
        { "clone", AUDIT_SEVERITY_MEDIUM, ARG_BITS, 0, CLONE_NEWUSER_FLAG, "with CLONE_NEWUSER: a user namespace" },
        { "ioctl", AUDIT_SEVERITY_MEDIUM, ARG_EQ, 1, TIOCSTI_REQUEST, "TIOCSTI: types into the terminal" },
        { "personality", AUDIT_SEVERITY_LOW, ARG_BITS, 0, READ_IMPLIES_EXEC_FLAG,
          "READ_IMPLIES_EXEC: readable memory becomes executable", true },
};

static int audit_dangerous(Audit *a, const PolicyArchSummary *native) {
        for (size_t i = 0; i < ELEMENTSOF(dangerous); i++) {
                const PolicyDecision *d = decision_of(native, dangerous[i].name);
                unsigned w = policy_field_word(dangerous[i].arg, false);
                Atom extra[2] = {
                        dangerous[i].check == ARG_BITS
                                ? (Atom) { .kind = ATOM_MASK_NE, .word = w, .a = dangerous[i].value, .b = 0 }
                                : (Atom) { .kind = ATOM_RANGE, .word = w, .a = dangerous[i].value, .b = dangerous[i].value },
                        { .kind = ATOM_MASK_NE, .word = w, .a = UINT32_MAX, .b = UINT32_MAX },
                };
                size_t n_extra = dangerous[i].check == ARG_ANY ? 0 : dangerous[i].not_query ? 2 : 1;
                struct seccomp_data wit;
                uint32_t action;
                if (!d || !find_input_where(a, d, ret_allows, extra, n_extra, &wit, &action))
                        continue;
                _cleanup_free_ char *cond = condition_text(a, d);
                int r = finding_add(a, AUDIT_RULE_DANGEROUS, dangerous[i].severity, native->arch, dangerous[i].name,
                                    "%s is allowed (%s): %s", dangerous[i].name, dangerous[i].what, cond ? cond : "?");
                if (r < 0)
                        return r;
                finding_witness(a, &wit, action);
        }
        return 0;
}

/* ---- listeners and logging ---- */

static bool prog_returns(const ChainProgram *p, bool (*want)(uint32_t)) {
        for (size_t i = 0; i < p->len; i++)
                if (p->insns[i].code == (BPF_RET | BPF_K) && want(p->insns[i].k))
                        return true;
        return false;
}

static bool ret_not_log_or_allow(uint32_t v) {
        uint32_t x = v & SECCOMP_RET_ACTION_FULL;
        return x != SECCOMP_RET_LOG && x != SECCOMP_RET_ALLOW;
}

static bool ret_logs(uint32_t v) {
        return (v & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_LOG;
}

static bool prog_returns_computed(const ChainProgram *p) {
        for (size_t i = 0; i < p->len; i++)
                if (p->insns[i].code == (BPF_RET | BPF_A))
                        return true;
        return false;
}

/* An input the chain sends to the listener of filter k: from the native decisions. */
static bool find_notify_input(Audit *a, struct seccomp_data *w, uint32_t *action) {
        const PolicyArchSummary *native = native_summary(a);
        for (size_t i = 0; native && i < native->n_entries; i++)
                if (find_input(a, native->entries[i].decision, ret_notifies, NULL, w, action))
                        return true;
        return false;
}

static int audit_filters(Audit *a) {
        size_t log_only = 0;
        for (size_t k = 0; k < a->in->n; k++) {
                const ChainProgram *p = &a->in->chain[k];
                int r;
                if (!prog_returns_computed(p) && !prog_returns(p, ret_not_log_or_allow) && prog_returns(p, ret_logs)) {
                        log_only++;
                        r = finding_add(a, AUDIT_RULE_LOG_ONLY, AUDIT_SEVERITY_INFO, NULL, NULL,
                                        "filter %zu of the chain (0: the newest) only logs: it denies nothing", k);
                        if (r < 0)
                                return r;
                }
                if (!a->in->has_listener || a->in->has_listener[k] || !prog_returns(p, ret_notifies))
                        continue;
                struct seccomp_data w;
                uint32_t action;
                if (!find_notify_input(a, &w, &action))
                        continue;
                r = finding_add(a, AUDIT_RULE_NOTIF_NO_LISTENER, AUDIT_SEVERITY_MEDIUM, NULL, NULL,
                                "filter %zu of the chain sends calls to a listener that is gone: they fail with ENOSYS",
                                k);
                if (r < 0)
                        return r;
                finding_witness(a, &w, action);
        }
        if (log_only > 0 && log_only == a->in->n)
                return finding_add(a, AUDIT_RULE_LOG_ONLY, AUDIT_SEVERITY_MEDIUM, NULL, NULL,
                                   "every filter of the chain only logs: it confines nothing");
        return 0;
}

/* ---- the baseline ---- */

static int audit_baseline(Audit *a, const PolicyArchSummary *native) {
        const PolicyArchSummary *base = a->in->baseline ? policy_summary_find_arch(a->in->baseline, native->arch->arch)
                                                        : NULL;
        _cleanup_free_ char *names = NULL;
        size_t len = 0, n = 0;
        struct seccomp_data first;
        uint32_t first_action = 0;
        if (!base)
                return 0;
        for (size_t i = 0; i < native->n_entries; i++) {
                const PolicyEntry *e = &native->entries[i];
                const PolicyDecision *b = decision_of(base, e->syscall->name);
                struct seccomp_data w;
                uint32_t action;
                if (!b || !always_denied(b) || !find_input(a, e->decision, ret_allows, NULL, &w, &action))
                        continue;
                char *x = realloc(names, len + strlen(e->syscall->name) + 3);
                if (!x)
                        return -ENOMEM;
                names = x;
                len += (size_t) sprintf(names + len, "%s%s", len ? ", " : "", e->syscall->name);
                if (n++ == 0) {
                        first = w;
                        first_action = action;
                }
        }
        if (n == 0)
                return 0;
        int r = finding_add(a, AUDIT_RULE_BASELINE, AUDIT_SEVERITY_LOW, native->arch, NULL,
                            "%zu system call%s allowed that the baseline denies: %s", n, n == 1 ? " is" : "s are", names);
        if (r < 0)
                return r;
        finding_witness(a, &first, first_action);
        return 0;
}

static int audit_all(Audit *a, const PolicyArchSummary *native) {
        int r = audit_abi(a);
        if (r < 0)
                return r;
        if ((r = audit_arch_check(a)) < 0)
                return r;
        if ((r = audit_pairs(a, native)) < 0)
                return r;
        if ((r = audit_clone3(a, native)) < 0)
                return r;
        if ((r = audit_io_uring(a, native)) < 0)
                return r;
        if ((r = audit_dangerous(a, native)) < 0)
                return r;
        if ((r = audit_filters(a)) < 0)
                return r;
        return audit_baseline(a, native);
}

int policy_audit(const AuditInput *in, AuditFindings *ret) {
        Audit a = { .in = in, .out = ret };
        const PolicyArchSummary *native = native_summary(&a);
        if (in->n == 0 || !native)
                return 0;
        int r = audit_all(&a, native);
        arena_done(&a.arena);
        return r;
}
