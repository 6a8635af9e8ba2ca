/* sectreectl.c: the client's entry point: the verb table (each row with its help), options and
 * exit codes */
#include <getopt.h>
#include <locale.h>
#include <pwd.h>

#include "config.h"
#include "core/escape.h"
#include "output.h"
#include "ctl-args.h"
#include "help.h"
#include "json-out.h"
#include "verbs-check.h"
#include "verbs-complete.h"
#include "verbs-filter.h"
#include "verbs-graph.h"
#include "verbs-monitor.h"
#include "verbs-plan.h"
#include "verbs-audit.h"
#include "verbs-policy-diff.h"
#include "verbs-policy-who.h"
#include "verbs-policy.h"
#include "verbs-restore.h"
#include "verbs-snapshot-file.h"
#include "verbs-snapshots.h"
#include "verbs-status.h"
#include "verbs-tasks.h"
#include "table.h"
#include "verbs-tree.h"
#include "verbs-units.h"

#define DIFF_EXIT_TROUBLE 2 /* as diff(1) */

static int verb_help(Context *c, char **args, size_t n_args);
static int verb_complete(Context *c, char **args, size_t n_args);

/* One row per verb: name, arguments (min, max, min with --file), the options it takes, its
 * failure status, what runs it; then its help. A row without help is listed under "Other verbs". */
