/* state-dir.c: the state directory and its database files belong to root alone (0700 / 0600)
 *
 * The database holds every user's snapshots (names, argv and exe paths of processes the kernel
 * hides from other users) and every filter program: nobody but root may read it. Modes are set on
 * fds opened without following links, so a link planted in the directory is refused rather than
 * followed. */
#include "store/state-dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "core/util.h"
#include "store/state-lock.h"

#define STATE_DIR_MODE 0700
#define STATE_FILE_MODE 0600

/* Does the directory hold anything but db, its -wal, -shm and -journal files and the daemon's lock? */
static int dir_holds_foreign_files(int dfd, const char *db) {
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        size_t n = strlen(db);
        int r = 0;
        for (struct dirent *e; r == 0 && (e = readdir(d));) {
                if (streq(e->d_name, ".") || streq(e->d_name, "..") || streq(e->d_name, STATE_LOCK_FILE_NAME))
                        continue;
                const char *rest = strncmp(e->d_name, db, n) == 0 ? e->d_name + n : NULL;
                r = !rest || !(streq(rest, "") || streq(rest, "-wal") || streq(rest, "-shm") || streq(rest, "-journal"));
        }
        closedir(d);
        return r;
}

/* Tighten a mode to want (the bits of want only), saying so if it was looser. */
static int tighten(int fd, const struct stat *st, mode_t want, const char *what, const char *path) {
        mode_t mode = st->st_mode & 07777;
        if (mode == want)
                return 0;
        if (fchmod(fd, want) < 0)
                return log_error_errno(-errno, "Failed to make %s %s mode %04o: %m", what, path, (unsigned) want);
        if (mode & ~want)
                log_warning("%s %s was open to other users (mode %04o); made it %04o.", what, path, (unsigned) mode,
                            (unsigned) want);
        return 0;
}

static int check_owner(const struct stat *st, const char *what, const char *path) {
        if (st->st_uid == geteuid())
                return 0;
        return log_error_errno(-EPERM, "%s %s belongs to uid %u, not to sectreed's uid %u: refusing to use it.", what,
                               path, (unsigned) st->st_uid, (unsigned) geteuid());
}

static int secure_dir(int dfd, const char *dir, const char *db) {
        struct stat st;
        if (fstat(dfd, &st) < 0)
                return log_error_errno(-errno, "Failed to stat the state directory %s: %m", dir);
        int r = check_owner(&st, "The state directory", dir);
        if (r < 0)
                return r;
        if ((st.st_mode & 07777) == STATE_DIR_MODE)
                return 0;
        r = dir_holds_foreign_files(dfd, db);
        if (r < 0)
                return log_error_errno(r, "Failed to read the state directory %s: %m", dir);
        if (r > 0)
                return log_error_errno(-ENOTEMPTY,
                                       "The state directory %s is open to other users (mode %04o) and holds files "
                                       "that are not sectreed's: give sectreed a directory of its own.",
                                       dir, (unsigned) (st.st_mode & 07777));
        return tighten(dfd, &st, STATE_DIR_MODE, "The state directory", dir);
}

/* One of the database's files: created (empty, 0600) if create and missing, else skipped if
 * missing; made 0600 if it is not. */
static int secure_file(int dfd, const char *dir, const char *name, bool create) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return log_oom();
        int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
        _cleanup_close_ int fd = openat(dfd, name, create ? flags | O_CREAT : flags, STATE_FILE_MODE);
        if (fd < 0 && errno == ENOENT && !create)
                return 0;
        if (fd < 0)
                return log_error_errno(-errno, "Failed to open %s: %m", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return log_error_errno(-errno, "Failed to stat %s: %m", path);
        if (!S_ISREG(st.st_mode))
                return log_error_errno(-EBADF, "%s is not a regular file: refusing to use it.", path);
        int r = check_owner(&st, "The database file", path);
        if (r < 0)
                return r;
        return tighten(fd, &st, STATE_FILE_MODE, "The database file", path);
}

int state_dir_secure(const char *dir, const char *db) {
        if (mkdir(dir, STATE_DIR_MODE) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create the state directory %s: %m", dir);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return log_error_errno(-errno, "Failed to open the state directory %s: %m", dir);
        int r = secure_dir(dfd, dir, db);
        if (r < 0)
                return r;
        static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                _cleanup_free_ char *name = NULL;
                if (asprintf(&name, "%s%s", db, suffixes[i]) < 0)
                        return log_oom();
                r = secure_file(dfd, dir, name, i == 0);
                if (r < 0)
                        return r;
        }
        return 0;
}
