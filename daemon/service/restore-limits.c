/* restore-limits.c: see restore-limits.h */
#include "service/restore-limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "observe/procfd.h"

typedef struct LimitName {
        const char *proc; /* the row of /proc/PID/limits */
        const char *unit; /* systemd's Limit*= */
} LimitName;

static const LimitName limit_names[RESTORE_N_LIMITS] = {
        [RLIMIT_CPU] = { "Max cpu time", "CPU" },
        [RLIMIT_FSIZE] = { "Max file size", "FSIZE" },
        [RLIMIT_DATA] = { "Max data size", "DATA" },
        [RLIMIT_STACK] = { "Max stack size", "STACK" },
        [RLIMIT_CORE] = { "Max core file size", "CORE" },
        [RLIMIT_RSS] = { "Max resident set", "RSS" },
        [RLIMIT_NPROC] = { "Max processes", "NPROC" },
        [RLIMIT_NOFILE] = { "Max open files", "NOFILE" },
        [RLIMIT_MEMLOCK] = { "Max locked memory", "MEMLOCK" },
        [RLIMIT_AS] = { "Max address space", "AS" },
        [RLIMIT_LOCKS] = { "Max file locks", "LOCKS" },
        [RLIMIT_SIGPENDING] = { "Max pending signals", "SIGPENDING" },
        [RLIMIT_MSGQUEUE] = { "Max msgqueue size", "MSGQUEUE" },
        [RLIMIT_NICE] = { "Max nice priority", "NICE" },
        [RLIMIT_RTPRIO] = { "Max realtime priority", "RTPRIO" },
        [RLIMIT_RTTIME] = { "Max realtime timeout", "RTTIME" },
};

const char *restore_limit_to_string(int resource) {
        return resource >= 0 && resource < RESTORE_N_LIMITS ? limit_names[resource].unit : NULL;
}

static int parse_value(const char *s, rlim_t *ret) {
        uint64_t v;
        if (streq(s, "unlimited")) {
                *ret = RLIM_INFINITY;
                return 0;
        }
        if (safe_atou64(s, &v) < 0)
                return -EBADMSG;
        *ret = (rlim_t) v;
        return 0;
}

/* One row: "NAME   SOFT   HARD   UNITS". */
static int parse_row(char *line, RestoreLimits *l, unsigned *seen) {
        for (int i = 0; i < RESTORE_N_LIMITS; i++) {
                size_t n = limit_names[i].proc ? strlen(limit_names[i].proc) : 0;
                char *save = NULL, *soft, *hard;
                if (n == 0 || strncmp(line, limit_names[i].proc, n) != 0 || line[n] != ' ')
                        continue;
                soft = strtok_r(line + n, " \n", &save);
                hard = soft ? strtok_r(NULL, " \n", &save) : NULL;
                if (!hard || parse_value(soft, &l->v[i].rlim_cur) < 0 || parse_value(hard, &l->v[i].rlim_max) < 0)
                        return -EBADMSG;
                *seen |= 1u << i;
                return 0;
        }
        return 0;
}

static int parse_limits(char *text, RestoreLimits *l) {
        unsigned seen = 0;
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (parse_row(line, l, &seen) < 0)
                        return -EBADMSG;
        }
        return seen == (1u << RESTORE_N_LIMITS) - 1 ? 0 : -EBADMSG;
}

/* The real and effective uid of the process (its "Uid:" row) are uid. */
static bool owned_by(int dfd, uid_t uid) {
        _cleanup_free_ char *status = NULL;
        unsigned real, effective;
        const char *p;
        if (procfd_read(dfd, "status", &status) < 0 || !(p = strstr(status, "\nUid:")))
                return false;
        return sscanf(p + 5, "%u %u", &real, &effective) == 2 && real == uid && effective == uid;
}

int restore_limits_read(pid_t pid, uid_t uid, RestoreLimits *ret) {
        _cleanup_close_ int dfd = procfd_open(pid);
        _cleanup_free_ char *text = NULL;
        RestoreLimits l = {};
        int r;

        if (dfd < 0)
                return dfd;
        if (!owned_by(dfd, uid))
                return -ESRCH;
        r = procfd_read(dfd, "limits", &text);
        if (r >= 0)
                r = parse_limits(text, &l);
        if (r >= 0 && !owned_by(dfd, uid)) /* the same process, still the caller's */
                r = -ESRCH;
        if (r < 0)
                return r;
        l.known = true;
        *ret = l;
        return 0;
}

int restore_limits_apply(const RestoreLimits *l) {
        for (int i = 0; l->known && i < RESTORE_N_LIMITS; i++)
                if (prlimit(0, (enum __rlimit_resource) i, &l->v[i], NULL) < 0)
                        return -errno;
        return 0;
}
