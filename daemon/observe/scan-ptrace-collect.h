/* scan-ptrace-collect.h: step 1 of a ptrace pass, what it reports (scan-ptrace-collect.c) */
#pragma once

#include "observe/ptrace-scanner.h"

void ptrace_task_clear_chain(ScanTask *t);
void ptrace_scan_reset(Scan *s);
void ptrace_scan_done(Scan *s);
ScanProcess *ptrace_scan_find_process(const Scan *s, pid_t pid);
bool ptrace_task_is_dead(char state);
bool ptrace_scan_has_holders(const Scan *s);
/* Every process of /proc, and which of them are reported (ScanProcess.selected, .holder). */
int ptrace_scan_collect(Scan *s);
/* The reported processes, parents before children (by depth in the ppid tree). */
int ptrace_scan_ancestry_order(Scan *s, ScanProcess ***ret, size_t *ret_n);
