/* sectree-restore.c: the restore executor's main(): its arguments; the restore itself (request on
 * the socket that is its stdin, plan, run, answers) is executor-run.c (docs/restore.md) */
#include <getopt.h>

#include "config.h"
#include "core/util.h"
#include "executor-run.h"

static void help(void) {
        printf("Usage: sectree-restore [--help] [--version]\n"
               "\n"
               "Rebuild a seccomp snapshot's process tree with its filter inheritance intact.\n"
               "Started by sectreed (or a test): stdin is a connected AF_UNIX stream socket that\n"
               "carries the request (the snapshot as an fd, the options) and the answers (the\n"
               "mapping of pids and tids, a pidfd per restored process, a copy of each listener).\n"
               "See the restore documentation for the protocol.\n");
}

static int parse_args(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        int o;

        while ((o = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (o) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("sectree-restore %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("sectree-restore takes no arguments.");
                return -EINVAL;
        }
        return 1;
}

int main(int argc, char *argv[]) {
        int r;

        r = parse_args(argc, argv);
        if (r <= 0)
                return r == 0 ? EXIT_SUCCESS : 2;
        r = executor_run();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
