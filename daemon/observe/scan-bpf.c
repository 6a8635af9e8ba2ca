/* scan-bpf.c: the exact backend: runs the BPF task and task_file iterators and turns their records
 * into a Forest whose filter ids name kernel objects */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "core/budget.h"
#include "observe/bpf/ids.h"
#include "observe/bpf/scan.h"
#include "observe/procinfo.h"
#include "observe/scan-bpf-internal.h"
#include "observe/scanner.h"
#include "observe/bpf/scan.skel.h"
#include "observe/tracefs.h"

#define PASS_ATTEMPTS 3       /* passes tried before an inconsistent one is an error */
#define MAX_READ_STALLS 1000  /* -EAGAIN reads in a row that made no room in the ring buffer */
#define MIN_RINGBUF_SIZE (64U << 10) /* holds the largest record: a FILTER of 4096 instructions */
#define MAX_FILTER_IDS (1U << 18)    /* as in bpf/ids.bpf.h */
#define ONESHOT_MIN_IDS 4096U

/* A filter no pass has met for this many passes is gone (every pass meets every live filter):
 * its instructions are dropped. Should it show up again after all, the kernel is asked for every
 * filter's instructions once more (a new epoch). More than the kernel's SWEEP_AFTER_PASSES. */
#define BPF_FILTER_KEEP_PASSES 8
/* The kernel's id map keeps the ids of gone filters until a pass ends with a sweep, which visits
 * every bucket of the map (some milliseconds, whatever the number of filters): one is asked for
 * when ids of gone filters have been waiting this many passes, or sooner when they take up
 * 1/SWEEP_STALE_SHARE of the map. */
#define SWEEP_INTERVAL 16
#define SWEEP_STALE_SHARE 16

/* f without its instructions, in place of f (freed) where ref points, and in the map if in_map. */
static int filter_drop_insns(BpfScanner *s, BpfFilter **ref, bool in_map) {
        BpfFilter *f = *ref, *small = malloc(sizeof(BpfFilter));
        if (!small)
                return -ENOMEM;
        *small = *f;
        small->dropped = true;
        int k = in_map ? hashmap_replace(&s->filters, f->id, small) : 0;
        if (k < 0) {
                free(small);
                return k;
        }
        free(f);
        *ref = small;
        return 0;
}

/* A one-shot scanner keeps the programs met by this many of its last passes (see BpfProgram), and
 * at most this many instructions of them (4 MiB): a pass over programs that a uid's budget keeps
 * out of memory does not keep them here either, beyond that bound. */
#define BPF_PROGRAM_KEEP_PASSES 2
#define BPF_PROGRAM_KEEP_INSNS (1U << 19)

_Static_assert(sizeof(struct sock_filter) == sizeof(uint64_t), "an instruction is 8 bytes");

/* Where a program is kept by a one-shot scanner: a hash of its bytes. Two programs with the same
 * key are told apart by their bytes. */
static uint64_t program_key(const struct sock_filter *insns, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325) ^ len;

        for (size_t i = 0; i < len; i++) {
                uint64_t w;
                memcpy(&w, &insns[i], sizeof(w));
                h = (h ^ w) * UINT64_C(0x100000001b3);
                h ^= h >> 32;
        }
        return h;
}

static void program_keep(BpfScanner *s, uint64_t key, const struct sock_filter *insns, size_t len,
                         const uint8_t digest[PROG_DIGEST_SIZE]) {
        if (s->programs_insns + len > BPF_PROGRAM_KEEP_INSNS)
                return;
        BpfProgram *p = malloc(offsetof(BpfProgram, insns) + len * sizeof(struct sock_filter));

        if (!p)
                return; /* computed again next time */
        *p = (BpfProgram) { .seen_pass = s->pass, .len = len };
        memcpy(p->digest, digest, PROG_DIGEST_SIZE);
        memcpy(p->insns, insns, len * sizeof(struct sock_filter));
        if (hashmap_put(&s->programs, key, p) < 0)
                free(p);
        else
                s->programs_insns += len;
}

/* The digest of a program. A one-shot scanner takes it from the program it kept with the same
 * bytes (compared in full: the digest is a function of the bytes alone, so it is exact), and keeps
 * the programs it had to hash. */
static void program_digest(BpfScanner *s, const struct sock_filter *insns, size_t len, uint8_t out[PROG_DIGEST_SIZE]) {
        if (!s->oneshot) {
                prog_digest(insns, len, out);
                return;
        }
        uint64_t key = program_key(insns, len);
        BpfProgram *p = hashmap_get(&s->programs, key);
        if (p && p->len == len && memcmp(p->insns, insns, len * sizeof(struct sock_filter)) == 0) {
                memcpy(out, p->digest, PROG_DIGEST_SIZE);
                p->seen_pass = s->pass;
                return;
        }
        prog_digest(insns, len, out);
        if (!p) /* else another program has that key: this one is not kept */
                program_keep(s, key, insns, len, out);
}

static void programs_clear(Hashmap *programs) {
        uint64_t key;
        void *p;

        for (size_t i = 0; hashmap_next(programs, &i, &key, &p);)
                free(p);
        hashmap_deinit(programs);
}

static void programs_forget(BpfScanner *s, uint64_t key) {
        BpfProgram *p = hashmap_remove(&s->programs, key);
        if (p)
                s->programs_insns -= p->len;
        free(p);
}

/* Forget the programs no pass has met for BPF_PROGRAM_KEEP_PASSES passes. */
static int programs_evict(BpfScanner *s) {
        _cleanup_free_ uint64_t *gone = NULL;
        size_t n = 0, allocated = 0;
        uint64_t key;
        void *v;

        for (size_t i = 0; hashmap_next(&s->programs, &i, &key, &v);) {
                if (((const BpfProgram *) v)->seen_pass + BPF_PROGRAM_KEEP_PASSES > s->pass)
                        continue;
                if (GROW(gone, allocated, n + 1) < 0)
                        return -ENOMEM;
                gone[n++] = key;
        }
        for (size_t i = 0; i < n; i++)
                programs_forget(s, gone[i]);
        return 0;
}

static BpfFilter *bpf_filter_new(BpfScanner *s, const struct scan_rec_filter *rec) {
        BpfFilter *f = malloc(offsetof(BpfFilter, insns) + rec->len * sizeof(struct sock_filter));

        if (!f)
                return NULL;
        *f = (BpfFilter) {
                .id = rec->id,
                .parent_id = rec->parent_id,
                .log = rec->log,
                .wait_killable_recv = rec->wait_killable_recv,
                .len = rec->len,
        };
        memcpy(f->insns, rec->insns, rec->len * sizeof(struct sock_filter));
        program_digest(s, f->insns, f->len, f->digest);
        return f;
}

static void filters_clear(Hashmap *filters) {
        uint64_t id;
        void *f;

        for (size_t i = 0; hashmap_next(filters, &i, &id, &f);)
                free(f);
        hashmap_deinit(filters);
}

/* Forget the filters no pass has met for BPF_FILTER_KEEP_PASSES passes. */
static int filters_evict(BpfScanner *s) {
        _cleanup_free_ uint64_t *gone = NULL;
        size_t n = 0, allocated = 0;
        uint64_t id;
        void *v;

        for (size_t i = 0; hashmap_next(&s->filters, &i, &id, &v);) {
                const BpfFilter *f = v;
                if (f->seen_pass + BPF_FILTER_KEEP_PASSES > s->pass)
                        continue;
                if (GROW(gone, allocated, n + 1) < 0)
                        return -ENOMEM;
                gone[n++] = id;
        }
        for (size_t i = 0; i < n; i++)
                free(hashmap_remove(&s->filters, gone[i]));
        return 0;
}

/* The records are kept in arrays that live as long as the scanner; a pass only resets them. */
static void pass_records_reset(PassRecords *r) {
        *r = (PassRecords) {
                .tasks = r->tasks,
                .n_tasks_allocated = r->n_tasks_allocated,
                .tasks_spare = r->tasks_spare,
                .n_tasks_spare_allocated = r->n_tasks_spare_allocated,
                .listeners = r->listeners,
                .n_listeners_allocated = r->n_listeners_allocated,
                .filters = r->filters,
                .n_filters_allocated = r->n_filters_allocated,
                .exes = r->exes,
                .n_exes_allocated = r->n_exes_allocated,
                .argvs = r->argvs,
                .n_argvs_allocated = r->n_argvs_allocated,
                .pool = r->pool,
                .pool_allocated = r->pool_allocated,
        };
}

