/* privileges.h: what sectreed needs of its credentials, said in one line when it lacks it, and one
 * summary of the threads a ptrace scan could not read */
#pragma once

#include "observe/scan-ptrace.h"
#include "observe/source-types.h"

/* What the backend needs of the effective capabilities, as source_capabilities() says it (NULL:
 * nothing checked). Returns 0, or -EPERM after one line naming what is missing and what to do. A
 * missing capability it only wants (ptrace: CAP_SYS_PTRACE) is a warning: the caller's own
 * processes can still be read. */
int privileges_check(Backend backend, const SourceCapabilities *c);

/* One line about the threads a ptrace scan could not read, by reason (each thread at debug
 * level); nothing when there are none. */
void unreadable_report(const UnreadableTask *bad, size_t n_bad);
/* A ptrace scan that reads once (`sectreed scan`): the threads it could not read reported
 * (unreadable_report()), and -EPERM when it read nothing it was asked to. */
int ptrace_scan_reported(const ScanOptions *opts, Forest **ret);
