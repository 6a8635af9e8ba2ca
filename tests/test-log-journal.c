/* test-log-journal.c: under journald the log keeps its priorities and the operator's events carry
 * their fields: each line starts with "<N>" when stderr is the stream $JOURNAL_STREAM names (and
 * only then), in this process and in sectreed; an event is a journal entry with its MESSAGE_ID and
 * fields, read back with journalctl where journald runs, and the same line as ever on stderr
 * where it does not (or refuses it). */
#include <fcntl.h>
#include <glib.h>
#include <jansson.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "service/log-event.h"
#include "core/util.h"
#include "tests-util.h"

typedef struct Capture {
        char *path;
        int saved;
} Capture;

/* Point stderr at a new file, and $JOURNAL_STREAM at it when as_journal (else at another file). */
static void capture_start(Capture *c, bool as_journal) {
        c->path = g_strdup("/tmp/sectree-log-XXXXXX");
        int fd = g_mkstemp(c->path);
        g_assert_cmpint(fd, >=, 0);
        struct stat st;
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_autofree char *stream = g_strdup_printf("%llu:%llu", (unsigned long long) st.st_dev,
                                                  (unsigned long long) st.st_ino + (as_journal ? 0 : 1));
        g_setenv("JOURNAL_STREAM", stream, true);
        fflush(stderr);
        c->saved = dup(STDERR_FILENO);
        g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
        close(fd);
        log_parse_environment();
}

/* Restore stderr and return what went to the file. */
static char *capture_end(Capture *c) {
        fflush(stderr);
        g_assert_cmpint(dup2(c->saved, STDERR_FILENO), ==, STDERR_FILENO);
        close(c->saved);
        g_unsetenv("JOURNAL_STREAM");
        log_parse_environment();
        char *text = NULL;
        g_assert_true(g_file_get_contents(c->path, &text, NULL, NULL));
        unlink(c->path);
        g_free(c->path);
        return text;
}

static void log_four(void) {
        log_error("an error");
        log_warning("a warning");
        log_info("some news");
        log_debug("a detail with a\nnewline");
}

static void test_prefix(void) {
        LogLevel old = log_get_max_level();
        log_set_max_level(LOG_LEVEL_DEBUG);
        Capture c;
        capture_start(&c, true);
        g_assert_true(log_stderr_is_journal());
        log_four();
        g_autofree char *journal = capture_end(&c);
        g_assert_cmpstr(journal, ==, "<3>an error\n<4>a warning\n<6>some news\n<7>a detail with a\\nnewline\n");

        /* $JOURNAL_STREAM naming another file (stderr was redirected): plain lines */
        capture_start(&c, false);
        g_assert_false(log_stderr_is_journal());
        log_four();
        g_autofree char *plain = capture_end(&c);
        g_assert_cmpstr(plain, ==, "an error\na warning\nsome news\na detail with a\\nnewline\n");
        log_set_max_level(old);
}

/* sectreed's own lines, from its start: a usage error under journald is a "<3>" line. */
static void test_prefix_sectreed(void) {
        g_autofree char *path = g_strdup("/tmp/sectree-log-XXXXXX");
        int fd = g_mkstemp(path);
        g_assert_cmpint(fd, >=, 0);
        struct stat st;
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                char stream[64];
                snprintf(stream, sizeof(stream), "%llu:%llu", (unsigned long long) st.st_dev,
                         (unsigned long long) st.st_ino);
                dup2(fd, STDERR_FILENO);
                setenv("JOURNAL_STREAM", stream, 1);
                execl(g_getenv("SECTREED"), "sectreed", "--backend=abacus", (char *) NULL);
                _exit(127);
        }
        close(fd);
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 2);
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        unlink(path);
        g_assert_cmpstr(text, ==, "<3>Unknown --backend=abacus: expected bpf or ptrace.\n");
}

/* Not under journald: an event is the line any log line would be. */
static void test_event_plain(void) {
        Capture c;
        capture_start(&c, false);
        log_event_restore_failed(7, 3, 1000, "the executor\nsaid no");
        log_event_resynced("lost");
        log_event_filter_attached(12, 0, 4711, 4711, "sshd");
        g_autofree char *text = capture_end(&c);
        /* one line per filter installed would flood a plain stderr: there it is a debug line */
        g_assert_cmpstr(text, ==,
                        "Restore 7 of snapshot 3 for uid 1000 failed: the executor\\nsaid no\n"
                        "Resynchronised the forest with a full pass (lost).\n");
}

/* Refusals are logged at most once per uid every 10 s, the next one saying how many were left
 * out: a caller asking again and again would otherwise fill the journal. */