static const Verb verbs[] = {
        { "status", 0, 0, .run = verb_status, .group = VERB_GROUP_LIVE,
          .summary = "The daemon's version, backend and counts (the default)",
          .help = "Prints the daemon's properties: its version, backend (bpf or ptrace), identity\n"
                  "(exact or inferred), the numbers of tasks, filters and listeners in the whole\n"
                  "forest, and when the last full scan ended. `sectreectl` without a verb does the\n"
                  "same.\n" },
        { "tree", 0, 1, 0, VERB_FILE | VERB_UNITS | VERB_ALL, .run = verb_tree, .complete = "pids", .group = VERB_GROUP_LIVE,
          .usage = "[PID]\n--file=FILE [PID]",
          .summary = "Filters nested under their parents, with processes",
          .help = "Without PID: every process with a thread in filter or strict mode. With PID (a\n"
                  "thread id stands for its process): that process and its filtered descendants,\n"
                  "also below processes without filters, and every filter their chains reach. Each\n"
                  "filter says how many threads have it as their head (the newest filter,\n"
                  "evaluated first) and how many have it anywhere in their chain: \"[head of 0, in\n"
                  "the chains of 3 tasks]\". A snapshot also names who holds each listener\n"
                  "(\"listener 1 held by supervisor[812] fd 5\"), and lists the processes of the\n"
                  "subtree that run under no filter.\n"
                  "\n"
                  "Options:\n"
                  "     --file=FILE          The forest of the snapshot in FILE (- for stdin)\n"
                  "     --all                Every process on its own line (on a terminal, alike\n"
                  "                          processes under one filter share one: 20*[sleep])\n"
                  "     --unit=GLOB          Only the processes of units (or user units) matching\n"
                  "                          GLOB\n"
                  "     --machine=GLOB       Only those of machines (containers) matching GLOB\n"
                  "     --user=USER          Only those of USER's user slice (a name or a uid)\n" },
        { "units", 0, 0, .options = VERB_UNITS, .run = verb_units, .group = VERB_GROUP_LIVE,
          .usage = "",
          .summary = "Each unit or container: its tasks, chains, a verdict",
          .help = "Columns: UNIT MACHINE TASKS CHAINS VERDICT. UNIT is the process's systemd\n"
                  "unit (user@1000.service/app.service for a user unit under its manager),\n"
                  "MACHINE the container (machined's name, or the machine-NAME.scope's), CHAINS\n"
                  "the distinct chains of its tasks, VERDICT a summary: \"unconfined\", or\n"
                  "\"2 filters, denies ptrace, bpf\" for the calls among ptrace, bpf, mount,\n"
                  "kexec_load, init_module and perf_event_open that every chain denies (ERRNO,\n"
                  "TRAP or KILL), with \"; 2 tasks unconfined\" for its tasks without filters.\n"
                  "TASKS counts those too. A unit is listed when the daemon lists a process of\n"
                  "it; with --unit, --machine or --user, every unit they name is.\n"
                  "\n"
                  "Options:\n"
                  "     --unit=GLOB          Only the units the glob matches\n"
                  "     --machine=GLOB       Only the containers the glob matches\n"
                  "     --user=USER          Only the units of USER's user manager\n" },
        { "ps", 0, VERB_ARGS_ANY, .options = VERB_UNITS, .run = verb_ps, .complete = "pids...", .group = VERB_GROUP_LIVE,
          .usage = "[PID|COMM...]",
          .summary = "The tasks under filters: tid, comm, mode, head filter",
          .help = "Columns: TID TGID PPID COMM MODE DEPTH FILTER UNIT. FILTER is the head of the\n"
                  "task's chain (the newest filter, the first one evaluated), - for none; DEPTH\n"
                  "the chain's length; UNIT the process's systemd unit, - for none. Arguments\n"
                  "choose the tasks shown: a number is a process (all of its listed threads) or a\n"
                  "thread, anything else a shell glob on the task's name (sectreectl ps 'chrom*'\n"
                  "4711); a task is shown when it matches any of them.\n"
                  "\n"
                  "Options:\n"
                  "     --unit=GLOB          Only the tasks of units (or user units) matching GLOB\n"
                  "     --machine=GLOB       Only those of machines (containers) matching GLOB\n"
                  "     --user=USER          Only those of USER's user slice (a name or a uid)\n" },
        { "show", 0, 1, 0, VERB_FILE | VERB_PID | VERB_RAW, .run = verb_show, .group = VERB_GROUP_LIVE,
          .complete = "filters",
          .usage = "FILTER\n--pid=TID\n--file=FILE [FILTER | --pid=TID]",
          .summary = "A filter's metadata and disassembly",
          .help = "Prints the filter's parent, length, digest (checked against the instructions),\n"
                  "flags, task count and identity, then its disassembly. With --pid: every filter\n"
                  "of the task's chain so, the head (evaluated first) first, as seccomp-tools dump\n"
                  "does. With --file and neither: the snapshot's own metadata (name, when and by\n"
                  "whom it was taken, host, counts).\n"
                  "\n"
                  "Options:\n"
                  "     --pid=TID            The whole chain of task TID\n"
                  "     --raw                Each instruction's CODE JT JF K before its\n"
                  "                          disassembly\n"
                  "     --file=FILE          A filter or task of the snapshot in FILE (- for\n"
                  "                          stdin)\n" },
        { "chain", 1, 1, 1, VERB_FILE, .run = verb_chain, .complete = "tids", .group = VERB_GROUP_LIVE,
          .usage = "TID\n--file=FILE TID",
          .summary = "A task's filters, newest (its head) first",
          .help = "Columns: POS ID LENGTH DIGEST FLAGS; position 0 is the head, evaluated first.\n"
                  "\n"
                  "Options:\n"
                  "     --file=FILE          A thread of the snapshot in FILE (- for stdin)\n" },
        { "check", 2, 2 + 6, 2, VERB_FILE | VERB_ARCH, .run = verb_check, .group = VERB_GROUP_LIVE,
          .complete = "tids syscalls",
          .usage = "TID SYSCALL [ARG...]\n--file=FILE TID SYSCALL [ARG...]",
          .summary = "What a task's filters do with a system call",
          .help = "SYSCALL is a name or a number (decimal or 0x hex); up to six arguments,\n"
                  "decimal, 0x hex or negative (put -- before negative arguments: sectreectl check\n"
                  "4711 openat -- -100 0). Every filter of the chain runs, and the kernel's\n"
                  "precedence picks the result: \"ERRNO(1: EPERM) - decided by filter 12 (position\n"
                  "0 of 3)\". A task without filters is ALLOW, or in strict mode KILL_THREAD for\n"
                  "anything but read, write, exit and rt_sigreturn.\n"
                  "\n"
                  "Options:\n"
                  "     --arch=ARCH          The call's architecture, as libseccomp names it\n"
                  "                          (x86_64, x86 or i386, x32, aarch64, ...); default:\n"
                  "                          the native one\n"
                  "     --file=FILE          A thread of the snapshot in FILE (- for stdin)\n" },
        { "monitor", 0, 0, 0, VERB_PID | VERB_COMM | VERB_SUBTREE, .run = verb_monitor, .group = VERB_GROUP_LIVE,
          .usage = "[--pid=PID] [--comm=NAME] [--subtree=PID]",
          .summary = "The daemon's signals as they come",
          .help = "One line per signal, with a local timestamp: FilterAttached, TaskAdded,\n"
                  "TaskExited, ProcessRenamed (after an exec or a rename), Resynced,\n"
                  "PropertiesChanged, SnapshotCreated, SnapshotDeleted, RestoreFinished, and\n"
                  "DaemonAppeared or DaemonVanished when org.sectree1 gets or loses its owner.\n"
                  "FilterAttached and TaskExited also say the task's process and name\n"
                  "(\"FilterAttached id=12 parent=none tid=4711 pid=4711 comm=worker\"); the\n"
                  "installer that FilterAttached names may have exited already. SIGINT or\n"
                  "SIGTERM end it (exit 0); losing the bus ends it with exit 1.\n"
                  "\n"
                  "Options:\n"
                  "     --pid=PID            Only the events of the tasks of process PID (or of\n"
                  "                          thread PID), and Resynced, DaemonAppeared,\n"
                  "                          DaemonVanished\n"
                  "     --comm=NAME          Only the events of tasks whose name matches NAME, a\n"
                  "                          shell glob, as the signal names them or as they\n"
                  "                          are named since (ProcessRenamed); with --pid,\n"
                  "                          both must match\n"
                  "     --subtree=PID        Only the events of the processes in PID's subtree\n"
                  "                          (as the daemon says at a process's first event),\n"
                  "                          and Resynced, DaemonAppeared, DaemonVanished\n" },
        { "graph", 0, 1, 0, VERB_FILE | VERB_COUNTS | VERB_ALL, .run = verb_graph, .complete = "pids", .group = VERB_GROUP_LIVE,
          .usage = "[PID]\n--file=FILE [PID]",
          .summary = "The forest as a Graphviz graph (| dot -Tsvg)",
          .help = "Drawn left to right: root filters on the left, each filter with an arrow to the\n"
                  "filter it was stacked on (id, length, digest, flags; dashed when identity is\n"
                  "inferred), the processes on the right with an arrow to the head filter of their\n"
                  "threads. Byte-identical filters that are distinct kernel objects (copies) are\n"
                  "filled with one colour, so copies stand out from shared objects. A snapshot's\n"
                  "listeners are drawn with their holders. PID restricts it as for tree.\n"
                  "sectreectl graph | dot -Tsvg > forest.svg draws it.\n"
                  "\n"
                  "Options:\n"
                  "     --counts             No processes: task counts in the filter boxes instead\n"
                  "     --file=FILE          The forest of the snapshot in FILE (- for stdin)\n" },
        { "rescan", 0, 0, .run = verb_rescan, .group = VERB_GROUP_LIVE,
          .summary = "Re-read everything now (root only)",
          .help = "Returns when the full pass is stored.\n" },
        { "policy", 1, 1, 1, VERB_FILE | VERB_FORMAT | VERB_ARCH | VERB_APPROXIMATE, .run = verb_policy,
          .complete = "tids",
          .group = VERB_GROUP_LIVE,
          .usage = "TID\n--file=FILE TID\nFILE:TID\n--format=oci [--approximate] TID",
          .summary = "Everything a task's chain decides, for all arguments",
          .help = "For every system call of every architecture the chain tells apart: always\n"
                  "allowed, always denied (with the action), or conditional, with the condition on\n"
                  "the arguments under which each action is taken. Exact for all arguments: a\n"
                  "condition that cannot be said in that form is named (\"depends on arg2 through\n"
                  "...\"). FILE:TID is the task of a snapshot file, as --file=FILE TID.\n"
                  "\n"
                  "Options:\n"
                  "     --arch=ARCH          Only this architecture (x86_64, x86 or i386, x32)\n"
                  "     --format=oci         The policy as an OCI runtime-spec linux.seccomp\n"
                  "                          object; refused where it cannot be exact\n"
                  "     --approximate        With --format=oci: give the profile even where it\n"
                  "                          cannot be exact (what is not is said on stderr)\n"
                  "     --file=FILE          A thread of the snapshot in FILE (- for stdin)\n" },
        { "who-can", 1, 1 + 6, 1, VERB_FILE | VERB_ARCH | VERB_ACTION | VERB_UNITS, .run = verb_who_can, .complete = "syscalls",
          .group = VERB_GROUP_LIVE,
          .usage = "SYSCALL [ARG...]\n--file=FILE SYSCALL [ARG...]",
          .summary = "The tasks whose chain lets a system call run",
          .help = "Every visible task whose chain allows SYSCALL: for the given arguments,\n"
                  "or, with none given, for some arguments (the condition is shown). Each\n"
                  "distinct chain is evaluated once; tasks are grouped by chain.\n"
                  "\n"
                  "Options:\n"
                  "     --action=ACTION      The tasks that get ACTION (e.g. USER_NOTIF, ERRNO,\n"
                  "                          ERRNO(1)) instead of those whose call runs\n"
                  "                          (ALLOW, LOG)\n"
                  "     --arch=ARCH          The call's architecture; default: the native one\n"
                  "     --unit=GLOB          Only the tasks of the units the glob matches (also\n"
                  "                          --machine=GLOB, --user=USER)\n"
                  "     --file=FILE          The tasks of the snapshot in FILE (- for stdin)\n" },
        { "audit", 0, 1, 0, VERB_FILE | VERB_AUDIT | VERB_UNITS, .failure_status = DIFF_EXIT_TROUBLE, .run = verb_audit,
          .complete = "tids", .group = VERB_GROUP_LIVE,
          .usage = "[TID | --unit=GLOB]\n--file=FILE [TID | --unit=GLOB]",
          .summary = "What is weakly confined, and why, chain by chain",
          .help = "Each distinct chain (or TID's) is decided once and its weaknesses listed, each\n"
                  "proven from the chain with an input that shows it: ABI bypasses and a missing\n"
                  "architecture check, equivalent calls left open, dangerous calls allowed (with\n"
                  "their condition), USER_NOTIF without a listener, LOG-only filters, and calls\n"
                  "the baseline profile denies. A TID under no filter is said to be not\n"
                  "confined. Exit status: 0 nothing at or above --severity, 1 something (or a\n"
                  "TID not confined), 2 trouble.\n"
                  "\n"
                  "Options:\n"
                  "     --severity=LEVEL     The least severe finding that counts: info, low,\n"
                  "                          medium (default), high\n"
                  "     --baseline=FILE      An OCI seccomp profile to compare with; default:\n"
                  "                          containers-common's, where installed\n"
                  "     --unit=GLOB          Only the chains of the units the glob matches (also\n"
                  "                          --machine=GLOB, --user=USER)\n"
                  "     --file=FILE          The tasks of the snapshot in FILE (- for stdin)\n" },
        { "policy-diff", 2, 2, 0, VERB_ARCH, .failure_status = DIFF_EXIT_TROUBLE, .run = verb_policy_diff,
          .complete = "tids tids",
          .group = VERB_GROUP_LIVE,
          .usage = "A B",
          .summary = "The system calls two tasks' chains decide differently",
          .help = "A and B are live task ids or FILE:TID of a snapshot file. Each difference shows\n"
                  "both sides' cases. Exit status as diff(1): 0 same, 1 different, 2 trouble.\n"
                  "\n"
                  "Options:\n"
                  "     --arch=ARCH          Only this architecture\n" },
        { "snapshot", 0, 1, 0, VERB_SNAPSHOT, .run = verb_snapshot, .complete = "pids", .group = VERB_GROUP_SNAPSHOT,
          .usage = "[PID]",
          .summary = "Take and store a snapshot; prints its id",
          .help = "A snapshot of PID's subtree (a thread id stands for its process), or of the\n"
                  "whole machine without PID; the daemon stores it. The new id alone is printed,\n"
                  "so that id=$(sectreectl snapshot 4711) works. Anyone may snapshot the processes\n"
                  "they could ptrace themselves.\n"
                  "\n"
                  "Options:\n"
                  "     --name=NAME          Name the snapshot (at most 256 bytes)\n"
                  "     --no-argv            Leave the processes' command lines out\n" },
        { "snapshots", 0, 0, .run = verb_snapshots, .group = VERB_GROUP_SNAPSHOT,
          .summary = "The stored snapshots",
          .help = "Columns: ID NAME CREATED OWNER ROOT PROCS THREADS FILTERS BACKEND IDENTITY.\n"
                  "Root sees every snapshot, anyone else their own.\n" },
        { "export", 2, 2, 0, VERB_FORMAT, .run = verb_export, .group = VERB_GROUP_SNAPSHOT,
          .complete = "snapshots files",
          .usage = "ID FILE",
          .summary = "Write a stored snapshot to FILE, SQLite or JSON",
          .help = "FILE (- for stdout) is replaced only once the export is complete and valid.\n"
                  "\n"
                  "Options:\n"
                  "     --format=FORMAT      sqlite or json (default: json for a FILE ending in\n"
                  "                          .json, sqlite otherwise)\n" },
        { "import", 1, 1, .run = verb_import, .complete = "files", .group = VERB_GROUP_SNAPSHOT,
          .usage = "FILE",
          .summary = "Store the snapshot in FILE; prints its id",
          .help = "FILE (- for stdin) may be in either format; the daemon validates it and stores\n"
                  "it as the caller's.\n" },
        { "rm", 1, 1, .run = verb_rm, .complete = "snapshots", .group = VERB_GROUP_SNAPSHOT,
          .usage = "ID",
          .summary = "Delete a stored snapshot" },
        { "validate", 1, 1, .run = verb_validate, .complete = "files", .group = VERB_GROUP_FILE,
          .usage = "FILE",
          .summary = "Check FILE as an import would",
          .help = "Exit 0 and \"valid: N processes, N threads, N filters\", or exit 1 with the\n"
                  "reason, which names the field and the element.\n" },
        { "diff", 2, 2, .failure_status = DIFF_EXIT_TROUBLE, .run = verb_diff, .group = VERB_GROUP_FILE,
          .complete = "snapshots|files snapshots|files",
          .usage = "A B",
          .summary = "What changed between two snapshots",
          .help = "A and B are files (- for stdin, for one of them) or stored snapshots' ids.\n"
                  "Filters are matched by digest and place in the forest, processes by pid and\n"
                  "start time. Exit status as diff(1): 0 no differences, 1 different, 2 trouble.\n" },
        { "plan", 1, 1, .run = verb_plan, .complete = "snapshots|files", .group = VERB_GROUP_FILE,
          .usage = "ID|FILE",
          .summary = "What a restore of a snapshot will do, step by step",
          .help = "The ordered steps a restore of the snapshot would run: which task installs\n"
                  "which filter, forks which child, creates which thread, or why the snapshot\n"
                  "cannot be restored exactly (naming the element). FILE (- for stdin) is read\n"
                  "offline; an ID (digits that name no file) is fetched from the daemon. The plan\n"
                  "is made as the caller: unprivileged, no_new_privs precedes installs.\n" },
        { "restore", 1, 1, 0, VERB_RESTORE, .run = verb_restore, .group = VERB_GROUP_SNAPSHOT,
          .complete = "snapshots|files",
          .usage = "ID|FILE",
          .summary = "Rebuild a snapshot, its filters shared as before",
          .help = "The daemon rebuilds the stored snapshot ID (a FILE, - for stdin, is imported\n"
                  "first) as a new process tree: every chain byte- and flag-identical, and two\n"
                  "tasks share a filter if and only if the originals did, which a scan of the\n"
                  "result verifies. The tasks run as you and park until `sectreectl release ID`\n"
                  "(the restore outlives this command). Prints the restore id, the verification\n"
                  "and which pid and tid each snapshot process and thread became. Exit status 1\n"
                  "when the restore is not verified (it is kept, to look at).\n"
                  "\n"
                  "Options:\n"
                  "     --exec=PID=COMMAND   The restored process of snapshot pid PID execs\n"
                  "                          COMMAND (split into words as a shell would;\n"
                  "                          repeatable)\n"
                  "     --original-uids      The snapshot's uids and gids (root only)\n"
                  "     --pid-namespace      A new pid namespace where tasks get their snapshot\n"
                  "                          tids (root only)\n" },
        { "restores", 0, 0, .run = verb_restores, .group = VERB_GROUP_SNAPSHOT,
          .summary = "The restores alive",
          .help = "Columns: ID SNAPSHOT OWNER ROOT PROCS VERIFIED STATE. ROOT is the restore root,\n"
                  "the parent of the restored top processes. Root sees every restore, anyone else\n"
                  "their own.\n" },
        { "release", 1, 1, .run = verb_release, .complete = "restores", .group = VERB_GROUP_SNAPSHOT,
          .usage = "ID",
          .summary = "End a restore's parked tasks",
          .help = "Returns once every parked task of restore ID is gone; processes that exec'd a\n"
                  "command are left alone, but in a pid namespace (restore --pid-namespace) whose\n"
                  "init, the restore root, was parked: the kernel ends them all with it.\n" },
        { "run", 1, VERB_ARGS_ANY, 0, VERB_LIKE, .run = verb_run, .group = VERB_GROUP_SNAPSHOT,
          .complete = "commands files...",
          .usage = "--like=TID -- COMMAND [ARGS]...",
          .summary = "Run a command under a copy of a task's chain",
          .help = "A one-task snapshot of TID restored with an exec: COMMAND runs under copies of\n"
                  "exactly the filters TID runs under now, to see what a program would do in that\n"
                  "sandbox. Its stdin, stdout and stderr are sectreectl's own (the caller's\n"
                  "terminal or pipes). Waits for COMMAND to end, then releases the restore.\n"
                  "\n"
                  "Options:\n"
                  "     --like=TID           The task whose chain to copy\n" },
        { "help", 0, 1, .run = verb_help, .complete = "verbs", .group = VERB_GROUP_OTHER,
          .usage = "[VERB]",
          .summary = "This help, or a verb's" },
        /* the words the shell completions offer: for a command line (line -- WORD...; the last word
         * is the one completed), or of a kind: verbs, options [VERB], pids, tids, filters, snapshots,
         * restores, syscalls [ARCH] */
        { "__complete", 1, VERB_ARGS_ANY, .run = verb_complete, .group = VERB_GROUP_HIDDEN,
          .usage = "KIND [ARG]\nline -- WORD..." },
};

