/* verbs-check.c: `check TID SYSCALL [ARG...]`: what the task's chain would do with that call, live
 * or (with --file) in a snapshot */
#include <ctype.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "chain.h"
#include "ctl.h"
#include "disasm.h"
#include "eval.h"
#include "json-out.h"
#include "output.h"
#include "policy-arch.h"

#define CHECK_ARGS_MAX 6

typedef struct CheckRequest {
        uint32_t tid;
        const char *syscall;
        uint64_t args[CHECK_ARGS_MAX];
        size_t n_args;
        struct seccomp_data data;
} CheckRequest;

typedef struct CheckResult {
        const char *mode; /* "filter", or the task's mode when it has no filter */
        EvalResult eval;
        uint32_t *verdicts; /* each filter's own return value, newest first */
} CheckResult;

static int check_parse(char **args, size_t n_args, CheckRequest *req) {
        int r = parse_pid_arg("task id", args[0], &req->tid);
        if (r < 0)
                return r;
        req->syscall = args[1];
        req->n_args = n_args - 2;
        for (size_t i = 0; i < req->n_args; i++)
                if ((r = parse_syscall_arg(args[2 + i], &req->args[i])) < 0)
                        return r;
        if (seccomp_data_from_syscall(req->syscall, 0, req->args, req->n_args, &req->data) < 0)
                return usage_error("Unknown system call '%s'", req->syscall);
        return 0;
}

/* A task without filters: its mode decides between ALLOW and strict mode. */
static void check_unfiltered(bool strict, const CheckRequest *req, CheckResult *res) {
        res->mode = strict ? "strict" : "disabled";
        res->eval = (EvalResult) { .ret = strict ? policy_arch_strict_verdict(policy_arch_native(), req->data.nr)
                                                 : SECCOMP_RET_ALLOW };
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
        res->eval = chain_evaluate(progs, ch->n, &req->data);
        return 0;
}

static void check_print(const Chain *ch, const CheckRequest *req, const CheckResult *res) {
        char action[ACTION_STRING_MAX];
        const char *dash = output_dash();
        action_to_string(res->eval.ret, action, sizeof(action));
        if (ch->n == 0)
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
                json_t *x = json_pack("{s:I, s:I, s:s, s:I}", "position", (json_int_t) i, "id",
                                      (json_int_t) ch->filters[i].meta.id, "action",
                                      action_to_string(res->verdicts[i], action, sizeof(action)), "ret",
                                      (json_int_t) res->verdicts[i]);
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
        return json_pack("{s:I, s:s, s:I, s:I, s:o, s:s, s:s, s:I, s:o, s:I, s:o}",
                         "tid", (json_int_t) req->tid, "syscall", req->syscall, "nr", (json_int_t) req->data.nr,
                         "arch", (json_int_t) req->data.arch, "args", args, "mode", res->mode,
                         "action", action_to_string(res->eval.ret, action, sizeof(action)),
                         "ret", (json_int_t) res->eval.ret, "decided_by", decided_by_json(ch, res),
                         "chain_length", (json_int_t) ch->n, "filters", verdicts_json(ch, res));
}

int verb_check(Context *c, char **args, size_t n_args) {
        CheckRequest req = {};
        _cleanup_(chain_done) Chain ch = {};
        _cleanup_free_ uint32_t *verdicts = NULL;
        CheckResult res = {};
        TaskMode mode = TASK_MODE_DISABLED;
        int r = check_parse(args, n_args, &req);
        if (r >= 0)
                r = chain_load_task(c, req.tid, &ch, &mode);
        if (r >= 0 && ch.n > 0)
                r = check_evaluate(&ch, &req, &res);
        else if (r >= 0)
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