static void test_event_access_denied_limited(void) {
        const uint64_t t = 1000 * 1000 * 1000ULL, s = 1000 * 1000ULL;
        Capture c;
        capture_start(&c, false);
        for (int i = 0; i < 5; i++)
                log_event_access_denied_at(t + (uint64_t) i * s, "GetTaskChain", 65534, 40, "task 1");
        log_event_access_denied_at(t + 5 * s, "GetTaskChain", 1000, 41, "task 1"); /* another uid: its own */
        log_event_access_denied_at(t + 10 * s, "GetTaskChain", 65534, 40, "task 2");
        log_event_access_denied_at(t + 11 * s, "GetTaskChain", 65534, 40, "task 3");
        g_autofree char *text = capture_end(&c);
        g_assert_cmpstr(text, ==,
                        "Access denied to uid 65534 (pid 40) calling GetTaskChain: task 1\n"
                        "Access denied to uid 1000 (pid 41) calling GetTaskChain: task 1\n"
                        "Access denied to uid 65534 (pid 40) calling GetTaskChain: task 2 (and 4 more refusals of "
                        "uid 65534 since the last one logged)\n");
}

/* The routine passes (the minute's refresh, Rescan) are no resync event: an operator alerts on
 * those that repaired the state. */
static void test_event_resynced_routine(void) {
        Capture c;
        capture_start(&c, false);
        log_event_resynced("refresh");
        log_event_resynced("rescan");
        log_event_resynced("inconsistent");
        g_autofree char *text = capture_end(&c);
        g_assert_cmpstr(text, ==, "Resynchronised the forest with a full pass (inconsistent).\n");
}

/* Filters attached: at most 500 logged every 10 s, the first one after says how many were left
 * out (a machine making thousands would fill the journal, and journald's rate limit would then
 * drop the daemon's other messages). */
static void test_event_filter_attached_limited(void) {
        const uint64_t t = 1000 * 1000 * 1000ULL, s = 1000 * 1000ULL;
        Capture c;
        capture_start(&c, false);
        log_set_max_level(LOG_LEVEL_DEBUG); /* a plain stderr has them at debug */
        for (unsigned i = 0; i < 600; i++)
                log_event_filter_attached_at(t + i * 1000ULL, 100 + i, 0, 4711, 4711, "churn");
        log_event_filter_attached_at(t + 10 * s, 9999, 0, 4712, 4712, "later");
        log_event_filter_attached_at(t + 10 * s + 1, 10000, 0, 4712, 4712, "later");
        g_autofree char *text = capture_end(&c);
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        g_assert_cmpuint(g_strv_length(lines), ==, 500 + 2 + 1); /* and the empty end */
        g_assert_cmpstr(lines[0], ==, "Filter 100 (parent 0) attached to thread 4711 of process 4711 (churn).");
        g_assert_cmpstr(lines[499], ==, "Filter 599 (parent 0) attached to thread 4711 of process 4711 (churn).");
        g_assert_cmpstr(lines[500], ==, "Filter 9999 (parent 0) attached to thread 4712 of process 4712 (later). (and "
                                        "100 more filters attached since the last one logged)");
        g_assert_cmpstr(lines[501], ==, "Filter 10000 (parent 0) attached to thread 4712 of process 4712 (later).");
}

static void test_event_ids(void) {
        for (LogEvent e = 0; e < _LOG_EVENT_MAX; e++) {
                const char *id = log_event_message_id(e);
                g_assert_nonnull(id);
                g_assert_cmpuint(strlen(id), ==, 32);
                g_assert_cmpint(log_event_from_string(log_event_to_string(e)), ==, e);
                for (LogEvent o = 0; o < e; o++)
                        g_assert_cmpstr(log_event_message_id(o), !=, id);
        }
        g_assert_cmpint(log_event_from_string("nonsense"), ==, -EINVAL);
}

static bool journald_active(void) {
        g_autofree char *out = NULL;
        char *argv[] = { (char *) "systemctl", (char *) "is-active", (char *) "systemd-journald", NULL };
        return tests_run_capture(argv, &out, NULL) == 0 && out && g_str_has_prefix(out, "active");
}

/* journalctl's entries with the event's id and restore id, as JSON lines, or NULL. */
static char *journal_entries(const char *restore_id) {
        g_autofree char *match_id = g_strdup_printf("MESSAGE_ID=%s", SECTREE_MESSAGE_RESTORE_FAILED);
        g_autofree char *match_restore = g_strdup_printf("SECTREE_RESTORE_ID=%s", restore_id);
        char *argv[] = { (char *) "journalctl", (char *) "--no-pager", (char *) "-o", (char *) "json",
                         match_id, match_restore, NULL };
        char *out = NULL;
        if (tests_run_capture(argv, &out, NULL) != 0 || !out || !*out)
                return g_free(out), NULL;
        return out;
}

typedef struct Lookup {
        const char *restore_id;
        char *found;
} Lookup;

static bool entry_arrived(void *userdata) {
        Lookup *l = userdata;
        l->found = journal_entries(l->restore_id);
        return l->found != NULL;
}

/* Where journald does not run, sd_journal_sendv fails and the line goes to stderr instead. */
static void test_event_no_journald(void) {
        uint64_t restore = g_random_int() | ((uint64_t) g_random_int() << 32);
        Capture c;
        capture_start(&c, true);
        /* in a mount namespace of our own, with nothing at the journal's socket */
        log_event_restore_failed(restore, 3, 1000, "the executor said no");
        g_autofree char *text = capture_end(&c);
        g_autofree char *line = g_strdup_printf("<4>Restore %" PRIu64 " of snapshot 3 for uid 1000 failed: the executor "
                                                "said no\n", restore);
        g_assert_cmpstr(text, ==, line);
}

