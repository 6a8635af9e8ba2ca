/* scenario.c: builds real process and thread trees with seccomp filters installed at chosen
 * points, keeps them alive, and reports the ground truth of what was built */
#include "scenario.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "core/prog.h"
#include "core/util.h"

enum {
        OP_HELLO,
        OP_FORK,
        OP_THREAD,
        OP_INSTALL,
        OP_INSTALL_PRCTL,
        OP_STRICT,
        OP_NO_NEW_PRIVS,
        OP_EXIT_THREAD,
        OP_EXIT_PROCESS,
        OP_SEND_FD,
        OP_RECV_FD,
        OP_EXEC_SLEEP, /* the path to execute is in insns, NUL-terminated */
        OP_EXEC_ARGV,
        OP_RENAME, /* the new name is in insns, NUL-terminated */
};

typedef struct Command {
        int op;
        int arg;
        unsigned flags;
        unsigned len;
        struct sock_filter insns[PROG_MAX_INSNS];
} Command;

typedef struct Reply {
        int result; /* >= 0 or -errno */
        pid_t tid, tgid;
} Reply;

typedef struct TaskSlot {
        ScenarioTaskInfo info;
        int sock; /* builder's end of the agent's channel, -1 once gone or no longer an agent */
} TaskSlot;

struct Scenario {
        TaskSlot *tasks;
        size_t n_tasks, n_tasks_allocated;
        ScenarioNode *nodes;
        size_t n_nodes, n_nodes_allocated;
        pid_t root_pid;
};

/* ---- agent side: runs in the scenario's processes and threads ---- */

static void agent_loop(int sock) __attribute__((noreturn));

static int recv_command(int sock, Command *c, int *ret_fd) {
        char control[CMSG_SPACE(sizeof(int))] = {};
        struct iovec iov = { .iov_base = c, .iov_len = sizeof(*c) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                             .msg_controllen = sizeof(control) };
        ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n <= 0)
                return -1;
        *ret_fd = -1;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
                memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
        return 0;
}

static int send_with_fd(int sock, const void *buf, size_t len, int fd) {
        char control[CMSG_SPACE(sizeof(int))] = {};
        struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (fd >= 0) {
                mh.msg_control = control;
                mh.msg_controllen = sizeof(control);
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        }
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static void agent_reply(int sock, int result) {
        Reply r = { .result = result, .tid = (pid_t) syscall(SYS_gettid), .tgid = getpid() };
        (void) !write(sock, &r, sizeof(r));
}

static void *agent_thread(void *p) {
        agent_reply((int) (intptr_t) p, 0);
        agent_loop((int) (intptr_t) p);
}

static int agent_fork(int *sock, int new_sock) {
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                close(*sock);
                *sock = new_sock; /* no PDEATHSIG: the child must survive its parent to be reparented */
                agent_reply(*sock, 0);
                return 1; /* the child goes on as an agent on its new channel */
        }
        close(new_sock);
        return pid;
}

static int agent_install(const Command *c, bool use_prctl) {
        struct sock_fprog prog = { .len = (unsigned short) c->len, .filter = (struct sock_filter *) c->insns };
        long r = use_prctl ? prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)
                           : syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, c->flags, &prog);
        if (r < 0)
                return -errno;
        if ((c->flags & SECCOMP_FILTER_FLAG_TSYNC) && r > 0)
                return -EBUSY; /* r is the tid of a thread that could not be synchronised */
        return (int) r;
}

/* Strict mode allows only read, write, exit and sigreturn: the loop after it uses nothing else. */
static void agent_strict_loop(int sock) __attribute__((noreturn));
static void agent_strict_loop(int sock) {
        for (;;) {
                Command c;
                if (read(sock, &c, offsetof(Command, insns)) <= 0 || c.op == OP_EXIT_THREAD ||
                    c.op == OP_EXIT_PROCESS) {
                        Reply r = { .result = 0 };
                        (void) !write(sock, &r, sizeof(r));
                        syscall(SYS_exit, 0);
                }
                Reply r = { .result = -EPERM };
                (void) !write(sock, &r, sizeof(r));
        }
}

