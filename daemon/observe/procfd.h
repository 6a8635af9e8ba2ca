/* procfd.h: reading a process through an fd of its /proc/PID directory, which stays bound to it */
#pragma once

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* An fd of /proc/PID (O_DIRECTORY). What is read through it comes from that process or fails:
 * once the process is gone, reads and lookups through the fd fail even if PID is reused. -ESRCH
 * if there is no such process. */
int procfd_open(pid_t pid);
/* The whole file name (relative to the fd: "status", "task/TID/stat"), NUL-terminated, malloc'ed;
 * -ESRCH if the process (or the thread) is gone. */
int procfd_read(int proc_fd, const char *name, char **ret);
/* Field 22 of the stat file name ("stat", "task/TID/stat"): clock ticks since boot. */
int procfd_start_time(int proc_fd, const char *name, uint64_t *ret);
/* fstatat() of name (following links, as for "ns/user"); -ESRCH if gone. */
int procfd_stat(int proc_fd, const char *name, struct stat *ret);
