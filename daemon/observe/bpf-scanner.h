/* bpf-scanner.h: the bpf backend's scanner object and the records its files share: scan-bpf.c (the
 * object and its passes) and the scan-bpf-*.c it stands on. It owns the tracepoints' unit
 * (watch-bpf.h), loaded on its id maps; the flow goes one way, the watch sees no scanner */
#pragma once

#include <linux/seccomp.h>
#include <stdint.h>

#include "observe/bpf/ids.h"
#include "observe/bpf/scan.h"
#include "core/hashmap.h"
#include "core/prog.h"
#include "observe/bpf-util.h"
#include "observe/scan-bpf.h"
#include "observe/watch-bpf.h"

struct bpf_map;
struct scan_bpf;
struct scan_bpf__bss;
struct scan_bpf__data;
struct scan_bpf__data_ids;
struct ring_buffer;

/* The loaded scan unit (bpf/scan.bpf.c) as the scanner uses it, whichever skeleton loaded it:
 * libbpf's (scan.skel.h: live scanners, and any scanner where the light one cannot load) or a
 * light one (scan*.lskel.h: one-shot scanners, scan-bpf-light.c), whose global sections have the
 * same layout. The sections are mapped; fds are -1 where nothing was loaded. */
typedef struct BpfScanUnit {
        struct scan_bpf *skel;            /* libbpf's skeleton, or NULL */
        void *light;                      /* a light skeleton, or NULL */
        void (*light_destroy)(void *light);
        struct scan_bpf__bss *bss;
        struct scan_bpf__data *data;
        struct scan_bpf__data_ids *data_ids;
        int records_fd, filter_ids_fd, seccomp_procs_fd, data_ids_fd, argv_want_fd;
        int tasks_link_fd, argv_link_fd; /* the task iterator walks the file tables too (files_mode) */
        uint32_t filter_ids_entries;      /* the id map's size as loaded */
} BpfScanUnit;

/* A filter this scanner was told about. The kernel sends a filter's instructions only the first
 * time it sends its id (filters are immutable, ids never reused): what never changes is kept
 * here from pass to pass, next to what the last pass that met it said. Dropped once no pass has
 * met it for a while (BPF_FILTER_KEEP_PASSES). */
typedef struct BpfFilter {
        uint64_t id, parent_id;
        uint64_t seen_pass;   /* the last pass that sent its record */
        uint32_t refs, users; /* as of seen_pass */
        bool log, wait_killable_recv;
        bool has_listener; /* as of seen_pass */
        bool keep;         /* reported by the current pass */
        bool dropped;      /* insns dropped (bpf_scanner_drop_programs()), or handed to the forest of a
                            * scanner that scans once: only len and digest */
        uint8_t digest[PROG_DIGEST_SIZE];
        size_t len;
        struct sock_filter *insns; /* an allocation of their own, which a forest can take; NULL when
                                    * dropped or len is 0 */
} BpfFilter;

/* A program a one-shot scanner met, by its bytes: each pass names every filter anew (its ids hold
 * within a pass) and sends its instructions again; a filter whose instructions are byte for byte
 * those of a program kept here takes its digest, instead of hashing them once more. Dropped once
 * no pass has met it for BPF_PROGRAM_KEEP_PASSES passes. */
typedef struct BpfProgram {
        uint64_t seen_pass;
        size_t len;
        uint8_t digest[PROG_DIGEST_SIZE];
        struct sock_filter insns[];
} BpfProgram;

/* An executable or a command line a pass sent for process tgid: its bytes are pool[off, off + len). */
typedef struct ProcRec {
        pid_t tgid;
        uint32_t flags;          /* SCAN_EXE_* or SCAN_ARGV_* */
        uint64_t start_boottime; /* the leader's (command lines only) */
        pid_t same_tgid;         /* SCAN_EXE_SAME: the process whose record has the path */
        size_t off, len;
} ProcRec;

