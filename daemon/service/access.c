/* access.c: who may see what: a bus caller sees the tasks it could ptrace itself
 *
 * The rule is the kernel's ptrace_may_access(task, PTRACE_MODE_READ_REALCREDS), which also
 * decides who may read /proc/PID/environ or kcmp() a task, applied to /proc as sectreed reads it:
 *
 *   - ids: the task's real, effective and saved uid (Uid: of /proc/PID/status) are the caller's
 *     uid, and its real, effective and saved gid (Gid:) the caller's gid;
 *   - dumpable: the kernel owns every file of /proc/PID (but the directory itself, which keeps the
 *     euid for ps) to the task's euid only while the task is dumpable (SUID_DUMP_USER); otherwise
 *     to the uid that root of the task's memory's user namespace maps to, root for the initial
 *     one (and root for a task without memory: a leader that exited while its threads live on,
 *     whose live threads are asked instead). So the owner of /proc/PID/stat is the caller's
 *     uid exactly when the kernel's dumpable test passes for that caller: the task is dumpable, or
 *     the caller is root of the user namespace its memory belongs to. prctl(PR_GET_DUMPABLE)
 *     answers only for the calling task and /proc/PID/status does not say it; this is the one
 *     place where the kernel shows it for another task;
 *   - capabilities: the task's permitted set (CapPrm:) is a subset of the caller's, both in the
 *     same user namespace (/proc/PID/ns/user); or the caller owns the task's user namespace (or
 *     the one below its own on the way to it), which gives it every capability there.
 *
 * Where sectreed is stricter than the kernel: a non-root caller's CAP_SYS_PTRACE never lets it see
 * other users' tasks (its capabilities come from /proc, read after it connected, and the bus
 * vouches only for its uid), and a caller whose process cannot be read (gone, or its real or
 * effective uid is not the one it connected with) sees nothing.
 *
 * Races: every fact of one task is read through one fd of its /proc/PID directory. Such an fd
 * stays bound to the process it was opened for: once that process is gone, what is read through
 * it fails (ESRCH, ENOENT) even if the pid names a new process. A forest's process is also
 * compared by start time, so a pid reused since the scan is not taken for the scanned process. */
#include "service/access.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "core/util.h"
#include "observe/procfd.h"

typedef struct ProcCreds {
        uint32_t uid[3], gid[3]; /* real, effective, saved */
        uint64_t cap_permitted;
        bool has_uid, has_gid, has_cap;
} ProcCreds;

/* "<real>\t<effective>\t<saved>\t<fs>" */
static bool parse_ids(const char *v, uint32_t ids[3]) {
        return sscanf(v, "%" SCNu32 " %" SCNu32 " %" SCNu32, &ids[0], &ids[1], &ids[2]) == 3;
}

static int proc_creds_read(int dfd, ProcCreds *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = procfd_read(dfd, "status", &buf);
        if (r < 0)
                return r;
        ProcCreds c = {};
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (strncmp(line, "Uid:", 4) == 0)
                        c.has_uid = parse_ids(line + 4, c.uid);
                else if (strncmp(line, "Gid:", 4) == 0)
                        c.has_gid = parse_ids(line + 4, c.gid);
                else if (strncmp(line, "CapPrm:", 7) == 0)
                        c.has_cap = sscanf(line + 7, "%" SCNx64, &c.cap_permitted) == 1;
        }
        if (!c.has_uid || !c.has_gid || !c.has_cap)
                return -EBADMSG;
        *ret = c;
        return 0;
}