static const VerbTable verb_table = { verbs, ELEMENTSOF(verbs) };

static int verb_help(Context *c, char **args, size_t n_args) {
        if (n_args == 0) {
                help_print_overview(&verb_table, stdout);
                return output_flush();
        }
        const Verb *v = verb_table_find(&verb_table, args[0]);
        if (!v) {
                const Verb *near = verb_table_suggest(&verb_table, args[0]);
                if (near)
                        return usage_error_full("Unknown verb '%s'; did you mean '%s'?", args[0], near->name);
                return usage_error("Unknown verb '%s'", args[0]);
        }
        help_print_verb(v, stdout);
        return output_flush();
}

/* ---- options ---- */

enum {
        ARG_VERSION = 0x100,
        ARG_JSON,
        ARG_NO_LEGEND,
        ARG_NO_PAGER,
        ARG_COUNTS,
        ARG_FILE,
        ARG_NAME,
        ARG_NO_ARGV,
        ARG_FORMAT,
        ARG_ARCH,
        ARG_PID,
        ARG_COMM,
        ARG_RAW,
        ARG_APPROXIMATE,
        ARG_ACTION,
        ARG_EXEC,
        ARG_ORIGINAL_UIDS,
        ARG_PID_NAMESPACE,
        ARG_LIKE,
        ARG_OUTPUT,
        ARG_ALL,
        ARG_UNIT,
        ARG_MACHINE,
        ARG_USER,
        ARG_SUBTREE,
        ARG_SEVERITY,
        ARG_BASELINE,
};

