/* scan-bpf-side.c: see scan-bpf-side.h. A one-shot pass runs its task_file iterator this way, beside
 * the task iterator: the two walks over every task take the time of the longer one on a machine
 * of two or more CPUs, not their sum. The side only reads (each read() runs the program on the
 * next objects); a full ring buffer makes its read() fail with EAGAIN, and it waits until the
 * buffer was drained, then reads again (the kernel retries the same object). The drainer takes
 * the records in while both walk: the task walk, the longer one, then only walks, and the side's
 * CPU, free for a third of the pass at 20,000 processes, does that work. */
#include <bpf/bpf.h>
#include <errno.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "observe/scan-bpf-side.h"

static void side_end(BpfSideRun *r, int error) {
        (void) pthread_mutex_lock(&r->lock);
        r->done = true;
        r->error = error;
        (void) pthread_cond_broadcast(&r->cond);
        (void) pthread_mutex_unlock(&r->lock);
}

/* Wait for a drain after the one numbered seen. */
static void side_wait_room(BpfSideRun *r, uint64_t seen) {
        (void) pthread_mutex_lock(&r->lock);
        r->waiting = true;
        (void) pthread_cond_broadcast(&r->cond);
        while (r->drains == seen)
                (void) pthread_cond_wait(&r->cond, &r->lock);
        r->waiting = false;
        (void) pthread_mutex_unlock(&r->lock);
}

static void *side_main(void *userdata) {
        BpfSideRun *r = userdata;
        char buf[64];

        if (r->tid)
                *r->tid = (uint32_t) gettid();
        for (;;) {
                (void) pthread_mutex_lock(&r->lock);
                uint64_t seen = r->drains; /* before the read: a drain during it counts */
                (void) pthread_mutex_unlock(&r->lock);

                ssize_t k = read(r->fd, buf, sizeof(buf));
                if (k >= 0) {
                        side_end(r, k == 0 ? 0 : -EBADMSG);
                        if (r->then)
                                r->then(r->then_userdata);
                        return NULL;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN) {
                        side_end(r, -errno);
                        return NULL;
                }
                side_wait_room(r, seen);
        }
}

static void *drainer_main(void *userdata);

int bpf_side_start(BpfSideRun *r, int link_fd, volatile uint32_t *tid, void (*then)(void *userdata),
                   void *then_userdata, int (*drain)(void *userdata), void *drain_userdata) {
        int k;

        *r = (BpfSideRun) { .fd = bpf_iter_create(link_fd), .tid = tid, .then = then, .then_userdata = then_userdata,
                            .drain = drain, .drain_userdata = drain_userdata };
        if (r->fd < 0)
                return -errno;
        (void) pthread_mutex_init(&r->lock, NULL);
        (void) pthread_mutex_init(&r->drain_lock, NULL);
        (void) pthread_cond_init(&r->cond, NULL);
        k = pthread_create(&r->thread, NULL, side_main, r);
        if (k != 0) {
                (void) pthread_cond_destroy(&r->cond);
                (void) pthread_mutex_destroy(&r->drain_lock);
                (void) pthread_mutex_destroy(&r->lock);
                closep(&r->fd);
                return -k;
        }
        /* without one, this thread drains alone */
        r->drainer_started = pthread_create(&r->drainer, NULL, drainer_main, r) == 0;
        return 0;
}

static void side_drained(BpfSideRun *r) {
        (void) pthread_mutex_lock(&r->lock);
        r->drains++;
        (void) pthread_cond_broadcast(&r->cond);
        (void) pthread_mutex_unlock(&r->lock);
}

int bpf_side_drain(BpfSideRun *r) {
        (void) pthread_mutex_lock(&r->drain_lock);
        int n = r->drain(r->drain_userdata);
        (void) pthread_mutex_unlock(&r->drain_lock);
        side_drained(r);
        return n;
}

/* How long the drainer sleeps when it found nothing: the task walk fills the ring buffer (256 KiB)
 * in about a millisecond at its fastest. */
#define DRAINER_IDLE_NSEC (50 * 1000)

/* The drainer's nice value. It wakes hundreds of times in a pass, and at the walkers' own weight
 * each wake-up took the CPU from one of them: the task walk waited 6 ms for a CPU in a pass of
 * 41 ms at 20,000 processes (/proc/thread-self/schedstat), 0.5 ms with the drainer at 19. It runs
 * where a CPU is free (the file-table walk ends first); when it falls behind, the task walk finds
 * the ring buffer full and drains it itself. */
#define DRAINER_NICE 19

static void *drainer_main(void *userdata) {
        BpfSideRun *r = userdata;

        (void) setpriority(PRIO_PROCESS, (id_t) gettid(), DRAINER_NICE); /* this thread only */

        for (;;) {
                (void) pthread_mutex_lock(&r->lock);
                bool stop = r->stop;
                (void) pthread_mutex_unlock(&r->lock);

                int n = bpf_side_drain(r);
                if (n < 0) {
                        r->drain_error = n;
                        return NULL;
                }
                if (stop)
                        return NULL; /* that drain came after both walks ended */
                if (n == 0)
                        (void) nanosleep(&(struct timespec) { .tv_nsec = DRAINER_IDLE_NSEC }, NULL);
        }
}

void bpf_side_wait(BpfSideRun *r, bool *ret_done) {
        (void) pthread_mutex_lock(&r->lock);
        while (!r->done && !r->waiting)
                (void) pthread_cond_wait(&r->cond, &r->lock);
        *ret_done = r->done;
        (void) pthread_mutex_unlock(&r->lock);
}

int bpf_side_join(BpfSideRun *r) {
        (void) pthread_join(r->thread, NULL);
        if (r->drainer_started) {
                (void) pthread_mutex_lock(&r->lock);
                r->stop = true;
                (void) pthread_mutex_unlock(&r->lock);
                (void) pthread_join(r->drainer, NULL);
        }
        (void) pthread_cond_destroy(&r->cond);
        (void) pthread_mutex_destroy(&r->drain_lock);
        (void) pthread_mutex_destroy(&r->lock);
        closep(&r->fd);
        return r->error;
}
