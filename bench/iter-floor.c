/* iter-floor.c: loads and runs the pointer-only iterator floor (bpf/floor.bpf.c) */
#include "iter-floor.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "floor.lskel.h"

struct IterFloor {
        struct floor_lskel *skel;
        double load_msec; /* open, load (the verifier) and attach */
};

IterFloor *iter_floor_free(IterFloor *f) {
        if (!f)
                return NULL;
        floor_lskel__destroy(f->skel);
        free(f);
        return NULL;
}

int iter_floor_new(IterFloor **ret) {
        _cleanup_(iter_floor_freep) IterFloor *f = NULL;
        struct timespec t0, t1;
        int r;

        f = calloc(1, sizeof(IterFloor));
        if (!f)
                return log_oom();
        (void) clock_gettime(CLOCK_MONOTONIC, &t0);
        f->skel = floor_lskel__open_and_load();
        if (!f->skel)
                return log_error_errno(-errno, "Failed to load the iterator floor program: %m");
        r = floor_lskel__attach(f->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the iterator floor program: %m");
        (void) clock_gettime(CLOCK_MONOTONIC, &t1);
        f->load_msec = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
        *ret = TAKE_PTR(f);
        return 0;
}

/* BPF_ITER_CREATE on the iterator's link, as libbpf's bpf_iter_create() makes it: with the light
 * skeleton's own system calls, the floor process needs no library but libc, and is linked
 * statically (bench/meson.build). */
static int iter_create(int link_fd) {
        union bpf_attr attr;

        memset(&attr, 0, sizeof(attr));
        attr.iter_create.link_fd = (uint32_t) link_fd;
        return (int) syscall(__NR_bpf, BPF_ITER_CREATE, &attr, sizeof(attr));
}

int iter_floor_run(IterFloor *f, struct floor_counts *ret) {
        _cleanup_close_ int fd = -1;
        char buf[64];
        ssize_t n;

        f->skel->bss->counts = (struct floor_counts) {};
        fd = iter_create(f->skel->links.floor_tasks_fd);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to start the iterator floor: %m");
        /* The program writes nothing: the first read() runs the whole pass and returns 0. */
        while ((n = read(fd, buf, sizeof(buf))) != 0)
                if (n < 0 && errno != EINTR)
                        return log_error_errno(-errno, "Failed to run the iterator floor: %m");
        *ret = f->skel->bss->counts;
        return 0;
}

double iter_floor_load_msec(const IterFloor *f) {
        return f->load_msec;
}
