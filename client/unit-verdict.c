/* unit-verdict.c: a cheap verdict on a set of chains: which of a few dangerous calls every one of
 * them denies (lib/core's evaluator on the programs the client fetched) */
#include "unit-verdict.h"

#include "ctl-log.h"

const char *const unit_verdict_calls[UNIT_VERDICT_N_CALLS] = {
        "ptrace", "bpf", "mount", "kexec_load", "init_module", "perf_event_open",
};

static bool action_denies(uint32_t ret) {
        switch (ret & SECCOMP_RET_ACTION_FULL) {
        case SECCOMP_RET_KILL_PROCESS:
        case SECCOMP_RET_KILL_THREAD:
        case SECCOMP_RET_TRAP:
        case SECCOMP_RET_ERRNO:
                return true;
        default:
                return false;
        }
}

int chain_denied_calls(const Chain *ch, unsigned *ret) {
        _cleanup_free_ ChainProgram *progs = calloc(ch->n + 1, sizeof(ChainProgram));
        unsigned denied = 0;
        if (!progs)
                return log_oom();
        int r = chain_programs(ch, progs);
        if (r < 0)
                return r;
        for (size_t i = 0; i < UNIT_VERDICT_N_CALLS; i++) {
                struct seccomp_data d;
                if (seccomp_data_from_syscall(unit_verdict_calls[i], 0, NULL, 0, &d) < 0)
                        continue; /* not a call of this architecture */
                if (action_denies(chain_evaluate(progs, ch->n, &d).ret))
                        denied |= 1u << i;
        }
        *ret = denied;
        return 0;
}

static size_t append(char *buf, size_t len, size_t k, const char *s) {
        return k + (size_t) snprintf(buf + k, k < len ? len - k : 0, "%s", s);
}

static size_t append_calls(char *buf, size_t len, size_t k, unsigned set, bool want) {
        bool first = true;
        for (size_t i = 0; i < UNIT_VERDICT_N_CALLS; i++)
                if (!!(set & (1u << i)) == want) {
                        k = append(buf, len, k, first ? "" : ", ");
                        k = append(buf, len, k, unit_verdict_calls[i]);
                        first = false;
                }
        return k;
}

void unit_verdict_format(size_t n_filters, unsigned denied, size_t tasks, size_t unconfined, size_t strict,
                         char *buf, size_t len) {
        size_t k = 0;
        char part[64];
        buf[0] = 0;
        if (unconfined == tasks) {
                snprintf(buf, len, "unconfined");
                return;
        }
        if (n_filters > 0) {
                snprintf(part, sizeof(part), "%zu filter%s, denies ", n_filters, n_filters == 1 ? "" : "s");
                k = append(buf, len, k, part);
                if (denied)
                        k = append_calls(buf, len, k, denied, true);
                else
                        k = append_calls(buf, len, append(buf, len, k, "none of "), 0, false);
        }
        if (strict > 0) {
                snprintf(part, sizeof(part), "%s%zu task%s strict", k ? "; " : "", strict, strict == 1 ? "" : "s");
                k = append(buf, len, k, part);
        }
        if (unconfined > 0) {
                snprintf(part, sizeof(part), "; %zu task%s unconfined", unconfined, unconfined == 1 ? "" : "s");
                append(buf, len, k, part);
        }
}
