/* restore-check.c: see restore-check.h. Reads /proc only: the mapping is checked before any scan,
 * so that a forged READY makes the daemon read nothing of another user's. */
#include "service/restore-check.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "observe/procinfo.h"

/* A chain of parents longer than this is not a restore's (RESTORE_MAX_TASKS_PER_UID and more). */
#define MAX_DEPTH 65536

uint64_t restore_check_now_ticks(void) {
        struct timespec ts;
        long hz = sysconf(_SC_CLK_TCK);
        if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0 || hz <= 0)
                return 0;
        return (uint64_t) ts.tv_sec * (uint64_t) hz + (uint64_t) ts.tv_nsec / (1000000000ULL / (uint64_t) hz);
}

/* The four uids of the "Uid:" line all equal uid. */
static bool all_uids_are(const ProcStatus *st, uid_t uid) {
        return st->uid == uid && st->euid == uid && st->suid == uid && st->fsuid == uid;
}

int restore_check_owner(pid_t tid, uid_t uid) {
        ProcStatus st;
        int r = proc_read_status(tid, &st);
        return r < 0 ? r : all_uids_are(&st, uid);
}

/* Whether pid is root or one of its descendants, by the parents /proc gives now. */
static bool descends_from(pid_t pid, pid_t root) {
        for (int depth = 0; depth < MAX_DEPTH && pid > 1; depth++) {
                ProcStatus st;
                if (pid == root)
                        return true;
                if (proc_read_status(pid, &st) < 0)
                        return false;
                pid = st.ppid;
        }
        return false;
}

/* One task (a process, or a thread with its process tgid): 1 if it is the restore's, 0 if not. */
static int task_ok(pid_t tid, const PlanMapping *map, const RestoreOrigin *o) {
        ProcStatus st;
        uint64_t start;

        if (tid <= 1 || proc_read_status(tid, &st) < 0 || proc_read_start_time(tid, &start) < 0)
                return 0;
        if (start < o->started_ticks || !descends_from(st.tgid, map->root_pid))
                return 0;
        return !o->check_uid || all_uids_are(&st, o->uid);
}

/* Whether pid's cgroup (cgroup v2: "0::PATH") is unit's own. */
static bool in_unit(pid_t pid, const char *unit) {
        char path[64], line[4096];
        size_t n = strlen(unit);
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return false;
        while (fgets(line, sizeof(line), f)) {
                size_t len = strcspn(line, "\n");
                line[len] = 0;
                if (strncmp(line, "0::", 3) == 0 && len > n && line[len - n - 1] == '/' && streq(line + len - n, unit))
                        return true;
        }
        return false;
}

/* The restore root: a child of the executor, in its unit. */
static bool root_ok(const PlanMapping *map, const RestoreOrigin *o) {
        ProcStatus st;
        if (map->root_pid <= 1 || proc_read_status(map->root_pid, &st) < 0 || st.tgid != map->root_pid)
                return false;
        if (o->executor > 0 && st.ppid != o->executor)
                return false;
        if (o->unit && !in_unit(map->root_pid, o->unit))
                return false;
        return (o->executor > 0 || o->unit) && task_ok(map->root_pid, map, o);
}

static int refuse(char **ret_message, const char *what, pid_t pid) {
        if (ret_message && asprintf(ret_message, "protocol: the executor's READY names %s %d, which this restore did "
                                    "not create", what, (int) pid) < 0)
                *ret_message = NULL;
        return -EPERM;
}

int restore_check_mapping(const PlanMapping *map, const RestoreOrigin *o, char **ret_message) {
        ProcStatus st;

        if (ret_message)
                *ret_message = NULL;
        if (!root_ok(map, o))
                return refuse(ret_message, "restore root", map->root_pid);
        for (size_t i = 0; i < map->n_processes; i++) {
                pid_t pid = map->processes[i].b;
                if (proc_read_status(pid, &st) < 0 || st.tgid != pid || !task_ok(pid, map, o))
                        return refuse(ret_message, "process", pid);
        }
        for (size_t i = 0; i < map->n_threads; i++)
                if (!task_ok(map->threads[i].b, map, o))
                        return refuse(ret_message, "thread", map->threads[i].b);
        return 0;
}

int restore_check_pidfd_pid(int pidfd, pid_t *ret) {
        char path[64], line[128];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Pid:", 4) == 0) {
                        long v = strtol(line + 4, NULL, 10);
                        if (v <= 0)
                                return -ESRCH;
                        *ret = (pid_t) v;
                        return 0;
                }
        return -EBADMSG;
}

int restore_ready_pid(json_t *o, const char *key, pid_t *ret) {
        json_t *v = json_object_get(o, key);
        if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > INT32_MAX)
                return -EBADMSG;
        *ret = (pid_t) json_integer_value(v);
        return 0;
}

int restore_ready_fd_index(json_t *o, size_t n_fds, int *ret) {
        json_t *v = json_object_get(o, "fd");
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (size_t) json_integer_value(v) >= n_fds)
                return -EBADMSG;
        *ret = (int) json_integer_value(v);
        return 0;
}
