/* program-fetch.h: the programs an analysis lacks (their filters are kept without them, over a
 * uid's budget), read again from the kernel by a bpf pass, for one call */
#pragma once

#include "core/prog-wants.h"
#include "observe/source.h"

/* At most this many instructions are read for one call (32 MiB of programs); what would go beyond
 * stays wanted. */
#define PROGRAM_FETCH_MAX_INSNS (UINT64_C(1) << 22)

/* Supply what w wants (into arena) from one pass of source_scan_programs() (the bpf source's
 * detached scanner, kept between calls; a one-shot one for the others): only the wanted programs
 * are kept, at most max_insns instructions of them, and everything else the pass read is freed
 * before this returns. For worker threads: it shares nothing with the live state.
 * What could not be had (the task is gone, BPF is not available here, the bound) stays missing
 * (prog_wants_missing()); -ENOMEM, or the scan's error, which the caller may take for "missing". */
int program_fetch(Source *s, ProgWants *w, Arena *arena, uint64_t max_insns);
