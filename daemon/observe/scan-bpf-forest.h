/* scan-bpf-forest.h: a bpf pass's records made a Forest (scan-bpf-forest.c) */
#pragma once

#include "observe/scan-bpf-select.h"

/* The forest of the members and kept filters bpf_scanner_select() chose. -EINVAL: the records do
 * not fit together (the pass is to be run again). */
int bpf_scanner_forest_build(BpfScanner *s, const ScanOptions *opts, ProcSpan *spans, size_t n, Forest **ret);
