/* figures.h: the figures sectree-bench measures, one function each (listed in sectree-bench.c) */
#pragma once

#include "bench.h"

/* Figure 1: full scan, the bpf and ptrace backends against the iterator and /proc floors. */
int figure_scan_run(const BenchOptions *o, Report *report);

/* Figure 2: the state database (a full scan, an incremental batch, the size) against bare tables;
 * and the daemon's full pass, scan + store. */
int figure_store_run(const BenchOptions *o, Report *report);

/* Figure 3: watch latency at fixed rates of filter installs, events lost, against a bus floor. */
int figure_watch_run(const BenchOptions *o, Report *report);

/* Figure 4: CreateSnapshot of a subtree, ExportSnapshot in both formats, against a scan of it. */
int figure_snapshot_run(const BenchOptions *o, Report *report);

/* Figure 6: policy analysis: who-can across tasks of 100 chains, and a container profile's policy. */
int figure_policy_run(const BenchOptions *o, Report *report);

/* Restore: the plan of a snapshot of the workload, and its execution with the verification,
 * against forking the same tree without filters (100 and 1,000 tasks). */
int figure_restore_run(const BenchOptions *o, Report *report);

/* Figure 5: the daemon's peak RSS with each workload, against the idle daemon; Rescan and its parts. */
int figure_memory_run(const BenchOptions *o, Report *report);

/* Figure 9: root's calls and the daemon's memory while nobody holds tens of thousands of
 * filters, with the per-uid filter budget and without it. */
int figure_flood_run(const BenchOptions *o, Report *report);

/* Figure 7: `sectreed scan` as a whole process, both backends, against a process that only runs
 * the pointer-only iterator. */
int figure_oneshot_run(const BenchOptions *o, Report *report);

/* Figure 8: the daemon's start-up to READY=1, and its parts: loading, the first pass against a warm
 * one, the first write of the state database. */
int figure_startup_run(const BenchOptions *o, Report *report);

/* Figure 10: the live view under mixed churn (threads, TSYNC, exec, orphans, listeners): lag from
 * seccomp() to FilterAttached, p50 and p99, and the repairs (Resynced) it cost. */
int figure_churn_run(const BenchOptions *o, Report *report);
