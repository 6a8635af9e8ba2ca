/* restore-root.c: the restore root: forked before the snapshot is read, it waits for its memory,
 * puts its descriptors where the plan says, and runs its first task. Every restored process is
 * forked from it or from its descendants, and a fork copies the page tables of the process's
 * private memory: forked from the executor after the plan was built (tens of MiB at thousands of
 * processes), each fork and each exit cost time in proportion to the restore's size, and the
 * restore grew as N². */
#include "restore-root.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "controller.h"
#include "core/util.h"
#include "runtime-image.h"
#include "runtime.h"

/* What the executor sends with the memfd. */
typedef struct RootHandoff {
        uint64_t shared_size, size;
} RootHandoff;

/* ---- in the root ---- */

/* The memfd and its sizes from the executor; exits when the executor closed its end instead. */
static int receive_memory(int channel, RootHandoff *h) {
        char control[CMSG_SPACE(sizeof(int))] __attribute__((aligned(8))) = {};
        struct iovec iov = { .iov_base = h, .iov_len = sizeof(*h) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        struct cmsghdr *cm;
        ssize_t n;
        int fd;

        do
                n = recvmsg(channel, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n == 0)
                _exit(EXIT_SUCCESS); /* the executor gave up before any step */
        cm = CMSG_FIRSTHDR(&mh);
        if (n != sizeof(*h) || !cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
            cm->cmsg_len != CMSG_LEN(sizeof(int)))
                _exit(EXIT_FAILURE);
        memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
        return fd;
}

/* The shared area read-write, the image read-only, the stacks; every task's Runtime from them. */
static void map_memory(int channel, const PlanExec *exec, int *ret_base) {
        RootHandoff h;
        int memfd = receive_memory(channel, &h);
        long page = sysconf(_SC_PAGESIZE);
        struct stat st;
        void *shared, *image, *stacks;

        if (fstat(memfd, &st) < 0 || h.shared_size % (uint64_t) page != 0 || h.size <= h.shared_size ||
            (uint64_t) st.st_size != h.size)
                _exit(EXIT_FAILURE);
        shared = mmap(NULL, h.shared_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
        image = mmap(NULL, h.size - h.shared_size, PROT_READ, MAP_SHARED, memfd, (off_t) h.shared_size);
        close(memfd);
        if (shared == MAP_FAILED || image == MAP_FAILED || !runtime_image_valid(image, h.size - h.shared_size))
                _exit(EXIT_FAILURE);
        const RuntimeImage *m = image;
        if (((RuntimeShared *) shared)->n_slots != m->n_tasks || ((RuntimeShared *) shared)->n_steps != m->n_steps ||
            runtime_shared_size(m->n_tasks, m->n_steps) > h.shared_size)
                _exit(EXIT_FAILURE);
        stacks = mmap(NULL, (size_t) m->n_tasks * RUNTIME_STACK_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (stacks == MAP_FAILED)
                _exit(EXIT_FAILURE);
        runtime = (Runtime) {
                .image = m,
                .shared = shared,
                .stacks = stacks,
                .fd_report = m->runtime_fd + PLAN_RUNTIME_FD_REPORT,
                .fd_control = m->runtime_fd + PLAN_RUNTIME_FD_CONTROL,
                .fd_handoff = m->runtime_fd + PLAN_RUNTIME_FD_HANDOFF,
                .exec = exec,
                .envp = environ,
                .stdio = m->stdio,
        };
        *ret_base = m->runtime_fd;
}

/* Before its first step: a clean signal state, stdin /dev/null, the runtime's fds at their fixed
 * numbers and nothing else above stderr, its own session, a subreaper, the executor's original
 * limit of open files. */
static void root_setup(const RestoreRoot *root, int base) {
        int null, tmp[PLAN_RUNTIME_N_FDS];
        int src[PLAN_RUNTIME_N_FDS] = { root->report_fd, root->control_r, root->handoff_t };
        sigset_t none;

        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                _exit(EXIT_FAILURE);
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) signal(sig, SIG_DFL);
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0)
                _exit(EXIT_FAILURE);
        for (int i = 0; i < PLAN_RUNTIME_N_FDS; i++)
                if ((tmp[i] = fcntl(src[i], F_DUPFD_CLOEXEC, base + PLAN_RUNTIME_N_FDS)) < 0)
                        _exit(EXIT_FAILURE);
        for (int i = 0; i < PLAN_RUNTIME_N_FDS; i++)
                if (dup3(tmp[i], base + i, O_CLOEXEC) < 0)
                        _exit(EXIT_FAILURE);
        if (close_range(3, (unsigned) base - 1, 0) < 0 || close_range((unsigned) base + PLAN_RUNTIME_N_FDS, ~0U, 0) < 0)
                _exit(EXIT_FAILURE);
        if (setsid() < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                _exit(EXIT_FAILURE);
        if (controller_nofile_saved && setrlimit(RLIMIT_NOFILE, &controller_nofile) < 0)
                _exit(EXIT_FAILURE);
}

_Noreturn static void root_main(RestoreRoot *root, int channel, const PlanExec *exec) {
        int base;

        map_memory(channel, exec, &base);
        close(channel);
        root_setup(root, base);
        runtime_task_main((void *) (uintptr_t) runtime.image->root_task);
}

/* ---- in the executor ---- */

static int make_fds(RestoreRoot *root, int *ret_channel) {
        int pair[2], pipefd[2], chan[2];

        root->report_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (root->report_fd < 0)
                return -errno;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        root->control_r = pipefd[0];
        root->control_w = pipefd[1];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        root->handoff_e = pair[0];
        root->handoff_t = pair[1];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) < 0)
                return -errno;
        root->channel = chan[0];
        *ret_channel = chan[1];
        return 0;
}

