/* source-bpf.h: the bpf backend as a source (source-bpf.c) */
#pragma once

#include "observe/scan-options.h"
#include "observe/source-types.h"

int source_bpf_new(const SourceOptions *o, Source **ret);
/* source_scan_programs() of a source that has no scanner to lend for it: a one-shot BPF scanner
 * made for the call (-errno where BPF cannot be loaded). */
int source_scan_programs_oneshot(const ScanOptions *opts, Forest **ret);
