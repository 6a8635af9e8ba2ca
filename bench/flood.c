/* flood.c: one unprivileged user's processes holding as many filters as the kernel lets them */
#include "flood.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534

struct Flood {
        pid_t leader; /* of the process group; its parent is us */
        size_t filters;
};

/* In a child: become nobody, stack the filters, say "1" (or "0") on fd, pause. */
__attribute__((noreturn)) static void flood_child(size_t k, size_t filters_each, size_t filter_len, int fd) {
        struct sock_filter f[BPF_MAXINSNS];
        char ok = '0';

        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                goto done;
        for (size_t i = 0; i < filters_each; i++) {
                /* comparisons against syscall numbers nothing uses, then an ALLOW whose data tells
                 * the filters apart */
                for (size_t j = 0; j + 1 < filter_len; j++)
                        f[j] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 100000 + (uint32_t) j, 0, 0);
                f[filter_len - 1] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
                                                                  SECCOMP_RET_ALLOW | ((k * filters_each + i) & 0xffff));
                struct sock_fprog prog = { .len = (unsigned short) filter_len, .filter = f };
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        goto done;
        }
        ok = '1';
done:
        (void) !write(fd, &ok, 1);
        close(fd);
        for (;;)
                pause();
}

int flood_start(size_t n_processes, size_t filters_each, size_t filter_len, Flood **ret) {
        int p[2];

        if (filter_len < 1 || filter_len > BPF_MAXINSNS)
                return -EINVAL;
        _cleanup_free_ Flood *f = calloc(1, sizeof(Flood));
        if (!f)
                return log_oom();
        if (pipe2(p, O_CLOEXEC) < 0)
                return log_error_errno(-errno, "Failed to make a pipe: %m");
        /* The leader: a group of its own, so that one kill ends all of it. */
        f->leader = fork();
        if (f->leader < 0) {
                close(p[0]);
                close(p[1]);
                return log_error_errno(-errno, "Failed to fork: %m");
        }
        if (f->leader == 0) {
                (void) setpgid(0, 0);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(p[0]);
                for (size_t k = 1; k < n_processes; k++) {
                        pid_t c = fork();
                        if (c == 0)
                                flood_child(k, filters_each, filter_len, p[1]);
                        if (c < 0)
                                (void) !write(p[1], "0", 1);
                }
                flood_child(0, filters_each, filter_len, p[1]);
        }
        (void) setpgid(f->leader, f->leader);
        close(p[1]);
        int r = 0;
        for (size_t i = 0; i < n_processes; i++) {
                char c = '0';
                if (read(p[0], &c, 1) != 1 || c != '1')
                        r = -EIO;
        }
        close(p[0]);
        f->filters = n_processes * filters_each;
        if (r < 0) {
                flood_free(TAKE_PTR(f));
                return log_error_errno(r, "The flood's processes could not install their filters.");
        }
        *ret = TAKE_PTR(f);
        return 0;
}

size_t flood_filters(const Flood *f) {
        return f->filters;
}

Flood *flood_free(Flood *f) {
        if (!f)
                return NULL;
        if (f->leader > 0) {
                (void) kill(-f->leader, SIGKILL);
                (void) waitpid(f->leader, NULL, 0);
                /* The others are the benchmark's now if it is a subreaper (else init's). */
                while (waitpid(-f->leader, NULL, 0) > 0)
                        ;
        }
        free(f);
        return NULL;
}
