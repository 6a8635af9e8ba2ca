/* scan-bpf-load.c: the bpf scanner's iterator unit (bpf/scan.bpf.c) opened, sized and loaded with
 * its ring buffer reader, the tracepoint unit loaded on its id maps, and the process made ready
 * for loads once: libbpf's log, and a heap that keeps the pages the kernel's BTF took. One-shot
 * scanners load it through a light skeleton (scan-bpf-light.c) */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "observe/scan-bpf-cache.h"
#include "observe/scan-bpf-load.h"
#include "observe/scan-bpf-light.h"
#include "observe/scan-bpf-pass.h"
#include "observe/bpf/scan.skel.h" /* after the records it names (bpf/scan.h) */
#include "observe/bpf/watch.skel.h" /* its layout of .data.ids, checked below */

/* The watch unit is loaded on the scan unit's .data.ids map (bpf_scanner_load_watch()): both
 * units' programs must find each of its globals at the same offset, and the compiler orders a
 * section's globals its own way in each object. */
#define SAME_IDS_FIELD(field)                                                                          \
        _Static_assert(__builtin_offsetof(__typeof__(*((struct scan_bpf *) 0)->data_ids), field) ==     \
                               __builtin_offsetof(__typeof__(*((struct watch_bpf *) 0)->data_ids), field), \
                       "the watch unit's .data.ids." #field " is not where the scan unit has it")
_Static_assert(sizeof(*((struct scan_bpf *) 0)->data_ids) == sizeof(*((struct watch_bpf *) 0)->data_ids),
               "the units' .data.ids differ in size");
SAME_IDS_FIELD(pass);
SAME_IDS_FIELD(last_id);
SAME_IDS_FIELD(listeners_created);
SAME_IDS_FIELD(ids_stats);
SAME_IDS_FIELD(pidns_self);

#define MIN_RINGBUF_SIZE (64U << 10) /* holds the largest record: a FILTER of 4096 instructions */
#define MAX_FILTER_IDS (1U << 18)    /* as in bpf/ids.bpf.h */
#define ONESHOT_MIN_IDS 2048U /* a map of its entries is made in ~0.07 ms */

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

void bpf_scanner_unload(BpfScanner *s) {
        if (s->argv_want)
                munmap(s->argv_want, ARGV_WANT_BYTES);
        s->argv_want = NULL;
        ring_buffer__free(s->rb);
        s->rb = NULL;
        scan_bpf__destroy(s->unit.skel);
        if (s->unit.light)
                s->unit.light_destroy(s->unit.light);
        s->unit = (BpfScanUnit) {};
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
#define HEAP_LIGHT_KEEP (16U << 20)

static size_t heap_keep; /* 0 until heap_setup() set the heap up */
/* Populated in huge pages where a range holds whole ones: in a process whose heap a one-shot
 * scanner set up (`sectreed scan`), which lives for one pass. Populating 16 MiB that way took 0.5-1.4
 * ms against 4.2-6.6 ms a page at a time on the project's machines (most of it the first write
 * to memory the hypervisor had not yet backed). */
static bool heap_huge;
#define HUGE_PAGE (2U << 20)

/* A call populates this much at most: it holds the process's mmap lock for reading throughout, and
 * a thread that maps or unmaps meanwhile (the light skeleton maps its sections at the end of its
 * load) waits for the call to end. */
#define POPULATE_CHUNK (256U << 10)

/* The whole pages of [p, p + bytes) populated, a chunk a call, until *stop (if stop) is set. */
static void populate_range(void *p, size_t bytes, const bool *stop) {
        uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE), start = ((uintptr_t) p + page - 1) & ~(page - 1);
        uintptr_t end = ((uintptr_t) p + bytes) & ~(page - 1);
        uintptr_t huge_start = ((uintptr_t) p + HUGE_PAGE - 1) & ~((uintptr_t) HUGE_PAGE - 1);
        uintptr_t huge_end = end & ~((uintptr_t) HUGE_PAGE - 1);

        if (heap_huge && huge_end > huge_start)
                (void) madvise((void *) huge_start, huge_end - huge_start, MADV_HUGEPAGE); /* else pages */
        for (uintptr_t at = start; at < end && !(stop && __atomic_load_n(stop, __ATOMIC_RELAXED)); at += POPULATE_CHUNK)
                (void) madvise((void *) at, MIN(end - at, (uintptr_t) POPULATE_CHUNK), MADV_POPULATE_WRITE);
}

/* The next `bytes` of the heap populated in one call, and left free for what comes next. */
static void heap_populate(size_t bytes) {
        char *p = malloc(bytes);
        if (!p)
                return;
        populate_range(p, bytes, NULL);
        free(p);
}

/* Blocks up to HEAP_MMAP_THRESHOLD from the heap, which keeps what is freed below 2 * keep. Whether
 * this call set it up. */
static bool heap_setup(size_t keep) {
        if (heap_keep > 0 || keep >= HEAP_MMAP_THRESHOLD || mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD) != 1 ||
            mallopt(M_TRIM_THRESHOLD, (int) (2 * keep)) != 1)
                return false;
        heap_keep = keep;
        return true;
}