static int agent_exec_sleep(const char *path) {
        char *argv[] = { (char *) "sleep", (char *) "infinity", NULL };
        execv(path, argv);
        return -errno;
}

/* argv packed by scenario_exec(): argc strings, each ending in NUL, in the command's buffer. */
static int agent_exec_argv(const Command *c) {
        char *argv[64];
        const char *p = (const char *) c->insns;
        int argc = c->arg < 63 ? c->arg : 63;

        for (int i = 0; i < argc; i++, p += strlen(p) + 1)
                argv[i] = (char *) p;
        argv[argc] = NULL;
        execv(argv[0], argv);
        syscall(SYS_exit_group, 127); /* the builder sees the channel end either way */
        return -errno;
}

static void agent_loop(int sock) {
        for (;;) {
                static __thread Command c;
                int fd, r = 0;
                if (recv_command(sock, &c, &fd) < 0)
                        syscall(SYS_exit_group, 0); /* the builder went away */
                switch (c.op) {
                case OP_FORK:
                        r = agent_fork(&sock, fd);
                        if (r == 1)
                                continue;
                        break;
                case OP_THREAD: {
                        pthread_t t;
                        r = -pthread_create(&t, NULL, agent_thread, (void *) (intptr_t) fd);
                        if (r == 0)
                                pthread_detach(t);
                        break;
                }
                case OP_INSTALL:
                case OP_INSTALL_PRCTL:
                        r = agent_install(&c, c.op == OP_INSTALL_PRCTL);
                        break;
                case OP_NO_NEW_PRIVS:
                        r = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
                        break;
                case OP_RENAME:
                        r = prctl(PR_SET_NAME, (const char *) c.insns, 0, 0, 0) < 0 ? -errno : 0;
                        break;
                case OP_STRICT: {
                        /* gettid/getpid are not allowed in strict mode: make the reply first */
                        Reply ok = { .result = 0, .tid = (pid_t) syscall(SYS_gettid), .tgid = getpid() };
                        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) < 0) {
                                r = -errno;
                                break;
                        }
                        (void) !write(sock, &ok, sizeof(ok));
                        agent_strict_loop(sock);
                }
                case OP_EXIT_THREAD:
                        agent_reply(sock, 0);
                        syscall(SYS_exit, 0);
                        break;
                case OP_EXIT_PROCESS:
                        agent_reply(sock, 0);
                        syscall(SYS_exit_group, 0);
                        break;
                case OP_SEND_FD: {
                        Reply rep = { .result = 0 };
                        send_with_fd(sock, &rep, sizeof(rep), c.arg);
                        continue;
                }
                case OP_RECV_FD:
                        r = fd;
                        break;
                case OP_EXEC_SLEEP:
                        agent_reply(sock, 0);
                        r = agent_exec_sleep((const char *) c.insns);
                        break;
                case OP_EXEC_ARGV:
                        agent_reply(sock, 0);
                        r = agent_exec_argv(&c);
                        break;
                default:
                        r = -EINVAL;
                }
                agent_reply(sock, r);
        }
}

/* ---- builder side: runs in the test ---- */

static int call_agent(Scenario *s, ScenarioTask t, const Command *c, size_t len, int pass_fd, Reply *ret) {
        if (t < 0 || (size_t) t >= s->n_tasks || s->tasks[t].sock < 0)
                return -ESRCH;
        int r = send_with_fd(s->tasks[t].sock, c, len, pass_fd);
        if (r < 0)
                return r;
        Reply rep;
        ssize_t n = read(s->tasks[t].sock, &rep, sizeof(rep));
        if (n != sizeof(rep))
                return n < 0 ? -errno : -EPIPE;
        if (ret)
                *ret = rep;
        return rep.result;
}