static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        { "json", optional_argument, NULL, ARG_JSON },
        { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
        { "no-pager", no_argument, NULL, ARG_NO_PAGER },
        { "counts", no_argument, NULL, ARG_COUNTS },
        { "file", required_argument, NULL, ARG_FILE },
        { "name", required_argument, NULL, ARG_NAME },
        { "no-argv", no_argument, NULL, ARG_NO_ARGV },
        { "format", required_argument, NULL, ARG_FORMAT },
        { "arch", required_argument, NULL, ARG_ARCH },
        { "pid", required_argument, NULL, ARG_PID },
        { "comm", required_argument, NULL, ARG_COMM },
        { "raw", no_argument, NULL, ARG_RAW },
        { "approximate", no_argument, NULL, ARG_APPROXIMATE },
        { "action", required_argument, NULL, ARG_ACTION },
        { "exec", required_argument, NULL, ARG_EXEC },
        { "original-uids", no_argument, NULL, ARG_ORIGINAL_UIDS },
        { "pid-namespace", no_argument, NULL, ARG_PID_NAMESPACE },
        { "like", required_argument, NULL, ARG_LIKE },
        { "output", required_argument, NULL, ARG_OUTPUT },
        { "all", no_argument, NULL, ARG_ALL },
        { "unit", required_argument, NULL, ARG_UNIT },
        { "machine", required_argument, NULL, ARG_MACHINE },
        { "user", required_argument, NULL, ARG_USER },
        { "subtree", required_argument, NULL, ARG_SUBTREE },
        { "severity", required_argument, NULL, ARG_SEVERITY },
        { "baseline", required_argument, NULL, ARG_BASELINE },
        {}
};

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
static bool given_counts(const Context *c) {
        return c->graph_counts;
}
static bool given_arch(const Context *c) {
        return c->arch;
}
static bool given_pid(const Context *c) {
        return c->pid;
}
static bool given_comm(const Context *c) {
        return c->comm;
}
static bool given_raw(const Context *c) {
        return c->raw;
}
static bool given_approximate(const Context *c) {
        return c->approximate;
}
static bool given_action(const Context *c) {
        return c->action;
}
static bool given_severity(const Context *c) {
        return c->severity;
}
static bool given_baseline(const Context *c) {
        return c->baseline;
}
static bool given_exec(const Context *c) {
        return c->exec;
}
static bool given_original_uids(const Context *c) {
        return c->original_uids;
}
static bool given_pid_namespace(const Context *c) {
        return c->pid_namespace;
}
static bool given_like(const Context *c) {
        return c->like;
}