/* Before libbpf reads the kernel's BTF: twice its size and some populated. */
static void heap_prepare(void) {
        struct stat st;

        if (stat("/sys/kernel/btf/vmlinux", &st) < 0 || st.st_size <= 0)
                return;
        heap_setup(2 * (size_t) st.st_size + HEAP_KEEP_SLACK);
        if (heap_keep > 0)
                heap_populate(heap_keep);
}

/* Before a light skeleton's load, which reads no BTF: the heap set up the same way (populated
 * beside the load, load_beside_start()). */
static void heap_prepare_light(void) {
        heap_huge = heap_setup(HEAP_LIGHT_KEEP);
        /* One arena for every thread: the records the pass's drainer takes in (scan-bpf-side.c) go
         * to the heap populated for them, not to fresh pages of an arena of its own. */
        if (heap_huge)
                (void) mallopt(M_ARENA_MAX, 1);
}

static pthread_once_t process_prepared = PTHREAD_ONCE_INIT, heap_prepared = PTHREAD_ONCE_INIT,
                      heap_prepared_light = PTHREAD_ONCE_INIT;
/* libbpf caches what it probed of the kernel in globals as it loads: one load at a time */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static void process_prepare(void) {
        libbpf_set_print(libbpf_log);
}

void bpf_scanner_process_prepare(void) {
        (void) pthread_once(&process_prepared, process_prepare);
}

void bpf_heap_populate_kept(size_t bytes) {
        if (heap_keep > 0)
                heap_populate(MIN(bytes, heap_keep));
}

BpfHeapBlock bpf_heap_block_new(size_t tasks, size_t bytes_per_task) {
        size_t bytes = MIN(tasks * bytes_per_task, heap_keep);
        void *p = bytes > 0 ? malloc(bytes) : NULL;

        return (BpfHeapBlock) { .p = p, .bytes = p ? bytes : 0 };
}

void bpf_heap_block_populate(const BpfHeapBlock *b) {
        if (b->p)
                populate_range(b->p, b->bytes, &b->stop);
}

void bpf_heap_block_stop(BpfHeapBlock *b) {
        __atomic_store_n(&b->stop, true, __ATOMIC_RELAXED);
}

void bpf_heap_block_free(BpfHeapBlock *b) {
        free(b->p);
        *b = (BpfHeapBlock) {};
}

/* The id map of a scanner: a live one's is the largest; a one-shot one's, whose entries are all
 * allocated when it is made (bpf/ids.bpf.h), has room for one and a half times the tasks that
 * exist and ONESHOT_MIN_IDS more, at most MAX_FILTER_IDS. A filter is held by a task, a listener fd
 * or a filter stacked on it: most tasks share their filters with others, and where filters
 * outnumber the tasks that far, the map is made again, four times as large
 * (bpf_scanner_grow_oneshot()). */
uint32_t bpf_scanner_id_map_size(bool oneshot) {
        struct sysinfo si;
        uint64_t size = ONESHOT_MIN_IDS;

        if (!oneshot)
                return MAX_FILTER_IDS;
        if (sysinfo(&si) == 0)
                size += (uint64_t) si.procs + si.procs / 2;
        return size < MAX_FILTER_IDS ? (uint32_t) size : MAX_FILTER_IDS;
}

DEFINE_CLEANUP(struct scan_bpf *, scan_bpf__destroy);

