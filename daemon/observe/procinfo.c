/* procinfo.c: reading per-task facts from /proc (status, stat, comm, exe, cmdline, fds) */
#include "observe/procinfo.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

#define LISTENER_LINK "anon_inode:seccomp notify"

/* A task that is gone shows up as ENOENT on open and ESRCH on read: report both as -ESRCH. */
static int errno_gone(int e) {
        return e == ENOENT ? -ESRCH : -e;
}

/* Read a whole /proc file into a malloc'ed NUL-terminated buffer (files there report size 0).
 * single_record: the file is a single seq_file record (status, stat, comm), produced whole by the
 * first read when the buffer is large enough, so a short read is the end: saves a read(2). */
static int read_proc_file(const char *path, bool single_record, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, allocated = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno_gone(errno);

        for (;;) {
                if (GROW(buf, allocated, len + 4096 + 1) < 0)
                        return -ENOMEM;
                size_t want = allocated - len - 1;
                ssize_t n = read(fd, buf + len, want);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno_gone(errno);
                }
                len += (size_t) n;
                if (n == 0 || (single_record && (size_t) n < want))
                        break;
        }

        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}

static int pid_path(char *buf, size_t size, pid_t pid, const char *file) {
        int n = snprintf(buf, size, "/proc/%d/%s", (int) pid, file);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

/* read_proc_file() of /proc/<pid>/<file>. */
static int read_pid_file(pid_t pid, const char *file, bool single_record, char **ret, size_t *ret_len) {
        char path[64];
        int r = pid_path(path, sizeof(path), pid, file);

        return r < 0 ? r : read_proc_file(path, single_record, ret, ret_len);
}

/* The number at *s (leading blanks skipped); *s is moved past it. */
static int parse_id(const char **s, uint32_t *ret) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(*s, &end, 10);
        if (errno != 0 || end == *s || v > UINT32_MAX)
                return -EINVAL;
        *ret = (uint32_t) v;
        *s = end;
        return 0;
}

/* "Uid:\t<real>\t<effective>\t<saved>\t<fs>": the first n of them, into ids[]. */
static int parse_ids(const char *s, uint32_t *const ids[], size_t n) {
        for (size_t i = 0; i < n; i++)
                if (parse_id(&s, ids[i]) < 0)
                        return -EINVAL;
        return 0;
}

static int status_field(ProcStatus *st, const char *key, const char *value) {
        uint32_t v;

        if (streq(key, "Name")) {
                snprintf(st->name, sizeof(st->name), "%s", value);
                return 0;
        }
        if (streq(key, "State")) {
                st->state = value[0];
                return 0;
        }
        if (streq(key, "Uid"))
                return parse_ids(value, (uint32_t *const[]) { &st->uid, &st->euid, &st->suid, &st->fsuid }, 4);
        if (streq(key, "Gid"))
                return parse_ids(value, (uint32_t *const[]) { &st->gid, &st->egid }, 2);

        if (!streq(key, "Tgid") && !streq(key, "PPid") && !streq(key, "TracerPid") &&
            !streq(key, "NoNewPrivs") && !streq(key, "Seccomp") && !streq(key, "Seccomp_filters") &&
            !streq(key, "Threads"))
                return 0;
        if (parse_id(&value, &v) < 0)
                return -EINVAL;
        if (streq(key, "Tgid"))
                st->tgid = (pid_t) v;
        else if (streq(key, "PPid"))
                st->ppid = (pid_t) v;
        else if (streq(key, "TracerPid"))
                st->tracer_pid = (pid_t) v;
        else if (streq(key, "NoNewPrivs"))
                st->no_new_privs = v != 0;
        else if (streq(key, "Seccomp"))
                st->seccomp_mode = (int) v;
        else if (streq(key, "Threads"))
                st->threads = v;
        else
                st->seccomp_filters = (int) v;
        return 0;
}

int proc_read_status(pid_t tid, ProcStatus *ret) {
        _cleanup_free_ char *buf = NULL;
        int r;

        r = read_pid_file(tid, "status", true, &buf, NULL);
        if (r < 0)
                return r;

        ProcStatus st = {};
        bool have_tgid = false;
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                char *colon = strchr(line, ':');
                if (!colon)
                        continue;
                *colon = 0;
                const char *value = colon + 1 + strspn(colon + 1, " \t");
                if (status_field(&st, line, value) < 0)
                        return -EBADMSG;
                have_tgid = have_tgid || streq(line, "Tgid");
        }
        if (!have_tgid)
                return -EBADMSG;

        *ret = st;
        return 0;
}

int proc_read_start_time(pid_t tid, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        int r;

        r = read_pid_file(tid, "stat", true, &buf, NULL);
        if (r < 0)
                return r;

        /* comm may contain spaces and parentheses: the fields start after the last ')'. Field 3
         * (state) is the first one there, so field 22 is the 20th. */
        char *p = strrchr(buf, ')');
        if (!p)
                return -EBADMSG;
        p++;
        for (int field = 3; field < 22; field++) {
                p += strspn(p, " ");
                p += strcspn(p, " ");
                if (!*p)
                        return -EBADMSG;
        }
        p += strspn(p, " ");
        p[strcspn(p, " \n")] = 0;
        return safe_atou64(p, ret) < 0 ? -EBADMSG : 0;
}

