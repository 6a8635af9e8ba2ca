/* sectreectl.c: the client's entry point: options, the verb table and exit codes */
#include <getopt.h>
#include <locale.h>

#include "config.h"
#include "ctl.h"

/* Which of the verb-specific options a verb takes; the others are refused as bad usage. */
typedef enum VerbOptions {
        VERB_FILE = 1 << 0,     /* --file */
        VERB_SNAPSHOT = 1 << 1, /* --name, --no-argv */
        VERB_FORMAT = 1 << 2,   /* --format */
        VERB_ARCH = 1 << 3,     /* --arch */
        VERB_APPROXIMATE = 1 << 4, /* --approximate */
        VERB_ACTION = 1 << 5,   /* --action */
} VerbOptions;

typedef struct Verb {
        const char *name;
        size_t min_args, max_args;
        size_t min_args_file; /* with --file */
        unsigned options;     /* VerbOptions */
        int failure_status;   /* the exit status of a failure: EXIT_FAILURE unless set */
        VerbFunction run;
} Verb;

#define DIFF_EXIT_TROUBLE 2 /* as diff(1) */

static const Verb verbs[] = {
        { "status", 0, 0, .run = verb_status },
        { "tree", 0, 1, 0, VERB_FILE, .run = verb_tree },
        { "ps", 0, 0, .run = verb_ps },
        { "show", 1, 1, 0, VERB_FILE, .run = verb_show },
        { "chain", 1, 1, 1, VERB_FILE, .run = verb_chain },
        { "check", 2, 2 + 6, 2, VERB_FILE, .run = verb_check },
        { "monitor", 0, 0, .run = verb_monitor },
        { "graph", 0, 1, 0, VERB_FILE, .run = verb_graph },
        { "rescan", 0, 0, .run = verb_rescan },
        { "snapshot", 0, 1, 0, VERB_SNAPSHOT, .run = verb_snapshot },
        { "snapshots", 0, 0, .run = verb_snapshots },
        { "export", 2, 2, 0, VERB_FORMAT, .run = verb_export },
        { "import", 1, 1, .run = verb_import },
        { "rm", 1, 1, .run = verb_rm },
        { "validate", 1, 1, .run = verb_validate },
        { "diff", 2, 2, .failure_status = DIFF_EXIT_TROUBLE, .run = verb_diff },
        { "plan", 1, 1, .run = verb_plan },
        { "policy", 1, 1, 1, VERB_FILE | VERB_FORMAT | VERB_ARCH | VERB_APPROXIMATE, .run = verb_policy },
        { "who-can", 1, 1 + 6, 1, VERB_FILE | VERB_ARCH | VERB_ACTION, .run = verb_who_can },
        { "policy-diff", 2, 2, 0, VERB_ARCH, .failure_status = DIFF_EXIT_TROUBLE, .run = verb_policy_diff },
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
               "  policy TID              Everything the task's chain decides, for all arguments: each\n"
               "                          system call always allowed, always denied, or by condition\n"
               "  who-can SYSCALL [ARG...]\n"
               "                          The tasks whose chain lets that call run (for these arguments,\n"
               "                          or with the condition on them), grouped by chain\n"
               "  policy-diff A B         The system calls two tasks' chains decide differently (A, B: a\n"
               "                          live TID, or FILE:TID of a snapshot); exit 0 same, 1 different\n"
               "\n"
               "Snapshots stored by the daemon:\n"
               "  snapshot [PID]          Take a snapshot of PID's subtree (default: the whole machine);\n"
               "                          prints its id\n"
               "  snapshots               The stored snapshots: id, name, when, owner, root, counts\n"
               "  export ID FILE          Write snapshot ID to FILE (- for stdout), SQLite or JSON\n"
               "  import FILE             Store the snapshot in FILE (- for stdin); prints its id\n"
               "  rm ID                   Delete snapshot ID\n"
               "\n"
               "Snapshot files, without the daemon:\n"
               "  show --file F [FILTER]  The snapshot's metadata, or one of its filters\n"
               "  tree|graph --file F [PID], chain --file F TID, check --file F TID SYSCALL [ARG...],\n"
               "  policy --file F TID, who-can --file F SYSCALL [ARG...]\n"
               "                          As above, on the snapshot in F\n"
               "  validate F              Check F as an import would: \"valid: ...\" or why not\n"
               "  diff A B                What changed between two snapshots (files, or stored ids);\n"
               "                          exit 0 same, 1 different, 2 trouble\n"
               "  plan F                  What a restore of F will do, step by step (or why it cannot)\n"
               "\n"
               "Options:\n"
               "     --json               Print one JSON document (monitor: one object per line)\n"
               "     --no-legend          Leave out column headers and footers\n"
               "     --no-pager           Accepted; sectreectl never pages\n"
               "     --counts             graph: task counts in filter nodes, no process nodes\n"
               "     --file F             tree, graph, show, chain, check: read snapshot file F (- stdin)\n"
               "     --name N             snapshot: give it a name\n"
               "     --no-argv            snapshot: leave out the processes' command lines\n"
               "     --format FMT         export: sqlite or json (default: from FILE's name, .json\n"
               "                          for JSON, else SQLite); policy: oci, an OCI runtime-spec\n"
               "                          linux.seccomp profile\n"
               "     --approximate        policy --format=oci: give the profile even where it cannot be\n"
               "                          exact (what is not is said on stderr)\n"
               "     --action ACTION      who-can: the tasks that get ACTION (e.g. USER_NOTIF, ERRNO,\n"
               "                          ERRNO(1)) instead of those whose call runs (ALLOW or LOG)\n"
               "     --arch ARCH          policy, who-can, policy-diff: this architecture (x86_64, x86,\n"
               "                          x32, ...) only\n"
               "  -h --help               Show this help\n"
               "     --version            Show the version\n"
               "\n"
               "Exit status: 0 success, 1 failure, 2 bad usage (diff: 0 same, 1 different, 2 trouble).\n");
}

