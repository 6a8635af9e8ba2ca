/* scan-bpf.c: the exact backend: runs the BPF task and task_file iterators and turns their records
 * into a Forest whose filter ids name kernel objects. The scanner object and its passes; what it
 * loads (scan-bpf-load.c), keeps between passes (scan-bpf-cache.c), records in a pass
 * (scan-bpf-pass.c), reports (scan-bpf-select.c), reads from /proc (scan-bpf-proc.c) and builds
 * (scan-bpf-forest.c) each in a file of its own */
#include <time.h>

#include "observe/scan-bpf-cache.h"
#include "observe/scan-bpf-forest.h"
#include "observe/scan-bpf-load.h"
#include "observe/scan-bpf-pass.h"
#include "observe/scan-bpf-proc.h"
#include "observe/tracefs.h"
#include "observe/bpf/scan.skel.h" /* after the records it names (bpf/scan.h) */

#define PASS_ATTEMPTS 3       /* passes tried before an inconsistent one is an error */

BpfScanner *bpf_scanner_free(BpfScanner *s) {
        if (!s)
                return NULL;
        bpf_watch_deinit(&s->watch);
        bpf_scanner_unload(s);
        bpf_pass_records_free(&s->records);
        bpf_filters_clear(&s->filters);
        bpf_cache_clear(&s->programs);
        hashmap_deinit(&s->pass_programs);
        free(s);
        return NULL;
}

