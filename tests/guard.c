/* guard.c: every process a test program starts dies with it, however the program ends */
#include "guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CGROUP_PREFIX "sectree-test-"

static pid_t guard_pid;
static char *guard_cgroup;

const char *tests_cgroup2_root(void) {
        if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
                return "/sys/fs/cgroup";
        if (access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK) == 0)
                return "/sys/fs/cgroup/unified";
        return NULL;
}

/* The directory of this process's cgroup in the cgroup2 hierarchy, NULL if there is none. */
static char *own_cgroup_dir(void) {
        const char *root = tests_cgroup2_root();
        g_autofree char *text = NULL;
        if (!root || !g_file_get_contents("/proc/self/cgroup", &text, NULL, NULL))
                return NULL;
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l; l++)
                if (g_str_has_prefix(*l, "0::"))
                        return g_strconcat(root, *l + 3, NULL);
        return NULL;
}

static bool write_string(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        bool ok = write(fd, s, strlen(s)) == (ssize_t) strlen(s);
        close(fd);
        return ok;
}

static bool cgroup_populated(const char *cg) {
        g_autofree char *path = g_build_filename(cg, "cgroup.events", NULL);
        g_autofree char *events = NULL;
        if (!g_file_get_contents(path, &events, NULL, NULL))
                return false;
        return !strstr(events, "populated 0");
}

/* Remove cg and the cgroups below it (those of test programs a test ran: their guards, which ran
 * in cg, were killed with everything else), deepest first. */
static void cgroup_remove_tree(const char *cg) {
        DIR *d = opendir(cg);
        if (d) {
                for (struct dirent *e; (e = readdir(d));)
                        if (e->d_type == DT_DIR && e->d_name[0] != '.') {
                                g_autofree char *sub = g_build_filename(cg, e->d_name, NULL);
                                cgroup_remove_tree(sub);
                        }
                closedir(d);
        }
        (void) rmdir(cg);
}

/* Kill everything in cg and below, wait (10 s at most) until it is empty, and remove it. */
static void cgroup_kill_remove(const char *cg) {
        g_autofree char *kill_path = g_build_filename(cg, "cgroup.kill", NULL);
        (void) write_string(kill_path, "1");
        for (unsigned i = 0; i < 1000 && cgroup_populated(cg); i++)
                g_usleep(10 * 1000);
        cgroup_remove_tree(cg);
}

/* The cgroups of earlier test programs that died with their guard (killed outright). */
static void remove_stale_cgroups(const char *parent) {
        DIR *d = opendir(parent);
        if (!d)
                return;
        for (struct dirent *e; (e = readdir(d));) {
                if (!g_str_has_prefix(e->d_name, CGROUP_PREFIX))
                        continue;
                pid_t pid = (pid_t) atoi(e->d_name + strlen(CGROUP_PREFIX));
                if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH) {
                        g_autofree char *cg = g_build_filename(parent, e->d_name, NULL);
                        cgroup_kill_remove(cg);
                }
        }
        closedir(d);
}

/* A new cgroup for this process, below its own; NULL if that cannot be made. */
static char *make_test_cgroup(void) {
        g_autofree char *parent = own_cgroup_dir();
        if (!parent || geteuid() != 0)
                return NULL;
        remove_stale_cgroups(parent);
        g_autofree char *name = g_strdup_printf(CGROUP_PREFIX "%d", (int) getpid());
        char *cg = g_build_filename(parent, name, NULL);
        if (mkdir(cg, 0755) < 0 && errno != EEXIST) {
                g_free(cg);
                return NULL;
        }
        return cg;
}

/* The guard: out of the runner's process group and pipes, it waits for the test program to end,
 * then kills what it left: its process group pgid (0: none) and the cgroup cg (NULL: none). */
static G_NORETURN void guard_run(int pidfd, const char *cg, pid_t pgid) {
        (void) setsid();
        (void) prctl(PR_SET_NAME, "test-guard");
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd <= 2; fd++)
                (void) dup2(null, fd);
        if (dup2(pidfd, 3) != 3)
                _exit(1);
        (void) syscall(SYS_close_range, 4, ~0U, 0);
        struct pollfd p = { .fd = 3, .events = POLLIN };
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
                ;
        if (pgid > 0)
                (void) kill(-pgid, SIGKILL);
        if (cg)
                cgroup_kill_remove(cg);
        _exit(0);
}

void tests_guard_start(void) {
        g_autofree char *cg = make_test_cgroup();
        int pidfd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        if (pidfd < 0)
                g_error("pidfd_open of the test program: %s", g_strerror(errno));
        /* Without a cgroup, only a process group of our own may be killed: not a shell's job. */
        pid_t pgid = getpgrp() == getpid() ? getpgrp() : 0;
        pid_t guard = fork();
        if (guard < 0)
                g_error("forking the test guard: %s", g_strerror(errno));
        if (guard == 0)
                guard_run(pidfd, cg, pgid);
        guard_pid = guard;
        close(pidfd);
        g_autofree char *procs = cg ? g_build_filename(cg, "cgroup.procs", NULL) : NULL;
        if (cg && !write_string(procs, "0")) {
                g_printerr("# could not move into %s (%s): the test guard cannot kill what is left\n", cg,
                           g_strerror(errno));
                (void) rmdir(cg);
                return;
        }
        guard_cgroup = g_steal_pointer(&cg);
}

pid_t tests_guard_pid(void) {
        return guard_pid;
}

const char *tests_guard_cgroup(void) {
        return guard_cgroup;
}

void tests_fail_point(const char *point, const char *what) {
        const char *at = g_getenv("SECTREE_TEST_FAIL_AT");
        size_t n = strlen(point);
        if (!at || strncmp(at, point, n) != 0)
                return;
        if (at[n] == 0)
                g_error("fail point %s reached (%s)", point, what);
        if (strcmp(at + n, ":kill") == 0) {
                /* what the runner's timeout does in the end: no handler, no atexit() */
                g_printerr("fail point %s reached (%s): SIGKILL\n", point, what);
                (void) kill(getpid(), SIGKILL);
        }
}