/* The unit's maps and sections as libbpf's skeleton has them. */
static void unit_from_skel(BpfScanUnit *u, struct scan_bpf *skel) {
        *u = (BpfScanUnit) {
                .skel = skel,
                .bss = skel->bss,
                .data = skel->data,
                .data_ids = skel->data_ids,
                .records_fd = bpf_map__fd(skel->maps.records),
                .filter_ids_fd = bpf_map__fd(skel->maps.filter_ids),
                .seccomp_procs_fd = bpf_map__fd(skel->maps.seccomp_procs),
                .data_ids_fd = bpf_map__fd(skel->maps.data_ids),
                .argv_want_fd = bpf_map__fd(skel->maps.argv_want),
                .tasks_link_fd = bpf_link__fd(skel->links.scan_tasks),
                .argv_link_fd = skel->links.scan_argv ? bpf_link__fd(skel->links.scan_argv) : -1,
                .filter_ids_entries = bpf_map__max_entries(skel->maps.filter_ids),
        };
}

/* Open, size and load the scan unit with libbpf's skeleton, continuing the ids after last_id. */
static int skel_load(BpfScanner *s, uint64_t last_id) {
        _cleanup_(scan_bpf__destroyp) struct scan_bpf *skel = NULL;
        int r;

        /* libbpf reads the kernel's BTF into this process */
        (void) pthread_once(&heap_prepared, heap_prepare);
        skel = scan_bpf__open();
        if (!skel)
                return log_debug_errno(-errno, "Failed to open the scan BPF programs: %m");
        skel->data_ids->last_id = last_id;
        bpf_pidns_self(&skel->data_ids->pidns_self);
        skel->rodata->mark_procs = !s->oneshot;
        skel->rodata->forget_after_pass = s->oneshot;
        r = bpf_map__set_max_entries(skel->maps.filter_ids, s->id_map_size);
        if (r >= 0 && s->oneshot) /* its entries allocated up front, as in a light skeleton (bpf/ids.bpf.h) */
                r = bpf_map__set_map_flags(skel->maps.filter_ids,
                                           bpf_map__map_flags(skel->maps.filter_ids) & ~BPF_F_NO_PREALLOC);
        if (r >= 0 && s->oneshot) /* nothing reads the marks */
                r = bpf_map__set_max_entries(skel->maps.seccomp_procs, 1);
        if (r >= 0 && s->no_argv) {
                bpf_program__set_autoload(skel->progs.scan_argv, false);
                r = bpf_map__set_max_entries(skel->maps.argv_want, 1);
        }
        if (r < 0)
                return log_debug_errno(r, "Failed to size the scan's maps: %m");
        /* Tests make it small, so that passes overflow it and objects are retried. */
        r = bpf_ring_size_from_env(skel->maps.records, "SECTREE_BPF_RINGBUF_SIZE", MIN_RINGBUF_SIZE);
        if (r < 0)
                return r;

        r = scan_bpf__load(skel);
        if (r < 0)
                return log_debug_errno(r, "Failed to load the scan BPF programs: %m");
        r = scan_bpf__attach(skel);
        if (r < 0)
                return log_debug_errno(r, "Failed to attach the scan BPF programs: %m");
        unit_from_skel(&s->unit, TAKE_PTR(skel));
        return 0;
}

/* The heap a one-shot scanner's pass will take (its records and the filters it keeps:
 * BPF_HEAP_PASS_BYTES_PER_TASK for each task of the machine), populated in one call. On a busy machine
 * (megabytes of it) that is done on a second thread while this one waits in bpf(2) for the kernel
 * to run the light skeleton's loader (6-8 ms), and what is left when the load ends is left to be
 * faulted in (bpf_heap_block_stop()); the block is allocated here, so that it is the heap this
 * thread allocates from, and freed after the load to the top of the heap, which keeps it. On an
 * idle one (some KiB) a thread would cost more than it saves. */
#define POPULATE_BESIDE_MIN (1U << 20)

typedef struct LoadBeside {
        pthread_t thread;
        bool started;
        BpfHeapBlock heap;
} LoadBeside;

static void *load_beside_main(void *userdata) {
        LoadBeside *b = userdata;

        bpf_heap_block_populate(&b->heap);
        return NULL;
}