int bpf_scanner_new_with_options(const BpfScannerOptions *o, BpfScanner **ret) {
        _cleanup_(bpf_scanner_freep) BpfScanner *s = NULL;
        uint64_t first_id = o->first_id > 0 ? o->first_id : 1;
        int r;

        /* The tracepoints that name new filters must be in place before the first pass. */
        if (!o->oneshot) {
                r = tracefs_ensure_mounted();
                if (r < 0)
                        return r;
        }

        s = calloc(1, sizeof(BpfScanner));
        if (!s)
                return -ENOMEM; /* the caller logs it */
        hashmap_set_dense_keys(&s->filters); /* the ids its program numbers filters with, in runs */
        s->oneshot = o->oneshot;
        s->once = o->oneshot && o->once;
        s->no_argv = o->no_argv;
        s->no_exe = o->no_exe && o->no_argv;
        s->beside_min_tasks = BPF_BESIDE_MIN_TASKS;
        s->id_map_size = o->oneshot && o->id_map_entries > 0 ? o->id_map_entries : bpf_scanner_id_map_size(o->oneshot);
        s->ticks_per_sec = bpf_clock_ticks_per_sec();

        /* once per process: scanners may be made in worker threads too (snapshots, analyses) */
        bpf_scanner_process_prepare();

        r = bpf_scanner_load(s, first_id - 1);
        if (r < 0 && !s->no_argv) {
                /* The command-line iterator needs sleepable iterators and bpf_copy_from_user_task()
                 * (Linux 5.18): without them, command lines come from /proc. */
                log_warning_errno(r, "Loading the BPF programs with the command-line iterator failed: %m; "
                                  "trying without it (command lines will be read from /proc).");
                bpf_scanner_unload(s);
                s->no_argv = true;
                r = bpf_scanner_load(s, first_id - 1);
        }
        if (r < 0)
                return r;
        if (!o->oneshot) {
                r = bpf_scanner_load_watch(s);
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(s);
        return 0;
}

int bpf_scanner_new(BpfScanner **ret) {
        return bpf_scanner_new_with_options(&(BpfScannerOptions) {}, ret);
}

int bpf_scanner_new_with_first_id(BpfScanner **ret, uint64_t first_id) {
        if (first_id == 0)
                return -EINVAL;
        return bpf_scanner_new_with_options(&(BpfScannerOptions) { .first_id = first_id }, ret);
}

int bpf_scanner_get_stats(BpfScanner *s, BpfScannerStats *ret) {
        const volatile struct scan_stats *k = &s->unit.bss->stats;
        const volatile struct ids_stats *ids = &s->unit.data_ids->ids_stats;

        *ret = (BpfScannerStats) {
                .passes = s->pass,
                .ids_assigned = ids->ids_assigned,
                .ids_swept = k->ids_swept,
                .addresses_reused = ids->addresses_reused,
                .insns_sent = k->insns_sent,
                .sweeps = k->sweeps,
                .exe_proc_reads = s->exe_proc_reads,
                .argv_passes = s->argv_passes,
                .argv_proc_reads = s->argv_proc_reads,
                .id_map_entries = s->id_map_size,
        };
        return 0;
}

static int scan_once(BpfScanner *s, const ScanOptions *opts, Forest **ret) {
        _cleanup_free_ ProcSpan *spans = NULL;
        uint64_t built;
        size_t n;
        int k;

        s->opts = opts;
        k = bpf_scanner_pass_run(s, opts->root > 0, opts->include_exe);
        s->opts = NULL;
        if (k < 0)
                return k;
        built = now_usec(CLOCK_MONOTONIC);
        bpf_records_check_listeners(&s->records);
        if (opts->root > 0 && !bpf_records_have_process(&s->records, opts->root)) {
                k = bpf_scanner_add_unvisited_root(s, opts->root);
                if (k < 0)
                        return k;
        }
        k = bpf_spans_build(&s->records, &spans, &n);
        if (k < 0)
                return k;
        if (opts->root == 0) {
                k = bpf_scanner_add_holders(s, spans, n);
                if (k > 0) {
                        free(spans);
                        spans = NULL;
                        k = bpf_spans_build(&s->records, &spans, &n);
                }
                if (k < 0)
                        return k;
        }
        k = bpf_scanner_select(s, spans, n, opts->root);
        if (k < 0)
                return k;
        if (opts->include_argv && s->argv_want) {
                k = bpf_scanner_argv_pass(s, spans, n);
                if (k < 0)
                        return k;
        }
        k = bpf_scanner_forest_build(s, opts, spans, n, ret);
        if (k < 0)
                return k;
        log_debug("Pass %" PRIu64 ": forest built in %" PRIu64 " us.", s->pass, now_usec(CLOCK_MONOTONIC) - built);
        return 0;
}

/* A one-shot scanner's filters are in the forest now, and their ids will not come back (the next
 * pass names every filter anew): only the programs are kept. */
static void oneshot_forget_filters(BpfScanner *s) {
        bpf_filters_clear(&s->filters);
        s->records.n_filters = 0;
}

int bpf_scanner_scan(BpfScanner *s, const ScanOptions *opts, Forest **ret) {
        ScanOptions o = opts ? *opts : SCAN_OPTIONS_DEFAULT;
        int k = -EIO;

        /* A pass is not atomic: objects may be replaced while it runs. A pass whose records do
         * not fit together (a task pointing at a filter that was not sent) is run again, as is one
         * that found the id map full (the next one sweeps it first, or a one-shot scanner loads a
         * larger one: that does not count as an attempt). */
        for (unsigned attempt = 0; attempt < PASS_ATTEMPTS;) {
                s->failure_logged = false;
                k = scan_once(s, &o, ret);
                if (k == -ENOBUFS && s->oneshot) {
                        k = bpf_scanner_grow_oneshot(s);
                        if (k < 0)
                                break;
                        continue;
                }
                if (k != -ENOENT && k != -EINVAL && k != -ENOBUFS)
                        break;
                attempt++;
        }
        if (s->oneshot && !s->once) /* once: freed whole, or with the process (sectreed scan) */
                oneshot_forget_filters(s);
        if (k == -ENOENT || k == -EINVAL) /* -EAGAIN to callers: the machine changed, the scanner is fine */
                return log_error_errno(-EAGAIN, "Failed to get a consistent pass in %d attempts: tasks and filters "
                                       "changed under each of them.", PASS_ATTEMPTS);
        if (k == -ENOBUFS)
                return log_error_errno(k, "The filter id map is full: pass incomplete.");
        if (k < 0 && !s->failure_logged)
                return log_error_errno(k, "BPF scan failed: %m");
        if (k < 0)
                return k;
        return 0;
}

void bpf_scanner_set_no_listeners(BpfScanner *s, bool (*no_listeners)(void *userdata), void *userdata) {
        s->no_listeners = no_listeners;
        s->no_listeners_userdata = userdata;
}

void bpf_scanner_set_beside_min_tasks(BpfScanner *s, unsigned long min_tasks) {
        s->beside_min_tasks = min_tasks;
}

bool bpf_scanner_reusable(const BpfScanner *s) {
        return s->oneshot && s->unit.bss;
}

BpfWatch *bpf_scanner_watch(BpfScanner *s) {
        return &s->watch;
}
