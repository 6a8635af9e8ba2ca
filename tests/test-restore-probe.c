/* test-restore-probe.c: exec'd by test-restore in original and restored tasks: makes one system
 * call (by number, no arguments) and appends what happened to a file, so that the filters' effect
 * can be compared: "call NR" before, "ret R errno E" after (nothing after when a filter kills) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        long nr, r;
        int fd;

        if (argc != 3)
                return 2;
        fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
                return 3;
        nr = strtol(argv[2], NULL, 10);
        dprintf(fd, "call %ld\n", nr);
        errno = 0;
        r = syscall(nr, 0, 0, 0, 0, 0, 0);
        dprintf(fd, "ret %ld errno %d\n", r, r < 0 ? errno : 0);
        return 0;
}