static int simple_call(Scenario *s, ScenarioTask t, int op) {
        Command c = { .op = op };
        return call_agent(s, t, &c, offsetof(Command, insns), -1, NULL);
}

static ScenarioTask add_slot(Scenario *s, int sock, const Reply *hello, int head, bool is_thread) {
        if (GROW(s->tasks, s->n_tasks_allocated, s->n_tasks + 1) < 0)
                return -ENOMEM;
        s->tasks[s->n_tasks] = (TaskSlot) {
                .sock = sock,
                .info = { .tid = hello->tid, .tgid = hello->tgid, .head = head, .alive = true, .is_thread = is_thread },
        };
        return (ScenarioTask) s->n_tasks++;
}

static int new_channel(int pair[2]) {
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        return 0;
}

static int read_hello(int sock, Reply *hello) {
        ssize_t n = read(sock, hello, sizeof(*hello));
        return n == sizeof(*hello) ? 0 : -EPIPE;
}

int scenario_new(Scenario **ret) {
        Scenario *s = calloc(1, sizeof(Scenario));
        int pair[2];
        if (!s)
                return -ENOMEM;
        int r = new_channel(pair);
        if (r < 0) {
                free(s);
                return r;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                r = -errno;
                free(s);
                return r;
        }
        if (pid == 0) {
                /* Keep nothing of the test's: agents that outlive an aborted test (descendants are
                 * not killed with it, so that they can be reparented) must not hold its output pipe
                 * open, or its runner waits for them. The channel becomes fd 3, stdio /dev/null. */
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
                    (pair[1] != 3 && dup3(pair[1], 3, O_CLOEXEC) < 0) || close_range(4, ~0U, 0) < 0)
                        _exit(EXIT_FAILURE);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() == 1)
                        _exit(EXIT_FAILURE);
                prctl(PR_SET_CHILD_SUBREAPER, 1);
                signal(SIGCHLD, SIG_IGN); /* exited agents are reaped at once: no zombies holding filters */
                agent_reply(3, 0);
                agent_loop(3);
        }
        close(pair[1]);
        Reply hello;
        r = read_hello(pair[0], &hello);
        if (r >= 0)
                r = add_slot(s, pair[0], &hello, -1, false);
        s->root_pid = pid;
        if (r < 0) {
                scenario_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void scenario_free(Scenario *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_tasks; i++) {
                if (s->tasks[i].info.alive && !s->tasks[i].info.is_thread)
                        kill(s->tasks[i].info.tgid, SIGKILL);
                if (s->tasks[i].sock >= 0)
                        close(s->tasks[i].sock);
        }
        if (s->root_pid > 0)
                (void) waitpid(s->root_pid, NULL, 0);
        for (size_t i = 0; i < s->n_nodes; i++) {
                free(s->nodes[i].insns);
        }
        free(s->nodes);
        free(s->tasks);
        free(s);
}

ScenarioTask scenario_root(Scenario *s) {
        return 0;
}

pid_t scenario_root_pid(const Scenario *s) {
        return s->root_pid;
}

static ScenarioTask spawn(Scenario *s, ScenarioTask parent, int op) {
        int pair[2];
        int r = new_channel(pair);
        if (r < 0)
                return r;
        Command c = { .op = op };
        r = call_agent(s, parent, &c, offsetof(Command, insns), pair[1], NULL);
        close(pair[1]);
        Reply hello;
        if (r >= 0)
                r = read_hello(pair[0], &hello);
        if (r < 0) {
                close(pair[0]);
                return r;
        }
        return add_slot(s, pair[0], &hello, s->tasks[parent].info.head, op == OP_THREAD);
}

ScenarioTask scenario_fork(Scenario *s, ScenarioTask parent) {
        return spawn(s, parent, OP_FORK);
}

ScenarioTask scenario_thread(Scenario *s, ScenarioTask t) {
        return spawn(s, t, OP_THREAD);
}

