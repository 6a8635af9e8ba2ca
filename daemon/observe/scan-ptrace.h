/* scan-ptrace.h: the ptrace backend's scanner (scan-ptrace.c): identity inferred */
#pragma once

#include "observe/scan-options.h"
#include "observe/scan-ptrace-error.h"

/* The ptrace backend: stateless, identity inferred. Tasks it could not read are reported in
 * *ret_unreadable (malloc'ed array of tids with reasons) when that is not NULL. */
typedef struct UnreadableTask {
        pid_t tid;
        int error; /* negative errno: -EBUSY already traced, -ESRCH vanished, -EPERM, ... */
} UnreadableTask;
/* A failure is logged once, when every task it stopped runs again: "ptrace scan failed: WHY: ERRNO"
 * (at debug level where the caller is to explain it: a process it may not stop, a root that does
 * not exist). */
int ptrace_scan(const ScanOptions *opts, Forest **ret, UnreadableTask **ret_unreadable, size_t *ret_n_unreadable);
/* The same, logging nothing of a failure: why it failed in *ret_error, for the caller to log once
 * (scan_error_log()). */
int ptrace_scan_explained(const ScanOptions *opts, Forest **ret, UnreadableTask **ret_unreadable,
                          size_t *ret_n_unreadable, ScanError *ret_error);
