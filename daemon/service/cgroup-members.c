/* cgroup-members.c: the cgroup of every process at once, from the cgroup2 hierarchy's cgroup.procs
 * files: a snapshot of 10,000 processes reads a few hundred small files instead of 10,000
 * /proc/PID/cgroup (about 10 µs each, and half of such a snapshot's time) */
#include "service/cgroup-members.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "core/util.h"

#define CGROUP_DEPTH_MAX 64 /* deeper cgroups are left to /proc/PID/cgroup */

void cgroup_members_done(CgroupMembers *m) {
        for (size_t i = 0; i < m->n_paths; i++)
                free(m->paths[i]);
        free(m->paths);
        hashmap_deinit(&m->by_pid);
        *m = (CgroupMembers) {};
}

const char *cgroup_members_path(const CgroupMembers *m, pid_t pid) {
        uintptr_t i = (uintptr_t) hashmap_get(&m->by_pid, (uint64_t) pid);
        return i > 0 ? m->paths[i - 1] : NULL;
}

static int open_hierarchy(void) {
        static const char *const mounts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
        for (size_t i = 0; i < ELEMENTSOF(mounts); i++) {
                struct statfs sfs;
                int fd = open(mounts[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                if (fstatfs(fd, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
                        return fd;
                close(fd);
        }
        return -ENOENT;
}

/* The pids of cgroup.procs in dir (a cgroup gone meanwhile has none), under path. */
static int add_members(CgroupMembers *m, int dir, const char *path) {
        int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        _cleanup_fclose_ FILE *f = fdopen(fd, "r");
        if (!f) {
                close(fd);
                return -errno;
        }
        if (GROW(m->paths, m->allocated, m->n_paths + 1) < 0 || !(m->paths[m->n_paths] = strdup(path)))
                return -ENOMEM;
        m->n_paths++;
        int pid;
        while (fscanf(f, "%d", &pid) == 1) {
                int r = hashmap_replace(&m->by_pid, (uint64_t) pid, (void *) (uintptr_t) m->n_paths);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* dir (taken) and every cgroup below it. */
static int walk(CgroupMembers *m, int dir, const char *path, unsigned depth) {
        _cleanup_closedir_ DIR *d = fdopendir(dir);
        if (!d) {
                close(dir);
                return -errno;
        }
        int r = add_members(m, dirfd(d), path);
        if (r < 0 || depth >= CGROUP_DEPTH_MAX)
                return r;
        for (struct dirent *e; (e = readdir(d));) {
                if (e->d_type != DT_DIR || e->d_name[0] == '.')
                        continue;
                int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub < 0)
                        continue; /* removed meanwhile */
                _cleanup_free_ char *below = NULL;
                if (asprintf(&below, "%s/%s", streq(path, "/") ? "" : path, e->d_name) < 0) {
                        close(sub);
                        return -ENOMEM;
                }
                r = walk(m, sub, below, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

int cgroup_members_read(CgroupMembers *ret) {
        CgroupMembers m = {};
        int fd = open_hierarchy();
        if (fd < 0)
                return fd;
        int r = walk(&m, fd, "/", 0);
        if (r < 0) {
                cgroup_members_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

void cgroup_text_key(char *text) {
        char *line = strncmp(text, "0::", 3) == 0 ? text : strstr(text, "\n0::");
        if (!line)
                return;
        line += line == text ? 3 : 4;
        size_t len = strcspn(line, "\n"); /* before the move: line is inside text */
        memmove(text, line, len);
        text[len] = 0;
}

int cgroup_key_read(pid_t pid, char *buf, size_t size) {
        char path[32];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        ssize_t n = read(fd, buf, size);
        if (n < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        if ((size_t) n >= size)
                return -E2BIG;
        buf[n] = 0;
        cgroup_text_key(buf);
        return 0;
}

uint64_t cgroup_key_hash(const char *key) {
        uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
        for (; *key; key++)
                h = (h ^ (unsigned char) *key) * 0x100000001b3ULL;
        return h ?: 1;
}
