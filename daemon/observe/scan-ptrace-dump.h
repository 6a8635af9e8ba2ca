/* scan-ptrace-dump.h: step 2 of a ptrace pass, each task's chain read (scan-ptrace-dump.c) */
#pragma once

#include "observe/ptrace-scanner.h"

/* Wait for a seized and interrupted task to stop; the signal its stop intercepted in *ret_sig. */
int ptrace_wait_for_stop(pid_t tid, int *ret_sig);
/* The chain of a stopped task, into t->chain (buf: room for the largest program). */
int ptrace_task_read_chain(ScanTask *t, struct sock_filter *buf);
/* Every task in filter mode of the reported processes read, one at a time. */
int ptrace_scan_dump(Scan *s, ScanProcess **order, size_t n_order);
