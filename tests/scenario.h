/* scenario.h: builds real process and thread trees with seccomp filters installed at chosen
 * points, keeps them alive, and reports the ground truth of what was built */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Every task of a scenario is an agent: a process or thread blocked reading commands from its
 * own socket. The root agent is forked from the test process and is a child subreaper, so
 * processes whose parent exits are reparented to it and stay inside the scenario's subtree.
 * Filters are installed by the agent itself with seccomp(2) (or prctl for flags == 0 when
 * use_prctl is set), so the kernel's sharing is exactly what fork/clone/TSYNC make of it.
 * Filters given to a scenario must allow what agents use: read, write, recvmsg, sendmsg, close,
 * clone/clone3, mmap/munmap/mprotect, futex, rt_sigprocmask, set_robust_list, rseq, madvise,
 * exit, exit_group, prctl, seccomp, getpid, gettid, wait4. scenario_filter_errno() makes a safe one. */

typedef struct Scenario Scenario;
typedef int ScenarioTask; /* handle: index of a task in the scenario, >= 0 */

typedef struct ScenarioNode {
        int id;     /* ground-truth filter number, 0.. in install order */
        int parent; /* -1 for none */
        struct sock_filter *insns;
        size_t len;
        unsigned flags;   /* SECCOMP_FILTER_FLAG_* given at install */
        pid_t installer;  /* tid that installed it */
        int listener_fd;  /* fd in the installer's process with NEW_LISTENER, else -1 */
} ScenarioNode;

typedef struct ScenarioTaskInfo {
        pid_t tid, tgid;
        pid_t ppid;       /* the real parent process, as the kernel now has it */
        int head;         /* ground-truth node at the head of its chain, -1 if none */
        bool strict;      /* entered SECCOMP_MODE_STRICT */
        bool alive;
        bool is_thread;   /* created by scenario_thread() (not the process leader) */
} ScenarioTaskInfo;

/* Start a scenario: forks the root agent. */
int scenario_new(Scenario **ret);
/* Kill every agent (SIGKILL), reap, free. Accepts NULL. */
void scenario_free(Scenario *s);

ScenarioTask scenario_root(Scenario *s);
/* parent (a process leader or thread) forks a new process; returns its handle or negative errno. */
ScenarioTask scenario_fork(Scenario *s, ScenarioTask parent);
/* t creates a new thread in its own process. */
ScenarioTask scenario_thread(Scenario *s, ScenarioTask t);
/* t installs a filter. flags: SECCOMP_FILTER_FLAG_TSYNC, _LOG, _NEW_LISTENER,
 * _WAIT_KILLABLE_RECV (with NEW_LISTENER). Returns the ground-truth node id, or negative errno
 * from seccomp(2). */
int scenario_install(Scenario *s, ScenarioTask t, const struct sock_filter *insns, size_t len, unsigned flags);
/* Same with prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER) (no flags possible). */
int scenario_install_prctl(Scenario *s, ScenarioTask t, const struct sock_filter *insns, size_t len);
/* t enters strict mode; afterwards it only accepts scenario_exit(). */
int scenario_strict(Scenario *s, ScenarioTask t);
/* t sets no_new_privs. */
int scenario_no_new_privs(Scenario *s, ScenarioTask t);
/* The task renames itself (PR_SET_NAME; the kernel keeps the first 15 bytes). */
int scenario_rename(Scenario *s, ScenarioTask t, const char *name);
/* A thread exits (SYS_exit) or a process exits with all its threads (exit_group); its children
 * are reparented to the root agent. */
int scenario_exit(Scenario *s, ScenarioTask t);
/* A process's leader thread exits alone (SYS_exit): the process lives on with its other threads
 * and a zombie leader, which scans leave out. */
int scenario_exit_leader(Scenario *s, ScenarioTask t);
/* Copy listener fd of node from its installer's process into process of t (SCM_RIGHTS);
 * returns the fd number in t's process. */
int scenario_share_listener(Scenario *s, int node, ScenarioTask t);
/* Execs t's process into /bin/sleep (keeping its filters); it stays alive but is no longer an
 * agent: only scenario_exit()/scenario_free() may follow. */
int scenario_exec_sleep(Scenario *s, ScenarioTask t);
/* The same with the sleep(1) binary at path (a copy of it, e.g.); the exec's error if it failed. */
int scenario_exec_sleep_at(Scenario *s, ScenarioTask t, const char *path);

/* Execs t's process into argv (argv[0] a path; at most 63 arguments), keeping its filters; as
 * scenario_exec_sleep(), only scenario_exit()/scenario_free() may follow. A failing exec is seen
 * only by its effect: the process exits. */
int scenario_exec(Scenario *s, ScenarioTask t, char * const *argv);

size_t scenario_n_tasks(const Scenario *s);
const ScenarioTaskInfo *scenario_task(const Scenario *s, ScenarioTask t);
size_t scenario_n_nodes(const Scenario *s);
const ScenarioNode *scenario_node(const Scenario *s, int node);
pid_t scenario_root_pid(const Scenario *s);
/* Depth of the chain of node (1 for a root node), -1 for none. */
int scenario_node_depth(const Scenario *s, int node);

/* A filter that returns ERRNO(errno_value) for syscall nr on the native arch and allows the rest;
 * pad adds that many no-op instructions so that byte-different filters can be made. Returns the
 * length, fills insns (which must hold 8 + pad entries). */
size_t scenario_filter_errno(struct sock_filter *insns, int nr, int errno_value, size_t pad);
