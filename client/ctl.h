/* ctl.h: what every sectreectl verb shares: the run context, the usage-error convention, the verbs */
#pragma once

#include <systemd/sd-bus.h>

#include "core/util.h"

#define EXIT_USAGE 2

/* A verb returns this (after saying why) for bad usage: main() then exits with EXIT_USAGE.
 * It lies outside the errno range, so it never collides with a failure. */
#define ERR_USAGE (-4096)

typedef struct Context {
        bool json;         /* --json (any mode but off): print JSON; json-out.c knows pretty from short */
        bool legend;
        bool graph_counts; /* graph: task counts in the filter nodes instead of process nodes */
        const char *file;  /* --file: tree, graph, show, chain, check read this snapshot file, no daemon */
        const char *snapshot_name; /* snapshot --name */
        bool no_argv;      /* snapshot --no-argv */
        const char *format; /* export --format: "sqlite" or "json"; NULL: from the file name; policy: "oci" */
        uint32_t pid;      /* show --pid: the chain of this task; monitor --pid: only its events */
        const char *comm;  /* monitor --comm: only the events of tasks with this name (a glob) */
        bool raw;          /* show --raw: CODE JT JF K columns besides the disassembly */
        const char *action; /* who-can --action: the action looked for; NULL: the call runs */
        const char *arch;   /* check, policy, who-can --arch: libseccomp's name; NULL: native (check, who-can), all (policy) */
        bool approximate;   /* policy --format=oci --approximate: give a profile that is not exact */
        char **exec;        /* restore --exec PID=CMD, in order (NULL-terminated; the strings are argv's) */
        bool original_uids; /* restore --original-uids */
        bool pid_namespace; /* restore --pid-namespace */
        uint32_t like;      /* run --like PID */
        sd_bus *bus;       /* connected on first use by ctl_bus() */
} Context;

void context_done(Context *c);

/* The system bus (DBUS_SYSTEM_BUS_ADDRESS is honoured), connected on the first call. Logs. */
int ctl_bus(Context *c, sd_bus **ret);

/* ListTasks, ListFilters and ListSnapshots on the system bus (connected on first use). Log. */
typedef struct TaskList TaskList;
typedef struct FilterList FilterList;
typedef struct SnapshotList SnapshotList;
int ctl_list_tasks(Context *c, TaskList *ret);
int ctl_list_filters(Context *c, FilterList *ret);
int ctl_list_snapshots(Context *c, SnapshotList *ret);

/* Say what is wrong with the command line, followed by "(try --help)", and return ERR_USAGE. */
int usage_error(const char *format, ...) _printf_(1, 2);
/* The same for a message that says itself what to do (a suggestion, the usage): no hint added. */
int usage_error_full(const char *format, ...) _printf_(1, 2);

#define ctl_error_errno(r, fmt, ...) log_error_errno((r), "sectreectl: " fmt, ##__VA_ARGS__)
#define ctl_error(fmt, ...) log_error("sectreectl: " fmt, ##__VA_ARGS__)

/* Command line values: a tid or pid (> 0, fits pid_t) and a filter id (> 0). Usage errors. */
int parse_pid_arg(const char *what, const char *s, uint32_t *ret);
int parse_filter_id_arg(const char *s, uint64_t *ret);
int parse_snapshot_id_arg(const char *s, uint64_t *ret);
/* A system call argument: decimal, hex with 0x, or negative decimal (a 64-bit two's complement). */
int parse_syscall_arg(const char *s, uint64_t *ret);

typedef int (*VerbFunction)(Context *c, char **args, size_t n_args);

int verb_status(Context *c, char **args, size_t n_args);
int verb_tree(Context *c, char **args, size_t n_args);
int verb_graph(Context *c, char **args, size_t n_args);
int verb_ps(Context *c, char **args, size_t n_args);
int verb_show(Context *c, char **args, size_t n_args);
int verb_chain(Context *c, char **args, size_t n_args);
int verb_check(Context *c, char **args, size_t n_args);
int verb_monitor(Context *c, char **args, size_t n_args);
int verb_rescan(Context *c, char **args, size_t n_args);
int verb_snapshot(Context *c, char **args, size_t n_args);
int verb_snapshots(Context *c, char **args, size_t n_args);
int verb_export(Context *c, char **args, size_t n_args);
int verb_import(Context *c, char **args, size_t n_args);
int verb_rm(Context *c, char **args, size_t n_args);
int verb_validate(Context *c, char **args, size_t n_args);
int verb_diff(Context *c, char **args, size_t n_args);
int verb_plan(Context *c, char **args, size_t n_args);
int verb_policy(Context *c, char **args, size_t n_args);
int verb_who_can(Context *c, char **args, size_t n_args);
int verb_policy_diff(Context *c, char **args, size_t n_args);

/* The completions' words (verbs-complete.c): "WORD<TAB>DESCRIPTION" lines of pids, tids, filters,
 * snapshots or syscalls (arg: an architecture); a usage error for another kind. */
int complete_words(Context *c, const char *kind, const char *arg);
void complete_print_word(const char *word, const char *description);