static int add_node(Scenario *s, ScenarioTask t, const struct sock_filter *insns, size_t len, unsigned flags,
                    int listener_fd) {
        if (GROW(s->nodes, s->n_nodes_allocated, s->n_nodes + 1) < 0)
                return -ENOMEM;
        ScenarioNode *n = &s->nodes[s->n_nodes];
        *n = (ScenarioNode) {
                .id = (int) s->n_nodes,
                .parent = s->tasks[t].info.head,
                .insns = malloc(len * sizeof(struct sock_filter)),
                .len = len,
                .flags = flags,
                .installer = s->tasks[t].info.tid,
                .listener_fd = listener_fd,
        };
        if (!n->insns)
                return -ENOMEM;
        memcpy(n->insns, insns, len * sizeof(struct sock_filter));
        s->n_nodes++;
        return n->id;
}

static void apply_head(Scenario *s, ScenarioTask t, int node, bool tsync) {
        for (size_t i = 0; i < s->n_tasks; i++) {
                ScenarioTaskInfo *x = &s->tasks[i].info;
                if ((ScenarioTask) i == t || (tsync && x->alive && x->tgid == s->tasks[t].info.tgid))
                        x->head = node;
        }
}

static int install(Scenario *s, ScenarioTask t, const struct sock_filter *insns, size_t len, unsigned flags,
                   int op) {
        if (len > PROG_MAX_INSNS)
                return -EINVAL;
        _cleanup_free_ Command *c = calloc(1, sizeof(Command));
        if (!c)
                return -ENOMEM;
        *c = (Command) { .op = op, .flags = flags, .len = (unsigned) len };
        memcpy(c->insns, insns, len * sizeof(struct sock_filter));
        int r = call_agent(s, t, c, offsetof(Command, insns) + len * sizeof(struct sock_filter), -1, NULL);
        if (r < 0)
                return r;
        int node = add_node(s, t, insns, len, flags, (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) ? r : -1);
        if (node >= 0)
                apply_head(s, t, node, flags & SECCOMP_FILTER_FLAG_TSYNC);
        return node;
}

int scenario_install(Scenario *s, ScenarioTask t, const struct sock_filter *insns, size_t len, unsigned flags) {
        return install(s, t, insns, len, flags, OP_INSTALL);
}

int scenario_install_prctl(Scenario *s, ScenarioTask t, const struct sock_filter *insns, size_t len) {
        return install(s, t, insns, len, 0, OP_INSTALL_PRCTL);
}

int scenario_strict(Scenario *s, ScenarioTask t) {
        int r = simple_call(s, t, OP_STRICT);
        if (r >= 0)
                s->tasks[t].info.strict = true;
        return r;
}

int scenario_no_new_privs(Scenario *s, ScenarioTask t) {
        return simple_call(s, t, OP_NO_NEW_PRIVS);
}

int scenario_rename(Scenario *s, ScenarioTask t, const char *name) {
        Command c = { .op = OP_RENAME };
        size_t len = strlen(name) + 1;
        if (len > sizeof(c.insns))
                return -ENAMETOOLONG;
        memcpy(c.insns, name, len);
        return call_agent(s, t, &c, offsetof(Command, insns) + len, -1, NULL);
}

static void mark_gone(Scenario *s, ScenarioTask t, bool whole_process) {
        pid_t tgid = s->tasks[t].info.tgid;
        for (size_t i = 0; i < s->n_tasks; i++) {
                TaskSlot *x = &s->tasks[i];
                if ((ScenarioTask) i != t && !(whole_process && x->info.tgid == tgid))
                        continue;
                x->info.alive = false;
                if (x->sock >= 0)
                        close(x->sock);
                x->sock = -1;
        }
}

/* Wait until the kernel has released the task(s): the tid (or the whole process) is gone from
 * /proc, so that a scan afterwards cannot see it. */