static bool given_unit(const Context *c) {
        return c->unit || c->machine || c->user;
}

static bool given_all(const Context *c) {
        return c->all;
}

static bool given_subtree(const Context *c) {
        return c->subtree;
}

/* Every option: the common ones first (their help is sectreectl --help's), then each
 * VerbOptions bit's, which a verb that does not list it refuses. The completions offer them. */
static const OptionWord option_words[] = {
        { "--json", 0, "print JSON (pretty, short or off)" },
        { "--no-legend", 0, "no headers" },
        { "--no-pager", 0, "no pager" },
        { "--output", 0, "the table's columns" },
        { "--help", 0, "this verb's help" },
        { "--version", OPTION_BEFORE_VERB, "the version" },
        { "--file", VERB_FILE, "read a snapshot file", given_file },
        { "--name", VERB_SNAPSHOT, "name the snapshot", given_name },
        { "--no-argv", VERB_SNAPSHOT, "leave command lines out", given_no_argv },
        { "--format", VERB_FORMAT, "sqlite or json (export), oci (policy)", given_format },
        { "--counts", VERB_COUNTS, "task counts instead of processes", given_counts },
        { "--arch", VERB_ARCH, "the call's architecture", given_arch },
        { "--pid", VERB_PID, "a process or task", given_pid },
        { "--comm", VERB_COMM, "a task name (glob)", given_comm },
        { "--raw", VERB_RAW, "CODE JT JF K columns", given_raw },
        { "--approximate", VERB_APPROXIMATE, "a profile even where not exact", given_approximate },
        { "--action", VERB_ACTION, "the action looked for", given_action },
        { "--severity", VERB_AUDIT, "the least severe finding that counts", given_severity },
        { "--baseline", VERB_AUDIT, "an OCI profile to compare with", given_baseline },
        { "--exec", VERB_RESTORE, "PID=COMMAND: what a process execs", given_exec },
        { "--original-uids", VERB_RESTORE, "the snapshot's uids (root)", given_original_uids },
        { "--pid-namespace", VERB_RESTORE, "snapshot tids in a new pid namespace (root)", given_pid_namespace },
        { "--like", VERB_LIKE, "the task whose chain to copy", given_like },
        { "--unit", VERB_UNITS, "a unit (glob)", given_unit },
        { "--machine", VERB_UNITS, "a machine or container (glob)", given_unit },
        { "--user", VERB_UNITS, "the user of a user slice", given_unit },
        { "--all", VERB_ALL, "every process on its own line", given_all },
        { "--subtree", VERB_SUBTREE, "a process's subtree", given_subtree },
};

