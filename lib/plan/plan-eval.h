/* plan-eval.h: a chain's verdict on a system call the restore will make from an address it cannot
 * know: instruction_pointer is unknown, so every filter that reads it is run both ways at every
 * jump that depends on it */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/eval.h"

typedef struct PlanEval {
        uint32_t ret;        /* the most restrictive value the chain can return for some address */
        size_t decided_by;   /* chain index (0 = newest) of the filter that returns it */
        bool depends_on_ip;  /* another address gives another verdict */
} PlanEval;

/* Whether the program reads instruction_pointer (either half of it). */
bool prog_reads_instruction_pointer(const struct sock_filter *insns, size_t n);

/* Evaluate chain (chain[0] newest) on data with its instruction_pointer unknown, with the kernel's
 * precedence: ret is the worst verdict any address can get (a chain that reads no address gets
 * exactly chain_evaluate()'s). A filter with more than PLAN_EVAL_MAX_PATHS ways through it counts
 * as able to return anything (KILL_PROCESS). */
#define PLAN_EVAL_MAX_PATHS 4096
void plan_chain_evaluate(const ChainProgram *chain, size_t n, const struct seccomp_data *data, PlanEval *ret);
