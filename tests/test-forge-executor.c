/* test-forge-executor.c: a restore executor as a hostile caller could make it (the executor runs as
 * the caller, who can take its fds and speak for it): it reads the request, forks a child to pass
 * for the restore root, and sends a READY whose mapping names its own parent (the daemon, which
 * forked it) as the one restored process, with a pidfd of it. A daemon that believes it would scan
 * and describe a process of root's. Started by sectreed as $SECTREE_RESTORE in
 * test-restore-contain. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan-protocol.h"

int main(void) {
        RestoreFrame f = {};
        pid_t target = getppid(), child;
        int pidfd;

        if (restore_frame_recv(STDIN_FILENO, 10 * 1000000ULL, &f) < 0 || f.type != RESTORE_FRAME_REQUEST)
                return 1;
        restore_frame_done(&f);
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        child = fork();
        if (child < 0)
                return 1;
        if (child == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                pause();
                _exit(0);
        }
        pidfd = pidfd_open(target, 0);
        json_t *doc = json_pack("{s:i, s:[{s:i, s:i, s:i}], s:[{s:i, s:i}], s:[], s:[], s:[], s:I}", "restore_root",
                                (int) child, "processes", "snapshot_pid", 1, "pid", (int) target, "fd", 0, "threads",
                                "snapshot_tid", 1, "tid", (int) target, "listeners", "no_new_privs_added", "subreapers",
                                "n_fds", (json_int_t) 1);
        char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        if (!text || pidfd < 0 ||
            restore_frame_send(STDIN_FILENO, RESTORE_FRAME_READY, text, strlen(text), NULL, 0) < 0 ||
            restore_frame_send(STDIN_FILENO, RESTORE_FRAME_FDS, NULL, 0, &pidfd, 1) < 0)
                return 1;
        /* until the daemon closes the socket (or sends anything: nothing more is played) */
        (void) restore_frame_recv(STDIN_FILENO, 0, &f);
        restore_frame_done(&f);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        return 0;
}