static void wait_gone(pid_t tgid, pid_t tid) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task/%d", tgid, tid);
        for (int i = 0; i < 60000 && access(path, F_OK) == 0; i++) /* a minute, even on a loaded machine */
                usleep(1000);
}

int scenario_exit(Scenario *s, ScenarioTask t) {
        if (t < 0 || (size_t) t >= s->n_tasks || !s->tasks[t].info.alive)
                return -ESRCH;
        ScenarioTaskInfo info = s->tasks[t].info;
        bool whole = !info.is_thread;
        if (s->tasks[t].sock >= 0) {
                int r = simple_call(s, t, whole ? OP_EXIT_PROCESS : OP_EXIT_THREAD);
                if (r < 0 && r != -EPIPE)
                        return r;
        } else
                kill(info.tgid, SIGKILL);
        mark_gone(s, t, whole);
        wait_gone(info.tgid, info.tid);
        return 0;
}

static int receive_fd(int sock) {
        Command dummy;
        int fd;
        if (recv_command(sock, &dummy, &fd) < 0)
                return -EPIPE;
        return fd >= 0 ? fd : -EBADF;
}

static ScenarioTask find_agent_of(const Scenario *s, pid_t tgid) {
        for (size_t i = 0; i < s->n_tasks; i++)
                if (s->tasks[i].info.alive && s->tasks[i].sock >= 0 && s->tasks[i].info.tgid == tgid &&
                    !s->tasks[i].info.strict)
                        return (ScenarioTask) i;
        return -ESRCH;
}

int scenario_share_listener(Scenario *s, int node, ScenarioTask t) {
        if (node < 0 || (size_t) node >= s->n_nodes || s->nodes[node].listener_fd < 0)
                return -EINVAL;
        pid_t installer_tgid = 0;
        for (size_t i = 0; i < s->n_tasks; i++)
                if (s->tasks[i].info.tid == s->nodes[node].installer)
                        installer_tgid = s->tasks[i].info.tgid;
        ScenarioTask from = find_agent_of(s, installer_tgid);
        if (from < 0)
                return from;
        Command c = { .op = OP_SEND_FD, .arg = s->nodes[node].listener_fd };
        int r = send_with_fd(s->tasks[from].sock, &c, offsetof(Command, insns), -1);
        if (r < 0)
                return r;
        int fd = receive_fd(s->tasks[from].sock);
        if (fd < 0)
                return fd;
        c = (Command) { .op = OP_RECV_FD };
        r = call_agent(s, t, &c, offsetof(Command, insns), fd, NULL);
        close(fd);
        return r;
}

int scenario_exec_sleep_at(Scenario *s, ScenarioTask t, const char *path) {
        static Command c = { .op = OP_EXEC_SLEEP };
        size_t len = strlen(path) + 1;
        if (len > sizeof(c.insns))
                return -ENAMETOOLONG;
        memcpy(c.insns, path, len);
        int r = call_agent(s, t, &c, offsetof(Command, insns) + len, -1, NULL);
        if (r < 0)
                return r;
        /* The channel is close-on-exec: EOF on it means the exec happened; a reply, that it failed. */
        Reply rep;
        ssize_t n;
        while ((n = read(s->tasks[t].sock, &rep, sizeof(rep))) < 0 && errno == EINTR)
                ;
        if (n == sizeof(rep))
                return rep.result < 0 ? rep.result : -EIO;
        pid_t tgid = s->tasks[t].info.tgid;
        for (size_t i = 0; i < s->n_tasks; i++)
                if (s->tasks[i].info.tgid == tgid) {
                        if ((ScenarioTask) i != t)
                                s->tasks[i].info.alive = false; /* exec kills the other threads */
                        if (s->tasks[i].sock >= 0)
                                close(s->tasks[i].sock);
                        s->tasks[i].sock = -1;
                }
        /* exec makes the calling thread the leader: its tid becomes the tgid */
        s->tasks[t].info.tid = tgid;
        s->tasks[t].info.is_thread = false;
        return 0;
}