static int verb_complete(Context *c, char **args, size_t n_args) {
        const char *kind = args[0], *arg = n_args > 1 ? args[1] : NULL;
        if (streq(kind, "line")) {
                const CompleteTables t = { &verb_table, options, option_words, ELEMENTSOF(option_words) };
                return complete_line(c, &t, args + 1, n_args - 1);
        }
        if (n_args > 2)
                return usage_error("Too many arguments for '__complete %s'", kind);
        if (streq(kind, "verbs")) {
                char *words[] = { (char *) "" };
                const CompleteTables t = { &verb_table, options, option_words, ELEMENTSOF(option_words) };
                return complete_line(c, &t, words, 1);
        }
        if (streq(kind, "options")) {
                /* the options of VERB (none: before a verb) */
                char *words[] = { (char *) arg, (char *) "-" };
                const CompleteTables t = { &verb_table, options, option_words, ELEMENTSOF(option_words) };
                return arg ? complete_line(c, &t, words, 2) : complete_line(c, &t, words + 1, 1);
        }
        return complete_words(c, kind, arg);
}

/* Say what is wrong with an unknown option, suggesting the nearest one. */
static int unknown_option(const char *arg) {
        if (arg[0] == '-' && arg[1] >= '0' && arg[1] <= '9')
                return usage_error_full("Negative number '%s' taken for an option: put -- before negative arguments, "
                                   "e.g. sectreectl check PID SYSCALL -- -100 0",
                                   arg);
        if (strncmp(arg, "--", 2) == 0) {
                const char *names[ELEMENTSOF(options)];
                size_t n = 0;
                char name[64];
                snprintf(name, sizeof(name), "%.*s", (int) strcspn(arg + 2, "="), arg + 2);
                for (size_t i = 0; options[i].name; i++)
                        names[n++] = options[i].name;
                names[n] = NULL;
                const char *near = word_suggest(names, name);
                if (near)
                        return usage_error_full("Unknown option '%s'; did you mean '--%s'?", arg, near);
        }
        return usage_error("Unknown option '%s'", arg);
}

