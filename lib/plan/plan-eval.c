/* plan-eval.c: a chain's verdict on a system call the restore will make from an address it cannot
 * know: instruction_pointer is unknown, so every filter that reads it is run both ways at every
 * jump that depends on it (prog_run_unknown(): values computed from it are unknown too) */
#include "plan/plan-eval.h"

#include <linux/seccomp.h>

#include "core/util.h"

#define IP_LO offsetof(struct seccomp_data, instruction_pointer)
#define IP_HI (IP_LO + 4)
/* Both words of instruction_pointer, as prog_run_unknown() takes them. */
#define IP_WORDS ((1U << (IP_LO / 4)) | (1U << (IP_HI / 4)))

bool prog_reads_instruction_pointer(const struct sock_filter *insns, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (insns[i].code == (BPF_LD | BPF_W | BPF_ABS) && (insns[i].k == IP_LO || insns[i].k == IP_HI))
                        return true;
        return false;
}

/* Both ends of what one program can return for some address. */
static void prog_outcomes(const ChainProgram *p, const struct seccomp_data *d, uint32_t *worst, uint32_t *best) {
        ProgOutcomes o;

        if (!prog_reads_instruction_pointer(p->insns, p->len)) {
                *worst = *best = prog_run(p->insns, p->len, d);
                return;
        }
        prog_run_unknown(p->insns, p->len, d, IP_WORDS, PLAN_EVAL_MAX_PATHS, &o);
        *worst = o.worst;
        *best = o.best;
}

void plan_chain_evaluate(const ChainProgram *chain, size_t n, const struct seccomp_data *data, PlanEval *ret) {
        uint32_t worst = SECCOMP_RET_ALLOW, best = SECCOMP_RET_ALLOW;
        size_t decided_by = 0;

        for (size_t i = 0; i < n; i++) {
                uint32_t w, b;

                prog_outcomes(&chain[i], data, &w, &b);
                if (action_outranks(w, worst)) {
                        worst = w;
                        decided_by = i;
                }
                if (action_outranks(b, best))
                        best = b;
        }
        *ret = (PlanEval) { .ret = worst, .decided_by = decided_by,
                            .depends_on_ip = (worst & SECCOMP_RET_ACTION_FULL) != (best & SECCOMP_RET_ACTION_FULL) };
}
