/* verbs-check.c: `check TID SYSCALL [ARG...]`: what the task's chain would do with that call, live
 * or (with --file) in a snapshot */
#include "verbs-check.h"

#include <ctype.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/syscall.h>

#include "chain.h"
#include "core/disasm.h"
#include "core/eval.h"
#include "core/prog.h"
#include "ctl-args.h"
#include "json-out.h"
#include "output.h"
#include "policy/policy-arch.h"
#include "policy/policy-who.h"
#include "snapshot-load.h"
#include "verbs-policy.h"

#define CHECK_ARGS_MAX 6

typedef struct CheckRequest {
        uint32_t tid;
        const char *given;       /* the syscall as given */
        const char *syscall;     /* ... as libseccomp is asked: a name or a decimal number */
        char syscall_number[24]; /* a number given in hex, in decimal */
        uint32_t arch;           /* SCMP_ARCH_* (an AUDIT_ARCH_* value); 0: native */
        uint64_t args[CHECK_ARGS_MAX];
        size_t n_args;
        struct seccomp_data data;
} CheckRequest;

typedef struct CheckResult {
        const char *mode; /* "filter", or the task's mode when it has no filter */
        EvalResult eval;
        uint32_t *verdicts; /* each filter's own return value, newest first */
        uint32_t kernel;    /* whose exceptions apply: the snapshot's kernel, or 0 for the running one */
        bool exempt;        /* the kernel runs the call without seccomp (seccomp_kernel_exempts()) */
} CheckResult;

/* A number: decimal, hex with 0x, or negative decimal (taken as a 64-bit two's complement).
 * -EINVAL, without a word, for anything else. */
static int parse_number(const char *s, uint64_t *ret) {
        bool neg = s[0] == '-', hex = !neg && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
        const char *digits = s + neg + 2 * hex;
        char *end;
        if (!(hex ? isxdigit((unsigned char) *digits) : isdigit((unsigned char) *digits)))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(digits, &end, hex ? 16 : 10);
        if (errno != 0 || *end || (neg && v > (unsigned long long) INT64_MAX + 1))
                return -EINVAL;
        *ret = neg ? -(uint64_t) v : v;
        return 0;
}

/* A number beyond INT32_MAX: one of the architecture's as who-can takes them (x32's and x86's run
 * to 0xffffffff), as the signed decimal the evaluator reads. */
static int parse_syscall_high(const PolicyArch *arch, const char *s, CheckRequest *req) {
        _cleanup_free_ char *why = NULL;
        WhoCanQuery q;
        int r = who_can_query_parse(arch ? arch->name : NULL, s, NULL, 0, NULL, &q, &why);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return usage_error("Invalid system call number '%s'%s%s", s, why ? ": " : "", why ?: "");
        snprintf(req->syscall_number, sizeof(req->syscall_number), "%" PRId32, q.nr);
        return 0;
}

/* The syscall: a name, or a number in decimal or 0x hex. */
static int parse_syscall(const PolicyArch *arch, const char *s, CheckRequest *req) {
        bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
        uint64_t nr;
        req->given = req->syscall = s;
        if (!hex && !isdigit((unsigned char) s[0]))
                return 0; /* a name (or a negative number, which the evaluator reads as it is) */
        if (parse_number(s, &nr) < 0)
                return usage_error("Invalid system call number '%s'", s);
        if (nr > INT32_MAX) {
                int r = parse_syscall_high(arch, s, req);
                if (r < 0)
                        return r;
        } else
                snprintf(req->syscall_number, sizeof(req->syscall_number), "%" PRIu64, nr);
        req->syscall = req->syscall_number;
        return 0;
}

static int check_parse(Context *c, char **args, size_t n_args, CheckRequest *req) {
        const PolicyArch *arch = NULL;
        int r = parse_pid_arg("task id", args[0], &req->tid);
        if (r < 0)
                return r;
        r = policy_arch_option(c, &arch);
        if (r < 0)
                return r;
        req->arch = arch ? arch->arch : 0;
        r = parse_syscall(arch, args[1], req);
        if (r < 0)
                return r;
        req->n_args = n_args - 2;
        for (size_t i = 0; i < req->n_args; i++)
                if ((r = parse_syscall_arg(args[2 + i], &req->args[i])) < 0)
                        return r;
        if (seccomp_data_from_syscall(req->syscall, req->arch, req->args, req->n_args, &req->data) < 0)
                return usage_error("Unknown system call '%s'%s%s", args[1], c->arch ? " on " : "", c->arch ?: "");
        return 0;
}

