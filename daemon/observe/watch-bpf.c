/* watch-bpf.c: the bpf backend's tracepoint unit (bpf/watch.bpf.c): loads it on the scan unit's id
 * maps, attaches the seccomp/prctl tracepoints that name new filters and, when watched, the
 * fork/exec/exit ones, and turns the records of its event ring buffer into WatchEvents. It uses
 * nothing of the scanner: the scanner loads it (watch-bpf.h), the source reads it. Its errors are
 * returned, what failed said at debug level: the source logs them once. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "observe/bpf-util.h"
#include "observe/bpf/ids.h"
#include "observe/bpf/watch.h"
#include "observe/bpf/watch.skel.h"
#include "observe/watch-bpf.h"

/* The smallest ring the kernel takes is one page. Below the largest record (a FILTER event of
 * 4096 instructions, about 33 KiB) the largest filters can never be sent: tests only. */
#define MIN_EVENTS_SIZE 4096U

/* The scan's id maps, shared: one map of filter ids for both sides. */
static int watch_share_maps(struct watch_bpf *skel, const BpfIdMaps *maps) {
        int r = bpf_map__reuse_fd(skel->maps.filter_ids, maps->filter_ids);
        if (r < 0)
                return r;
        r = bpf_map__reuse_fd(skel->maps.seccomp_procs, maps->seccomp_procs);
        if (r < 0)
                return r;
        return bpf_map__reuse_fd(skel->maps.data_ids, maps->data_ids);
}

/* Before load: size the event ring buffer and the scratch space, share the id maps, and keep the
 * fork/exec/exit and close(2) tracepoints from being attached with the rest. */
static int watch_configure(struct watch_bpf *skel, const BpfIdMaps *maps) {
        int ncpus, r;

        ncpus = libbpf_num_possible_cpus();
        if (ncpus < 0)
                return log_debug_errno(ncpus, "Failed to count the possible CPUs: %m");
        r = bpf_map__set_max_entries(skel->maps.watch_scratch, (uint32_t) ncpus);
        if (r < 0)
                return log_debug_errno(r, "Failed to size the event scratch space: %m");

        /* Tests make it tiny to overflow it on purpose. */
        r = bpf_ring_size_from_env(skel->maps.events, "SECTREE_BPF_EVENTS_SIZE", MIN_EVENTS_SIZE);
        if (r < 0)
                return r;

        r = watch_share_maps(skel, maps);
        if (r < 0)
                return log_debug_errno(r, "Failed to share the filter id maps with the watch programs: %m");

        /* Attached by bpf_watch_start(): until then nobody reads their events. */
        bpf_program__set_autoattach(skel->progs.watch_fork, false);
        bpf_program__set_autoattach(skel->progs.watch_exec, false);
        bpf_program__set_autoattach(skel->progs.watch_rename, false);
        bpf_program__set_autoattach(skel->progs.watch_exit, false);
        bpf_program__set_autoattach(skel->progs.close_enter, false);
        return 0;
}

int bpf_watch_load(BpfWatch *w, const BpfIdMaps *maps) {
        int r;

        w->ticks_per_sec = bpf_clock_ticks_per_sec();
        w->skel = watch_bpf__open();
        if (!w->skel)
                return log_debug_errno(-errno, "Failed to open the watch BPF programs: %m");
        r = watch_configure(w->skel, maps);
        if (r < 0)
                return r;
        r = watch_bpf__load(w->skel);
        if (r < 0)
                return log_debug_errno(r, "Failed to load the watch BPF programs: %m");
        r = watch_bpf__attach(w->skel);
        if (r < 0)
                return log_debug_errno(r, "Failed to attach the seccomp and prctl tracepoints: %m");
        return 0;
}

/* The reader of the event ring buffer, and its mapped positions. */
static void watch_reader_free(BpfWatch *w) {
        ring_buffer__free(w->rb);
        w->rb = NULL;
        if (w->consumer_pos)
                munmap((void *) w->consumer_pos, w->page_size);
        if (w->producer_pos)
                munmap((void *) w->producer_pos, w->page_size);
        w->consumer_pos = w->producer_pos = NULL;
}

void bpf_watch_deinit(BpfWatch *w) {
        watch_reader_free(w);
        watch_bpf__destroy(w->skel);
        *w = (BpfWatch) {};
}

