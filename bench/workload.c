/* workload.c: builds the benchmark's process and thread trees under seccomp and tears them down */
#include "workload.h"

#include <dirent.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "core/util.h"

#if defined(__x86_64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_AARCH64
#else
#error "Unknown architecture: add its AUDIT_ARCH_*"
#endif

/* Syscall numbers the filters refuse: far above any real one, so refusing them changes nothing. */
#define UNUSED_NR_BASE 0x10000U
#define FILTER_FIXED_INSNS 6 /* the instructions around the comparisons, see filter_make() */
#define MAX_FILTER_LEN (FILTER_FIXED_INSNS + UINT8_MAX) /* a jump offset is 8 bits */
#define MAX_THREADS_PER_PROCESS 4096
#define THREAD_STACK_SIZE (64U << 10)
#define READY_TIMEOUT_USEC (120ULL * 1000 * 1000)
#define REAP_TIMEOUT_USEC (30ULL * 1000 * 1000)

/* What the tasks share with the benchmark: one MAP_SHARED mapping of a memfd, made before the root
 * forks and mapped again by the root once it has executed the benchmark afresh. */
typedef struct Shared {
        atomic_uint ready; /* tasks holding their filters, about to block */
        atomic_int error;  /* the first negative errno a task met, 0 if none */
        WorkloadTask tasks[];
} Shared;

struct Workload {
        WorkloadOptions opts;
        pid_t root;
        Shared *shared;
        size_t shared_size;
        WorkloadTask *tasks;
        size_t n_private;
};

/* Which task the thread functions run as. */
typedef struct TaskArgs {
        Shared *shared;
        const WorkloadOptions *opts;
        size_t index;
        size_t threads; /* a leader's: the other threads its process started */
} TaskArgs;

/* Once a task has said it is ready it has nothing more to do with the shared area, and its process
 * unmaps it: a page mapped into 20,000 processes made this machine's memory monitor (kdamond.0,
 * DAMON over physical memory, which follows every mapping of a page it checks) take 42% of a CPU
 * where it took 3% (a 256 KiB area, 10 s each). The threads of a process count themselves out here
 * and block on a word of their own process. */
static atomic_size_t threads_done;
static uint32_t process_block; /* the futex word threads wait on; it never changes */

bool workload_task_has_private_filter(size_t index) {
        return index % 2 == 1;
}

/* A filter of len instructions: allow other architectures, refuse len - 6 unused syscall numbers
 * (chosen by salt, so that filters with different salts differ in their bytes), allow the rest. */