/* The argument getopt complained about: the first argument before "--" that is an option
 * getopt_long does not know (it does not say which element it was for a short option). */
static const char *find_unknown_option(int argc, char *argv[]) {
        for (int i = 1; i < argc && !streq(argv[i], "--"); i++) {
                const char *a = argv[i];
                if (a[0] != '-' || a[1] == 0)
                        continue;
                if (a[1] == '-') {
                        size_t l = strcspn(a + 2, "=");
                        bool known = false;
                        for (size_t k = 0; options[k].name && !known; k++)
                                known = strlen(options[k].name) == l && strncmp(options[k].name, a + 2, l) == 0;
                        if (!known)
                                return a;
                } else if (strspn(a + 1, "h") != strlen(a + 1))
                        return a;
        }
        return NULL;
}

static int parse_json_mode(const char *arg, Context *c) {
        JsonMode m = arg ? json_mode_from_string(arg) : JSON_MODE_AUTO;
        if (m < 0 || (arg && m == JSON_MODE_AUTO))
                return usage_error("Invalid --json=%s: expected pretty, short or off", arg);
        json_output_set_mode(m);
        c->json = m != JSON_MODE_OFF;
        return 0;
}

typedef struct Args {
        bool help, version;
} Args;

static int parse_option(int o, const char *arg, Context *c, Args *a) {
        switch (o) {
        case 'h':
                a->help = true;
                return 0;
        case ARG_VERSION:
                a->version = true;
                return 0;
        case ARG_JSON:
                return parse_json_mode(arg, c);
        case ARG_NO_LEGEND:
                c->legend = false;
                return 0;
        case ARG_NO_PAGER:
                c->no_pager = true;
                return 0;
        case ARG_OUTPUT:
                table_set_output(arg);
                return 0;
        case ARG_ALL:
                c->all = true;
                return 0;
        case ARG_UNIT:
                c->unit = arg;
                return 0;
        case ARG_MACHINE:
                c->machine = arg;
                return 0;
        case ARG_USER: {
                struct passwd pw, *found = NULL;
                char scratch[1024];
                uint64_t uid;
                if (safe_atou64(arg, &uid) < 0 &&
                    (getpwnam_r(arg, &pw, scratch, sizeof(scratch), &found) != 0 || !found))
                        return usage_error("Unknown user '%s' in --user (a uid matches any)", arg);
                c->user = arg;
                return 0;
        }
        case ARG_SUBTREE:
                return parse_pid_arg("process id", arg, &c->subtree);
        case ARG_COUNTS:
                c->graph_counts = true;
                return 0;
        case ARG_FILE:
                c->file = arg;
                return 0;
        case ARG_NAME:
                c->snapshot_name = arg;
                return 0;
        case ARG_NO_ARGV:
                c->no_argv = true;
                return 0;
        case ARG_FORMAT:
                c->format = arg;
                return 0;
        case ARG_ARCH:
                c->arch = arg;
                return 0;
        case ARG_PID:
                return parse_pid_arg("process id", arg, &c->pid);
        case ARG_COMM:
                c->comm = arg;
                return 0;
        case ARG_RAW:
                c->raw = true;
                return 0;
        case ARG_APPROXIMATE:
                c->approximate = true;
                return 0;
        case ARG_ACTION:
                c->action = arg;
                return 0;
        case ARG_SEVERITY:
                c->severity = arg;
                return 0;
        case ARG_BASELINE:
                c->baseline = arg;
                return 0;
        case ARG_EXEC: {
                size_t n = c->exec ? strv_length(c->exec) : 0;
                char **l = realloc(c->exec, (n + 2) * sizeof(char *));
                if (!l)
                        return log_oom();
                l[n] = (char *) arg;
                l[n + 1] = NULL;
                c->exec = l;
                return 0;
        }
        case ARG_ORIGINAL_UIDS:
                c->original_uids = true;
                return 0;
        case ARG_PID_NAMESPACE:
                c->pid_namespace = true;
                return 0;
        case ARG_LIKE:
                return parse_pid_arg("task id", arg, &c->like);
        }
        return -EINVAL;
}