enum { ARG_VERSION = 0x100, ARG_JSON, ARG_NO_LEGEND, ARG_NO_PAGER, ARG_COUNTS, ARG_APPROXIMATE, ARG_FILE, ARG_NAME,
       ARG_NO_ARGV, ARG_FORMAT, ARG_ACTION, ARG_ARCH };

/* Returns 1 to go on, 0 to exit successfully (help, version), ERR_USAGE on bad usage. */
static int parse_args(int argc, char *argv[], Context *c) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "json", no_argument, NULL, ARG_JSON },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "no-pager", no_argument, NULL, ARG_NO_PAGER },
                { "counts", no_argument, NULL, ARG_COUNTS },
                { "file", required_argument, NULL, ARG_FILE },
                { "name", required_argument, NULL, ARG_NAME },
                { "no-argv", no_argument, NULL, ARG_NO_ARGV },
                { "format", required_argument, NULL, ARG_FORMAT },
                { "approximate", no_argument, NULL, ARG_APPROXIMATE },
                { "action", required_argument, NULL, ARG_ACTION },
                { "arch", required_argument, NULL, ARG_ARCH },
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
                case ARG_FILE:
                        c->file = optarg;
                        break;
                case ARG_NAME:
                        c->snapshot_name = optarg;
                        break;
                case ARG_NO_ARGV:
                        c->no_argv = true;
                        break;
                case ARG_FORMAT:
                        c->format = optarg;
                        break;
                case ARG_APPROXIMATE:
                        c->approximate = true;
                        break;
                case ARG_ACTION:
                        c->action = optarg;
                        break;
                case ARG_ARCH:
                        c->arch = optarg;
                        break;
                case '?':
                        if (optopt >= ARG_FILE && optopt <= ARG_ARCH)
                                return usage_error("Option '%s' needs an argument", argv[optind - 1]);
                        __attribute__((fallthrough));
                default:
                        return usage_error("Unknown option '%s'", argv[optind - 1]);
                }
        return 1;
}

static bool given_file(const Context *c) {
        return c->file;
}
static bool given_name(const Context *c) {
        return c->snapshot_name;
}
static bool given_no_argv(const Context *c) {
        return c->no_argv;
}
static bool given_format(const Context *c) {
        return c->format;
}
static bool given_approximate(const Context *c) {
        return c->approximate;
}
static bool given_action(const Context *c) {
        return c->action;
}
static bool given_arch(const Context *c) {
        return c->arch;
}

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return &verbs[i];
        return NULL;
}

/* The verb-specific options given that v does not take. */
static int check_verb_options(const Context *c, const Verb *v) {
        static const struct {
                unsigned option;
                const char *name;
                bool (*given)(const Context *c);
        } table[] = {
                { VERB_FILE, "--file", given_file },
                { VERB_SNAPSHOT, "--name", given_name },
                { VERB_SNAPSHOT, "--no-argv", given_no_argv },
                { VERB_FORMAT, "--format", given_format },
                { VERB_APPROXIMATE, "--approximate", given_approximate },
                { VERB_ARCH, "--arch", given_arch },
                { VERB_ACTION, "--action", given_action },
        };
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (!(v->options & table[i].option) && table[i].given(c))
                        return usage_error("'%s' does not take %s", v->name, table[i].name);
        return 0;
}

static int dispatch(Context *c, char **args, size_t n, const Verb **ret_verb) {
        if (n == 0)
                return usage_error("No verb given");
        const Verb *v = verb_find(args[0]);
        if (!v)
                return usage_error("Unknown verb '%s'", args[0]);
        *ret_verb = v;
        int r = check_verb_options(c, v);
        if (r < 0)
                return r;
        if (n - 1 < (c->file ? v->min_args_file : v->min_args))
                return usage_error("Too few arguments for '%s'", v->name);
        if (n - 1 > v->max_args)
                return usage_error("Too many arguments for '%s'", v->name);
        return v->run(c, args + 1, n - 1);
}

int main(int argc, char *argv[]) {
        _cleanup_(context_done) Context c = { .legend = true };
        const Verb *v = NULL;
        setlocale(LC_ALL, "");

        int r = parse_args(argc, argv, &c);
        if (r <= 0)
                return r == 0 ? EXIT_SUCCESS : EXIT_USAGE;
        r = dispatch(&c, argv + optind, (size_t) (argc - optind), &v);
        if (r == ERR_USAGE)
                return EXIT_USAGE;
        if (r < 0)
                return v && v->failure_status ? v->failure_status : EXIT_FAILURE;
        return r; /* 0, or a verb's own status (diff: 1 for different) */
}
