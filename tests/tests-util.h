/* tests-util.h: what every test program shares: privilege checks that turn skips into failures
 * in CI, comparisons of a scanned Forest with a scenario's ground truth, and running, spawning
 * and reading child processes */
#pragma once

#include <glib.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <sys/types.h>

#include "core/forest.h"
#include "guard.h"
#include "scenario.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Forest, forest_free)

/* The start of every test program's main(): tests_guard_start() (guard.h: whatever the program
 * starts dies with it), g_test_init(), and, when the test runner's timeout kills the program
 * (SIGTERM), the name of the test that was running on stderr before dying: a hang is then named
 * in the log. */
void tests_init(int *argc, char ***argv);

/* True if the test may run (root, and BPF/ptrace available). Otherwise marks the test skipped
 * with why — or failed when $CI is set, since CI must run every kernel test. */
bool tests_require_root(void);
bool tests_require(bool condition, const char *why);

/* How long a test waits for a state it needs (a daemon converging, a task stopping, an event
 * arriving) before it fails: far above what that takes on a loaded two-core machine (seconds), far
 * below the runner's timeout. Only waits for something that must happen use it; a test that shows
 * something does NOT happen watches for a fixed time instead. */
#define TESTS_PATIENCE_MS 60000

/* Wait up to timeout_ms for cond(userdata) to become true, polling every few ms. */
bool tests_wait_for(bool (*cond)(void *userdata), void *userdata, unsigned timeout_ms);

/* Mount tracefs at /sys/kernel/tracing if it is not mounted. */
void tests_ensure_tracefs(void);

/* Assert that f reports the scenario's live tasks with the chains that were built:
 * every live scenario task is in f with its mode; walking its chain in f gives the same bytes and
 * flags as the ground truth at every depth; and if exact, two tasks' chains share a filter id at
 * a position iff they share the ground-truth node there (node <-> filter id is a bijection).
 * If !exact, every filter must be marked inferred. */
void tests_assert_forest_matches(const Forest *f, const Scenario *s, bool exact);

/* Run argv, capture stdout (and stderr if ret_err), return exit status (or -1 on spawn failure). */
int tests_run_capture(char **argv, char **ret_out, char **ret_err);
/* Run argv with stdout_fd as its standard output: its exit status (128 + the signal that ended
 * it), and *ret_err what it wrote on stderr. */
int tests_run_to_fd(const char *const *argv, int stdout_fd, char **ret_err);

/* A NULL-terminated argv: program, then args (NULL-terminated); the strings are not copied. */
GPtrArray *tests_argv_new(const char *program, const char *const *args);

/* sqlite3 on db opened read-only (file:DB?mode=ro): the output of sql, stripped of white space at
 * both ends. Fails the test if sqlite3 fails. */
char *tests_sqlite_query(const char *db, const char *sql);

/* Remove dir and the files in it (not below: it has no subdirectories). NULL is nothing. */
void tests_remove_dir(const char *dir);
/* f written as a snapshot file, changed with sql as a hostile writer could, and read back as bytes
 * (*ret_size of them; g_free() them). */
void *tests_snapshot_sqlite_mutated(const Forest *f, const char *sql, size_t *ret_size);

/* A GSpawnChildSetupFunc: the child gets SIGKILL when the test process dies. */
void tests_die_with_parent(gpointer userdata);

/* The next line of fd before deadline (monotonic µs), without its newline; buf keeps what was read
 * beyond it for the next call. NULL on timeout or end of file. */
char *tests_read_line(int fd, GString *buf, gint64 deadline);

/* Fork a process of uid/gid 65534 with no supplementary groups that dies with the test process
 * (SIGKILL, set after the change of credentials) and keeps no descriptor above 2. It sets
 * no_new_privs, is dumpable, takes the name comm (unless NULL), installs a filter of its own with
 * seccomp(2) (ERRNO(3) for acct: scenario_filter_errno(SYS_acct, 3, 0)), forks a child that only
 * pauses if with_child, and pauses. Returns its pid once all of that is done; fails the test if any
 * step failed. */
pid_t tests_spawn_nobody(const char *comm, bool with_child);
/* fork(): the child dies with the caller and is named comm (it _exit()s if it cannot be); 0 in the
 * child. */
