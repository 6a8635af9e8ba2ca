/* ptrace-scanner.h: the ptrace backend's pass (scan-ptrace.c) and the records its files share: the
 * processes and threads of a pass, each thread's dumped chain, and the placed nodes */
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "observe/procinfo.h"
#include "observe/listeners.h"
#include "observe/scan-ptrace.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

typedef struct DumpedFilter {
        struct sock_filter *insns;
        size_t len;
        bool log;
} DumpedFilter;

typedef struct ScanTask {
        pid_t tid;
        uint64_t start_time;
        TaskMode mode;
        int error;             /* < 0: could not be read; left out of the forest */
        DumpedFilter *chain;   /* oldest first, as PTRACE_SECCOMP_GET_FILTER indexes it */
        size_t n_chain, n_chain_allocated;
        unsigned kernel_count; /* Seccomp_filters: as the listing or the dump saw it */
        bool no_new_privs;     /* NoNewPrivs: of its own status (it is per thread) */
        Filter **nodes;        /* the placed chain, oldest first, n_chain entries */
        bool placed;
} ScanTask;

typedef struct ScanProcess {
        pid_t pid, ppid;
        uint64_t start_time;
        ProcStatus status; /* of the leader (which may be a zombie whose threads live on) */
        ScanTask *tasks;   /* live threads, leader first */
        size_t n_tasks;
        bool selected;
        bool holder; /* selected for its listener fds only: outside the subtree, or without seccomp */
        bool has_filter_task;
        size_t n_placed;
        unsigned depth; /* in the ppid tree of this pass */
} ScanProcess;

typedef struct Scan {
        ScanOptions opts;
        ScanProcess *procs; /* sorted by pid */
        size_t n_procs;
        uint64_t last_filter_id;
        ScanError error; /* why the pass failed: logged once, by ptrace_scan()'s caller */
        ListenerNotes listener_notes; /* what the listener collection passed over: logged after it */
} Scan;

static inline TaskMode ptrace_task_mode(int mode) {
        switch (mode) {
        case SECCOMP_MODE_DISABLED:
                return TASK_MODE_DISABLED;
        case SECCOMP_MODE_STRICT:
                return TASK_MODE_STRICT;
        case SECCOMP_MODE_FILTER:
                return TASK_MODE_FILTER;
        default:
                return _TASK_MODE_INVALID;
        }
}
