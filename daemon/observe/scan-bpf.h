/* scan-bpf.h: the bpf backend's scanner (scan-bpf.c): BPF iterators, exact identity */
#pragma once

#include "observe/scan-options.h"

/* The bpf backend: a long-lived scanner, so that filter ids stay stable across passes. It loads
 * the iterators and the tracepoints on seccomp(2) and prctl(2) that give every new filter a fresh
 * id (and, once watched, report it: watch-bpf.h). */
typedef struct BpfScanner BpfScanner;
int bpf_scanner_new(BpfScanner **ret);
/* Hand out filter ids starting at first_id (> 0) instead of 1. */
int bpf_scanner_new_with_first_id(BpfScanner **ret, uint64_t first_id);

typedef struct BpfScannerOptions {
        uint64_t first_id; /* the first filter id handed out; 0 means 1 */
        /* For one pass and gone (`sectreed scan`): loads the iterators only, with an id map sized
         * for the machine as it is (grown if a pass finds it full), and attaches no tracepoint,
         * so it costs little to make and to free. Its ids hold within a pass, not across passes
         * (an address freed and reused between two passes may keep its id); it cannot watch. */
        bool oneshot;
        /* Scans will not ask for argv (ScanOptions.include_argv): the iterator that reads command
         * lines is not loaded (one that asks anyway reads /proc/PID/cmdline). */
        bool no_argv;
        /* Nor for executables (ScanOptions.include_exe), with no_argv: a one-shot scanner loads no
         * code that reads them (one that asks anyway reads /proc/PID/exe). Such a one-shot scanner
         * is the text tree's (`sectreed scan`), which shows no credentials and no start times: it
         * reads none, and its forest's processes and threads have uid, gid and start_time 0. */
        bool no_exe;
        /* With oneshot: the scanner makes one forest and is freed (`sectreed scan`). It keeps no
         * program by its bytes for a next pass, and hands each program to the forest rather than
         * copying it: at 20,000 processes those copies were 8 MiB of fresh pages. */
        bool once;
        /* With oneshot: the entries of its first id map (tests make it small); 0: sized for the
         * machine (bpf_scanner_id_map_size()). */
        uint32_t id_map_entries;
} BpfScannerOptions;
int bpf_scanner_new_with_options(const BpfScannerOptions *o, BpfScanner **ret);
BpfScanner *bpf_scanner_free(BpfScanner *s);
DEFINE_CLEANUP(BpfScanner *, bpf_scanner_free);
/* The tracepoints' unit (watch-bpf.h) the scanner loaded on its id maps, since its ids depend on
 * them from the first pass: a live scanner's user starts it and reads its events there. */
typedef struct BpfWatch BpfWatch;
BpfWatch *bpf_scanner_watch(BpfScanner *s);
int bpf_scanner_scan(BpfScanner *s, const ScanOptions *opts, Forest **ret);
/* A one-shot scanner trusts no filter id of an earlier pass (no tracepoint would tell it that an
 * address freed since holds another filter: its next pass gives each filter it meets a new id,
 * FILTER_ENT_STALE in scan.bpf.c), so it may serve another call whatever its id map holds: this
 * says it is one that loaded. */
bool bpf_scanner_reusable(const BpfScanner *s);
/* What a live scanner knows of seccomp listener fds, for a one-shot scanner beside it: whether its
 * last task_file pass found none, and the counters of listeners made as that pass started. Taken
 * in the live scanner's thread after a pass; _holds() may be asked in any thread: no listener
 * exists now if the mark says none and no seccomp(2) call has made one since. */
typedef struct BpfListenerMark {
        bool none;
        uint64_t created, install_misses;
} BpfListenerMark;
BpfListenerMark bpf_scanner_listener_mark(const BpfScanner *live);
bool bpf_scanner_listener_mark_holds(BpfScanner *live, const BpfListenerMark *m);
/* A one-shot scanner runs its task_file iterator (a walk of every open file of every task, for
 * listener fds) only when no_listeners(userdata) cannot tell that none exists. */
void bpf_scanner_set_no_listeners(BpfScanner *oneshot, bool (*no_listeners)(void *userdata), void *userdata);
/* A one-shot scanner runs its task_file iterator beside the task iterator on machines of at least
 * min_tasks tasks (default BPF_BESIDE_MIN_TASKS; 0: always, as tests do). */
#define BPF_BESIDE_MIN_TASKS 1000
void bpf_scanner_set_beside_min_tasks(BpfScanner *oneshot, unsigned long min_tasks);
/* Let go of the program of every filter id the scanner keeps for which drop(id, userdata) says so
 * (the live forest keeps it over budget): only its length and digest stay. A pass that does not
 * allow that (ScanOptions.allow_dropped) asks the kernel for the program again. */
void bpf_scanner_drop_programs(BpfScanner *s, bool (*drop)(uint64_t id, void *userdata), void *userdata);

typedef struct BpfScannerStats {
        uint64_t passes;
        uint64_t ids_assigned;     /* filter ids handed out so far */
        uint64_t ids_swept;        /* ids dropped because their filter was gone */
        uint64_t addresses_reused; /* a new filter appeared at an address that had an id: it got a new one */
        uint64_t insns_sent;       /* filter records that carried instructions (once per id, normally) */
        uint64_t sweeps;           /* passes that swept the kernel's id map */
        uint64_t exe_proc_reads;   /* executables read from /proc/PID/exe: the pass could not say */
        uint64_t argv_passes;      /* passes of the argv iterator (scans that asked for argv) */
        uint64_t argv_proc_reads;  /* command lines read from /proc/PID/cmdline: the iterator could not */
        uint64_t id_map_entries;   /* of the kernel's id map now (a one-shot scanner's grows when full) */
} BpfScannerStats;
int bpf_scanner_get_stats(BpfScanner *s, BpfScannerStats *ret);
