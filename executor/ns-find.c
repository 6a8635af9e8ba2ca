/* ns-find.c: see ns-find.h */
#include "ns-find.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* The last number of the NSpid: line of a /proc status file: the tid in the innermost namespace. */
static pid_t innermost_tid(const char *status_path) {
        _cleanup_fclose_ FILE *f = fopen(status_path, "re");
        char line[256];

        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "NSpid:", 6) == 0) {
                        char *last = strrchr(line, '\t');
                        return last ? (pid_t) atoi(last + 1) : 0;
                }
        return 0;
}

/* The thread of process pid whose tid in the restore's namespace is ns_tid, as the executor
 * names it; 0 if none. */
pid_t ns_find_thread(pid_t pid, pid_t ns_tid) {
        char path[64];
        _cleanup_(closedirp) DIR *d = NULL;

        snprintf(path, sizeof(path), "/proc/%d/task", pid);
        d = opendir(path);
        for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
                char status[320];
                if (e->d_name[0] == '.')
                        continue;
                snprintf(status, sizeof(status), "/proc/%d/task/%s/status", pid, e->d_name);
                if (innermost_tid(status) == ns_tid)
                        return (pid_t) atoi(e->d_name);
        }
        return 0;
}

/* The child of process pid (of any of its threads) whose pid in the restore's namespace is
 * ns_pid; 0 if none. */
pid_t ns_find_child(pid_t pid, pid_t ns_pid) {
        char path[64];
        _cleanup_(closedirp) DIR *d = NULL;

        snprintf(path, sizeof(path), "/proc/%d/task", pid);
        d = opendir(path);
        for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
                char children[320];
                _cleanup_fclose_ FILE *f = NULL;
                int child;
                if (e->d_name[0] == '.')
                        continue;
                snprintf(children, sizeof(children), "/proc/%d/task/%s/children", pid, e->d_name);
                f = fopen(children, "re");
                while (f && fscanf(f, "%d", &child) == 1) {
                        char status[64];
                        snprintf(status, sizeof(status), "/proc/%d/status", child);
                        if (innermost_tid(status) == ns_pid)
                                return child;
                }
        }
        return 0;
}
