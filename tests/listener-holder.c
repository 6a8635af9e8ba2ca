/* listener-holder.c: see listener-holder.h */
#include <fcntl.h>
#include <glib.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "listener-holder.h"
#include "tests-util.h"

#define HOLDER_NOFILE 4096 /* above every fd of LISTENER_HOLDER_FDS */
#define UNUSED_SYSCALL 990 /* far above any real one: the filters stop nothing */

/* In a child: a filter of its own (salt) with a listener, the listener sent over sock. */
static void installer_main(int sock, unsigned salt) {
        struct sock_filter insns[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UNUSED_SYSCALL + salt, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = G_N_ELEMENTS(insns), .filter = insns };
        char control[CMSG_SPACE(sizeof(int))] = {}, byte = 0;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        int fd;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(1);
        fd = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (fd < 0)
                _exit(2);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        _exit(sendmsg(sock, &msg, 0) == 1 ? 0 : 3);
}

/* A listener from a new installer, at fd target. */
static int receive_listener(int target, unsigned salt) {
        char control[CMSG_SPACE(sizeof(int))] = {}, byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        int sv[2], fd, status;
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -1;
        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0)
                installer_main(sv[1], salt);
        close(sv[1]);
        if (recvmsg(sv[0], &msg, 0) != 1 || !CMSG_FIRSTHDR(&msg))
                return -1;
        memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
        close(sv[0]);
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -1;
        if (dup2(fd, target) != target)
                return -1;
        close(fd);
        return 0;
}

static bool is_listener_fd(const int *fds, size_t n, int fd) {
        for (size_t i = 0; i < n; i++)
                if (fds[i] == fd)
                        return true;
        return false;
}

static void holder_main(int ready, const int *fds, size_t n) {
        struct rlimit rl;
        int null;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
                _exit(1);
        if (rl.rlim_max < HOLDER_NOFILE)
                rl.rlim_max = HOLDER_NOFILE;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                _exit(1);
        for (size_t i = 0; i < n; i++)
                if (receive_listener(fds[i], (unsigned) i) < 0)
                        _exit(2);
        null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        for (int fd = 3; fd <= LISTENER_HOLDER_MAX_FILLER; fd++)
                if (fd != ready && fd != null && fd % 3 != 0 && !is_listener_fd(fds, n, fd) && dup2(null, fd) != fd)
                        _exit(3);
        if (write(ready, "x", 1) != 1)
                _exit(4);
        for (;;)
                pause();
}

pid_t listener_holder_start(const int *fds, size_t n) {
        int p[2];
        char byte;
        pid_t pid;

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(p[0]);
                holder_main(p[1], fds, n);
        }
        close(p[1]);
        g_assert_cmpint(read(p[0], &byte, 1), ==, 1);
        close(p[0]);
        return pid;
}

void listener_holder_stop(pid_t pid) {
        int status;

        g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
}

void listener_holder_assert(const Forest *f, pid_t holder, const int *fds, size_t n, bool among) {
        g_assert_nonnull(forest_find_process(f, holder));
        if (among)
                g_assert_cmpuint(f->n_listeners, >=, n);
        else
                g_assert_cmpuint(f->n_listeners, ==, n);
        for (size_t i = 0; i < n; i++) {
                const Listener *l = NULL;
                for (size_t j = 0; j < f->n_listeners && !l; j++)
                        if (tests_listener_has_holder(f->listeners[j], holder, fds[i]))
                                l = f->listeners[j];
                g_assert_nonnull(l);
                g_assert_cmpuint(l->n_holders, ==, 1);
                const Filter *flt = forest_find_filter(f, l->filter_id);
                g_assert_nonnull(flt);
                g_assert_true(flt->has_listener);
                g_assert_cmpuint(flt->n_tasks, ==, 0);
                g_assert_cmpuint(flt->len, ==, 4);
        }
}