static void pass_records_free(PassRecords *r) {
        free(r->tasks);
        free(r->tasks_spare);
        free(r->listeners);
        free(r->filters);
        free(r->exes);
        free(r->argvs);
        free(r->pool);
        *r = (PassRecords) {};
}

/* A filter of the current pass, NULL if the pass did not meet it. */
static BpfFilter *pass_filter_find(const BpfScanner *s, uint64_t id) {
        BpfFilter *f = id == 0 ? NULL : hashmap_get(&s->filters, id);

        return f && f->seen_pass == s->pass ? f : NULL;
}

/* Whether a filter met for the first time comes without its program (ScanOptions.dropped, .wanted). */
static bool filter_unwanted(const ScanOptions *o, const BpfFilter *f) {
        if (o->dropped && o->dropped(f->id, o->dropped_userdata))
                return true;
        return o->wanted && !o->wanted(f->digest, f->len, o->dropped_userdata);
}

/* The filter a record names (f: what is kept under its id, or NULL), kept from an earlier pass
 * when the record leaves the instructions out. NULL (and records.insns_missing) if they are not
 * here: the pass is redone in a new epoch. */
static int filter_from_rec(BpfScanner *s, BpfFilter *f, const struct scan_rec_filter *rec, BpfFilter **ret) {
        BpfFilter *fresh;
        int k;

        bool allow_dropped = s->opts && s->opts->allow_dropped;
        bool usable = f && f->len == rec->len && (!f->dropped || allow_dropped);
        if (!rec->has_insns && rec->len > 0) {
                if (!usable)
                        s->records.insns_missing = true;
                *ret = usable ? f : NULL;
                return 0;
        }
        if (usable && !f->dropped && memcmp(f->insns, rec->insns, rec->len * sizeof(struct sock_filter)) == 0) {
                *ret = f;
                return 0;
        }
        if (usable && f->dropped) { /* sent again: the same program stays dropped */
                uint8_t digest[PROG_DIGEST_SIZE];
                prog_digest(rec->insns, rec->len, digest);
                if (memcmp(digest, f->digest, sizeof(digest)) == 0) {
                        *ret = f;
                        return 0;
                }
        }
        /* New, or sent again with other instructions than kept (the kernel could not read them
         * before): the record's are the truth. */
        fresh = bpf_filter_new(s, rec);
        if (!fresh)
                return -ENOMEM;
        if (allow_dropped && filter_unwanted(s->opts, fresh) && (k = filter_drop_insns(s, &fresh, false)) < 0) {
                free(fresh);
                return k;
        }
        k = hashmap_replace(&s->filters, rec->id, fresh);
        if (k < 0) {
                free(fresh);
                return k;
        }
        free(f);
        *ret = fresh;
        return 0;
}

static int records_add_filter(BpfScanner *s, const struct scan_rec_filter *rec, size_t size) {
        PassRecords *r = &s->records;
        BpfFilter *f;
        int k;

        if (size < sizeof(*rec) || rec->id == 0 || rec->len > SCAN_MAX_INSNS ||
            (rec->has_insns && size < sizeof(*rec) + rec->len * sizeof(struct sock_filter)))
                return -EBADMSG;
        f = hashmap_get(&s->filters, rec->id);
        if (f && f->seen_pass == s->pass)
                return 0; /* met again on a retried object */

        k = filter_from_rec(s, f, rec, &f);
        if (k < 0 || !f)
                return k;
        if (GROW(r->filters, r->n_filters_allocated, r->n_filters + 1) < 0)
                return -ENOMEM;
        f->parent_id = rec->parent_id;
        f->seen_pass = s->pass;
        f->refs = rec->refs;
        f->users = rec->users;
        f->has_listener = rec->has_listener;
        f->keep = false;
        r->filters[r->n_filters++] = f;
        if (f->has_listener)
                r->any_listener = true;
        return 0;
}

/* Keep len bytes of a record in the pass's string pool; their offset in *ret_off. */
static int records_keep_bytes(PassRecords *r, const void *data, size_t len, size_t *ret_off) {
        if (GROW(r->pool, r->pool_allocated, r->pool_len + len) < 0)
                return -ENOMEM;
        memcpy(r->pool + r->pool_len, data, len);
        *ret_off = r->pool_len;
        r->pool_len += len;
        return 0;
}

static int records_add_exe(PassRecords *r, const struct scan_rec_exe *rec, size_t size) {
        ProcRec e;

        if (size < sizeof(*rec) || rec->len >= SCAN_PATH_MAX || size < sizeof(*rec) + rec->len ||
            memchr(rec->path, 0, rec->len))
                return -EBADMSG;
        e = (ProcRec) { .tgid = (pid_t) rec->tgid, .flags = rec->flags, .same_tgid = (pid_t) rec->same_tgid, .len = rec->len };
        if (GROW(r->exes, r->n_exes_allocated, r->n_exes + 1) < 0 || records_keep_bytes(r, rec->path, rec->len, &e.off) < 0)
                return -ENOMEM;
        r->exes[r->n_exes++] = e;
        return 0;
}

static int records_add_argv(PassRecords *r, const struct scan_rec_argv *rec, size_t size) {
        ProcRec a;

        if (size < sizeof(*rec) || rec->len >= SCAN_ARGV_MAX || size < sizeof(*rec) + rec->len)
                return -EBADMSG;
        a = (ProcRec) {
                .tgid = (pid_t) rec->tgid,
                .flags = rec->flags,
                .start_boottime = rec->start_boottime,
                .len = rec->len,
        };
        if (GROW(r->argvs, r->n_argvs_allocated, r->n_argvs + 1) < 0 || records_keep_bytes(r, rec->args, rec->len, &a.off) < 0)
                return -ENOMEM;
        r->argvs[r->n_argvs++] = a;
        return 0;
}

static int records_add(BpfScanner *s, const void *data, size_t size) {
        PassRecords *r = &s->records;
        uint32_t type;

        if (size < sizeof(type))
                return -EBADMSG;
        memcpy(&type, data, sizeof(type));

        switch (type) {
        case SCAN_REC_TASK:
                if (size < sizeof(struct scan_rec_task))
                        return -EBADMSG;
                if (GROW(r->tasks, r->n_tasks_allocated, r->n_tasks + 1) < 0)
                        return -ENOMEM;
                memcpy(&r->tasks[r->n_tasks++], data, sizeof(struct scan_rec_task));
                return 0;
        case SCAN_REC_FILTER:
                return records_add_filter(s, data, size);
        case SCAN_REC_LISTENER:
                if (size < sizeof(struct scan_rec_listener))
                        return -EBADMSG;
                if (GROW(r->listeners, r->n_listeners_allocated, r->n_listeners + 1) < 0)
                        return -ENOMEM;
                memcpy(&r->listeners[r->n_listeners++], data, sizeof(struct scan_rec_listener));
                return 0;
        case SCAN_REC_EXE:
                return records_add_exe(r, data, size);
        case SCAN_REC_ARGV:
                return records_add_argv(r, data, size);
        case SCAN_REC_END: {
                struct scan_rec_end end;
                if (size < sizeof(end))
                        return -EBADMSG;
                memcpy(&end, data, sizeof(end));
                r->end_seen = true;
                r->end_pass = end.pass;
                return 0;
        }
        default:
                return -EBADMSG;
        }
}

static int on_record(void *userdata, void *data, size_t size) {
        BpfScanner *s = userdata;
        int k;

        k = records_add(s, data, size);
        if (k < 0 && s->records.error == 0)
                s->records.error = k;
        return k; /* a negative value stops ring_buffer__consume() */
}