int scenario_exec_sleep(Scenario *s, ScenarioTask t) {
        return scenario_exec_sleep_at(s, t, "/bin/sleep");
}

size_t scenario_n_tasks(const Scenario *s) {
        return s->n_tasks;
}

static pid_t read_ppid(pid_t tgid) {
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/status", tgid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "PPid:", 5) == 0)
                        return (pid_t) strtol(line + 5, NULL, 10);
        return 0;
}

const ScenarioTaskInfo *scenario_task(const Scenario *s, ScenarioTask t) {
        if (t < 0 || (size_t) t >= s->n_tasks)
                return NULL;
        ScenarioTaskInfo *info = &s->tasks[t].info;
        if (info->alive)
                info->ppid = read_ppid(info->tgid);
        return info;
}

size_t scenario_n_nodes(const Scenario *s) {
        return s->n_nodes;
}

const ScenarioNode *scenario_node(const Scenario *s, int node) {
        return node >= 0 && (size_t) node < s->n_nodes ? &s->nodes[node] : NULL;
}

int scenario_node_depth(const Scenario *s, int node) {
        if (node < 0)
                return -1;
        int d = 0;
        for (int n = node; n >= 0; n = s->nodes[n].parent)
                d++;
        return d;
}

size_t scenario_filter_errno(struct sock_filter *insns, int nr, int errno_value, size_t pad) {
        size_t n = 0;
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        insns[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (size_t i = 0; i < pad; i++)
                insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        insns[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned) nr, 0, 1);
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (errno_value & SECCOMP_RET_DATA));
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        return n;
}

/* After an exec of t's process: its channel ends, the other threads are gone, and t is the
 * leader. */
static void note_exec(Scenario *s, ScenarioTask t) {
        char buf[sizeof(Reply)];
        pid_t tgid = s->tasks[t].info.tgid;

        while (read(s->tasks[t].sock, buf, sizeof(buf)) > 0)
                ;
        for (size_t i = 0; i < s->n_tasks; i++)
                if (s->tasks[i].info.tgid == tgid) {
                        if ((ScenarioTask) i != t)
                                s->tasks[i].info.alive = false;
                        if (s->tasks[i].sock >= 0)
                                close(s->tasks[i].sock);
                        s->tasks[i].sock = -1;
                }
        s->tasks[t].info.tid = tgid;
        s->tasks[t].info.is_thread = false;
}

int scenario_exec(Scenario *s, ScenarioTask t, char * const *argv) {
        _cleanup_free_ Command *c = calloc(1, sizeof(Command));
        size_t used = 0;
        int argc = 0;

        if (!c)
                return -ENOMEM;
        for (; argv[argc]; argc++) {
                size_t n = strlen(argv[argc]) + 1;
                if (argc >= 63 || used + n > sizeof(c->insns))
                        return -E2BIG;
                memcpy((char *) c->insns + used, argv[argc], n);
                used += n;
        }
        c->op = OP_EXEC_ARGV;
        c->arg = argc;
        int r = call_agent(s, t, c, offsetof(Command, insns) + used, -1, NULL);
        if (r < 0)
                return r;
        note_exec(s, t);
        return 0;
}

int scenario_exit_leader(Scenario *s, ScenarioTask t) {
        if (t < 0 || (size_t) t >= s->n_tasks || !s->tasks[t].info.alive || s->tasks[t].info.is_thread)
                return -EINVAL;
        ScenarioTaskInfo info = s->tasks[t].info;
        int r = simple_call(s, t, OP_EXIT_THREAD);
        if (r < 0 && r != -EPIPE)
                return r;
        mark_gone(s, t, false);
        /* the leader stays a zombie while its process lives: wait for that state */
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", info.tgid, info.tid);
        for (int i = 0; i < 5000; i++) {
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                char *p = f && fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
                if (!p || (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X')))
                        break;
                usleep(1000);
        }
        return 0;
}
