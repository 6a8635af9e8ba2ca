/* figures.h: the figures sectree-bench measures, one function each (listed in sectree-bench.c) */
#pragma once

#include "bench.h"

/* Figure 1: full scan, the bpf and ptrace backends against the iterator and /proc floors. */
int figure_scan_run(const BenchOptions *o, Report *report);