int proc_read_comm(pid_t tid, char ret[16]) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_pid_file(tid, "comm", true, &buf, &len);
        if (r < 0)
                return r;
        if (len > 0 && buf[len - 1] == '\n')
                buf[--len] = 0;
        snprintf(ret, 16, "%s", buf);
        return 0;
}

int proc_read_exe(pid_t pid, char **ret) {
        char path[64];
        int r;

        r = pid_path(path, sizeof(path), pid, "exe");
        if (r < 0)
                return r;

        for (size_t size = 256;; size *= 2) {
                _cleanup_free_ char *buf = malloc(size);
                if (!buf)
                        return -ENOMEM;
                ssize_t n = readlink(path, buf, size);
                if (n < 0)
                        return errno_gone(errno);
                if ((size_t) n < size) {
                        buf[n] = 0;
                        *ret = TAKE_PTR(buf);
                        return 0;
                }
                if (size >= PATH_MAX * 4)
                        return -ENAMETOOLONG;
        }
}

int argv_parse(const char *buf, size_t len, char ***ret) {
        _cleanup_strv_free_ char **argv = NULL;
        size_t n = 0;

        for (size_t i = 0; i < len; i++)
                if (buf[i] == 0)
                        n++;
        if (len > 0 && buf[len - 1] != 0)
                n++; /* a process that rewrote its arguments may leave the last one unterminated */

        argv = calloc(n + 1, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        for (size_t i = 0, off = 0; i < n; i++) {
                size_t l = strnlen(buf + off, len - off);
                argv[i] = strndup(buf + off, l);
                if (!argv[i])
                        return -ENOMEM;
                off += l + 1;
        }

        *ret = TAKE_PTR(argv);
        return 0;
}

int proc_read_argv(pid_t pid, char ***ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_pid_file(pid, "cmdline", false, &buf, &len);
        if (r < 0)
                return r;
        return argv_parse(buf, len, ret);
}

static int cmp_int(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;
        return (x > y) - (x < y);
}

/* The numeric entries of a /proc directory, sorted. */
static int list_numeric_dir(const char *path, int **ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ int *list = NULL;
        size_t n = 0, allocated = 0;

        d = opendir(path);
        if (!d)
                return errno_gone(errno);

        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return errno_gone(errno);
                        break;
                }
                int32_t v;
                if (safe_atoi32(de->d_name, &v) < 0 || v < 0)
                        continue;
                if (GROW(list, allocated, n + 1) < 0)
                        return -ENOMEM;
                list[n++] = v;
        }

        if (n > 0)
                qsort(list, n, sizeof(int), cmp_int);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

int proc_list_threads(pid_t pid, pid_t **ret, size_t *ret_n) {
        char path[64];
        int r;

        r = pid_path(path, sizeof(path), pid, "task");
        if (r < 0)
                return r;
        return list_numeric_dir(path, (int **) ret, ret_n);
}

int proc_list_pids(pid_t **ret, size_t *ret_n) {
        return list_numeric_dir("/proc", (int **) ret, ret_n);
}

/* A thread of pid other than its leader, or 0. */
static pid_t other_thread(pid_t pid) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;

        if (proc_list_threads(pid, &tids, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (tids[i] != pid)
                        return tids[i];
        return 0;
}

pid_t proc_files_task(pid_t pid) {
        ProcStatus st;
        pid_t tid;

        if (proc_read_status(pid, &st) < 0 || st.state != 'Z' || st.threads < 2)
                return pid;
        tid = other_thread(pid);
        return tid > 0 ? tid : pid;
}

static bool fd_is_listener(pid_t tid, int fd, int *ret_errno) {
        char link[64], target[sizeof(LISTENER_LINK) + 1];
        snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int) tid, fd);
        ssize_t len = readlink(link, target, sizeof(target) - 1);
        if (len < 0) {
                *ret_errno = errno;
                return false; /* closed meanwhile, or gone */
        }
        target[len] = 0;
        return streq(target, LISTENER_LINK);
}

bool proc_fd_is_listener(pid_t pid, int fd) {
        int e = 0;
        pid_t tid;

        if (fd_is_listener(pid, fd, &e))
                return true;
        if (e != ENOENT || (tid = proc_files_task(pid)) == pid)
                return false;
        return fd_is_listener(tid, fd, &e);
}

int proc_list_listener_fds(pid_t pid, int **ret, size_t *ret_n) {
        _cleanup_free_ int *fds = NULL, *listeners = NULL;
        size_t n_fds = 0, n = 0;
        pid_t tid = pid;
        char path[64];
        int r, e;

        r = pid_path(path, sizeof(path), pid, "fd");
        if (r < 0)
                return r;
        r = list_numeric_dir(path, &fds, &n_fds);
        if (r < 0)
                return r;
        if (n_fds == 0 && (tid = proc_files_task(pid)) != pid) { /* the leader's table went with it */
                r = pid_path(path, sizeof(path), tid, "fd");
                if (r < 0)
                        return r;
                free(fds); /* NULL: there were none */
                fds = NULL;
                r = list_numeric_dir(path, &fds, &n_fds);
                if (r < 0)
                        return r;
        }

        listeners = calloc(n_fds ? n_fds : 1, sizeof(int));
        if (!listeners)
                return -ENOMEM;

        for (size_t i = 0; i < n_fds; i++)
                if (fd_is_listener(tid, fds[i], &e))
                        listeners[n++] = fds[i];

        *ret = TAKE_PTR(listeners);
        *ret_n = n;
        return 0;
}
