/* test-forge-executor.c: a restore executor as a hostile caller could make it (the executor runs as
 * the caller, who can take its fds and speak for it). It reads the request, forks a child to pass
 * for the restore root, and sends a READY with a pidfd of the one process its mapping names:
 * - by default its own parent (the daemon, which forked it): a process of root's, older than the
 *   restore and not below its root;
 * - when the request's exec option names the command "hidden PROGRAM": a grandchild below the
 *   root, started after the call, that has exec'd PROGRAM, a setuid-root program (made by the
 *   test): its effective and saved uids are root's.
 * A daemon that believes it scans and describes what the caller may not see. Started by sectreed
 * as $SECTREE_RESTORE in test-restore-contain. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan/plan-protocol.h"

/* The program of exec "hidden PROGRAM" in the request (malloc'ed), or NULL. */
static char *hidden_program(const RestoreFrame *f) {
        json_t *doc = json_loads(f->payload ?: "", 0, NULL);
        json_t *argv = json_object_get(json_array_get(json_object_get(doc, "exec"), 0), "argv");
        const char *cmd = json_string_value(json_array_get(argv, 0));
        const char *program = json_string_value(json_array_get(argv, 1));
        char *ret = cmd && program && strcmp(cmd, "hidden") == 0 ? strdup(program) : NULL;
        json_decref(doc);
        return ret;
}

/* The restore root: it pauses; with program, after forking a child that writes its pid to fd and
 * execs program (a setuid-root sleep). */
static void root(const char *program, int fd) {
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (program) {
                pid_t pid = fork();
                if (pid == 0) {
                        (void) !write(fd, &(pid_t) { getpid() }, sizeof(pid_t));
                        execl(program, "sleep", "600", (char *) NULL);
                        _exit(127);
                }
        }
        pause();
        _exit(0);
}

/* /proc/PID/status says its effective uid is 0 (the exec of the setuid program happened). */
static int euid_root(pid_t pid) {
        char path[64], line[256];
        unsigned real, effective;
        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        FILE *f = fopen(path, "re");
        int yes = 0;
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "Uid: %u %u", &real, &effective) == 2)
                        yes = effective == 0;
        if (f)
                fclose(f);
        return yes;
}

int main(void) {
        RestoreFrame f = {};
        pid_t target = getppid(), child;
        int pipefd[2], pidfd;
        char *hidden;

        if (restore_frame_recv(STDIN_FILENO, 10 * 1000000ULL, &f) < 0 || f.type != RESTORE_FRAME_REQUEST)
                return 1;
        hidden = hidden_program(&f);
        restore_frame_done(&f);
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        if (pipe(pipefd) < 0)
                return 1;
        child = fork();
        if (child < 0)
                return 1;
        if (child == 0)
                root(hidden, pipefd[1]);
        if (hidden && read(pipefd[0], &target, sizeof(target)) != sizeof(target))
                return 1;
        for (int i = 0; hidden && !euid_root(target) && i < 5000; i++)
                usleep(1000);
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
        /* START is answered, as if the commands were exec'd; then until the daemon closes the socket
         * or sends anything else */
        while (restore_frame_recv(STDIN_FILENO, 0, &f) >= 0 && f.type == RESTORE_FRAME_START) {
                restore_frame_done(&f);
                if (restore_frame_send(STDIN_FILENO, RESTORE_FRAME_STARTED, NULL, 0, NULL, 0) < 0)
                        break;
        }
        restore_frame_done(&f);
        kill(child, SIGKILL);
        while (waitpid(-1, NULL, 0) > 0)
                ;
        return 0;
}
