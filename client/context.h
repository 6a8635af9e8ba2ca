/* context.h: the run context the verbs share: the command line's options and the lazily connected bus */
#pragma once

#include <systemd/sd-bus.h>

#include "core/util.h"

typedef struct Context {
        bool json;         /* --json (any mode but off): print JSON; json-out.c knows pretty from short */
        bool legend;
        bool all;          /* tree: every process on its own line (not "200*[sleep]") */
        bool no_pager;     /* --no-pager */
        bool graph_counts; /* graph: task counts in the filter nodes instead of process nodes */
        const char *file;  /* --file: tree, graph, show, chain, check read this snapshot file, no daemon */
        const char *snapshot_name; /* snapshot --name */
        bool no_argv;      /* snapshot --no-argv */
        const char *format; /* export --format: "sqlite" or "json"; NULL: from the file name; policy: "oci" */
        uint32_t pid;      /* show --pid: the chain of this task; monitor --pid: only its events */
        const char *comm;  /* monitor --comm: only the events of tasks with this name (a glob) */
        uint32_t subtree;  /* monitor --subtree: only the events of tasks in this process's subtree */
        bool raw;          /* show --raw: CODE JT JF K columns besides the disassembly */
        const char *action; /* who-can --action: the action looked for; NULL: the call runs */
        const char *arch;   /* check, policy, who-can --arch: libseccomp's name; NULL: native (check, who-can), all (policy) */
        bool approximate;   /* policy --format=oci --approximate: give a profile that is not exact */
        char **exec;        /* restore --exec PID=CMD, in order (NULL-terminated; the strings are argv's) */
        bool original_uids; /* restore --original-uids */
        bool pid_namespace; /* restore --pid-namespace */
        uint32_t like;      /* run --like PID */
        const char *severity; /* audit --severity: the least severe finding that counts; NULL: medium */
        const char *baseline; /* audit --baseline: an OCI profile file; NULL: containers-common's, if installed */
        const char *unit;    /* ps, tree, units --unit: a glob on the process's unit or user unit */
        const char *machine; /* --machine: a glob on its machine (container) name */
        const char *user;    /* --user: the owner (name or uid) of its user slice */
        sd_bus *bus;       /* connected on first use by context_bus() */
} Context;

void context_done(Context *c);

/* The system bus (DBUS_SYSTEM_BUS_ADDRESS is honoured), connected on the first call. Logs. */
int context_bus(Context *c, sd_bus **ret);

/* ListTasks, ListFilters and ListSnapshots on the system bus (connected on first use). Log. */
typedef struct TaskList TaskList;
typedef struct FilterList FilterList;
typedef struct SnapshotList SnapshotList;
int context_list_tasks(Context *c, TaskList *ret);
int context_list_filters(Context *c, FilterList *ret);
int context_list_snapshots(Context *c, SnapshotList *ret);
