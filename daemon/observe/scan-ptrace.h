/* scan-ptrace.h: the ptrace backend's scanner (scan-ptrace.c): identity inferred */
#pragma once

#include "observe/scan-options.h"

/* The ptrace backend: stateless, identity inferred. Tasks it could not read are reported in
 * *ret_unreadable (malloc'ed array of tids with reasons) when that is not NULL. */
typedef struct UnreadableTask {
        pid_t tid;
        int error; /* negative errno: -EBUSY already traced, -ESRCH vanished, -EPERM, ... */
} UnreadableTask;
int ptrace_scan(const ScanOptions *opts, Forest **ret, UnreadableTask **ret_unreadable, size_t *ret_n_unreadable);