/* The records of one pass. The arrays are kept from pass to pass (their sizes reset). */
typedef struct PassRecords {
        struct scan_rec_task *tasks;
        size_t n_tasks, n_tasks_allocated;
        struct scan_rec_task *tasks_spare; /* where sorting puts them, then swapped with tasks */
        size_t n_tasks_spare_allocated;
        struct scan_rec_listener *listeners;
        size_t n_listeners, n_listeners_allocated;
        BpfFilter **filters; /* met in this pass, each once */
        size_t n_filters, n_filters_allocated;
        /* The same by id once the pass has ended, where their ids are close together (a pass
         * hands out new ones in a row): by_id[id - by_id_base], NULL for an id it did not meet. */
        BpfFilter **by_id;
        size_t n_by_id, n_by_id_allocated;
        uint64_t by_id_base;
        ProcRec *exes; /* sorted by tgid once the pass is done */
        size_t n_exes, n_exes_allocated;
        ProcRec *argvs; /* sorted by tgid once the argv pass is done */
        size_t n_argvs, n_argvs_allocated;
        char *pool;
        size_t pool_len, pool_allocated;
        bool end_seen;
        uint64_t end_pass;
        bool any_listener;  /* a filter met has a listener (filter->notif) */
        bool insns_missing; /* a record left out instructions this scanner does not have */
        int error;
} PassRecords;

/* When the task_file iterator must run: see files_pass_needed() in scan-bpf-pass.c. */
typedef struct BpfFilesState {
        bool ran;                   /* at least once */
        size_t n_listeners;         /* listener records of the last run */
        uint64_t created_mark;      /* listeners_created (BPF) when it started */
        uint64_t install_misses;    /* seccomp_exit's recursion misses when it started */
} BpfFilesState;

struct BpfScanner {
        BpfScanUnit unit; /* loaded while unit.bss is set */
        struct ring_buffer *rb; /* the scan's records */
        bool oneshot;
        bool once; /* one-shot, and freed after its one forest (BpfScannerOptions.once) */
        uint32_t id_map_size; /* entries of the kernel's id map */
        uint64_t pass;
        const ScanOptions *opts; /* of the current pass */
        PassRecords records;
        Hashmap filters; /* id -> BpfFilter*, the filters of the last passes */
        Hashmap programs; /* one-shot: program_key() -> BpfProgram*, the programs of the last passes */
        /* The others: program_key() -> a filter that came with its instructions in this pass, whose
         * digest another filter with the same bytes takes (sandboxes of one kind install the same
         * program, each a filter of its own). Emptied as a pass starts. */
        Hashmap pass_programs;
        size_t programs_insns; /* their instructions, together */
        /* One-shot: whether no listener fd exists now (a live scanner beside it knows), so that the
         * task_file iterator need not run; NULL: it always runs. */
        bool (*no_listeners)(void *userdata);
        void *no_listeners_userdata;
        size_t live_filters;       /* filters met by the last pass that ran to its end */
        uint64_t last_sweep_pass;  /* the last pass that swept the kernel's id map */
        bool force_sweep;          /* the id map was full: sweep at the end of the next pass */
        BpfFilesState files;
        uint64_t exe_proc_reads; /* executables read from /proc, not from a pass */
        uint64_t argv_proc_reads; /* command lines read from /proc, not from the argv pass */
        uint64_t argv_passes;
        uint64_t *argv_want;     /* the argv_want map, mapped; NULL without the argv iterator */
        bool no_argv;            /* the argv iterator is not loaded */
        bool no_exe;             /* nor the executables' code (a one-shot's light skeleton, with no_argv) */
        unsigned long beside_min_tasks; /* one-shot: task_file beside task from this many tasks on */
        long ticks_per_sec;
        bool failure_logged;     /* the current attempt failed where its cause is known, and logged it */
        BpfWatch watch;
};

/* A pass fails where its cause is known: log it there with this; bpf_scanner_scan() logs the
 * failures that were not, so that each failure of a scan is logged once, by the scanner. */
#define bpf_scanner_fail_errno(s, r, ...) ((s)->failure_logged = true, log_error_errno((r), __VA_ARGS__))

/* start_boottime (ns) -> clock ticks, as /proc/TID/stat field 22 */
static inline uint64_t bpf_scanner_ticks(const BpfScanner *s, uint64_t ns) {
        return bpf_boottime_to_ticks(ns, s->ticks_per_sec);
}
