/* listeners.h: seccomp listener fds grouped into listeners (listeners.c) */
#pragma once

#include "core/forest.h"
#include "scan-ptrace-error.h"

/* What a collection passed over, to be logged after the thaw (the first of each kind named). */
typedef struct ListenerNotes {
        size_t unlisted; /* processes whose fds this scan may not list (an unprivileged scan) */
        pid_t unlisted_pid;
        size_t left_out; /* listener fds that no filter of the forest can be the listener of */
        pid_t left_out_pid;
        int left_out_fd;
        size_t mismatched; /* holders given in the forest that kcmp says hold another file */
        uint64_t mismatched_listener;
} ListenerNotes;

/* Listener fds (anon_inode "seccomp notify") of every process in the forest, grouped by
 * kcmp(KCMP_FILE) into listeners: a listener the forest has already (with its filter and
 * holders) is joined by the holders found that are the same file; for the others the filter is
 * inferred. It runs while a ptrace pass holds tasks stopped, and logs nothing: a failure is kept
 * in e, what was passed over in notes (may be NULL), for the pass to log after the thaw. */
int listeners_collect(Forest *f, ScanError *e, ListenerNotes *notes);
/* Log notes (one line for each kind that occurred). */
void listener_notes_log(const ListenerNotes *notes);

/* kcmp(KCMP_FILE) of fd1 of process pid1 and fd2 of process pid2 (0: the same file, 1 or 2: not,
 * -errno), asked of a live thread where a process's leader has exited (proc_files_task()). */
int kcmp_file(pid_t pid1, int fd1, pid_t pid2, int fd2);
