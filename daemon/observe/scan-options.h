/* scan-options.h: what a pass of any kernel reader (bpf, ptrace) is asked, and what it reports */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"

typedef struct ScanOptions {
        pid_t root;        /* 0 = whole machine, else this process and its descendants */
        bool root_alone;   /* with root: that process without its descendants (the holders of its
                            * filters' listeners all the same) */
        bool include_argv; /* each process's command line (as /proc/PID/cmdline has it) */
        bool include_exe;  /* each process's executable (as readlink of /proc/PID/exe says) */
        bool freeze;       /* ptrace: stop every task of the report before reading any, and say so
                            * (forest->snapshot.consistency = FROZEN); for snapshots */
        /* ptrace with freeze: asked about every process of the report before any of its threads is
         * stopped, with an fd of its /proc/PID directory (bound to that process) and the start time
         * the pass read. 1: it may be stopped. 0: it may not: a process of the subtree ends the
         * pass with -EACCES at once, before anything more is stopped (everything stopped so far is
         * released); a listener holder is left running and unread, which the caller finds in the
         * result. Negative: the process is gone. NULL: every process may be stopped. */
        int (*may_stop)(int proc_fd, pid_t pid, uint64_t start_time, void *userdata);
        void *userdata;
        /* bpf: a filter whose program the scanner dropped (bpf_scanner_drop_programs()) comes
         * without it (Filter.over_budget), rather than being asked of the kernel again; and so does
         * one met for the first time for which dropped(id, dropped_userdata) says so. */
        bool allow_dropped;
        bool (*dropped)(uint64_t id, void *userdata);
        void *dropped_userdata;
        /* bpf, with allow_dropped: a filter met for the first time keeps its program only if
         * wanted(digest, len, dropped_userdata) says so (NULL: every one does), so that a pass for a
         * few programs holds no others. */
        bool (*wanted)(const uint8_t *digest, size_t len, void *userdata);
        /* bpf, with allow_dropped: the filters over a uid's budget (lib/core/budget.h; 0: none) come
         * without their programs, which the scanner drops too; the pass's forest never holds more
         * programs than the live forest keeps. */
        uint64_t budget_insns_per_uid;
} ScanOptions;

#define SCAN_OPTIONS_DEFAULT ((ScanOptions){ .root = 0, .include_argv = true, .include_exe = true })

/* Which processes a pass reports:
 *  - whole machine: every process with at least one thread in strict or filter mode, with all
 *    of its threads (threads in disabled mode included);
 *  - root given: every process of the subtree, filtered or not, so that its shape is complete.
 *  - and in both cases every process that holds a listener fd of a reported filter (with all of
 *    its threads), so that the listeners' holders are part of the result; in a subtree pass such
 *    a holder may lie outside the subtree.
 * A task that vanishes during the pass is dropped. Threads appear under their process; a
 * process whose leader exited but whose threads live is reported with those threads. */
