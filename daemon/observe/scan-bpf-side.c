/* scan-bpf-side.c: see scan-bpf-side.h. A one-shot pass runs its task_file iterator this way, beside
 * the task iterator: the two walks over every task take the time of the longer one on a machine
 * of two or more CPUs, not their sum. The side only reads (each read() runs the program on the
 * next objects); a full ring buffer makes its read() fail with EAGAIN, and it waits until the
 * reading thread drained the buffer, then reads again (the kernel retries the same object). */
#include <bpf/bpf.h>
#include <errno.h>
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

int bpf_side_start(BpfSideRun *r, int link_fd, volatile uint32_t *tid, void (*then)(void *userdata),
                   void *then_userdata) {
        int k;

        *r = (BpfSideRun) { .fd = bpf_iter_create(link_fd), .tid = tid, .then = then, .then_userdata = then_userdata };
        if (r->fd < 0)
                return -errno;
        (void) pthread_mutex_init(&r->lock, NULL);
        (void) pthread_cond_init(&r->cond, NULL);
        k = pthread_create(&r->thread, NULL, side_main, r);
        if (k != 0) {
                (void) pthread_cond_destroy(&r->cond);
                (void) pthread_mutex_destroy(&r->lock);
                closep(&r->fd);
                return -k;
        }
        return 0;
}

void bpf_side_drained(BpfSideRun *r) {
        (void) pthread_mutex_lock(&r->lock);
        r->drains++;
        (void) pthread_cond_broadcast(&r->cond);
        (void) pthread_mutex_unlock(&r->lock);
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
        (void) pthread_cond_destroy(&r->cond);
        (void) pthread_mutex_destroy(&r->lock);
        closep(&r->fd);
        return r->error;
}