static void filter_make(struct sock_filter *insns, size_t len, uint32_t salt) {
        size_t m = len - FILTER_FIXED_INSNS, k = 0;

        insns[k++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        insns[k++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_NATIVE, 1, 0);
        insns[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        insns[k++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (size_t j = 0; j < m; j++)
                /* jump over the remaining comparisons and the ALLOW to the ERRNO */
                insns[k++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                           UNUSED_NR_BASE + salt * (uint32_t) m + (uint32_t) j,
                                                           (uint8_t) (m - j), 0);
        insns[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        insns[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
}

int workload_install_filter(size_t len, uint32_t salt) {
        struct sock_filter insns[MAX_FILTER_LEN];
        struct sock_fprog prog = { .len = (unsigned short) len, .filter = insns };

        filter_make(insns, len, salt);
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return -errno;
        return 0;
}

static void shared_fail(Shared *s, int error) {
        int expected = 0;
        atomic_compare_exchange_strong(&s->error, &expected, error);
}

/* Install the private filter if this task has one, say so, and block for good. */
_Noreturn static void task_main(const TaskArgs *a, bool leader) {
        Shared *s = a->shared;
        WorkloadTask *t = &s->tasks[a->index];

        t->tid = gettid();
        t->tgid = getpid();
        t->private_filter = workload_task_has_private_filter(a->index);
        if (t->private_filter) {
                /* salt 0 is the shared filter's */
                uint32_t salt = a->opts->private_kinds ? 1 + (uint32_t) (a->index / 2 % a->opts->private_kinds)
                                                       : (uint32_t) a->index;
                int r = workload_install_filter(a->opts->filter_len, salt);
                if (r < 0)
                        shared_fail(s, r);
        }
        atomic_fetch_add(&s->ready, 1);

        if (!leader) {
                atomic_fetch_add(&threads_done, 1);
                for (;;)
                        syscall(SYS_futex, &process_block, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        }
        struct timespec tick = { .tv_nsec = 100 * 1000 };
        while (atomic_load(&threads_done) < a->threads)
                nanosleep(&tick, NULL);
        (void) munmap(s, sizeof(Shared) + a->opts->n_tasks * sizeof(WorkloadTask));
        for (;;)
                pause();
}

static void *thread_main(void *userdata) {
        task_main(userdata, false);
}

/* A forked process: its threads first (so that they inherit only the shared filter), then the
 * leader becomes task first. */
_Noreturn static void process_main(Shared *s, const WorkloadOptions *o, pid_t parent, size_t first, size_t n) {
        static TaskArgs args[MAX_THREADS_PER_PROCESS];
        pthread_attr_t attr;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(EXIT_FAILURE);

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, THREAD_STACK_SIZE);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        size_t started = 0;
        for (size_t i = 1; i < n; i++) {
                pthread_t thread;
                args[i] = (TaskArgs) { .shared = s, .opts = o, .index = first + i };
                int r = pthread_create(&thread, &attr, thread_main, &args[i]);
                if (r != 0) {
                        shared_fail(s, -r);
                        break;
                }
                started++;
        }
        args[0] = (TaskArgs) { .shared = s, .opts = o, .index = first, .threads = started };
        task_main(&args[0], true);
}

/* The root: its own process group, the shared filter, then the processes. */
_Noreturn static void root_main(Shared *s, const WorkloadOptions *o, pid_t bench) {
        size_t k = o->threads_per_process;
        int r;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != bench)
                _exit(EXIT_FAILURE);
        (void) setpgid(0, 0);
        /* The benchmark's fds (BPF maps, links) would only make every process's fd table longer. */
        (void) close_range(3, ~0U, 0);

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                shared_fail(s, -errno);
                _exit(EXIT_FAILURE);
        }
        r = workload_install_filter(o->filter_len, 0);
        if (r < 0) {
                shared_fail(s, r);
                _exit(EXIT_FAILURE);
        }

        pid_t self = getpid();
        for (size_t first = 1; first < o->n_tasks; first += k) {
                size_t n = o->n_tasks - first < k ? o->n_tasks - first : k;
                pid_t pid = fork();
                if (pid < 0) {
                        shared_fail(s, -errno);
                        break;
                }
                if (pid == 0)
                        process_main(s, o, self, first, n);
        }

        TaskArgs a = { .shared = s, .opts = o, .index = 0 };
        task_main(&a, true);
}

static int options_check(const WorkloadOptions *o) {
        if (o->n_tasks < 1 || o->threads_per_process < 1 || o->threads_per_process > MAX_THREADS_PER_PROCESS)
                return log_error_errno(-EINVAL, "Invalid workload: %zu tasks, %zu per process.", o->n_tasks,
                                       o->threads_per_process);
        if (o->filter_len < FILTER_FIXED_INSNS + 2 || o->filter_len > MAX_FILTER_LEN)
                return log_error_errno(-EINVAL, "Invalid filter length %zu (%d..%d).", o->filter_len,
                                       FILTER_FIXED_INSNS + 2, MAX_FILTER_LEN);
        return 0;
}

static int read_sysctl(const char *path, uint64_t *ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char buf[64];

        if (!f || !fgets(buf, sizeof(buf), f))
                return log_error_errno(-errno, "Failed to read %s: %m", path);
        buf[strcspn(buf, "\n")] = 0;
        return safe_atou64(buf, ret);
}

int count_machine_tasks(size_t *ret) {
        _cleanup_fclose_ FILE *f = fopen("/proc/loadavg", "re");
        unsigned running, total;

        /* "0.00 0.01 0.05 1/105 4711": the fourth field counts every thread of the machine. */
        if (!f || fscanf(f, "%*s %*s %*s %u/%u", &running, &total) != 2)
                return log_error_errno(f ? -EBADMSG : -errno, "Failed to read /proc/loadavg: %m");
        *ret = total;
        return 0;
}

int workload_task_room(size_t *ret) {
        uint64_t pid_max, threads_max, limit;
        struct rlimit rl;
        size_t alive;
        int r;

        r = read_sysctl("/proc/sys/kernel/pid_max", &pid_max);
        if (r < 0)
                return r;
        r = read_sysctl("/proc/sys/kernel/threads-max", &threads_max);
        if (r < 0)
                return r;
        r = count_machine_tasks(&alive);
        if (r < 0)
                return r;

        /* Root is exempt from RLIMIT_NPROC, but do not rely on it. */
        if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NPROC, &rl);
        }
        limit = pid_max < threads_max ? pid_max : threads_max;
        if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < limit && getuid() != 0)
                limit = rl.rlim_cur;

        *ret = limit > alive ? (size_t) (limit - alive) : 0;
        return 0;
}

