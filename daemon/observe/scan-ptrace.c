/* scan-ptrace.c: the ptrace backend: dump every task's chain with PTRACE_SECCOMP_GET_FILTER and
 * infer which filters are shared by hash-consing the chains of related tasks. The pass's steps are
 * files of their own: collect (scan-ptrace-collect.c), dump (scan-ptrace-dump.c), place and emit
 * (scan-ptrace-forest.c), and the frozen pass (scan-ptrace-freeze.c) */
#include <time.h>

#include "observe/scan-ptrace-collect.h"
#include "observe/scan-ptrace-dump.h"
#include "observe/scan-ptrace-forest.h"
#include "observe/scan-ptrace-freeze.h"

/*
 * How a pass goes:
 *
 *   1. collect: every process of /proc with its leader's status (mode, ppid, thread count), the
 *      threads' status where there are several, and start times of what is reported (see scanner.h
 *      for which processes are), and every other process that holds a listener fd (a listener's
 *      holders are part of a snapshot wherever they are: schema/snapshot-v1.md).
 *   2. dump: every thread in filter mode is seized, interrupted, dumped and detached, one at a time,
 *      by a short-lived worker thread (see dump_worker() for why a thread). With
 *      ScanOptions.freeze, every thread of the report is stopped first instead, and all stay
 *      stopped until step 4 is done (see "freezing" below).
 *   3. place: chains are turned into filter nodes by hash-consing, in ancestry order.
 *   4. emit: processes and threads go into the Forest; listeners are collected; the forest is linked,
 *      and holders that hold no listener of the report are dropped again.
 *
 * Identity inference (step 3). The kernel shares a filter between two tasks only through fork,
 * clone and TSYNC, so two tasks can share a filter only if one descends from the other or they are
 * threads of one process (ancestry as the ppid chain shows it now). A node's key is (parent node,
 * bytes, LOG flag), and keys are only merged between related tasks:
 *   - processes are placed parents first (by depth in the ppid tree), threads leader first;
 *   - a task's chain shares the longest equal prefix (bytes and flags at each position, oldest
 *     first) with the placed chains of its own process and of its nearest placed ancestor process;
 *     the rest of its chain becomes new nodes.
 * Siblings therefore share what their common parent still holds, but two byte-identical tops
 * installed by two siblings stay two nodes: nothing relates them but the bytes. When the common
 * parent is gone (orphans reparented to a subreaper or init), the siblings are unrelated as far as
 * we can tell, and their shared base is reported as two nodes too: we would rather under-report
 * sharing than present unrelated but byte-identical filters (every child of a container runtime
 * installing the same profile) as one object. The walk up the ppid chain stops at a reported
 * process that has no thread in filter mode (nothing can be shared through it) and at a process
 * outside the report; it passes over a process whose filter threads were all unreadable.
 * Every filter is marked IDENTITY_INFERRED; the bpf backend is the one with exact identity.
 *
 * What a seized task sees: PTRACE_SEIZE sets no options and PTRACE_INTERRUPT stops it for a few
 * microseconds. A signal that arrives meanwhile is delivered as soon as we detach (we pass it back
 * on PTRACE_DETACH). A task sleeping interruptibly in a syscall has it restarted; one waiting for
 * a seccomp notification's answer has the notification withdrawn and the syscall restarted (its
 * supervisor's reply gets ENOENT). A task in a group stop goes back to it. A task that cannot be
 * stopped (a vfork parent, a notification wait with WAIT_KILLABLE_RECV, uninterruptible I/O) is
 * given up after STOP_TIMEOUT_USEC and reported as -ETIMEDOUT. If this process dies while a tracee
 * is stopped, the kernel detaches it and lets it run (exit_ptrace()).
 */

/* The pass without freezing: tasks are stopped one at a time, each only while it is dumped. */
static int scan_run(Scan *s, Forest *f) {
        _cleanup_free_ ScanProcess **order = NULL;
        size_t n_order = 0;

        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = ptrace_scan_collect(s);
        if (r < 0)
                return r;
        r = ptrace_scan_ancestry_order(s, &order, &n_order);
        if (r < 0)
                return r;
        uint64_t t1 = now_usec(CLOCK_MONOTONIC);
        r = ptrace_scan_dump(s, order, n_order);
        if (r < 0)
                return r;
        uint64_t t2 = now_usec(CLOCK_MONOTONIC);
        r = ptrace_scan_place(s, f, order, n_order);
        if (r < 0)
                return r;
        r = ptrace_scan_emit(s, f);
        if (r < 0)
                return r;
        r = ptrace_scan_restrict_holders(s, f);
        if (r < 0)
                return r;
        listener_notes_log(&s->listener_notes);
        log_debug("ptrace scan: /proc %" PRIu64 " us, dump %" PRIu64 " us, place and emit %" PRIu64 " us",
                  t1 - t0, t2 - t1, now_usec(CLOCK_MONOTONIC) - t2);
        return 0;
}

/* The pass; why it failed in s->error (nothing logged). */
static int scan_pass(Scan *s, Forest **ret, UnreadableTask **ret_unreadable, size_t *ret_n_unreadable) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ UnreadableTask *unreadable = NULL;
        size_t n_unreadable = 0;
        int r;

        r = ptrace_check_tracer(&s->error);
        if (r < 0)
                return r;
        r = ptrace_forest_new(&s->opts, &f);
        if (r < 0)
                return scan_error_set(&s->error, LOG_LEVEL_ERR, r, "Failed to create the forest");

        r = s->opts.freeze ? ptrace_scan_run_frozen(s, f) : scan_run(s, f);
        if (r < 0)
                return r;
        r = ptrace_collect_unreadable(s, &unreadable, &n_unreadable);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(f);
        if (ret_unreadable) {
                *ret_unreadable = TAKE_PTR(unreadable);
                *ret_n_unreadable = n_unreadable;
        }
        return 0;
}

int ptrace_scan_explained(const ScanOptions *opts, Forest **ret, UnreadableTask **ret_unreadable,
                          size_t *ret_n_unreadable, ScanError *ret_error) {
        _cleanup_(ptrace_scan_done) Scan s = { .opts = opts ? *opts : SCAN_OPTIONS_DEFAULT };
        int r = scan_pass(&s, ret, ret_unreadable, ret_n_unreadable);
        *ret_error = s.error;
        return r;
}

int ptrace_scan(const ScanOptions *opts, Forest **ret, UnreadableTask **ret_unreadable, size_t *ret_n_unreadable) {
        ScanError e = {};
        int r = ptrace_scan_explained(opts, ret, ret_unreadable, ret_n_unreadable, &e);
        return r < 0 ? scan_error_log(&e, r, "ptrace scan failed") : r;
}