static int libbpf_log(enum libbpf_print_level level, const char *format, va_list ap) {
        char buf[LINE_MAX];
        size_t n;

        if (level == LIBBPF_DEBUG && log_get_max_level() < LOG_LEVEL_DEBUG)
                return 0;
        vsnprintf(buf, sizeof(buf), format, ap);
        n = strlen(buf);
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = 0;
        if (level == LIBBPF_WARN)
                log_warning("libbpf: %s", buf);
        else
                log_debug("libbpf: %s", buf);
        return 0;
}

#define ARGV_WANT_BYTES (SCAN_ARGV_WORDS * sizeof(uint64_t))

static void scanner_unload(BpfScanner *s) {
        if (s->argv_want)
                munmap(s->argv_want, ARGV_WANT_BYTES);
        s->argv_want = NULL;
        ring_buffer__free(s->rb);
        s->rb = NULL;
        scan_bpf__destroy(s->skel);
        s->skel = NULL;
}

BpfScanner *bpf_scanner_free(BpfScanner *s) {
        if (!s)
                return NULL;
        bpf_watch_deinit(&s->watch);
        scanner_unload(s);
        pass_records_free(&s->records);
        filters_clear(&s->filters);
        programs_clear(&s->programs);
        free(s);
        return NULL;
}

/* Loading a BPF unit makes libbpf read the kernel's BTF (/sys/kernel/btf/vmlinux, about 5 MiB)
 * into fresh memory, and copy it once more; a scanner loads one or two units, then its first pass
 * builds everything anew. Where a page fault traps to the hypervisor (20-45 us each on the
 * project's virtual machines, against about 1 us per page populated in one call: the machine
 * facts of sectree-bench) those first touches were most of the time to load. So the heap keeps
 * what it frees (blocks up to 32 MiB come from it, and it is trimmed only when twice `keep` is
 * free at its top), and `keep` bytes of it (twice the BTF and some) are populated in one call:
 * both units' BTF and the first pass reuse those pages. */
#define HEAP_KEEP_SLACK (4U << 20)
#define HEAP_MMAP_THRESHOLD (32U << 20) /* glibc's largest: blocks below it come from the heap */

static size_t heap_keep; /* 0 until heap_prepare() set the heap up */

/* The next `bytes` of the heap populated in one call, and left free for what comes next. */
static void heap_populate(size_t bytes) {
        char *p = malloc(bytes);
        if (!p)
                return;
        uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE), start = ((uintptr_t) p + page - 1) & ~(page - 1);
        (void) madvise((void *) start, ((uintptr_t) p + bytes - start) & ~(page - 1), MADV_POPULATE_WRITE);
        free(p);
}

static void heap_prepare(void) {
        struct stat st;
        size_t keep;

        if (stat("/sys/kernel/btf/vmlinux", &st) < 0 || st.st_size <= 0)
                return;
        keep = 2 * (size_t) st.st_size + HEAP_KEEP_SLACK;
        if (keep >= HEAP_MMAP_THRESHOLD || mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD) != 1 ||
            mallopt(M_TRIM_THRESHOLD, (int) (2 * keep)) != 1)
                return;
        heap_keep = keep;
        heap_populate(keep);
}

static pthread_once_t process_prepared = PTHREAD_ONCE_INIT;
/* libbpf caches what it probed of the kernel in globals as it loads: one load at a time */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static void process_prepare(void) {
        libbpf_set_print(libbpf_log);
        heap_prepare();
}

/* The id map of a one-shot scanner: room for twice the tasks that exist (a filter is held by at
 * least one task, or a listener fd), within [ONESHOT_MIN_IDS, MAX_FILTER_IDS]. */
static uint32_t oneshot_id_map_size(void) {
        struct sysinfo si;
        uint32_t size = ONESHOT_MIN_IDS;

        if (sysinfo(&si) == 0)
                while (size < MAX_FILTER_IDS && size < 2U * si.procs)
                        size <<= 1;
        return size;
}

/* Open, size and load the scan unit into s->skel (and its ring buffer reader), continuing the ids
 * after last_id. */
