/* state-lock.c: one daemon per state directory: a lock held for the daemon's life
 *
 * Two daemons on one database would interleave their ids and retire each other's filters. The
 * lock is an flock() on a file of the directory, taken before the database is opened; the file
 * holds the holder's pid so that a refused daemon can say which process is in its way. The kernel
 * lets the lock go when the holder exits, however it exits, so a stale file never blocks a start. */
#include "store/state-lock.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "core/util.h"

#define STATE_LOCK_DIR_MODE 0700
#define STATE_LOCK_FILE_MODE 0600

static int check_owned(int fd, const char *what, const char *path) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return log_error_errno(-errno, "Failed to stat %s %s: %m", what, path);
        if (st.st_uid != geteuid())
                return log_error_errno(-EPERM, "%s %s belongs to uid %u, not to sectreed's uid %u: refusing to use it.",
                                       what, path, (unsigned) st.st_uid, (unsigned) geteuid());
        return 0;
}

/* The pid the holder wrote, or 0 if the file holds none (yet). */
static pid_t read_holder(int fd) {
        char buf[32] = {};
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return 0;
        buf[strcspn(buf, "\n")] = '\0';
        int32_t pid;
        if (safe_atoi32(buf, &pid) < 0 || pid <= 0)
                return 0;
        return (pid_t) pid;
}

static int refuse_busy(int fd, const char *dir) {
        pid_t holder = read_holder(fd);
        if (holder > 0)
                return log_error_errno(-EBUSY, "The state directory %s is in use by another sectreed (pid %d): "
                                       "only one daemon may use a state directory.", dir, (int) holder);
        return log_error_errno(-EBUSY, "The state directory %s is in use by another sectreed (pid not yet written): "
                               "only one daemon may use a state directory.", dir);
}

static int write_pid(int fd, const char *path) {
        char buf[32];
        int n = snprintf(buf, sizeof(buf), "%d\n", (int) getpid());
        if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t) n, 0) != n)
                return log_error_errno(-errno ?: -EIO, "Failed to write the pid into %s: %m", path);
        return 0;
}

static int open_lock_file(int dfd, const char *path) {
        _cleanup_close_ int fd = openat(dfd, STATE_LOCK_FILE_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                                        STATE_LOCK_FILE_MODE);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to open the lock file %s: %m", path);
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return log_error_errno(-EBADF, "%s is not a regular file: refusing to use it.", path);
        int r = check_owned(fd, "The lock file", path);
        if (r < 0)
                return r;
        return TAKE_FD(fd);
}

int state_lock_take(const char *dir) {
        if (mkdir(dir, STATE_LOCK_DIR_MODE) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create the state directory %s: %m", dir);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return log_error_errno(-errno, "Failed to open the state directory %s: %m", dir);
        int r = check_owned(dfd, "The state directory", dir);
        if (r < 0)
                return r;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, STATE_LOCK_FILE_NAME) < 0)
                return log_oom();
        _cleanup_close_ int fd = open_lock_file(dfd, path);
        if (fd < 0)
                return fd;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno == EWOULDBLOCK)
                        return refuse_busy(fd, dir);
                return log_error_errno(-errno, "Failed to lock %s: %m", path);
        }
        r = write_pid(fd, path);
        if (r < 0)
                return r;
        return TAKE_FD(fd);
}
