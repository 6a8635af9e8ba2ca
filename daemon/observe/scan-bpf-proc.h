/* scan-bpf-proc.h: the bpf scanner's /proc fallbacks (scan-bpf-proc.c) */
#pragma once

#include "observe/scan-bpf-select.h"

bool bpf_records_have_process(const PassRecords *r, pid_t pid);
/* The threads of a subtree's root that the pass did not meet, from /proc. -ESRCH: no such process;
 * -EOPNOTSUPP: a thread runs under filters (logged). */
int bpf_scanner_add_unvisited_root(BpfScanner *s, pid_t pid);
/* The listener holders the pass left out, from /proc. 1: records were added (the spans are to be
 * built again). */
int bpf_scanner_add_holders(BpfScanner *s, ProcSpan *spans, size_t n_spans);