int caller_from_message(sd_bus_message *m, Caller *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        pid_t pid = 0;
        /* Only what the bus vouches for (the uid and pid it saw at connect): no augmenting from /proc. */
        int r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID, &creds);
        if (r < 0)
                return r;
        *ret = (Caller) {};
        r = sd_bus_creds_get_euid(creds, &ret->uid);
        if (r < 0)
                return r;
        ret->privileged = ret->uid == 0;
        if (ret->privileged || sd_bus_creds_get_pid(creds, &pid) < 0 || pid <= 0)
                return 0;

        _cleanup_close_ int dfd = procfd_open(pid);
        ProcCreds pc;
        struct stat ns;
        if (dfd < 0 || proc_creds_read(dfd, &pc) < 0 || procfd_stat(dfd, "ns/user", &ns) < 0)
                return 0;
        if (pc.uid[0] != ret->uid || pc.uid[1] != ret->uid) {
                log_debug("Bus caller pid %d is not of uid %u any more: it sees nothing.", (int) pid, ret->uid);
                return 0;
        }
        ret->known = true;
        ret->gid = pc.gid[0];
        ret->cap_permitted = pc.cap_permitted;
        ret->userns_dev = ns.st_dev;
        ret->userns_ino = ns.st_ino;
        return 0;
}

void caller_deinit(Caller *c) {
        hashmap_deinit(&c->seen);
}

/* Does the caller own the user namespace of the task (or the one on the way to it right below the
 * caller's)? That is the kernel's ns_capable(task's namespace, CAP_SYS_PTRACE) for a caller with
 * no capability of its own. */
static bool caller_owns_userns(const Caller *c, int dfd) {
        _cleanup_close_ int ns = openat(dfd, "ns/user", O_RDONLY | O_CLOEXEC);
        for (unsigned depth = 0; ns >= 0 && depth < 33; depth++) { /* 32 nested namespaces at most */
                uid_t owner;
                struct stat st;
                if (ioctl(ns, NS_GET_OWNER_UID, &owner) < 0)
                        return false;
                int parent = ioctl(ns, NS_GET_PARENT);
                if (parent < 0)
                        return false; /* the initial namespace: the caller's is not above */
                close(ns);
                ns = parent;
                if (fstat(ns, &st) < 0)
                        return false;
                if (st.st_dev == c->userns_dev && st.st_ino == c->userns_ino)
                        return owner == c->uid;
        }
        return false;
}

static bool ids_are(const uint32_t ids[3], uint32_t id) {
        return ids[0] == id && ids[1] == id && ids[2] == id;
}

/* The state letter of the stat file name under dfd ("stat", "task/TID/stat"); 0 if unreadable. */
static char stat_state(int dfd, const char *name) {
        _cleanup_free_ char *buf = NULL;
        const char *p;

        if (procfd_read(dfd, name, &buf) < 0 || !(p = strrchr(buf, ')')) || p[1] != ' ')
                return 0;
        return p[2];
}

/* When the process of dfd is a leader that exited while its threads live on (its files are root's,
 * for it has no memory left, and say nothing of its threads'): 1 if the caller passes the check
 * for every live thread of it (its /proc/PID/task/TID), 0 if not for one of them, or if there is
 * none; -1 when dfd's process is not such a leader. */
static int exited_leader_threads_pass(Caller *c, int dfd) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        char name[sizeof(de->d_name) + 16];
        int fd, passed = 0;

        if (stat_state(dfd, "stat") != 'Z')
                return -1;
        fd = openat(dfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return 0;
        }
        while ((de = readdir(d))) {
                char state;
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                snprintf(name, sizeof(name), "task/%s/stat", de->d_name);
                state = stat_state(dfd, name);
                if (state == 0 || state == 'Z' || state == 'X')
                        continue; /* the leader, or a thread gone meanwhile */
                snprintf(name, sizeof(name), "task/%s", de->d_name);
                _cleanup_close_ int tfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (tfd < 0)
                        continue; /* gone meanwhile */
                if (caller_check_proc(c, tfd, 0) <= 0) /* no task/ under it: no recursion past one */
                        return 0;
                passed++;
        }
        return passed > 0;
}

