/* subtree-processes.h: every process of a subtree, filtered or not, as the daemon lists them
 * (ListSubtreeProcesses), for `tree PID` to show as snapshots do and for monitor --subtree */
#pragma once

#include <systemd/sd-bus.h>

#include "core/forest.h"

typedef struct SubtreeProcess {
        uint32_t pid, ppid;
        char comm[16];
} SubtreeProcess;

/* ListSubtreeProcesses(root): the processes of root's subtree the caller may see. Logs. */
int manager_list_subtree_processes(sd_bus *bus, uint32_t root, SubtreeProcess **ret, size_t *ret_n);

/* Add to f each process of v that f lacks: its name and parent as listed, its main thread in
 * disabled mode (they are printed under "without a filter:"). f is linked again. -ENOMEM, or
 * forest_link()'s. */
int forest_add_subtree_processes(Forest *f, const SubtreeProcess *v, size_t n);

/* Is process pid in root's subtree now, as the daemon sees it? 1 yes, 0 no (or not visible, or
 * root is gone), negative errno when the daemon could not be asked (a bad reply is logged). */
int subtree_has_process(sd_bus *bus, pid_t root, pid_t pid);
