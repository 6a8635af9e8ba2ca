/* sectreectl.c: the client's entry point: options, the verb table and exit codes */
#include <getopt.h>
#include <locale.h>

#include "config.h"
#include "ctl.h"

typedef struct Verb {
        const char *name;
        size_t min_args, max_args;
        VerbFunction run;
} Verb;

static const Verb verbs[] = {
        { "status", 0, 0, verb_status },
        { "tree", 0, 1, verb_tree },
        { "ps", 0, 0, verb_ps },
        { "show", 1, 1, verb_show },
        { "chain", 1, 1, verb_chain },
        { "check", 2, 2 + 6, verb_check },
        { "monitor", 0, 0, verb_monitor },
        { "graph", 0, 1, verb_graph },
        { "rescan", 0, 0, verb_rescan },
};

static void help(void) {
        printf("Usage: sectreectl [OPTIONS] VERB [ARGS...]\n"
               "\n"
               "Ask sectreed (org.sectree1 on the system bus) about the seccomp filter forest.\n"
               "\n"
               "Verbs:\n"
               "  status                  The daemon: version, backend, identity, counts, last scan\n"
               "  tree [PID]              Filters nested under their parents, with their processes;\n"
               "                          PID: only that process and its descendants\n"
               "  ps                      Every task: tid, tgid, ppid, comm, mode, depth, head filter\n"
               "  show FILTER             A filter's metadata and disassembly\n"
               "  chain TID               A task's filters, newest first\n"
               "  check TID SYSCALL [ARG...]\n"
               "                          What the task's chain does with that system call (name or\n"
               "                          number, up to 6 arguments), and which filter decides\n"
               "  monitor                 Print the daemon's signals as they come, until interrupted\n"
               "  graph [PID]             The forest as a Graphviz digraph (edges child -> parent)\n"
               "  rescan                  Make the daemon re-read everything now (root only)\n"
               "\n"
               "Options:\n"
               "     --json               Print one JSON document (monitor: one object per line)\n"
               "     --no-legend          Leave out column headers and footers\n"
               "     --no-pager           Accepted; sectreectl never pages\n"
               "     --counts             graph: task counts in filter nodes, no process nodes\n"
               "  -h --help               Show this help\n"
               "     --version            Show the version\n"
               "\n"
               "Exit status: 0 success, 1 failure, 2 bad usage.\n");
}

enum { ARG_VERSION = 0x100, ARG_JSON, ARG_NO_LEGEND, ARG_NO_PAGER, ARG_COUNTS };

/* Returns 1 to go on, 0 to exit successfully (help, version), ERR_USAGE on bad usage. */
static int parse_args(int argc, char *argv[], Context *c) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "json", no_argument, NULL, ARG_JSON },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "no-pager", no_argument, NULL, ARG_NO_PAGER },
                { "counts", no_argument, NULL, ARG_COUNTS },
                {}
        };
        int o;
        opterr = 0;
        while ((o = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (o) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("sectreectl %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_JSON:
                        c->json = true;
                        break;
                case ARG_NO_LEGEND:
                        c->legend = false;
                        break;
                case ARG_NO_PAGER:
                        break;
                case ARG_COUNTS:
                        c->graph_counts = true;
                        break;
                default:
                        return usage_error("Unknown option '%s'", argv[optind - 1]);
                }
        return 1;
}

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return &verbs[i];
        return NULL;
}

static int dispatch(Context *c, char **args, size_t n) {
        if (n == 0)
                return usage_error("No verb given");
        const Verb *v = verb_find(args[0]);
        if (!v)
                return usage_error("Unknown verb '%s'", args[0]);
        if (n - 1 < v->min_args)
                return usage_error("Too few arguments for '%s'", v->name);
        if (n - 1 > v->max_args)
                return usage_error("Too many arguments for '%s'", v->name);
        return v->run(c, args + 1, n - 1);
}

int main(int argc, char *argv[]) {
        _cleanup_(context_done) Context c = { .legend = true };
        setlocale(LC_ALL, "");

        int r = parse_args(argc, argv, &c);
        if (r <= 0)
                return r == 0 ? EXIT_SUCCESS : EXIT_USAGE;
        r = dispatch(&c, argv + optind, (size_t) (argc - optind));
        if (r == ERR_USAGE)
                return EXIT_USAGE;
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
