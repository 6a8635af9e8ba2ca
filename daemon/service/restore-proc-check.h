/* restore-proc-check.h: the kernel's own word on a restored tree: what /proc/PID/task/TID/status
 * says of every restored thread (Seccomp, Seccomp_filters, NoNewPrivs), and /proc/PID/status of
 * every restored process (its leader's, which tools read), against the snapshot */
#pragma once

#include <stdbool.h>

#include "core/forest.h"
#include "plan/plan-verify.h"

/* Compare every thread and process the mapping names with its original in the snapshot: the
 * seccomp mode, the number of filters of its chain, no_new_privs (set where the snapshot has it
 * unset is accepted only where options->nnp_added announces it). A process whose leader is not in
 * the snapshot is checked against the exited leader's state the snapshot records (mode, chain
 * length; the process's no_new_privs only, when it records none). Each difference is appended to *differences (a NULL-terminated strv,
 * which may be NULL at first) as a sentence, and *ret_verified set false; a thread that is gone is
 * a difference. Returns 0, or -ENOMEM. */
int restore_proc_check(const Forest *snapshot, const PlanMapping *map, const PlanVerifyOptions *options,
                       bool *ret_verified, char ***differences);
