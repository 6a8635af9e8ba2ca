/* pager.c: long output through a pager on a terminal, as systemctl: $SYSTEMD_PAGER, $PAGER or less,
 * and cat when that fails */
#include "pager.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "core/util.h"
#include "output.h"

static pid_t pager_pid;

/* The pager's command, or NULL for none. */
static const char *pager_command(void) {
        const char *e = getenv("SYSTEMD_PAGER");
        if (!e)
                e = getenv("PAGER");
        if (!e)
                return "less";
        if (!*e || streq(e, "cat"))
                return NULL;
        return e;
}

/* The tables keep fitting the terminal once stdout is a pipe. */
static void keep_terminal_width(void) {
        struct winsize ws;
        char cols[16];
        if (getenv("COLUMNS") || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0)
                return;
        snprintf(cols, sizeof(cols), "%u", (unsigned) ws.ws_col);
        setenv("COLUMNS", cols, false);
}

static void pager_close(void) {
        if (pager_pid <= 0)
                return;
        fflush(stdout);
        fclose(stdout); /* the pager sees the end of its input */
        while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        pager_pid = 0;
}

static _Noreturn void pager_exec(int fd, const char *command) {
        if (dup2(fd, STDIN_FILENO) < 0)
                _exit(EXIT_FAILURE);
        if (fd != STDIN_FILENO)
                close(fd);
        setenv("LESS", "FRSXMK", false);
        setenv("LESSCHARSET", "utf-8", false);
        /* A pager that cannot run (not installed, a typo in $PAGER, false) fails before it reads:
         * cat then shows what it would have, rather than the output being lost. The shell has
         * said why the pager failed. */
        execl("/bin/sh", "sh", "-c", "eval \"$0\" || exec cat", command, (char *) NULL);
        _exit(EXIT_FAILURE);
}

void pager_open(bool no_pager) {
        const char *command = pager_command();
        int fds[2];
        if (no_pager || pager_pid > 0 || !command || !output_is_tty())
                return;
        (void) output_use_unicode(); /* decided now, while stdout is the terminal */
        keep_terminal_width();
        fflush(stdout);
        if (pipe2(fds, O_CLOEXEC) < 0)
                return;
        pid_t pid = fork();
        if (pid < 0) {
                close(fds[0]);
                close(fds[1]);
                return;
        }
        if (pid == 0) {
                close(fds[1]);
                pager_exec(fds[0], command);
        }
        close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0) {
                close(fds[1]);
                return; /* the pager ends at the end of its input; stdout is still the terminal */
        }
        close(fds[1]);
        pager_pid = pid;
        atexit(pager_close);
}