/* Under journald (stderr the journal): the entry with its MESSAGE_ID and fields, read back. */
static void event_journal_check(void) {
        uint64_t restore = g_random_int() | ((uint64_t) g_random_int() << 32);
        g_autofree char *restore_id = g_strdup_printf("%" PRIu64, restore);
        Capture c;
        capture_start(&c, true);
        log_event_restore_failed(restore, 3, 1000, "the executor said no");
        g_autofree char *text = capture_end(&c);
        g_assert_cmpstr(text, ==, "");
        Lookup l = { .restore_id = restore_id };
        if (!tests_wait_for(entry_arrived, &l, 10000))
                g_error("journalctl has no entry MESSAGE_ID=%s SECTREE_RESTORE_ID=%s", SECTREE_MESSAGE_RESTORE_FAILED,
                        restore_id);
        g_autofree char *json = l.found;
        g_test_message("%s", json);
        json_error_t jerr;
        json_t *entry = json_loadb(json, strcspn(json, "\n"), 0, &jerr);
        if (!entry)
                g_error("journalctl's JSON: %s: %s", jerr.text, json);
        static const char *const want[][2] = {
                { "MESSAGE_ID", SECTREE_MESSAGE_RESTORE_FAILED }, { "PRIORITY", "4" },
                { "SECTREE_EVENT", "restore-failed" },            { "SECTREE_SNAPSHOT_ID", "3" },
                { "SECTREE_UID", "1000" },                        { "SECTREE_ERROR", "the executor said no" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(want); i++)
                g_assert_cmpstr(json_string_value(json_object_get(entry, want[i][0])), ==, want[i][1]);
        g_autofree char *message = g_strdup_printf("Restore %s of snapshot 3 for uid 1000 failed: the executor said no",
                                                   restore_id);
        g_assert_cmpstr(json_string_value(json_object_get(entry, "MESSAGE")), ==, message);
        json_decref(entry);
}

/* A journald of our own: in a mount namespace where /run/systemd and /run/log/journal are fresh
 * tmpfs, so that it takes the journal's socket there and nothing of the machine's is touched. */
static pid_t private_journald_start(void) {
        static const char *const dirs[] = { "/run/systemd", "/run/log/journal" };
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                g_error("a mount namespace: %m");
        for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++)
                if (g_mkdir_with_parents(dirs[i], 0755) < 0 || mount("tmpfs", dirs[i], "tmpfs", 0, "mode=0755") < 0)
                        g_error("tmpfs on %s: %m", dirs[i]);
        if (g_mkdir_with_parents("/run/systemd/journal", 0755) < 0)
                g_error("/run/systemd/journal: %m");
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the check, whatever ends it */
                execl("/lib/systemd/systemd-journald", "systemd-journald", (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 500 && access("/run/systemd/journal/socket", F_OK) < 0; i++)
                g_usleep(10 * 1000);
        if (access("/run/systemd/journal/socket", F_OK) < 0)
                g_error("systemd-journald did not make its socket within 5 s");
        return pid;
}

/* The entry read back from the machine's journald, or, where none runs, from one of the test's own
 * (the package systemd is installed by the set-up scripts), in a child in its own mount namespace. */
static void test_event_journal(void) {
        if (journald_active()) {
                event_journal_check();
                return;
        }
        g_assert_cmpint(geteuid(), ==, 0);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                pid_t journald = private_journald_start();
                event_journal_check();
                kill(journald, SIGTERM);
                waitpid(journald, NULL, 0);
                _exit(0);
        }
        int status;
        g_assert_cmpint(waitpid(child, &status, 0), ==, child);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                g_error("reading the event back from a private journald failed (status %#x)", status);
}

/* Without a journald: the line on stderr. In a child with its own empty /run/systemd, so that a
 * machine's journald does not take the entry. */
static void test_event_fallback(void) {
        g_assert_cmpint(geteuid(), ==, 0);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mount("tmpfs", "/run/systemd", "tmpfs", 0, "mode=0755") < 0)
                        g_error("an empty /run/systemd: %m");
                test_event_no_journald();
                _exit(0);
        }
        int status;
        g_assert_cmpint(waitpid(child, &status, 0), ==, child);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                g_error("the fallback to stderr failed (status %#x)", status);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/log-journal/prefix", test_prefix);
        g_test_add_func("/log-journal/prefix-sectreed", test_prefix_sectreed);
        g_test_add_func("/log-journal/event-plain", test_event_plain);
        g_test_add_func("/log-journal/event-ids", test_event_ids);
        g_test_add_func("/log-journal/access-denied-limited", test_event_access_denied_limited);
        g_test_add_func("/log-journal/resynced-routine", test_event_resynced_routine);
        g_test_add_func("/log-journal/filter-attached-limited", test_event_filter_attached_limited);
        g_test_add_func("/log-journal/event-journal", test_event_journal);
        g_test_add_func("/log-journal/event-fallback", test_event_fallback);
        return g_test_run();
}