static int scanner_load_locked(BpfScanner *s, uint64_t last_id) {
        int r;

        s->skel = scan_bpf__open();
        if (!s->skel)
                return log_error_errno(-errno, "Failed to open the scan BPF programs: %m");
        s->skel->data_ids->last_id = last_id;
        bpf_pidns_self(&s->skel->data_ids->pidns_self.level, &s->skel->data_ids->pidns_self.inum);
        s->skel->rodata->mark_procs = !s->oneshot;
        s->skel->rodata->forget_after_pass = s->oneshot;
        r = bpf_map__set_max_entries(s->skel->maps.filter_ids, s->id_map_size);
        if (r >= 0 && s->oneshot) /* nothing reads the marks */
                r = bpf_map__set_max_entries(s->skel->maps.seccomp_procs, 1);
        if (r >= 0 && s->no_argv) {
                bpf_program__set_autoload(s->skel->progs.scan_argv, false);
                r = bpf_map__set_max_entries(s->skel->maps.argv_want, 1);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to size the scan's maps: %m");
        /* Tests make it small, so that passes overflow it and objects are retried. */
        r = bpf_ring_size_from_env(s->skel->maps.records, "SECTREE_BPF_RINGBUF_SIZE", MIN_RINGBUF_SIZE);
        if (r < 0)
                return r;

        r = scan_bpf__load(s->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to load the scan BPF programs: %m");
        r = scan_bpf__attach(s->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the scan BPF programs: %m");

        s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.records), on_record, s, NULL);
        if (!s->rb)
                return log_error_errno(-errno, "Failed to set up the scan ring buffer: %m");
        if (!s->no_argv) {
                void *p = mmap(NULL, ARGV_WANT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                               bpf_map__fd(s->skel->maps.argv_want), 0);
                if (p == MAP_FAILED)
                        return log_error_errno(-errno, "Failed to map the argv_want map: %m");
                s->argv_want = p;
        }
        return 0;
}

static int scanner_load(BpfScanner *s, uint64_t last_id) {
        (void) pthread_mutex_lock(&load_lock);
        int r = scanner_load_locked(s, last_id);
        (void) pthread_mutex_unlock(&load_lock);
        return r;
}

/* A one-shot scanner whose id map was too small: load it again with one four times as large.
 * Nothing of the old map is kept (ids continue above its last one). */
static int oneshot_grow(BpfScanner *s) {
        uint64_t last_id = s->skel->data_ids->last_id;

        if (s->id_map_size >= MAX_FILTER_IDS)
                return -ENOBUFS;
        log_debug("The filter id map of %" PRIu32 " entries is full: loading one four times as large.", s->id_map_size);
        s->id_map_size = s->id_map_size * 4 < MAX_FILTER_IDS ? s->id_map_size * 4 : MAX_FILTER_IDS;
        scanner_unload(s);
        filters_clear(&s->filters);
        s->files = (BpfFilesState) {};
        return scanner_load(s, last_id);
}

static int watch_load(BpfScanner *s) {
        BpfIdMaps maps = {
                .filter_ids = bpf_map__fd(s->skel->maps.filter_ids),
                .seccomp_procs = bpf_map__fd(s->skel->maps.seccomp_procs),
                .data_ids = bpf_map__fd(s->skel->maps.data_ids),
        };

        return bpf_watch_load(&s->watch, &maps);
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
                return log_oom();
        s->oneshot = o->oneshot;
        s->no_argv = o->no_argv;
        s->id_map_size = o->oneshot ? oneshot_id_map_size() : MAX_FILTER_IDS;
        s->ticks_per_sec = bpf_clock_ticks_per_sec();

        /* once per process: scanners may be made in worker threads too (snapshots, analyses) */
        (void) pthread_once(&process_prepared, process_prepare);

        r = scanner_load(s, first_id - 1);
        if (r < 0 && !s->no_argv) {
                /* The command-line iterator needs sleepable iterators and bpf_copy_from_user_task()
                 * (Linux 5.18): without them, command lines come from /proc. */
                log_warning_errno(r, "Loading the BPF programs with the command-line iterator failed: %m; "
                                  "trying without it (command lines will be read from /proc).");
                scanner_unload(s);
                s->no_argv = true;
                r = scanner_load(s, first_id - 1);
        }
        if (r < 0)
                return r;
        if (!o->oneshot) {
                r = watch_load(s);
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
        const volatile struct scan_stats *k = &s->skel->bss->stats;
        const volatile struct ids_stats *ids = &s->skel->data_ids->ids_stats;

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
        };
        return 0;
}

static int consume(BpfScanner *s) {
        int n = ring_buffer__consume(s->rb);

        if (s->records.error < 0)
                return log_error_errno(s->records.error, "Failed to take in a scan record: %m");
        if (n < 0)
                return log_error_errno(n, "Failed to read the scan ring buffer: %m");
        return n;
}

/* Run one iterator to its end. Its program never writes to the iterator's file: read() returns 0
 * at the end, or -EAGAIN when the ring buffer is full — then drain it, and the same object is
 * tried again. */
static int iter_run(BpfScanner *s, struct bpf_link *link, const char *name) {
        _cleanup_close_ int fd = -1;
        unsigned stalls = 0;
        char buf[64];
        int n;

        fd = bpf_iter_create(bpf_link__fd(link));
        if (fd < 0)
                return log_error_errno(-errno, "Failed to start the %s iterator: %m", name);

        for (;;) {
                ssize_t k = read(fd, buf, sizeof(buf));
                int saved = errno;

                n = consume(s);
                if (n < 0)
                        return n;
                if (k == 0)
                        return 0;
                if (k > 0)
                        return log_error_errno(-EBADMSG, "The %s iterator wrote text, expected none.", name);
                if (saved == EINTR)
                        continue;
                if (saved != EAGAIN)
                        return log_error_errno(-saved, "Failed to run the %s iterator: %m", name);
                stalls = n > 0 ? 0 : stalls + 1;
                if (stalls > MAX_READ_STALLS)
                        return log_error_errno(-EIO, "The %s iterator makes no progress.", name);
        }
}

typedef struct StatsMark {
        uint64_t map_full, chain_too_long, retries, insns_sent;
} StatsMark;

static StatsMark stats_mark(BpfScanner *s) {
        const volatile struct scan_stats *k = &s->skel->bss->stats;

        return (StatsMark) {
                .map_full = s->skel->data_ids->ids_stats.map_full,
                .chain_too_long = k->chain_too_long,
                .retries = k->retries,
                .insns_sent = k->insns_sent,
        };
}

/* Whether the task_file iterator (a second walk over every task and every open file) must run
 * before the task iterator has. It finds the listener fds, and with them the filters that only a
 * listener fd keeps alive: no task's chain leads to those. Every listener that exists now either
 * existed when the last run started — that run met it, so it had listeners — or was made since
 * by seccomp(2), which the install tracepoint counts (and a tracepoint run the kernel skipped
 * counts as a miss). Otherwise there is no listener, and nothing for the iterator to find. */
static bool files_pass_needed(BpfScanner *s) {
        if (!s->watch.skel) /* nothing here counts the listeners made: a live scanner beside it may */
                return !(s->no_listeners && s->no_listeners(s->no_listeners_userdata));
        BpfListenerMark m = bpf_scanner_listener_mark(s);
        return !bpf_scanner_listener_mark_holds(s, &m);
}

/* Whether the pass should end with a sweep of the kernel's id map. Its entries (stored minus
 * swept) beyond the filters the last pass met belong to gone filters. */
static bool sweep_due(BpfScanner *s) {
        uint64_t entries = s->skel->data_ids->ids_stats.ids_stored - s->skel->bss->stats.ids_swept;
        uint64_t stale = entries > s->live_filters ? entries - s->live_filters : 0;

        if (s->force_sweep || s->oneshot)
                return true; /* a one-shot scanner forgets every id at the end of each pass */
        if (stale == 0)
                return false;
        return stale >= bpf_map__max_entries(s->skel->maps.filter_ids) / SWEEP_STALE_SHARE ||
               s->pass - s->last_sweep_pass >= SWEEP_INTERVAL;
}

static int files_run(BpfScanner *s) {
        int r;

        s->files.created_mark = s->skel->data_ids->listeners_created;
        s->files.install_misses = bpf_watch_install_misses(&s->watch);
        s->files.ran = false; /* until this run has found them all */
        r = iter_run(s, s->skel->links.scan_files, "task_file");
        if (r < 0)
                return r;
        s->files.ran = true;
        s->files.n_listeners = s->records.n_listeners;
        return 0;
}

/* The kernel thinks this scanner has instructions it does not have: ask for all of them again. */
static void insns_epoch_next(BpfScanner *s) {
        s->skel->data->insns_epoch++;
        log_debug("Pass %" PRIu64 ": instructions of a filter were left out but are not known here; asking for all "
                  "of them again.", s->pass);
}

static int pass_check(BpfScanner *s, const StatsMark *before) {
        StatsMark after = stats_mark(s);

        if (s->records.insns_missing) {
                insns_epoch_next(s);
                return -ENOENT; /* run it again */
        }
        if (after.map_full != before->map_full) {
                s->force_sweep = true; /* and the pass is tried again */
                return log_debug_errno(-ENOBUFS, "Pass %" PRIu64 ": the filter id map is full.", s->pass);
        }
        if (after.chain_too_long != before->chain_too_long)
                return log_error_errno(-ELOOP, "A filter chain is deeper than the walk bound: pass incomplete.");
        return 0;
}

static int cmp_proc_rec(const void *a, const void *b) {
        const ProcRec *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->off < y->off ? -1 : x->off > y->off; /* sent again on a retry: the last one counts */
}

/* The last record of tgid in recs (sorted with cmp_proc_rec), or NULL. */
static const ProcRec *proc_rec_find(const ProcRec *recs, size_t n, pid_t tgid) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (recs[mid].tgid <= tgid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && recs[lo - 1].tgid == tgid ? &recs[lo - 1] : NULL;
}

static int pass_run(BpfScanner *s, bool all_tasks, bool want_exe) {
        uint64_t start = now_usec(CLOCK_MONOTONIC), tasks_done, files_done;
        StatsMark before, after;
        bool files, sweep;
        int r;

        pass_records_reset(&s->records);
        s->skel->data_ids->pass = ++s->pass;
        s->skel->bss->emit_all_tasks = all_tasks;
        s->skel->bss->want_exe = want_exe;
        files = files_pass_needed(s);
        sweep = sweep_due(s);
        s->skel->bss->files_planned = files;
        s->skel->bss->sweep_wanted = sweep;
        before = stats_mark(s);

        r = iter_run(s, s->skel->links.scan_tasks, "task");
        if (r < 0)
                return r;
        tasks_done = now_usec(CLOCK_MONOTONIC);
        /* A filter with a listener that no pass knew of: its fds may be anywhere. */
        if (!files && s->records.any_listener)
                files = true;
        if (files) {
                r = files_run(s);
                if (r < 0)
                        return r;
        }
        files_done = now_usec(CLOCK_MONOTONIC);

        r = pass_check(s, &before);
        if (r < 0)
                return r;
        if (sweep) {
                s->last_sweep_pass = s->pass;
                s->force_sweep = false;
        }
        s->live_filters = s->records.n_filters;
        qsort(s->records.exes, s->records.n_exes, sizeof(ProcRec), cmp_proc_rec);
        r = filters_evict(s);
        if (r >= 0 && s->oneshot)
                r = programs_evict(s);
        if (r < 0)
                return r;

        after = stats_mark(s);
        if (!s->records.end_seen || s->records.end_pass != s->pass)
                log_debug("Pass %" PRIu64 ": no end record (ring buffer full at the end).", s->pass);
        log_debug("Pass %" PRIu64 ": %zu task, %zu filter (%" PRIu64 " with instructions), %zu listener records, "
                  "%" PRIu64 " objects retried; tasks %" PRIu64 " us%s, files %s%" PRIu64 " us.",
                  s->pass, s->records.n_tasks, s->records.n_filters, after.insns_sent - before.insns_sent,
                  s->records.n_listeners, after.retries - before.retries, tasks_done - start,
                  sweep ? " (with a sweep)" : "", files ? "" : "skipped, ", files_done - tasks_done);
        return 0;
}

/* Choosing what to report. */

static int cmp_task_rec(const void *a, const void *b) {
        const struct scan_rec_task *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The iterator goes by tid, so the records are in order whenever threads were made right after
 * their process. */
static bool task_recs_sorted(const PassRecords *r) {
        for (size_t i = 1; i < r->n_tasks; i++)
                if (cmp_task_rec(&r->tasks[i - 1], &r->tasks[i]) > 0)
                        return false;
        return true;
}

typedef struct ProcSpan {
        pid_t pid, ppid;
        size_t first, n; /* into the sorted task records */
        int8_t subtree;  /* in the root's subtree: 1 yes, -1 no, 0 not known yet */
        bool member;     /* reported */
} ProcSpan;

static int cmp_span_pid(const void *key, const void *elem) {
        pid_t pid = *(const pid_t *) key, other = ((const ProcSpan *) elem)->pid;
        return pid < other ? -1 : pid > other;
}

static bool task_rec_reported(const struct scan_rec_task *t) {
        return !(t->flags & SCAN_TASK_EXITING);
}

static bool span_has_seccomp(const PassRecords *r, const ProcSpan *p) {
        for (size_t i = p->first; i < p->first + p->n; i++)
                if (task_rec_reported(&r->tasks[i]) && r->tasks[i].mode != SECCOMP_MODE_DISABLED)
                        return true;
        return false;
}

static bool span_has_threads(const PassRecords *r, const ProcSpan *p) {
        for (size_t i = p->first; i < p->first + p->n; i++)
                if (task_rec_reported(&r->tasks[i]))
                        return true;
        return false;
}

/* Whether p's ancestry leads to root, memoized in ProcSpan.subtree along the way. */
static int8_t span_subtree(ProcSpan *spans, size_t n, ProcSpan *p, pid_t root) {
        int8_t verdict = -1;
        size_t steps = 0;
        ProcSpan *x;

        for (x = p; x && steps <= n; steps++) {
                if (x->subtree != 0) {
                        verdict = x->subtree;
                        break;
                }
                if (x->pid == root) {
                        verdict = 1;
                        break;
                }
                if (x->ppid <= 0 || x->ppid == x->pid)
                        break;
                x = bsearch(&x->ppid, spans, n, sizeof(ProcSpan), cmp_span_pid);
        }

        steps = 0;
        for (x = p; x && x->subtree == 0 && steps <= n; steps++) {
                x->subtree = verdict;
                if (x->pid == root || x->ppid <= 0)
                        break;
                x = bsearch(&x->ppid, spans, n, sizeof(ProcSpan), cmp_span_pid);
        }
        return verdict;
}

typedef struct TaskKey {
        uint32_t tgid, tid, index;
} TaskKey;

static int cmp_task_key(const void *a, const void *b) {
        const TaskKey *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Sort the task records by process and thread. Once pids have wrapped around (on any machine that
 * has run long enough) the iterator's tid order is not that: small keys are sorted, and each
 * record (over 100 bytes) moved once, into the spare array that then takes the records' place. */
static int task_recs_sort(PassRecords *r) {
        _cleanup_free_ TaskKey *keys = NULL;
        struct scan_rec_task *t;
        size_t n = r->n_tasks, a;

        if (task_recs_sorted(r))
                return 0;
        keys = malloc(n * sizeof(TaskKey));
        if (!keys || GROW(r->tasks_spare, r->n_tasks_spare_allocated, n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                keys[i] = (TaskKey) { .tgid = r->tasks[i].tgid, .tid = r->tasks[i].tid, .index = (uint32_t) i };
        qsort(keys, n, sizeof(TaskKey), cmp_task_key);
        for (size_t i = 0; i < n; i++)
                r->tasks_spare[i] = r->tasks[keys[i].index];
        t = r->tasks, r->tasks = r->tasks_spare, r->tasks_spare = t;
        a = r->n_tasks_allocated, r->n_tasks_allocated = r->n_tasks_spare_allocated, r->n_tasks_spare_allocated = a;
        return 0;
}

static int spans_build(PassRecords *r, ProcSpan **ret, size_t *ret_n) {
        _cleanup_free_ ProcSpan *spans = NULL;
        size_t n = 0, allocated = 0;

        if (task_recs_sort(r) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_tasks; i++) {
                if (n > 0 && spans[n - 1].pid == (pid_t) r->tasks[i].tgid) {
                        spans[n - 1].n++;
                        continue;
                }
                if (GROW(spans, allocated, n + 1) < 0)
                        return -ENOMEM;
                spans[n++] = (ProcSpan) {
                        .pid = r->tasks[i].tgid,
                        .ppid = r->tasks[i].ppid,
                        .first = i,
                        .n = 1,
                };
        }
        *ret = TAKE_PTR(spans);
        *ret_n = n;
        return 0;
}

/* Mark the chain from id up to its root as kept. -ENOENT if an element was not sent. */
static int keep_chain(BpfScanner *s, uint64_t id) {
        for (size_t steps = 0; id != 0; steps++) {
                BpfFilter *f = pass_filter_find(s, id);
                if (!f || steps > s->records.n_filters)
                        return -ENOENT;
                if (f->keep)
                        return 0;
                f->keep = true;
                id = f->parent_id;
        }
        return 0;
}

static ProcSpan *span_find(ProcSpan *spans, size_t n, pid_t pid) {
        return bsearch(&pid, spans, n, sizeof(ProcSpan), cmp_span_pid);
}

static bool listener_held_by_member(const struct scan_rec_listener *l, ProcSpan *spans, size_t n) {
        ProcSpan *p = span_find(spans, n, (pid_t) l->tgid);
        return p && p->member;
}

/* A leader that exited while threads of its process live on: a zombie whose seccomp mode and
 * number of filters /proc/PID/status keeps showing (Process.exited_leader; the kernel released
 * the filters themselves: its filter_id is 0). */
static bool rec_is_exited_leader(const PassRecords *r, const ProcSpan *p, const struct scan_rec_task *t) {
        return t->tid == t->tgid && !task_rec_reported(t) && span_has_threads(r, p);
}

/* Keep the chains of every reported thread of a member. */
static int span_keep_chains(BpfScanner *s, const ProcSpan *p) {
        const PassRecords *r = &s->records;
        uint64_t kept = 0;
        int k;

        for (size_t j = p->first; j < p->first + p->n; j++) {
                const struct scan_rec_task *t = &r->tasks[j];
                if (!task_rec_reported(t) || t->filter_id == kept)
                        continue; /* threads often share their head with the one before */
                k = keep_chain(s, t->filter_id);
                if (k < 0)
                        return log_debug_errno(k, "Task %u: a filter of its chain was not sent.", t->tid);
                kept = t->filter_id;
        }
        return 0;
}

/* The listeners reported, and their holders: the whole machine, every listener; a subtree, those
 * whose filter is kept or that a member holds (forest_restrict_to_subtree() decides the same).
 * Every holder becomes a member, wherever it is and whatever its mode, and its chains are kept,
 * which may reach the filters of further listeners: until nothing changes. */
static int select_listeners(BpfScanner *s, ProcSpan *spans, size_t n, pid_t root) {
        PassRecords *r = &s->records;
        int k;

        for (bool changed = true; changed;) {
                changed = false;
                for (size_t i = 0; i < r->n_listeners; i++) {
                        const struct scan_rec_listener *l = &r->listeners[i];
                        const BpfFilter *f = pass_filter_find(s, l->filter_id);
                        if (!(root == 0 || (f && f->keep) || listener_held_by_member(l, spans, n)))
                                continue;
                        k = keep_chain(s, l->filter_id);
                        if (k < 0)
                                return log_debug_errno(k, "Listener fd %u of %u: its filter was not sent.", l->fd, l->tgid);
                        ProcSpan *h = span_find(spans, n, (pid_t) l->tgid);
                        if (!h || h->member || !span_has_threads(r, h))
                                continue; /* gone: the holder is left out */
                        h->member = changed = true;
                        k = span_keep_chains(s, h);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

/* Decide which processes are reported (member) and which filters are kept. */
static int select_reported(BpfScanner *s, ProcSpan *spans, size_t n, pid_t root) {
        PassRecords *r = &s->records;
        bool root_found = false;
        int k;

        for (size_t i = 0; i < n; i++) {
                ProcSpan *p = &spans[i];
                bool in = root > 0 ? span_subtree(spans, n, p, root) > 0 : span_has_seccomp(r, p);
                if (p->pid == root)
                        root_found = true;
                p->member = in && span_has_threads(r, p);
        }
        if (root > 0 && !root_found)
                return log_error_errno(-ESRCH, "Process %d not found.", root);

        for (size_t i = 0; i < n; i++)
                if (spans[i].member && (k = span_keep_chains(s, &spans[i])) < 0)
                        return k;
        return select_listeners(s, spans, n, root);
}

/* Building the forest. */

/* programs: each filter's (else none yet: forest_fill_programs() adds those within budget). */
static int forest_add_filters(Forest *f, const PassRecords *r, bool programs) {
        int k;

        for (size_t i = 0; i < r->n_filters; i++) {
                const BpfFilter *bf = r->filters[i];
                Filter *flt;

                if (!bf->keep)
                        continue;
                k = forest_add_filter_with_digest(f, bf->id, bf->parent_id, bf->dropped || !programs ? NULL : bf->insns,
                                                  bf->len, bf->digest, &flt);
                if (k < 0)
                        return k;
                flt->over_budget = bf->dropped;
                flt->log = bf->log;
                flt->wait_killable_recv = bf->wait_killable_recv;
                flt->has_listener = bf->has_listener;
                flt->refs = bf->refs;
                flt->users = bf->users;
                flt->identity = IDENTITY_EXACT;
        }
        return 0;
}

/* The executable as the pass sent it, or from /proc when it could not say (or did not visit the
 * leader: a process read from /proc). */
static void process_fill_exe(Process *p, BpfScanner *s) {
        const ProcRec *e = proc_rec_find(s->records.exes, s->records.n_exes, p->pid);
        _cleanup_free_ char *exe = NULL;

        if (e && (e->flags & SCAN_EXE_SAME)) {
                e = proc_rec_find(s->records.exes, s->records.n_exes, e->same_tgid);
                if (e && (e->flags & (SCAN_EXE_NONE | SCAN_EXE_SAME)))
                        e = NULL; /* only records with a path are referred to: ask /proc */
        }
        if (e && (e->flags & SCAN_EXE_NONE))
                return;
        if (e && !(e->flags & SCAN_EXE_UNKNOWN)) {
                const char *suffix = e->flags & SCAN_EXE_DELETED ? " (deleted)" : "";
                if (asprintf(&exe, "%.*s%s", (int) e->len, s->records.pool + e->off, suffix) < 0)
                        return;
        } else {
                s->exe_proc_reads++;
                if (proc_read_exe(p->pid, &exe) < 0)
                        return; /* gone meanwhile: it simply has none */
        }
        (void) process_set_exe(p, exe);
}

/* The command line as the argv pass read it, or from /proc when it could not. */
static void process_fill_argv(Process *p, BpfScanner *s) {
        const ProcRec *a = proc_rec_find(s->records.argvs, s->records.n_argvs, p->pid);
        _cleanup_strv_free_ char **argv = NULL;
        int k;

        if (a && !(a->flags & SCAN_ARGV_UNKNOWN) && bpf_scanner_ticks(s, a->start_boottime) == p->start_time)
                k = argv_parse(s->records.pool + a->off, a->len, &argv);
        else {
                s->argv_proc_reads++;
                k = proc_read_argv(p->pid, &argv);
        }
        if (k >= 0) /* else gone meanwhile: it simply has none */
                (void) process_set_argv(p, argv);
}

static void process_fill_proc(Process *p, BpfScanner *s, const ScanOptions *opts) {
        if (opts->include_exe)
                process_fill_exe(p, s);
        if (opts->include_argv)
                process_fill_argv(p, s);
}

static const struct scan_rec_task *span_leader(const PassRecords *r, const ProcSpan *span) {
        for (size_t i = span->first; i < span->first + span->n; i++)
                if (r->tasks[i].tid == r->tasks[i].tgid)
                        return &r->tasks[i];
        return &r->tasks[span->first];
}

static int forest_add_span(Forest *f, BpfScanner *s, const PassRecords *r, const ProcSpan *span,
                           const ScanOptions *opts) {
        const struct scan_rec_task *leader = span_leader(r, span);
        Process *p;
        int k;

        k = forest_add_process(f, span->pid, &p);
        if (k >= 0)
                k = process_reserve_threads(p, span->n);
        if (k < 0)
                return k;
        p->ppid = leader->ppid;
        p->start_time = bpf_scanner_ticks(s, leader->leader_start_boottime);
        memcpy(p->comm, leader->leader_comm, sizeof(p->comm));
        p->comm[sizeof(p->comm) - 1] = 0;
        p->uid = leader->uid;
        p->gid = leader->gid;
        p->no_new_privs = leader->flags & SCAN_TASK_LEADER_NO_NEW_PRIVS;

        for (size_t i = span->first; i < span->first + span->n; i++) {
                const struct scan_rec_task *rec = &r->tasks[i];
                Task *t;

                if (!task_rec_reported(rec))
                        continue;
                k = process_add_thread(p, rec->tid, &t);
                if (k == -EEXIST)
                        continue;
                if (k < 0)
                        return k;
                t->start_time = bpf_scanner_ticks(s, rec->start_boottime);
                t->mode = task_mode_from_kernel(rec->mode);
                t->filter_id = rec->filter_id;
                t->filter_count = rec->filter_count;
                task_set_no_new_privs(t, rec->flags & SCAN_TASK_NO_NEW_PRIVS); /* per thread */
        }
        if ((pid_t) leader->tid == span->pid && rec_is_exited_leader(r, span, leader))
                process_set_exited_leader(p, task_mode_from_kernel(leader->mode), leader->filter_count);

        process_fill_proc(p, s, opts);
        return 0;
}

static int cmp_listener_rec(const void *a, const void *b) {
        const struct scan_rec_listener *x = a, *y = b;

        if (x->filter_id != y->filter_id)
                return x->filter_id < y->filter_id ? -1 : 1;
        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->fd < y->fd ? -1 : x->fd > y->fd;
}

/* One listener per filter (the kernel allows one), holding every fd that points at it, but for
 * those of processes that are gone (select_listeners() made every other holder a member). */
static int forest_add_listeners(Forest *f, BpfScanner *s, ProcSpan *spans, size_t n) {
        PassRecords *r = &s->records;
        Listener *l = NULL;
        uint64_t next_id = 1;
        int k;

        qsort(r->listeners, r->n_listeners, sizeof(struct scan_rec_listener), cmp_listener_rec);
        for (size_t i = 0; i < r->n_listeners; i++) {
                const struct scan_rec_listener *rec = &r->listeners[i];
                const BpfFilter *bf = pass_filter_find(s, rec->filter_id);

                if (!bf || !bf->keep)
                        continue;
                if (!l || l->filter_id != rec->filter_id) {
                        k = forest_add_listener(f, next_id++, rec->filter_id, &l);
                        if (k < 0)
                                return k;
                        l->identity = IDENTITY_EXACT;
                        forest_find_filter(f, rec->filter_id)->listener_id = l->id;
                }
                const ProcSpan *h = span_find(spans, n, (pid_t) rec->tgid);
                if (!h || !h->member)
                        continue;
                k = listener_add_holder(l, rec->tgid, rec->fd);
                if (k < 0 && k != -EEXIST)
                        return k;
        }
        return 0;
}

static bool forest_over_budget(uint64_t id, void *userdata) {
        const Filter *x = forest_find_filter(userdata, id);
        return x && x->over_budget;
}

/* The programs of the filters within their uid's budget, copied; the others' dropped here too. */
static int forest_fill_programs(BpfScanner *s, Forest *f, uint64_t insns_per_uid) {
        Budget b;
        budget_init(&b, insns_per_uid);
        int k = budget_apply(&b, f); /* no program to drop yet: it marks those over budget */
        budget_deinit(&b);
        if (k < 0)
                return k;
        for (size_t i = 0; i < f->n_filters; i++) {
                Filter *x = f->filters[i];
                const BpfFilter *bf = hashmap_get(&s->filters, x->id);
                if (x->over_budget || x->len == 0)
                        continue;
                if (!bf || bf->dropped) {
                        x->over_budget = true; /* within budget now, but its program is gone */
                        continue;
                }
                x->insns = malloc(x->len * sizeof(struct sock_filter));
                if (!x->insns)
                        return -ENOMEM;
                memcpy(x->insns, bf->insns, x->len * sizeof(struct sock_filter));
        }
        return bpf_scanner_drop_programs(s, forest_over_budget, f);
}

/* Where the daemon gave its free memory back (after every full pass and snapshot), building a
 * forest of 10,000 processes touches thousands of fresh pages one at a time: a third of a
 * snapshot's scan on the project's virtual machines. So the heap the forest will take is
 * populated in one call first (at most what heap_prepare() keeps: freeing it trims nothing), and
 * the forest's arrays and indexes are allocated once, at their size. */
#define PROCESS_HEAP_BYTES 256 /* a Process, its exe and argv vector, malloc's headers */

static size_t forest_heap_bytes(const BpfScanner *s, const ProcSpan *spans, size_t n, const ScanOptions *opts,
                                size_t *ret_processes) {
        const PassRecords *r = &s->records;
        size_t bytes = 0, processes = 0;

        for (size_t i = 0; i < r->n_filters; i++)
                if (r->filters[i]->keep)
                        bytes += sizeof(Filter) + r->filters[i]->len * sizeof(struct sock_filter);
        for (size_t i = 0; i < n; i++)
                if (spans[i].member) {
                        processes++;
                        bytes += PROCESS_HEAP_BYTES + spans[i].n * sizeof(Task);
                }
        if (opts->include_argv || opts->include_exe)
                bytes += r->pool_len;
        *ret_processes = processes;
        return bytes + processes * 2 * sizeof(HashmapSlot);
}

static int forest_prepare(BpfScanner *s, Forest *f, const ProcSpan *spans, size_t n, const ScanOptions *opts) {
        size_t processes, bytes = forest_heap_bytes(s, spans, n, opts, &processes);

        if (heap_keep > 0)
                heap_populate(MIN(bytes, heap_keep));
        return forest_reserve(f, s->records.n_filters, processes);
}

static int forest_build(BpfScanner *s, const ScanOptions *opts, ProcSpan *spans, size_t n, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ char *error = NULL;
        int k;

        f = forest_new();
        if (!f)
                return -ENOMEM;
        f->identity = IDENTITY_EXACT;
        f->root = opts->root;
        f->snapshot.consistency = SNAPSHOT_CONSISTENCY_ITERATOR; /* one pass of the task iterator */
        f->backend = strdup("bpf");
        if (!f->backend)
                return -ENOMEM;
        f->created_at_usec = now_usec(CLOCK_REALTIME);
        k = host_info_fill_local(&f->host);
        if (k < 0)
                return k;

        k = forest_prepare(s, f, spans, n, opts);
        if (k < 0)
                return k;
        bool budget = opts->allow_dropped && opts->budget_insns_per_uid > 0;
        k = forest_add_filters(f, &s->records, !budget);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if (spans[i].member) {
                        k = forest_add_span(f, s, &s->records, &spans[i], opts);
                        if (k < 0)
                                return k;
                }
        k = forest_add_listeners(f, s, spans, n);
        if (k < 0)
                return k;

        k = forest_link(f, &error);
        if (k < 0)
                return log_debug_errno(k, "Pass %" PRIu64 " is inconsistent: %s", s->pass, error ?: "?");
        if (budget && (k = forest_fill_programs(s, f, opts->budget_insns_per_uid)) < 0)
                return k;

        *ret = TAKE_PTR(f);
        return 0;
}

/* A root no pass visits. */

static bool records_have_process(const PassRecords *r, pid_t pid) {
        for (size_t i = 0; i < r->n_tasks; i++)
                if ((pid_t) r->tasks[i].tgid == pid)
                        return true;
        return false;
}

static uint64_t ticks_to_ns(const BpfScanner *s, uint64_t ticks) {
        return ticks * (UINT64_C(1000000000) / (uint64_t) s->ticks_per_sec);
}

/* The record of thread tid of process pid as /proc has it; leader holds pid's process fields. */
static int task_rec_from_proc(const BpfScanner *s, pid_t pid, pid_t tid, const struct scan_rec_task *leader,
                              struct scan_rec_task *ret) {
        ProcStatus st;
        uint64_t start;
        int k;

        k = proc_read_status(tid, &st);
        if (k >= 0)
                k = proc_read_start_time(tid, &start);
        if (k < 0)
                return k;
        if (st.seccomp_mode == SECCOMP_MODE_FILTER)
                return -EOPNOTSUPP; /* its filters' identity cannot be read from here */

        *ret = leader ? *leader : (struct scan_rec_task) { .type = SCAN_REC_TASK, .tgid = pid };
        ret->tid = tid;
        ret->mode = st.seccomp_mode;
        ret->filter_count = 0;
        ret->start_boottime = ticks_to_ns(s, start);
        ret->flags &= ~(SCAN_TASK_NO_NEW_PRIVS | SCAN_TASK_EXITING);
        if (st.no_new_privs)
                ret->flags |= SCAN_TASK_NO_NEW_PRIVS;
        if (st.state == 'Z' || st.state == 'X')
                ret->flags |= SCAN_TASK_EXITING;
        if (!leader) {
                ret->ppid = st.ppid;
                ret->uid = st.uid;
                ret->euid = st.euid;
                ret->gid = st.gid;
                ret->leader_start_boottime = ret->start_boottime;
                if (st.no_new_privs)
                        ret->flags |= SCAN_TASK_LEADER_NO_NEW_PRIVS;
        }
        k = proc_read_comm(tid, ret->comm);
        if (k < 0)
                return k;
        if (!leader)
                memcpy(ret->leader_comm, ret->comm, sizeof(ret->comm));
        return 0;
}

/* The threads of process pid from /proc, appended to the records; on failure the records are as
 * they were. -EOPNOTSUPP if a thread runs under seccomp filters (their ids cannot be read). */
static int records_add_from_proc(BpfScanner *s, pid_t pid) {
        _cleanup_free_ pid_t *tids = NULL;
        struct scan_rec_task leader;
        size_t n, n_before = s->records.n_tasks;
        int k;

        k = task_rec_from_proc(s, pid, pid, NULL, &leader);
        if (k < 0)
                return k;
        k = proc_list_threads(pid, &tids, &n);
        if (k < 0)
                return k;

        for (size_t i = 0; k >= 0 && i < n; i++) {
                struct scan_rec_task rec = leader;

                if (tids[i] != pid) {
                        k = task_rec_from_proc(s, pid, tids[i], &leader, &rec);
                        if (k == -ESRCH) {
                                k = 0; /* exited meanwhile */
                                continue;
                        }
                }
                if (k >= 0 && GROW(s->records.tasks, s->records.n_tasks_allocated, s->records.n_tasks + 1) < 0)
                        k = -ENOMEM;
                if (k >= 0)
                        s->records.tasks[s->records.n_tasks++] = rec;
        }
        if (k < 0) {
                s->records.n_tasks = n_before;
                return k;
        }
        log_debug("Process %d was not visited by the pass: its %zu threads are read from /proc.", pid, n);
        return 0;
}

/* Pid 1's thread group is hidden from BPF on the project's machines (see scan_tasks() in
 * scan.bpf.c): a subtree rooted there, or at any process the pass did not meet, gets its root's
 * threads from /proc. That works as long as they run under no filter (their ids cannot be read);
 * the rest of the subtree comes from the pass as usual. */
static int records_add_unvisited_root(BpfScanner *s, pid_t pid) {
        int k = records_add_from_proc(s, pid);
        if (k == -ESRCH)
                return log_error_errno(k, "Process %d not found.", pid);
        if (k == -EOPNOTSUPP)
                return log_error_errno(k, "Process %d is hidden from the BPF iterators and has a thread under seccomp "
                                       "filters, whose identity they cannot read; use the ptrace backend.", pid);
        return k;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* A whole-machine pass leaves out single-threaded processes in disabled mode, and a listener's
 * holder is often one (a supervisor): those are read from /proc. One that runs under filters now
 * (it installed them after the task iterator met it) or has exited is left out, and with it its
 * holders. Returns 1 when records were added (the spans must be built again). */
static int records_add_holders(BpfScanner *s, ProcSpan *spans, size_t n_spans) {
        PassRecords *r = &s->records;
        _cleanup_free_ pid_t *missing = NULL;
        size_t n = 0, allocated = 0;
        bool added = false;
        int k;

        for (size_t i = 0; i < r->n_listeners; i++) {
                pid_t pid = (pid_t) r->listeners[i].tgid;
                if (span_find(spans, n_spans, pid))
                        continue;
                if (GROW(missing, allocated, n + 1) < 0)
                        return -ENOMEM;
                missing[n++] = pid;
        }
        if (n == 0)
                return 0;
        qsort(missing, n, sizeof(pid_t), cmp_pid);
        for (size_t i = 0; i < n; i++) {
                if (i > 0 && missing[i] == missing[i - 1])
                        continue;
                k = records_add_from_proc(s, missing[i]);
                if (k == -ESRCH || k == -EOPNOTSUPP) {
                        log_debug_errno(k, "Listener holder %d could not be read from /proc, left out: %m", missing[i]);
                        continue;
                }
                if (k < 0)
                        return k;
                added = true;
        }
        return added;
}

static void argv_want_mark(BpfScanner *s, const ProcSpan *spans, size_t n, bool on) {
        for (size_t i = 0; i < n; i++) {
                pid_t pid = spans[i].pid;
                uint64_t bit = UINT64_C(1) << (pid % 64);

                if (!spans[i].member || pid <= 0 || (size_t) pid / 64 >= SCAN_ARGV_WORDS)
                        continue;
                if (on)
                        s->argv_want[pid / 64] |= bit;
                else
                        s->argv_want[pid / 64] &= ~bit;
        }
}

/* The command lines of the reported processes: the argv iterator reads them from their memory. */
static int argv_pass(BpfScanner *s, const ProcSpan *spans, size_t n) {
        int k;

        argv_want_mark(s, spans, n, true);
        k = iter_run(s, s->skel->links.scan_argv, "argv");
        argv_want_mark(s, spans, n, false);
        if (k < 0)
                return k;
        s->argv_passes++;
        qsort(s->records.argvs, s->records.n_argvs, sizeof(ProcRec), cmp_proc_rec);
        return 0;
}

static int scan_once(BpfScanner *s, const ScanOptions *opts, Forest **ret) {
        _cleanup_free_ ProcSpan *spans = NULL;
        uint64_t built;
        size_t n;
        int k;

        s->opts = opts;
        k = pass_run(s, opts->root > 0, opts->include_exe);
        s->opts = NULL;
        if (k < 0)
                return k;
        built = now_usec(CLOCK_MONOTONIC);
        if (opts->root > 0 && !records_have_process(&s->records, opts->root)) {
                k = records_add_unvisited_root(s, opts->root);
                if (k < 0)
                        return k;
        }
        k = spans_build(&s->records, &spans, &n);
        if (k < 0)
                return k;
        if (opts->root == 0) {
                k = records_add_holders(s, spans, n);
                if (k > 0) {
                        free(spans);
                        spans = NULL;
                        k = spans_build(&s->records, &spans, &n);
                }
                if (k < 0)
                        return k;
        }
        k = select_reported(s, spans, n, opts->root);
        if (k < 0)
                return k;
        if (opts->include_argv && s->argv_want) {
                k = argv_pass(s, spans, n);
                if (k < 0)
                        return k;
        }
        k = forest_build(s, opts, spans, n, ret);
        if (k < 0)
                return k;
        log_debug("Pass %" PRIu64 ": forest built in %" PRIu64 " us.", s->pass, now_usec(CLOCK_MONOTONIC) - built);
        return 0;
}


int bpf_scanner_drop_programs(BpfScanner *s, bool (*drop)(uint64_t id, void *userdata), void *userdata) {
        uint64_t id;
        void *v;
        int k;

        /* The last pass's records point at what they met: those first, through the records. */
        for (size_t i = 0; i < s->records.n_filters; i++) {
                BpfFilter **ref = &s->records.filters[i];
                if (!(*ref)->dropped && (*ref)->len > 0 && drop((*ref)->id, userdata) &&
                    (k = filter_drop_insns(s, ref, true)) < 0)
                        return k;
        }
        /* Then the others the scanner keeps (the map may grow while a value is replaced: not
         * while it is walked). */
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n = 0, allocated = 0;
        for (size_t i = 0; hashmap_next(&s->filters, &i, &id, &v);) {
                const BpfFilter *f = v;
                if (f->dropped || f->len == 0 || f->seen_pass == s->pass || !drop(id, userdata))
                        continue;
                if (GROW(ids, allocated, n + 1) < 0)
                        return -ENOMEM;
                ids[n++] = id;
        }
        for (size_t i = 0; i < n; i++) {
                BpfFilter *f = hashmap_get(&s->filters, ids[i]);
                if ((k = filter_drop_insns(s, &f, true)) < 0)
                        return k;
        }
        return 0;
}

/* A one-shot scanner's filters are in the forest now, and their ids will not come back (the next
 * pass names every filter anew): only the programs are kept. */
static void oneshot_forget_filters(BpfScanner *s) {
        filters_clear(&s->filters);
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
                k = scan_once(s, &o, ret);
                if (k == -ENOBUFS && s->oneshot) {
                        k = oneshot_grow(s);
                        if (k < 0)
                                break;
                        continue;
                }
                if (k != -ENOENT && k != -EINVAL && k != -ENOBUFS)
                        break;
                attempt++;
        }
        if (s->oneshot)
                oneshot_forget_filters(s);
        if (k == -ENOENT || k == -EINVAL) /* -EAGAIN to callers: the machine changed, the scanner is fine */
                return log_error_errno(-EAGAIN, "Failed to get a consistent pass in %d attempts: tasks and filters "
                                       "changed under each of them.", PASS_ATTEMPTS);
        if (k == -ENOBUFS)
                return log_error_errno(k, "The filter id map is full: pass incomplete.");
        if (k < 0)
                return k;
        return 0;
}

BpfListenerMark bpf_scanner_listener_mark(const BpfScanner *s) {
        return (BpfListenerMark) {
                .none = s->watch.skel && s->files.ran && s->files.n_listeners == 0,
                .created = s->files.created_mark,
                .install_misses = s->files.install_misses,
        };
}

bool bpf_scanner_listener_mark_holds(BpfScanner *s, const BpfListenerMark *m) {
        return m->none && s->skel->data_ids->listeners_created == m->created &&
               bpf_watch_install_misses(&s->watch) == m->install_misses;
}

void bpf_scanner_set_no_listeners(BpfScanner *s, bool (*no_listeners)(void *userdata), void *userdata) {
        s->no_listeners = no_listeners;
        s->no_listeners_userdata = userdata;
}

bool bpf_scanner_reusable(const BpfScanner *s) {
        return s->oneshot && s->skel &&
               s->skel->data_ids->ids_stats.ids_stored == s->skel->bss->stats.ids_swept;
}

/* The event half: the scanner's watch (watch-bpf.c), which it loaded on its id maps. */

int bpf_scanner_watch_start(BpfScanner *s, WatchHandler handler, void *userdata) {
        return bpf_watch_start(&s->watch, handler, userdata);
}

int bpf_scanner_watch_fd(BpfScanner *s) {
        return bpf_watch_fd(&s->watch);
}

int bpf_scanner_watch_dispatch(BpfScanner *s) {
        return bpf_watch_dispatch(&s->watch);
}

void bpf_scanner_watch_set_dispatch_limits(BpfScanner *s, unsigned max_events, unsigned max_usec) {
        bpf_watch_set_dispatch_limits(&s->watch, max_events, max_usec);
}

bool bpf_scanner_watch_pending(BpfScanner *s) {
        return bpf_watch_pending(&s->watch);
}

uint64_t bpf_scanner_watch_lost(BpfScanner *s) {
        return bpf_watch_lost(&s->watch);
}

void bpf_scanner_watch_losses(BpfScanner *s, WatchLosses *ret) {
        bpf_watch_losses(&s->watch, ret);
}
