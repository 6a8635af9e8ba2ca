/* procinfo.h: reading per-task facts from /proc (status, stat, comm, exe, cmdline, fds) */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ProcStatus {
        pid_t tgid, ppid;
        uid_t uid, euid, suid, fsuid; /* Uid: real, effective, saved, file system */
        gid_t gid, egid;
        bool no_new_privs;
        int seccomp_mode;     /* Seccomp: 0 disabled, 1 strict, 2 filter */
        int seccomp_filters;  /* Seccomp_filters: */
        char name[16];        /* Name: (escaped by the kernel; use proc_read_comm() for the raw one) */
        char state;           /* first letter of State: (R, S, D, T, t, Z, X, ...) */
        pid_t tracer_pid;     /* TracerPid: 0 if not traced */
        unsigned threads;     /* Threads: (of the whole process) */
} ProcStatus;

/* tid may be any task; reads /proc/<tid>/status (which works for threads too). */
int proc_read_status(pid_t tid, ProcStatus *ret);
/* Field 22 of /proc/<tid>/stat (clock ticks since boot). -ESRCH if gone. */
int proc_read_start_time(pid_t tid, uint64_t *ret);
/* /proc/<tid>/comm, raw (not escaped), without the trailing newline. */
int proc_read_comm(pid_t tid, char ret[16]);
int proc_read_exe(pid_t pid, char **ret);
int proc_read_argv(pid_t pid, char ***ret);
/* A command line as /proc/PID/cmdline has it (each argument ended by a NUL; the last one may be
 * unterminated) -> a NULL-terminated strv. */
int argv_parse(const char *buf, size_t len, char ***ret);
/* The tids of a process (/proc/<pid>/task), malloc'ed array. */
int proc_list_threads(pid_t pid, pid_t **ret, size_t *ret_n);
/* All pids (/proc), malloc'ed array. */
int proc_list_pids(pid_t **ret, size_t *ret_n);
/* The task whose file table is process pid's: pid, or a live thread where the leader has exited
 * while threads live on (the leader's table went with it: /proc/PID/fd is empty, and kcmp() of
 * the leader's fds fails). */
pid_t proc_files_task(pid_t pid);
/* Whether fd of process pid is a seccomp user-notification listener now (its link is
 * "anon_inode:seccomp notify"). */
bool proc_fd_is_listener(pid_t pid, int fd);
/* The fds of pid that are. */
int proc_list_listener_fds(pid_t pid, int **ret, size_t *ret_n);
