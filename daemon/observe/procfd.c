/* procfd.c: reading a process through an fd of its /proc/PID directory, which stays bound to it */
#include "observe/procfd.h"

#include <fcntl.h>
#include <stdio.h>

#include "core/util.h"

/* ENOENT from a lookup under /proc/PID means the process (or thread) is gone. */
static int errno_gone(int e) {
        return e == ENOENT ? -ESRCH : -e;
}

int procfd_open(pid_t pid) {
        char path[32];
        snprintf(path, sizeof(path), "/proc/%d", (int) pid);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? errno_gone(errno) : fd;
}

int procfd_read(int proc_fd, const char *name, char **ret) {
        _cleanup_close_ int fd = openat(proc_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, allocated = 0;
        if (fd < 0)
                return errno_gone(errno);
        for (;;) {
                if (GROW(buf, allocated, len + 4096 + 1) < 0)
                        return -ENOMEM;
                ssize_t n = read(fd, buf + len, allocated - len - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno_gone(errno);
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* comm may hold spaces and parentheses: the fields start after the last ')', with field 3. */
int procfd_start_time(int proc_fd, const char *name, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = procfd_read(proc_fd, name, &buf);
        if (r < 0)
                return r;
        const char *p = strrchr(buf, ')');
        unsigned long long v;
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                         &v) != 1)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int procfd_stat(int proc_fd, const char *name, struct stat *ret) {
        return fstatat(proc_fd, name, ret, 0) < 0 ? errno_gone(errno) : 0;
}
