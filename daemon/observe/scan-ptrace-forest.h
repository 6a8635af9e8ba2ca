/* scan-ptrace-forest.h: a ptrace pass's records made a Forest (scan-ptrace-forest.c) */
#pragma once

#include "observe/ptrace-scanner.h"

/* An empty forest for a ptrace pass with opts. */
int ptrace_forest_new(const ScanOptions *opts, Forest **ret);
/* -EPERM (why in *e): this process runs under seccomp, which makes PTRACE_SECCOMP_GET_FILTER refuse. */
int ptrace_check_tracer(ScanError *e);
/* Step 3: every dumped chain placed as filter nodes in f, in ancestry order. */
int ptrace_scan_place(Scan *s, Forest *f, ScanProcess **order, size_t n_order);
/* Step 4: processes, threads and listeners into f, linked. */
int ptrace_scan_emit(Scan *s, Forest *f);
/* Holders that hold no listener of the report dropped again. */
int ptrace_scan_restrict_holders(Scan *s, Forest *f);
/* The tasks that could not be read, with their errors. */
int ptrace_collect_unreadable(const Scan *s, UnreadableTask **ret, size_t *ret_n);