/* Page 0 of a ring buffer map holds the consumer position, page 1 the producer's. */
static int watch_map_positions(BpfWatch *w, int map_fd) {
        void *p;

        w->page_size = (size_t) sysconf(_SC_PAGESIZE);
        p = mmap(NULL, w->page_size, PROT_READ, MAP_SHARED, map_fd, 0);
        if (p == MAP_FAILED)
                return log_debug_errno(-errno, "Failed to map the event ring buffer's consumer page: %m");
        w->consumer_pos = p;
        p = mmap(NULL, w->page_size, PROT_READ, MAP_SHARED, map_fd, (off_t) w->page_size);
        if (p == MAP_FAILED)
                return log_debug_errno(-errno, "Failed to map the event ring buffer's producer page: %m");
        w->producer_pos = p;
        return 0;
}

/* Records -> events. */

static void watch_task_from_rec(WatchTask *w, const BpfWatch *watch, const struct watch_rec_task *r) {
        *w = (WatchTask) {
                .tid = (pid_t) r->tid,
                .tgid = (pid_t) r->tgid,
                .ppid = (pid_t) r->ppid,
                .start_time = bpf_boottime_to_ticks(r->start_boottime, watch->ticks_per_sec),
                .mode = task_mode_from_kernel(r->mode),
                .filter_id = r->filter_id,
                .no_new_privs = r->flags & WATCH_TASK_NO_NEW_PRIVS,
                .uid = r->uid,
                .euid = r->euid,
                .gid = r->gid,
                .dumpable = r->flags & WATCH_TASK_DUMPABLE,
                .threaded = r->flags & WATCH_TASK_THREADED,
                .group_dead = r->flags & WATCH_TASK_GROUP_DEAD,
        };
        memcpy(w->comm, r->comm, sizeof(w->comm));
        w->comm[sizeof(w->comm) - 1] = 0;
}

static int watch_filter_from_rec(WatchFilter *f, const struct watch_rec_filter *r, size_t size) {
        if (size < sizeof(*r) || r->id == 0 || r->len > WATCH_MAX_INSNS ||
            size < sizeof(*r) + r->len * sizeof(struct sock_filter))
                return -EBADMSG;
        *f = (WatchFilter) {
                .id = r->id,
                .parent_id = r->parent_id,
                .insns = r->len > 0 ? r->insns : NULL,
                .len = r->len,
                .log = r->log,
                .wait_killable_recv = r->wait_killable_recv,
                .has_listener = r->has_listener,
                .tsync = r->install_flags & WATCH_INSTALL_TSYNC,
                .listener_fd = r->has_listener ? r->listener_fd : -1,
        };
        return 0;
}

static int watch_type_from_rec(uint32_t type, WatchEventType *ret) {
        switch (type) {
        case WATCH_REC_TASK_NEW:
                *ret = WATCH_TASK_NEW;
                return 0;
        case WATCH_REC_TASK_EXEC:
                *ret = WATCH_TASK_EXEC;
                return 0;
        case WATCH_REC_TASK_EXIT:
                *ret = WATCH_TASK_EXIT;
                return 0;
        case WATCH_REC_FILTER:
                *ret = WATCH_FILTER_ATTACHED;
                return 0;
        case WATCH_REC_TASK_MODE:
                *ret = WATCH_TASK_MODE;
                return 0;
        case WATCH_REC_TASK_TSYNC:
                *ret = WATCH_TASK_TSYNC;
                return 0;
        case WATCH_REC_LISTENER_CLOSE:
                *ret = WATCH_LISTENER_CLOSED;
                return 0;
        case WATCH_REC_TASK_ESCAPED:
                *ret = WATCH_TASK_ESCAPED;
                return 0;
        case WATCH_REC_TASK_COMM:
                *ret = WATCH_TASK_COMM;
                return 0;
        default:
                return -EBADMSG;
        }
}