/* The action as the kernel spells it, with the errno's name: "ERRNO(38: ENOSYS)". */
static char *action_describe(uint32_t ret, char *buf, size_t len) {
        const char *name = NULL;
        action_to_string(ret, buf, len);
        if ((ret & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO)
                name = strerrorname_np((int) (ret & SECCOMP_RET_DATA));
        size_t l = strlen(buf);
        if ((ret & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO && (ret & SECCOMP_RET_DATA) > POLICY_MAX_ERRNO &&
            l > 0 && buf[l - 1] == ')')
                snprintf(buf + l - 1, len - (l - 1), ": the kernel returns %d)", POLICY_MAX_ERRNO);
        else if (name && l > 0 && buf[l - 1] == ')')
                snprintf(buf + l - 1, len - (l - 1), ": %s)", name);
        return buf;
}

static const char *errno_name(uint32_t ret) {
        if ((ret & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_ERRNO)
                return NULL;
        return strerrorname_np((int) (ret & SECCOMP_RET_DATA));
}

/* The architecture of the call: --arch, else the native one. */
static const PolicyArch *req_arch(const CheckRequest *req) {
        const PolicyArch *a = req->arch ? policy_arch_lookup(req->arch) : NULL;
        return a ? a : policy_arch_native();
}

/* A task without filters: its mode decides between ALLOW and strict mode. */
static void check_unfiltered(bool strict, const CheckRequest *req, CheckResult *res) {
        res->mode = strict ? "strict" : "disabled";
        res->eval = (EvalResult) { .ret = strict ? policy_arch_strict_verdict_kernel(req_arch(req), req->data.nr, res->kernel)
                                                 : SECCOMP_RET_ALLOW };
        res->exempt = strict && seccomp_kernel_exempts(res->kernel, &req->data);
}

static int check_evaluate(const Chain *ch, const CheckRequest *req, CheckResult *res) {
        _cleanup_free_ ChainProgram *progs = calloc(ch->n + 1, sizeof(ChainProgram));
        res->verdicts = calloc(ch->n + 1, sizeof(uint32_t));
        if (!progs || !res->verdicts)
                return log_oom();
        int r = chain_programs(ch, progs);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ch->n; i++)
                res->verdicts[i] = prog_run(progs[i].insns, progs[i].len, &req->data);
        res->mode = "filter";
        res->eval = chain_evaluate_kernel(progs, ch->n, &req->data, res->kernel);
        res->exempt = seccomp_kernel_exempts(res->kernel, &req->data);
        return 0;
}

static void check_print(const Chain *ch, const CheckRequest *req, const CheckResult *res) {
        char action[ACTION_STRING_MAX + 32];
        const char *dash = output_dash();
        action_describe(res->eval.ret, action, sizeof(action));
        if (res->exempt)
                printf("%s %s the kernel runs this call without seccomp (its uprobe exception)\n", action, dash);
        else if (ch->n == 0)
                printf("%s %s task %" PRIu32 " has no filter%s\n", action, dash, req->tid,
                       streq(res->mode, "strict") ? " (strict mode)" : "");
        else if (res->eval.ret == SECCOMP_RET_ALLOW)
                printf("%s %s every filter allows it (%zu filter%s)\n", action, dash, ch->n, ch->n == 1 ? "" : "s");
        else
                printf("%s %s decided by filter %" PRIu64 " (position %zu of %zu)\n", action, dash,
                       ch->filters[res->eval.decided_by].meta.id, res->eval.decided_by, ch->n);
}

static json_t *verdicts_json(const Chain *ch, const CheckResult *res) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < ch->n; i++) {
                char action[ACTION_STRING_MAX];
                json_t *x = json_pack("{s:I, s:I, s:s, s:s?, s:I}", "position", (json_int_t) i, "id",
                                      (json_int_t) ch->filters[i].meta.id, "action",
                                      action_to_string(res->verdicts[i], action, sizeof(action)), "errno",
                                      errno_name(res->verdicts[i]), "ret", (json_int_t) res->verdicts[i]);
                if (json_array_append_new(a, x) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

static json_t *decided_by_json(const Chain *ch, const CheckResult *res) {
        if (ch->n == 0 || res->eval.ret == SECCOMP_RET_ALLOW)
                return json_null();
        return json_pack("{s:I, s:I}", "id", (json_int_t) ch->filters[res->eval.decided_by].meta.id, "position",
                         (json_int_t) res->eval.decided_by);
}

static json_t *check_json(const Chain *ch, const CheckRequest *req, const CheckResult *res) {
        char action[ACTION_STRING_MAX];
        json_t *args = json_array();
        for (size_t i = 0; args && i < req->n_args; i++)
                if (json_array_append_new(args, json_integer((json_int_t) req->args[i])) < 0) {
                        json_decref(args);
                        return NULL;
                }
        return json_pack("{s:I, s:s, s:I, s:I, s:o, s:s, s:s, s:s?, s:I, s:o, s:I, s:o}",
                         "tid", (json_int_t) req->tid, "syscall", req->given, "nr", (json_int_t) req->data.nr,
                         "arch", (json_int_t) req->data.arch, "args", args,
                         "mode", res->mode, "action", action_to_string(res->eval.ret, action, sizeof(action)),
                         "errno", errno_name(res->eval.ret),
                         "ret", (json_int_t) res->eval.ret, "decided_by", decided_by_json(ch, res),
                         "chain_length", (json_int_t) ch->n, "filters", verdicts_json(ch, res));
}

int verb_check(Context *c, char **args, size_t n_args) {
        CheckRequest req = {};
        _cleanup_(chain_done) Chain ch = {};
        _cleanup_free_ uint32_t *verdicts = NULL;
        CheckResult res = {};
        TaskMode mode = TASK_MODE_DISABLED;
        int r = check_parse(c, args, n_args, &req);
        if (r < 0)
                return r;
        r = chain_load_task(c, req.tid, &ch, &mode);
        if (r < 0)
                return r;
        r = policy_kernel_of(c->file, &res.kernel);
        if (r < 0)
                return r;
        if (ch.n > 0)
                r = check_evaluate(&ch, &req, &res);
        else
                check_unfiltered(mode == TASK_MODE_STRICT, &req, &res);
        verdicts = res.verdicts;
        if (r < 0)
                return r;
        if (c->json) {
                json_auto_t *doc = check_json(&ch, &req, &res);
                return json_print_document(doc);
        }
        check_print(&ch, &req, &res);
        return output_flush();
}
