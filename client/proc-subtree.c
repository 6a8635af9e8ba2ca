/* proc-subtree.c: whether a process is in a subtree, from /proc as the caller sees it, for
 * monitor --subtree */
#include "proc-subtree.h"


typedef struct ProcEntry {
        pid_t pid, ppid;
        char comm[16];
} ProcEntry;

/* "PID (COMM) S PPID ...": comm may hold spaces and parentheses; the last ')' ends it. */
static int proc_entry_read(pid_t pid, ProcEntry *ret) {
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        _cleanup_fclose_ FILE *fp = fopen(path, "re");
        if (!fp || !fgets(buf, sizeof(buf), fp))
                return -ESRCH;
        char *open = strchr(buf, '('), *close = strrchr(buf, ')');
        int ppid;
        if (!open || !close || close < open || sscanf(close + 1, " %*c %d", &ppid) != 1)
                return -EBADMSG;
        *ret = (ProcEntry) { .pid = pid, .ppid = ppid };
        snprintf(ret->comm, sizeof(ret->comm), "%.*s", (int) MIN((size_t) (close - open - 1), sizeof(ret->comm) - 1),
                 open + 1);
        return 0;
}

int proc_in_subtree(pid_t pid, pid_t root) {
        for (size_t depth = 0; pid > 0 && depth < 4096; depth++) {
                ProcEntry e;
                if (pid == root)
                        return 1;
                int r = proc_entry_read(pid, &e);
                if (r < 0)
                        return depth == 0 ? -ESRCH : 0;
                pid = e.ppid;
        }
        return 0;
}