/* Wait until every task is ready, one failed, or the root died. */
static int workload_wait_ready(Workload *w) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        struct timespec tick = { .tv_nsec = 1000 * 1000 };

        for (;;) {
                int error = atomic_load(&w->shared->error);
                if (error < 0)
                        return log_error_errno(error, "A workload task failed: %m");
                if (atomic_load(&w->shared->ready) >= w->opts.n_tasks)
                        return 0;

                siginfo_t si = {};
                if (waitid(P_PID, w->root, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == w->root)
                        return log_error_errno(-ECHILD, "The workload's root process died while starting.");
                if (now_usec(CLOCK_MONOTONIC) - start > READY_TIMEOUT_USEC)
                        return log_error_errno(-ETIMEDOUT, "Only %u of %zu workload tasks became ready.",
                                               atomic_load(&w->shared->ready), w->opts.n_tasks);
                nanosleep(&tick, NULL);
        }
}

/* Where a workload's root is executed afresh before it forks the tasks (workload_root_main()), so
 * that they share none of the caller's memory: each page the benchmark had written when it forked
 * a root of 20,000 processes was mapped into all of them, and this machine's memory monitor
 * (kdamond.0, DAMON over physical memory, which follows every mapping of a page it checks) then took
 * a whole CPU for as long as the workload lived. NULL: the root runs in the forked copy. */
static const char *root_executable;

void workload_set_root_executable(const char *path) {
        root_executable = path;
}

/* The root's arguments: the memfd of the shared area, the options and the caller's pid. */
_Noreturn static void root_exec(int fd, const WorkloadOptions *o, pid_t bench) {
        char args[6][32];
        snprintf(args[0], sizeof(args[0]), "%d", fd);
        snprintf(args[1], sizeof(args[1]), "%zu", o->n_tasks);
        snprintf(args[2], sizeof(args[2]), "%zu", o->threads_per_process);
        snprintf(args[3], sizeof(args[3]), "%zu", o->filter_len);
        snprintf(args[4], sizeof(args[4]), "%zu", o->private_kinds);
        snprintf(args[5], sizeof(args[5]), "%d", (int) bench);
        char *argv[] = { (char *) root_executable, args[0], args[1], args[2], args[3], args[4], args[5], NULL };

        (void) execv(root_executable, argv);
        _exit(EXIT_FAILURE); /* the caller sees its root die while starting */
}

int workload_root_main(int argc, char *argv[]) {
        static WorkloadOptions o;
        uint64_t v[6];
        Shared *s;

        if (argc != 7) {
                fprintf(stderr, "%s: the root of a benchmark's workload, started by the benchmark only.\n", argv[0]);
                return EXIT_FAILURE;
        }
        for (int i = 0; i < 6; i++)
                if (safe_atou64(argv[1 + i], &v[i]) < 0)
                        return EXIT_FAILURE;
        o = (WorkloadOptions) { .n_tasks = v[1], .threads_per_process = v[2], .filter_len = v[3], .private_kinds = v[4] };
        if (options_check(&o) < 0)
                return EXIT_FAILURE;
        s = mmap(NULL, sizeof(Shared) + o.n_tasks * sizeof(WorkloadTask), PROT_READ | PROT_WRITE, MAP_SHARED, (int) v[0],
                 0);
        if (s == MAP_FAILED)
                return EXIT_FAILURE;
        root_main(s, &o, (pid_t) v[5]); /* it closes the memfd with every other fd */
}

