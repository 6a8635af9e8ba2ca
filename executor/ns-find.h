/* ns-find.h: a task of the restore's own pid namespace found by its number there, as the executor
 * (outside that namespace) names it: by the NSpid: lines of /proc */
#pragma once

#include <sys/types.h>

/* The thread of process pid whose tid in the restore's namespace is ns_tid; 0 if none. */
pid_t ns_find_thread(pid_t pid, pid_t ns_tid);
/* The child of process pid (of any of its threads) whose pid in the restore's namespace is
 * ns_pid; 0 if none. */
pid_t ns_find_child(pid_t pid, pid_t ns_pid);