static void load_beside_start(LoadBeside *b) {
        struct sysinfo si;

        *b = (LoadBeside) {};
        if (sysinfo(&si) < 0)
                return;
        b->heap = bpf_heap_block_new(si.procs, BPF_HEAP_PASS_BYTES_PER_TASK);
        if (!b->heap.p)
                return;
        if (b->heap.bytes >= POPULATE_BESIDE_MIN)
                b->started = pthread_create(&b->thread, NULL, load_beside_main, b) == 0;
        if (!b->started)
                (void) load_beside_main(b);
}

static void load_beside_end(LoadBeside *b) {
        bpf_heap_block_stop(&b->heap);
        if (b->started)
                (void) pthread_join(b->thread, NULL);
        bpf_heap_block_free(&b->heap);
}

/* A one-shot scanner's unit through a light skeleton (scan-bpf-light.c); where the kernel cannot
 * run its loader (no BPF_PROG_TYPE_SYSCALL, no CO-RE in the kernel) or its loops (no may_goto
 * before Linux 6.9, bpf/loop.bpf.h), libbpf's. $SECTREE_TEST_BPF_NO_LIGHT makes it libbpf's
 * at once, as on such a kernel (the tests). */
static int oneshot_load(BpfScanner *s, uint64_t last_id) {
        LoadBeside beside;
        uint32_t ring_size;
        int r = bpf_ring_size_env("SECTREE_BPF_RINGBUF_SIZE", MIN_RINGBUF_SIZE, &ring_size);
        if (r < 0)
                return r;
        if (secure_getenv("SECTREE_TEST_BPF_NO_LIGHT"))
                return skel_load(s, last_id);
        (void) pthread_once(&heap_prepared_light, heap_prepare_light);
        load_beside_start(&beside);
        r = bpf_scan_light_load(s, last_id, ring_size);
        load_beside_end(&beside);
        if (r >= 0)
                return 0;
        log_debug_errno(r, "Failed to load the scan BPF programs through the light skeleton: %m; loading them "
                        "with libbpf's.");
        return skel_load(s, last_id);
}

/* Load the scan unit into s->unit (and its ring buffer reader), continuing the ids after last_id. */
static int scanner_load_locked(BpfScanner *s, uint64_t last_id) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        int r = s->oneshot ? oneshot_load(s, last_id) : skel_load(s, last_id);
        if (r < 0)
                return r;
        log_debug("Scan BPF programs loaded in %" PRIu64 " us (%s skeleton).", now_usec(CLOCK_MONOTONIC) - start,
                  s->unit.light ? "light" : "libbpf's");

        s->rb = ring_buffer__new(s->unit.records_fd, bpf_scanner_on_record, s, NULL);
        if (!s->rb)
                return log_debug_errno(-errno, "Failed to set up the scan ring buffer: %m");
        if (!s->no_argv) {
                void *p = mmap(NULL, ARGV_WANT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, s->unit.argv_want_fd, 0);
                if (p == MAP_FAILED)
                        return log_debug_errno(-errno, "Failed to map the argv_want map: %m");
                s->argv_want = p;
        }
        return 0;
}

int bpf_scanner_load(BpfScanner *s, uint64_t last_id) {
        (void) pthread_mutex_lock(&load_lock);
        int r = scanner_load_locked(s, last_id);
        (void) pthread_mutex_unlock(&load_lock);
        return r;
}

/* A one-shot scanner whose id map was too small: load it again with one four times as large.
 * Nothing of the old map is kept (ids continue above its last one). */
int bpf_scanner_grow_oneshot(BpfScanner *s) {
        uint64_t last_id = s->unit.data_ids->last_id;

        if (s->id_map_size >= MAX_FILTER_IDS)
                return -ENOBUFS;
        log_debug("The filter id map of %" PRIu32 " entries is full: loading one four times as large.", s->id_map_size);
        s->id_map_size = s->id_map_size * 4 < MAX_FILTER_IDS ? s->id_map_size * 4 : MAX_FILTER_IDS;
        bpf_scanner_unload(s);
        bpf_filters_clear(&s->filters);
        s->files = (BpfFilesState) {};
        return bpf_scanner_load(s, last_id);
}

int bpf_scanner_load_watch(BpfScanner *s) {
        BpfIdMaps maps = {
                .filter_ids = s->unit.filter_ids_fd,
                .seccomp_procs = s->unit.seccomp_procs_fd,
                .data_ids = s->unit.data_ids_fd,
        };

        return bpf_watch_load(&s->watch, &maps);
}