int workload_new(const WorkloadOptions *o, Workload **ret) {
        _cleanup_close_ int fd = -1;
        Workload *w;
        size_t room;
        int r;

        r = options_check(o);
        if (r < 0)
                return r;
        r = workload_task_room(&room);
        if (r < 0)
                return r;
        if (o->n_tasks > room)
                return log_error_errno(-EAGAIN,
                                       "%zu tasks do not fit: pid_max, threads-max and RLIMIT_NPROC leave room "
                                       "for %zu more.", o->n_tasks, room);
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return log_error_errno(-errno, "Failed to become a child subreaper: %m");

        w = calloc(1, sizeof(Workload));
        if (!w)
                return log_oom();
        w->opts = *o;
        w->root = -1;
        w->shared_size = sizeof(Shared) + o->n_tasks * sizeof(WorkloadTask);
        fd = memfd_create("sectree-workload", 0); /* no MFD_CLOEXEC: the root maps it after exec */
        if (fd < 0 || ftruncate(fd, (off_t) w->shared_size) < 0) {
                workload_free(w);
                return log_error_errno(-errno, "Failed to make the workload's shared area: %m");
        }
        w->shared = mmap(NULL, w->shared_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (w->shared == MAP_FAILED) {
                w->shared = NULL;
                workload_free(w);
                return log_error_errno(-errno, "Failed to map the workload's shared area: %m");
        }

        pid_t bench = getpid();
        fflush(NULL);
        w->root = fork();
        if (w->root < 0) {
                r = log_error_errno(-errno, "Failed to fork the workload's root: %m");
                workload_free(w);
                return r;
        }
        if (w->root == 0) {
                if (root_executable)
                        root_exec(fd, &w->opts, bench);
                root_main(w->shared, &w->opts, bench);
        }
        close_fd(&fd);
        (void) setpgid(w->root, w->root); /* also done by the child: whichever runs first */

        r = workload_wait_ready(w);
        if (r >= 0) {
                w->tasks = malloc(o->n_tasks * sizeof(WorkloadTask));
                r = w->tasks ? 0 : log_oom();
        }
        if (r < 0) {
                workload_free(w);
                return r;
        }
        memcpy(w->tasks, w->shared->tasks, o->n_tasks * sizeof(WorkloadTask));
        for (size_t i = 0; i < o->n_tasks; i++)
                w->n_private += w->tasks[i].private_filter;
        *ret = w;
        return 0;
}

/* Reap every child until none is left (the workload's processes come back to us as the
 * subreaper when the root dies), or the deadline passes. */
static void reap_children(void) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        struct timespec tick = { .tv_nsec = 1000 * 1000 };

        for (;;) {
                pid_t pid = waitpid(-1, NULL, __WALL | WNOHANG);
                if (pid > 0)
                        continue;
                if (pid < 0 && errno == EINTR)
                        continue;
                if (pid < 0) /* ECHILD: none left */
                        return;
                if (now_usec(CLOCK_MONOTONIC) - start > REAP_TIMEOUT_USEC)
                        return;
                nanosleep(&tick, NULL);
        }
}

/* Processes of the process group that are still there (zombies included). */
static size_t count_group_remains(pid_t pgid) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        size_t n = 0;

        if (kill(-pgid, 0) < 0 && errno == ESRCH)
                return 0;
        /* Something remains: count it from /proc (field 5 of stat is the process group). */
        d = opendir("/proc");
        if (!d)
                return 1;
        while ((de = readdir(d))) {
                _cleanup_fclose_ FILE *f = NULL;
                char path[300];
                int pg;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
                f = fopen(path, "re");
                if (f && fscanf(f, "%*d (%*[^)]) %*c %*d %d", &pg) == 1 && pg == pgid)
                        n++;
        }
        return n > 0 ? n : 1;
}

Workload *workload_free(Workload *w) {
        if (!w)
                return NULL;
        if (w->root > 0) {
                (void) kill(-w->root, SIGKILL);
                (void) kill(w->root, SIGKILL); /* in case it had not made its group yet */
                reap_children();
                size_t left = count_group_remains(w->root);
                if (left > 0)
                        log_warning("Workload teardown: %zu process(es) of process group %d remain.", left,
                                    (int) w->root);
        }
        if (w->shared)
                munmap(w->shared, w->shared_size);
        free(w->tasks);
        free(w);
        return NULL;
}

pid_t workload_root(const Workload *w) {
        return w->root;
}

size_t workload_n_tasks(const Workload *w) {
        return w->opts.n_tasks;
}

const WorkloadTask *workload_tasks(const Workload *w) {
        return w->tasks;
}

size_t workload_n_filters(const Workload *w) {
        return 1 + w->n_private;
}

size_t workload_n_chain_filters(const Workload *w) {
        return w->opts.n_tasks + w->n_private;
}
