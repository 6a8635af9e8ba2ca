/* scan-ptrace-freeze.h: a frozen ptrace pass (scan-ptrace-freeze.c) */
#pragma once

#include "observe/ptrace-scanner.h"

/* The pass with every task of the report stopped first, in a tracer thread of its own. */
int ptrace_scan_run_frozen(Scan *s, Forest *f);
