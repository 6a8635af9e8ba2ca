/* iter-floor.c: loads and runs the pointer-only iterator floor, in either of its forms
 * (bpf/floor.bpf.c, bpf/floor-oc.bpf.c) */
#include "iter-floor.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "floor.lskel.h"
#include "floor-oc.lskel.h"

struct IterFloor {
        bool open_coded;
        struct floor_lskel *skel;       /* the task iterator's walk */
        struct floor_oc_lskel *oc_skel; /* the open-coded walk */
        int oc_link_fd;                 /* its program attached to this thread alone */
        double load_msec;               /* open, load (the verifier) and attach */
};

IterFloor *iter_floor_free(IterFloor *f) {
        if (!f)
                return NULL;
        if (f->oc_link_fd >= 0)
                close(f->oc_link_fd);
        floor_oc_lskel__destroy(f->oc_skel);
        floor_lskel__destroy(f->skel);
        free(f);
        return NULL;
}

/* The bpf(2) calls here are made as the light skeleton makes its own: the floor process needs no
 * library but libc, and is linked statically (bench/meson.build). */
static int sys_bpf(int cmd, union bpf_attr *attr) {
        return (int) syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* The open-coded walk's program attached as an iterator of the calling thread alone: one run of
 * it per pass. */
static int attach_to_this_thread(int prog_fd) {
        union bpf_iter_link_info info;
        union bpf_attr attr;

        memset(&info, 0, sizeof(info));
        info.task.tid = (uint32_t) gettid();
        memset(&attr, 0, sizeof(attr));
        attr.link_create.prog_fd = (uint32_t) prog_fd;
        attr.link_create.attach_type = BPF_TRACE_ITER;
        attr.link_create.iter_info = (uint64_t) (uintptr_t) &info;
        attr.link_create.iter_info_len = sizeof(info);
        return sys_bpf(BPF_LINK_CREATE, &attr);
}

static int load(IterFloor *f) {
        if (!f->open_coded) {
                f->skel = floor_lskel__open_and_load();
                if (!f->skel)
                        return log_error_errno(-errno, "Failed to load the iterator floor program: %m");
                int r = floor_lskel__attach(f->skel);
                return r < 0 ? log_error_errno(r, "Failed to attach the iterator floor program: %m") : 0;
        }
        f->oc_skel = floor_oc_lskel__open_and_load();
        if (!f->oc_skel)
                return log_error_errno(-errno, "Failed to load the open-coded floor program: %m");
        f->oc_link_fd = attach_to_this_thread(f->oc_skel->progs.floor_tasks_oc.prog_fd);
        if (f->oc_link_fd < 0)
                return log_error_errno(-errno, "Failed to attach the open-coded floor program: %m");
        return 0;
}

int iter_floor_new(bool open_coded, IterFloor **ret) {
        _cleanup_(iter_floor_freep) IterFloor *f = NULL;
        struct timespec t0, t1;
        int r;

        f = calloc(1, sizeof(IterFloor));
        if (!f)
                return log_oom();
        f->open_coded = open_coded;
        f->oc_link_fd = -EBADF;
        (void) clock_gettime(CLOCK_MONOTONIC, &t0);
        r = load(f);
        if (r < 0)
                return r;
        (void) clock_gettime(CLOCK_MONOTONIC, &t1);
        f->load_msec = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
        *ret = TAKE_PTR(f);
        return 0;
}

/* BPF_ITER_CREATE on the iterator's link, as libbpf's bpf_iter_create() makes it. */
static int iter_create(int link_fd) {
        union bpf_attr attr;

        memset(&attr, 0, sizeof(attr));
        attr.iter_create.link_fd = (uint32_t) link_fd;
        return sys_bpf(BPF_ITER_CREATE, &attr);
}

int iter_floor_run(IterFloor *f, struct floor_counts *ret) {
        volatile struct floor_counts *counts = f->open_coded ? &f->oc_skel->bss->counts : &f->skel->bss->counts;
        _cleanup_close_ int fd = -1;
        char buf[64];
        ssize_t n;

        *counts = (struct floor_counts) {};
        fd = iter_create(f->open_coded ? f->oc_link_fd : f->skel->links.floor_tasks_fd);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to start the iterator floor: %m");
        /* The program writes nothing: the first read() runs the whole pass and returns 0. */
        while ((n = read(fd, buf, sizeof(buf))) != 0)
                if (n < 0 && errno != EINTR)
                        return log_error_errno(-errno, "Failed to run the iterator floor: %m");
        *ret = *counts;
        return 0;
}

double iter_floor_load_msec(const IterFloor *f) {
        return f->load_msec;
}