static int watch_event_from_rec(WatchEvent *e, const BpfWatch *w, const void *data, size_t size) {
        const struct watch_rec *r = data;
        int k;

        if (size < sizeof(*r))
                return -EBADMSG;
        *e = (WatchEvent) { .ktime_ns = r->ktime_ns };
        k = watch_type_from_rec(r->type, &e->type);
        if (k < 0)
                return k;
        watch_task_from_rec(&e->task, w, &r->task);
        if (e->type == WATCH_FILTER_ATTACHED)
                return watch_filter_from_rec(&e->filter, data, size);
        if (e->type == WATCH_LISTENER_CLOSED) {
                const struct watch_rec_listener *l = data;
                if (size < sizeof(*l) || l->filter_id == 0 || l->fd < 0)
                        return -EBADMSG;
                e->listener = (WatchListenerClose) { .filter_id = l->filter_id, .fd = l->fd, .last = l->last };
        }
        return 0;
}

static int on_event(void *userdata, void *data, size_t size) {
        BpfWatch *w = userdata;
        WatchEvent e;
        int k;

        k = watch_event_from_rec(&e, w, data, size);
        if (k < 0) {
                w->error = log_debug_errno(k, "Malformed event record of %zu bytes.", size); /* the caller logs it */
                return k;
        }
        k = w->handler(&e, w->userdata);
        if (k < 0) {
                w->error = k;
                return k; /* stops ring_buffer__consume(); this record is consumed */
        }
        w->n_handled++;

        /* At the bounds: stop ring_buffer__consume() after this record (consumed: libbpf moves
         * the consumer position past a record before its callback runs). */
        if ((unsigned) w->n_handled >= w->max_events || now_usec(CLOCK_MONOTONIC) >= w->deadline_usec) {
                w->stopped = true;
                return -ECANCELED;
        }
        return 0;
}

/* The public side. */

static void watch_links_destroy(struct watch_bpf *skel) {
        bpf_link__destroy(skel->links.watch_fork);
        bpf_link__destroy(skel->links.watch_exec);
        bpf_link__destroy(skel->links.watch_rename);
        bpf_link__destroy(skel->links.watch_exit);
        bpf_link__destroy(skel->links.close_enter);
        skel->links.watch_fork = skel->links.watch_exec = skel->links.watch_rename = NULL;
        skel->links.watch_exit = skel->links.close_enter = NULL;
}

static int watch_attach(struct bpf_program *prog, struct bpf_link **ret) {
        struct bpf_link *link = bpf_program__attach(prog);

        if (!link)
                return log_debug_errno(-errno, "Failed to attach %s: %m", bpf_program__name(prog));
        *ret = link;
        return 0;
}

/* The tracepoints that were kept from being attached at load. */
static int watch_attach_all(struct watch_bpf *skel) {
        int r = watch_attach(skel->progs.watch_exit, &skel->links.watch_exit);
        if (r < 0)
                return r;
        r = watch_attach(skel->progs.watch_exec, &skel->links.watch_exec);
        if (r < 0)
                return r;
        r = watch_attach(skel->progs.watch_rename, &skel->links.watch_rename);
        if (r < 0)
                return r;
        r = watch_attach(skel->progs.watch_fork, &skel->links.watch_fork);
        if (r < 0)
                return r;
        return watch_attach(skel->progs.close_enter, &skel->links.close_enter);
}

int bpf_watch_start(BpfWatch *w, WatchHandler handler, void *userdata) {
        struct watch_bpf *skel = w->skel;
        int r;

        if (!handler)
                return -EINVAL;
        if (!skel)
                return -EOPNOTSUPP;
        if (w->rb)
                return -EALREADY;

        w->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, w, NULL);
        if (!w->rb)
                return log_debug_errno(-errno, "Failed to set up the event ring buffer: %m");
        r = watch_map_positions(w, bpf_map__fd(skel->maps.events));
        if (r < 0) {
                watch_reader_free(w);
                return r;
        }
        w->handler = handler;
        w->userdata = userdata;
        w->max_events = WATCH_DISPATCH_MAX_EVENTS;
        w->max_usec = WATCH_DISPATCH_MAX_USEC;

        r = watch_attach_all(skel);
        if (r < 0) {
                watch_links_destroy(skel);
                watch_reader_free(w);
                return r;
        }
        skel->bss->watch_enabled = true;
        return 0;
}

int bpf_watch_fd(BpfWatch *w) {
        if (!w->rb)
                return -ENOTCONN;
        return ring_buffer__epoll_fd(w->rb);
}