pid_t tests_fork_named(const char *comm);
_Noreturn void tests_pause_forever(void);
/* The same with credentials a caller of uid 65534 may not see (or may, for new_userns): */
typedef struct TestsNobodyOptions {
        const char *comm;
        bool with_child;
        bool child_not_dumpable; /* with_child: the child calls PR_SET_DUMPABLE 0 (nobody cannot trace it) */
        uid_t saved_uid;   /* 0: 65534 */
        gid_t saved_gid;   /* 0: 65534 */
        bool keep_caps;    /* keep root's permitted capabilities (PR_SET_KEEPCAPS) */
        bool not_dumpable; /* PR_SET_DUMPABLE 0 */
        bool new_userns;   /* enter a user namespace of its own (owned by 65534) before the filter */
        bool leader_exits; /* its leader exits, a thread living on (ready once the leader is a zombie) */
        bool thread_drops_caps; /* with leader_exits: that thread drops every capability it has */
} TestsNobodyOptions;
pid_t tests_spawn_nobody_with(const TestsNobodyOptions *o);

/* Run fn(userdata) in a forked child with uid and gid 65534 and no supplementary groups (it dies
 * with the test process, and has 120 s at most). Returns its exit status: 0 when fn returned, else
 * what an assertion failure in it made of it. */
int tests_as_nobody(void (*fn)(void *userdata), void *userdata);
/* The same without waiting: the child's pid (tests_wait_status() waits for it). */
pid_t tests_as_nobody_start(void (*fn)(void *userdata), void *userdata);
/* In a forked child: become uid (and gid uid, no supplementary groups) and die with the parent
 * (SIGKILL, set after the change of credentials, which clears it); _exit(99) if that fails. */
void tests_become(uid_t uid);
/* The same as another uid (and gid), without waiting. */
pid_t tests_as_uid_start(uid_t uid, void (*fn)(void *userdata), void *userdata);
/* waitpid() for pid: its exit status as tests_as_nobody() gives it. */
int tests_wait_status(pid_t pid);

/* A forked child's handshake with the test: the child says it got to a point (its calls sent and
 * held, say) and waits until the test lets it go on. Opened before the fork; the test calls
 * tests_handshake_wait_held() after it (it closes the child's ends, so that a child that fails
 * before is an end of file: an assertion), then tests_handshake_go(), which closes its own. */
typedef struct TestsHandshake {
        int held[2], go[2];
} TestsHandshake;
void tests_handshake_open(TestsHandshake *h);
void tests_handshake_hold(TestsHandshake *h); /* in the child */
void tests_handshake_wait_held(TestsHandshake *h);
void tests_handshake_go(TestsHandshake *h);

/* A filter that hands syscall nr on x86-64 to its listener (SECCOMP_RET_USER_NOTIF) and allows the
 * rest; insns must hold 7 entries. Returns the length. Give it a syscall nobody calls: nothing
 * answers the notification. */
size_t tests_filter_notify(struct sock_filter *insns, int nr);

/* Three byte-different filters (ERRNO for getpriority, acct and swapon) for scenarios to install. */
typedef struct TestFilters {
        struct sock_filter a[32], b[32], c[32];
        size_t na, nb, nc;
} TestFilters;
void tests_filters_init(TestFilters *x);

/* scenario_new(), failing the test if it fails. */
Scenario *tests_scenario_new(void);
/* The start of most kernel tests: x filled in by tests_filters_init(), and tests_scenario_new(). */
Scenario *tests_scenario_with_filters(TestFilters *x);
/* parent forks a process that installs insns[0..n) with flags (scenario_fork(), then
 * scenario_install()); fails the test if either fails. Returns the new process. */
ScenarioTask tests_fork_install(Scenario *s, ScenarioTask parent, const struct sock_filter *insns, size_t n,
                                unsigned flags);

/* The task of f that is scenario task t; fails the test if f does not have it. */
const Task *tests_find_task(const Forest *f, const Scenario *s, ScenarioTask t);

/* f is a valid snapshot (snapshot_validate()), and reads back from JSON and from SQLite to the
 * same JSON. */
void tests_assert_valid_snapshot(const Forest *f);

/* Does listener l list (pid, fd) among its holders? */
bool tests_listener_has_holder(const Listener *l, pid_t pid, int fd);
/* The listener of f held by pid at fd, NULL if none. */
const Listener *tests_listener_held_by(const Forest *f, pid_t pid, int fd);
/* Scenario task t's process is in f with n_threads threads, none of them with seccomp, and holds
 * listener l at fd (l lists the holder, and it is the listener tests_listener_held_by() finds
 * there). Returns the process. */
const Process *tests_assert_holder_present(const Forest *f, const Listener *l, const Scenario *s, ScenarioTask t,
                                           int fd, size_t n_threads);

/* Tiny programs for forests built by hand: valid seccomp filters with pairwise different bytes
 * (RET ALLOW; RET ERRNO(1); load arch, RET LOG). */
extern const struct sock_filter tests_prog_allow[1], tests_prog_errno[1], tests_prog_log[2];
