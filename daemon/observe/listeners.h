/* listeners.h: seccomp listener fds grouped into listeners (listeners.c) */
#pragma once

#include "core/forest.h"
#include "scan-ptrace-error.h"

/* Listener fds (anon_inode "seccomp notify") of every process in the forest, grouped by
 * kcmp(KCMP_FILE) into listeners. For the bpf backend the filter of each listener is known
 * exactly and passed in via the forest's filters (has_listener + task_file records); for
 * ptrace it is inferred. It runs while a ptrace pass holds tasks stopped: a failure is not logged
 * but kept in e, for the pass to log once after the thaw. */
int listeners_collect(Forest *f, ScanError *e);