int bpf_watch_dispatch(BpfWatch *w) {
        int n;

        if (!w->rb)
                return -ENOTCONN;
        w->n_handled = 0;
        w->error = 0;
        w->stopped = false;
        w->deadline_usec = now_usec(CLOCK_MONOTONIC) + w->max_usec;
        n = ring_buffer__consume(w->rb);
        if (w->error < 0)
                return w->error;
        if (n < 0 && !w->stopped)
                return n;
        return w->n_handled;
}

void bpf_watch_set_dispatch_limits(BpfWatch *w, unsigned max_events, unsigned max_usec) {
        w->max_events = max_events > 0 ? max_events : WATCH_DISPATCH_MAX_EVENTS;
        w->max_usec = max_usec > 0 ? max_usec : WATCH_DISPATCH_MAX_USEC;
}

bool bpf_watch_pending(BpfWatch *w) {
        if (!w->rb)
                return false;
        return __atomic_load_n(w->producer_pos, __ATOMIC_ACQUIRE) !=
               __atomic_load_n(w->consumer_pos, __ATOMIC_ACQUIRE);
}

/* A tracepoint program that would have run on a CPU where another one was running was skipped by
 * the kernel and counted in its recursion_misses: for the install and watch programs that is a
 * lost event too. */
static uint64_t prog_misses(const struct bpf_program *prog) {
        struct bpf_prog_info info = {};
        uint32_t len = sizeof(info);

        if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) < 0)
                return 0;
        return info.recursion_misses;
}

uint64_t bpf_watch_install_misses(const BpfWatch *w) {
        return w->skel ? prog_misses(w->skel->progs.seccomp_exit) : 0;
}

/* The runs every program of the unit missed, counted now. */
static void count_skipped_runs(BpfWatch *w) {
        struct watch_bpf *skel = w->skel;
        if (!skel)
                return;
        const struct bpf_program *progs[] = {
                skel->progs.seccomp_enter, skel->progs.seccomp_exit, skel->progs.prctl_enter,
                skel->progs.prctl_exit,    skel->progs.watch_fork,   skel->progs.watch_exec,
                skel->progs.watch_exit,    skel->progs.close_enter,
        };
        uint64_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(progs); i++)
                n += prog_misses(progs[i]);
        w->skipped_runs = n;
}

void bpf_watch_losses(BpfWatch *w, WatchLosses *ret) {
        struct watch_bpf *skel = w->skel;

        *ret = (WatchLosses) {};
        if (!skel)
                return;
        const volatile __u64 *lost = skel->bss->watch_lost;
        ret->ring_full = lost[WATCH_LOSS_RING_FULL];
        ret->no_id = lost[WATCH_LOSS_NO_ID];
        ret->task_gone = lost[WATCH_LOSS_TASK_GONE];
        ret->marks_lost = skel->data_ids->ids_stats.marks_lost;
        ret->skipped_runs = w->skipped_runs;
}

uint64_t bpf_watch_lost_cached(BpfWatch *w) {
        WatchLosses l;
        bpf_watch_losses(w, &l);
        return watch_losses_total(&l);
}

uint64_t bpf_watch_lost(BpfWatch *w) {
        count_skipped_runs(w);
        return bpf_watch_lost_cached(w);
}

uint64_t watch_losses_total(const WatchLosses *l) {
        return l->ring_full + l->no_id + l->task_gone + l->skipped_runs + l->marks_lost;
}

char *watch_losses_describe(const WatchLosses *before, const WatchLosses *now) {
        const struct {
                const char *what;
                uint64_t was, is;
        } causes[] = {
                { "ring buffer full", before->ring_full, now->ring_full },
                { "filter id not found (id map full)", before->no_id, now->no_id },
                { "task not found", before->task_gone, now->task_gone },
                { "tracepoint runs skipped by the kernel", before->skipped_runs, now->skipped_runs },
                { "process marks lost", before->marks_lost, now->marks_lost },
        };
        char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);
        bool first = true;

        if (!f)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(causes); i++)
                if (causes[i].is != causes[i].was) {
                        fprintf(f, "%s%s: %" PRIu64, first ? "" : ", ", causes[i].what, causes[i].is - causes[i].was);
                        first = false;
                }
        if (first)
                fputs("unknown cause", f);
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}