/* *error says what failed with r; returns r (-ENOMEM when it cannot be said). */
static int failed(char **error, int r, const char *what) {
        return asprintf(error, "%s failed: %s", what, strerror(-r)) < 0 ? -ENOMEM : r;
}

int restore_root_fork(RestoreRoot *root, bool pid_namespace, const PlanExec *exec, char **error) {
        _cleanup_close_ int theirs = -1;
        int r;

        *root = RESTORE_ROOT_NULL;
        r = make_fds(root, &theirs);
        if (r < 0)
                return failed(error, r, "creating the runtime's descriptors");
        fflush(NULL);
        /* the next child, the restore root, is init of a new pid namespace */
        if (pid_namespace && unshare(CLONE_NEWPID) < 0)
                return failed(error, -errno, "unshare(CLONE_NEWPID) for the restore's pid namespace");
        root->pid = fork();
        if (root->pid < 0)
                return failed(error, -errno, "forking the restore root");
        if (root->pid == 0) {
                close(root->channel);
                root_main(root, theirs, exec);
        }
        close_fd(&root->control_r);
        close_fd(&root->handoff_t);
        root->pidfd = pidfd_open(root->pid, 0);
        if (root->pidfd < 0)
                return failed(error, -errno, "pidfd_open() of the restore root");
        return 0;
}

int restore_root_hand(RestoreRoot *root, int memfd, size_t shared_size, size_t size) {
        RootHandoff h = { .shared_size = shared_size, .size = size };
        char control[CMSG_SPACE(sizeof(int))] = {};
        struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        ssize_t n;

        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
        do
                n = sendmsg(root->channel, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        close_fd(&root->channel);
        return n == sizeof(h) ? 0 : -EIO;
}

void restore_root_done(RestoreRoot *root) {
        if (root->pid > 0) {
                close_fd(&root->channel);
                if (root->pidfd >= 0)
                        (void) pidfd_send_signal(root->pidfd, SIGKILL, NULL, 0);
                else
                        (void) kill(root->pid, SIGKILL);
                while (waitpid(root->pid, NULL, __WALL) < 0 && errno == EINTR)
                        ;
        }
        close_fd(&root->pidfd);
        close_fd(&root->channel);
        close_fd(&root->report_fd);
        close_fd(&root->control_w);
        close_fd(&root->control_r);
        close_fd(&root->handoff_e);
        close_fd(&root->handoff_t);
        root->pid = 0;
}