/* Returns 0 or ERR_USAGE. */
static int parse_args(int argc, char *argv[], Context *c, Args *a) {
        int o;
        opterr = 0;
        while ((o = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (o == '?' || o == ':') {
                        const char *bad = find_unknown_option(argc, argv), *given = argv[optind - 1];
                        if (bad)
                                return unknown_option(bad);
                        if (strncmp(given, "--", 2) == 0 && strchr(given, '='))
                                return usage_error("Option '%.*s' takes no value", (int) strcspn(given, "="), given);
                        return usage_error("Option '%s' needs an argument", given);
                }
                int r = parse_option(o, optarg, c, a);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The verb-specific options given that v does not take. */
static int check_verb_options(const Context *c, const Verb *v) {
        for (size_t i = 0; i < ELEMENTSOF(option_words); i++) {
                const OptionWord *w = &option_words[i];
                if (w->given && !(v->options & w->verb_option) && w->given(c))
                        return usage_error_full("'%s' does not take %s (see sectreectl help %s)", v->name, w->name,
                                                v->name);
        }
        return 0;
}

static int find_verb(const char *name, const Verb **ret) {
        const Verb *v = verb_table_find(&verb_table, name);
        if (v) {
                *ret = v;
                return 0;
        }
        const Verb *near = verb_table_suggest(&verb_table, name);
        if (near)
                return usage_error_full("Unknown verb '%s'; did you mean '%s'?", name, near->name);
        return usage_error("Unknown verb '%s'", name);
}

static int dispatch(Context *c, const Args *a, char **args, size_t n, const Verb **ret_verb) {
        const Verb *v = NULL;
        if (n > 0 && find_verb(args[0], &v) < 0)
                return ERR_USAGE;
        if (a->help) {
                if (v)
                        help_print_verb(v, stdout);
                else
                        help_print_overview(&verb_table, stdout);
                return output_flush();
        }
        if (v)
                args++, n--;
        else /* no verb: status, as systemctl without one lists units */
                v = verb_table_find(&verb_table, "status");
        *ret_verb = v;
        int r = check_verb_options(c, v);
        if (r < 0)
                return r;
        if (n < (c->file ? v->min_args_file : v->min_args))
                return usage_error_full("Too few arguments for '%s' (usage: sectreectl %s %.*s)", v->name, v->name,
                                   (int) strcspn(v->usage ? v->usage : "", "\n"), v->usage ? v->usage : "");
        if (v->max_args != VERB_ARGS_ANY && n > v->max_args)
                return usage_error("Too many arguments for '%s'", v->name);
        return v->run(c, args, n);
}

int main(int argc, char *argv[]) {
        _cleanup_(context_done) Context c = { .legend = true };
        Args a = {};
        const Verb *v = NULL;
        setlocale(LC_ALL, "");
        escape_set_ascii_only(!locale_is_utf8());

        int r = parse_args(argc, argv, &c, &a);
        if (r < 0)
                return EXIT_USAGE;
        if (a.version) {
                printf("sectreectl %s\n", PACKAGE_VERSION);
                return output_flush() < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        r = dispatch(&c, &a, argv + optind, (size_t) (argc - optind), &v);
        if (r == ERR_USAGE)
                return EXIT_USAGE;
        if (r < 0)
                return v && v->failure_status ? v->failure_status : EXIT_FAILURE;
        return r; /* 0, or a verb's own status (diff: 1 for different) */
}
