/* unit-verdict.h: a cheap verdict on a set of chains: which of a few dangerous calls every one of
 * them denies (lib/core's evaluator on the programs the client fetched) */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "chain.h"

/* The calls a verdict looks at, in the order it names them. */
extern const char *const unit_verdict_calls[];
#define UNIT_VERDICT_N_CALLS 6

/* Bit i set: chain ch denies unit_verdict_calls[i] on the native architecture (ERRNO, TRAP or a
 * KILL; ALLOW, LOG, TRACE and USER_NOTIF let it run or leave it to a supervisor). Logs; -EINVAL
 * for a program that does not validate. */
int chain_denied_calls(const Chain *ch, unsigned *ret);

/* "unconfined"; "2 filters, denies ptrace, bpf"; "1 filter, denies none of ptrace, bpf, ...";
 * with "; 3 tasks unconfined" and "; 2 tasks strict" where some are. denied: the calls every
 * filtered task's chain denies. */
void unit_verdict_format(size_t n_filters, unsigned denied, size_t tasks, size_t unconfined, size_t strict,
                         char *buf, size_t len);