int caller_check_proc(Caller *c, int dfd, uint64_t start_time) {
        struct stat dir, st, ns;
        ProcCreds pc;
        if (c->privileged)
                return 1;
        if (!c->known)
                return 0;
        /* The directory keeps the euid even when the task is not dumpable: a cheap first test that
         * leaves out other users' processes before anything is read. */
        if (fstat(dfd, &dir) < 0)
                return -errno;
        if (dir.st_uid != c->uid)
                return 0;
        int r = proc_creds_read(dfd, &pc);
        if (r >= 0)
                r = procfd_stat(dfd, "stat", &st);
        if (r >= 0)
                r = procfd_stat(dfd, "ns/user", &ns);
        if (r >= 0 && start_time != 0) {
                uint64_t t;
                r = procfd_start_time(dfd, "stat", &t);
                if (r >= 0 && t != start_time)
                        r = -ESRCH;
        }
        if (r < 0)
                return r;
        if (!ids_are(pc.uid, c->uid) || !ids_are(pc.gid, c->gid))
                return 0;
        /* Not dumpable, and the caller is not root of its memory's namespace; or a leader that
         * exited, which has no memory: then each of its live threads must pass, and the leader's
         * own credentials below too, as the kernel checks them of a task without memory. */
        if (st.st_uid != c->uid && exited_leader_threads_pass(c, dfd) <= 0)
                return 0;
        if (ns.st_dev == c->userns_dev && ns.st_ino == c->userns_ino)
                return (pc.cap_permitted & ~c->cap_permitted) == 0;
        return caller_owns_userns(c, dfd);
}

/* caller_check_proc()'s first test, by path: one stat(2) where opening the directory, its fstat(2)
 * and the close are three calls, for each of the tens of thousands of processes a non-root
 * caller's listing turns away. Only ever a "no": whatever process has the pid now is not the
 * caller's, and if it is not the one asked about, that one is gone. */
static bool proc_dir_may_be_callers(const Caller *c, pid_t tgid) {
        char path[32];
        struct stat st;

        if (!c->known)
                return false;
        snprintf(path, sizeof(path), "/proc/%d", (int) tgid);
        return stat(path, &st) < 0 || st.st_uid == c->uid; /* a failure: let the full check say */
}

static bool may_see(Caller *c, pid_t tgid, uint64_t start_time) {
        if (c->privileged)
                return true;
        uintptr_t v = (uintptr_t) hashmap_get(&c->seen, (uint64_t) tgid);
        if (v == 0) {
                if (!proc_dir_may_be_callers(c, tgid))
                        v = 2;
                else {
                        _cleanup_close_ int dfd = procfd_open(tgid);
                        v = dfd >= 0 && caller_check_proc(c, dfd, start_time) > 0 ? 1 : 2;
                }
                /* every answer, a worker's for the loop too (caller_seen_rebase()) */
                (void) hashmap_put(&c->seen, (uint64_t) tgid, (void *) v);
        }
        return v == 1;
}

bool caller_may_see_process(Caller *c, pid_t tgid) {
        return may_see(c, tgid, 0);
}

bool caller_may_see(Caller *c, const Process *p) {
        return may_see(c, p->pid, p->start_time);
}

bool caller_may_see_started(Caller *c, pid_t tgid, uint64_t start_time) {
        return may_see(c, tgid, start_time);
}

/* One more visible task whose head is head (none: 0). */
static int count_head(Hashmap *counts, const Filter *head) {
        if (!head)
                return 0;
        uintptr_t n = (uintptr_t) hashmap_get(counts, head->id);
        return hashmap_replace(counts, head->id, (void *) (n + 1));
}

int caller_visible_filters(Caller *c, const Forest *f, Hashmap *ret, Hashmap *ret_counts) {
        *ret = (Hashmap) {};
        if (ret_counts)
                *ret_counts = (Hashmap) {};
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (!caller_may_see(c, p))
                        continue;
                for (size_t j = 0; j < p->n_threads; j++) {
                        if (ret_counts && !c->privileged) {
                                int r = count_head(ret_counts, p->threads[j].filter);
                                if (r < 0)
                                        return r;
                        }
                        for (Filter *x = p->threads[j].filter; x; x = x->parent) {
                                int r = hashmap_put(ret, x->id, x);
                                if (r == -EEXIST)
                                        break; /* the rest of the chain is in already */
                                if (r < 0)
                                        return r;
                        }
                }
        }
        if (c->privileged)
                for (size_t i = 0; i < f->n_filters; i++)
                        (void) hashmap_replace(ret, f->filters[i]->id, f->filters[i]);
        return 0;
}
