/* proc-subtree.c: the processes of a subtree that run without filters, from /proc as the caller
 * sees it, for `tree PID` to list as snapshots do */
#include "proc-subtree.h"

#include <dirent.h>

#include "core/hashmap.h"

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

static int proc_entries_read(ProcEntry **ret, size_t *ret_n) {
        _cleanup_free_ ProcEntry *v = NULL;
        size_t n = 0, allocated = 0;
        DIR *d = opendir("/proc");
        struct dirent *de;
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                uint64_t pid;
                if (safe_atou64(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
                        continue;
                if (GROW(v, allocated, n + 1) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                if (proc_entry_read((pid_t) pid, &v[n]) >= 0)
                        n++;
        }
        closedir(d);
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/* Is pid in root's subtree? Parents are followed through the entries (by pid); depth-bounded. */
static bool in_subtree(const Hashmap *by_pid, pid_t pid, pid_t root) {
        for (size_t depth = 0; pid > 0 && depth < 4096; depth++) {
                if (pid == root)
                        return true;
                const ProcEntry *e = hashmap_get(by_pid, (uint64_t) pid);
                if (!e)
                        return false;
                pid = e->ppid;
        }
        return false;
}

static int add_unfiltered(Forest *f, const ProcEntry *e) {
        Process *p;
        Task *t;
        int r = forest_add_process(f, e->pid, &p);
        if (r < 0)
                return r;
        p->ppid = e->ppid;
        memcpy(p->comm, e->comm, sizeof(p->comm));
        r = process_add_thread(p, e->pid, &t);
        if (r < 0)
                return r;
        t->mode = TASK_MODE_DISABLED;
        return 0;
}

int forest_add_unfiltered_subtree(Forest *f, pid_t root) {
        _cleanup_free_ ProcEntry *v = NULL;
        _cleanup_(hashmap_deinit) Hashmap by_pid = {};
        size_t n = 0;
        int r = proc_entries_read(&v, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if ((r = hashmap_put(&by_pid, (uint64_t) v[i].pid, &v[i])) < 0 && r != -EEXIST)
                        return r;
        bool added = false;
        for (size_t i = 0; i < n; i++) {
                if (forest_find_process(f, v[i].pid) || !in_subtree(&by_pid, v[i].pid, root))
                        continue;
                r = add_unfiltered(f, &v[i]);
                if (r < 0)
                        return r;
                added = true;
        }
        return added ? forest_link(f, NULL) : 0;
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
