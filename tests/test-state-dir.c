/* test-state-dir.c: the state directory and its database are root's alone: sectreed makes them
 * 0700 and 0600 whatever its umask, tightens what an older install left open (and says so), and
 * refuses a directory that is not its own; nobody cannot read a byte of them */
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "store/state-dir.h"
#include "store/store-db.h"
#include "store/store.h"
#include "tests-util.h"

static mode_t mode_of(const char *dir, const char *name) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        struct stat st;
        if (lstat(path, &st) < 0)
                g_error("%s: %s", path, g_strerror(errno));
        return st.st_mode & 07777;
}

static void set_mode(const char *dir, const char *name, mode_t mode) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_assert_cmpint(chmod(path, mode), ==, 0);
}

static void assert_private(const char *state_dir) {
        g_assert_cmpint(mode_of(state_dir, "."), ==, 0700);
        g_assert_cmpint(mode_of(state_dir, "state.db"), ==, 0600);
        g_assert_cmpint(mode_of(state_dir, "state.db-wal"), ==, 0600);
        g_assert_cmpint(mode_of(state_dir, "state.db-shm"), ==, 0600);
}

/* In a child as nobody: neither the directory nor any file of the database opens. */
static void nobody_reads_nothing(void *userdata) {
        const char *state_dir = userdata;
        static const char *const names[] = { "state.db", "state.db-wal", "state.db-shm" };
        g_autoptr(GDir) d = g_dir_open(state_dir, 0, NULL);
        if (d)
                _exit(10);
        for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
                g_autofree char *path = g_build_filename(state_dir, names[i], NULL);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0 || errno != EACCES)
                        _exit(11 + (int) i);
        }
}

/* Let nobody reach state_dir's parent, then check that it reads nothing in state_dir. */
static void assert_nobody_reads_nothing(const char *state_dir) {
        g_autofree char *parent = g_path_get_dirname(state_dir);
        g_assert_cmpint(chmod(parent, 0755), ==, 0);
        g_assert_cmpint(tests_as_nobody(nobody_reads_nothing, (void *) state_dir), ==, 0);
}

/* Something stored, so that the WAL and its index exist. */
static void store_something(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "Rescan", &error, NULL, "") < 0)
                g_error("Rescan: %s", error.message);
}

/* Start the daemon with its stderr in a file (returned, to read once it is stopped). */
static char *start_daemon_logging(BusFixture *b) {
        g_autofree char *log = g_build_filename(b->dir, "daemon.log", NULL);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        int saved = dup(STDERR_FILENO);
        g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
        bus_fixture_start_daemon(b, NULL, NULL, 30);
        g_assert_cmpint(dup2(saved, STDERR_FILENO), ==, STDERR_FILENO);
        close(saved);
        close(fd);
        return g_steal_pointer(&log);
}

static char *read_log(const char *path) {
        char *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        return text;
}

/* A daemon started by hand with a umask that would make files world-readable. */
static void test_created_private(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        tests_ensure_tracefs();
        bus_fixture_start_bus(&b);
        mode_t old = umask(0022);
        bus_fixture_start_daemon(&b, NULL, NULL, 30);
        umask(old);
        store_something();
        assert_private(b.state_dir);
        assert_nobody_reads_nothing(b.state_dir);
        bus_fixture_finish(&b);
}

/* What an older install left: directory 0755, files 0644. The next start tightens them, and the
 * log says so for each. */
static void test_repaired(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        store_something();
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGKILL), ==, 128 + SIGKILL); /* keeps -wal and -shm */
        set_mode(b.state_dir, ".", 0755);
        set_mode(b.state_dir, "state.db", 0644);
        set_mode(b.state_dir, "state.db-wal", 0644);
        set_mode(b.state_dir, "state.db-shm", 0644);

        g_autofree char *log = start_daemon_logging(&b);
        assert_private(b.state_dir);
        store_something();
        assert_private(b.state_dir);
        assert_nobody_reads_nothing(b.state_dir);
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        g_autofree char *text = read_log(log);
        g_autofree char *dir_line = g_strdup_printf("The state directory %s was open to other users (mode 0755); "
                                                    "made it 0700.", b.state_dir);
        if (!strstr(text, dir_line))
                g_error("the log does not say '%s':\n%s", dir_line, text);
        static const char *const files[] = { "state.db", "state.db-wal", "state.db-shm" };
        for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
                g_autofree char *line = g_strdup_printf("The database file %s/%s was open to other users (mode 0644); "
                                                        "made it 0600.", b.state_dir, files[i]);
                if (!strstr(text, line))
                        g_error("the log does not say '%s':\n%s", line, text);
        }
        bus_fixture_stop(&b);
}

/* A directory open to others that holds other files is not sectreed's own: refused, untouched. A
 * database file that is a link, or owned by someone else, is refused too. */
static void test_refused(void) {
        g_autofree char *dir = g_dir_make_tmp("sectree-state-XXXXXX", NULL);
        g_autofree char *other = g_build_filename(dir, "notes.txt", NULL);
        g_autofree char *db = g_build_filename(dir, "state.db", NULL);
        g_assert_true(g_file_set_contents(other, "mine", -1, NULL));
        g_assert_cmpint(chmod(dir, 0755), ==, 0);
        Store *s = NULL;
        g_assert_cmpint(store_open(dir, &s), ==, -ENOTEMPTY);
        g_assert_cmpint(mode_of(dir, "."), ==, 0755);
        g_assert_false(g_file_test(db, G_FILE_TEST_EXISTS));

        /* its own directory (0700) with other files is fine */
        g_assert_cmpint(chmod(dir, 0700), ==, 0);
        g_assert_cmpint(store_open(dir, &s), ==, 0);
        s = store_free(s);
        g_assert_cmpint(mode_of(dir, "state.db"), ==, 0600);

        /* a link in place of the database */
        g_autofree char *sub = g_build_filename(dir, "sub", NULL);
        g_assert_cmpint(mkdir(sub, 0700), ==, 0);
        g_autofree char *link = g_build_filename(sub, "state.db", NULL);
        g_assert_cmpint(symlink(other, link), ==, 0);
        g_assert_cmpint(state_dir_secure(sub, "state.db"), ==, -ELOOP);
        g_assert_cmpint(unlink(link), ==, 0);

        /* a file of someone else's */
        if (geteuid() == 0) {
                g_assert_true(g_file_set_contents(link, "", 0, NULL));
                g_assert_cmpint(chown(link, 65534, 65534), ==, 0);
                g_assert_cmpint(state_dir_secure(sub, "state.db"), ==, -EPERM);
        }
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
        g_assert_cmpint(system(cmd), ==, 0);
}

/* A state directory reached through a symlink (itself, or a parent) is the administrator's to
 * make: the database opens, at the directory's real path (SQLite is told not to follow links in
 * it), and nothing is left behind in the link's place. It used to fail ("unable to open database
 * file") and leave an empty state.db. */
static void test_through_symlink(void) {
        g_autofree char *dir = g_dir_make_tmp("sectree-state-XXXXXX", NULL);
        g_autofree char *real = g_build_filename(dir, "real", NULL), *link = g_build_filename(dir, "link", NULL);
        g_autofree char *under = g_build_filename(link, "state", NULL), *db = g_build_filename(real, "state", "state.db", NULL);
        g_assert_cmpint(mkdir(real, 0700), ==, 0);
        g_assert_cmpint(symlink("real", link), ==, 0);
        Store *s = NULL;
        g_assert_cmpint(store_open(link, &s), ==, 0); /* the directory a link */
        g_autofree char *at = g_build_filename(real, "state.db", NULL);
        g_assert_cmpstr(store_path(s), ==, at);
        s = store_free(s);
        g_assert_cmpint(store_open(under, &s), ==, 0); /* a parent a link, the directory made */
        g_assert_cmpstr(store_path(s), ==, db);
        s = store_free(s);
        g_assert_cmpint(mode_of(real, "state"), ==, 0700);
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
        g_assert_cmpint(system(cmd), ==, 0);
}

/* sectreed started on state_dir fails before it needs a bus: its exit status, and its stderr. */
static int run_daemon_on(const char *state_dir, char **ret_err) {
        g_autofree char *arg = g_strdup_printf("--state-dir=%s", state_dir);
        const char *argv[] = { g_getenv("SECTREED"), arg, NULL };
        int status;
        g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, ret_err,
                                   &status, NULL));
        g_test_message("sectreed --state-dir=%s: %d, %s", state_dir, status, *ret_err);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A database whose pages are damaged: sectreed says so, and how to start afresh, and leaves the
 * file as it is (it used to say only "Bad message" and "database disk image is malformed"). */
static void test_damaged(void) {
        if (!tests_require_root())
                return;
        g_autofree char *dir = g_dir_make_tmp("sectree-state-XXXXXX", NULL);
        g_autofree char *db = g_build_filename(dir, "state.db", NULL);
        g_autofree char *before = NULL, *after = NULL, *err = NULL;
        gsize len = 0, len_after = 0;
        Store *s = NULL;

        g_assert_cmpint(store_open(dir, &s), ==, 0);
        s = store_free(s);
        g_assert_true(g_file_get_contents(db, &before, &len, NULL));
        g_assert_cmpuint(len, >, 8192);
        memset(before + 4096, 0xde, len - 4096); /* every page but the first, with the schema */
        g_assert_true(g_file_set_contents(db, before, (gssize) len, NULL));
        g_assert_cmpint(chmod(db, 0600), ==, 0);

        g_assert_cmpint(run_daemon_on(dir, &err), ==, 1);
        g_assert_nonnull(strstr(err, db));
        g_assert_nonnull(strstr(err, "The file is damaged, and sectreed leaves it as it is: to start afresh, stop "
                                     "sectreed and move the file aside"));
        g_assert_null(strstr(err, "Bad message"));
        g_assert_true(g_file_get_contents(db, &after, &len_after, NULL));
        g_assert_cmpuint(len_after, ==, len);
        g_assert_cmpint(memcmp(before, after, len), ==, 0);
        tests_remove_dir(dir);
}

/* A full file system under the state directory: sectreed names it, where SQLite says "disk I/O
 * error". */
static void test_full(void) {
        if (!tests_require_root())
                return;
        g_autofree char *dir = g_dir_make_tmp("sectree-state-XXXXXX", NULL);
        g_autofree char *fill = g_build_filename(dir, "fill", NULL), *err = NULL;
        Store *s = NULL;

        g_assert_cmpint(mount("sectree-test", dir, "tmpfs", 0, "size=512k,mode=0700"), ==, 0);
        g_assert_cmpint(store_open(dir, &s), ==, 0);
        s = store_free(s);
        /* the lock file, with room for a pid: the database is what must fail */
        g_autofree char *lock = g_build_filename(dir, "sectreed.lock", NULL);
        g_assert_true(g_file_set_contents(lock, "4194304\n", -1, NULL));
        int fd = open(fill, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        static const char block[4096];
        while (write(fd, block, sizeof(block)) > 0)
                ;
        g_assert_cmpint(errno, ==, ENOSPC);
        close(fd);

        g_assert_cmpint(run_daemon_on(dir, &err), ==, 1);
        g_assert_nonnull(strstr(err, "No space left on device"));
        g_assert_nonnull(strstr(err, "state.db"));
        g_assert_cmpint(umount(dir), ==, 0);
        g_assert_cmpint(rmdir(dir), ==, 0);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/state-dir/through-symlink", test_through_symlink);
        g_test_add_func("/state-dir/damaged", test_damaged);
        g_test_add_func("/state-dir/full", test_full);
        g_test_add_func("/state-dir/created-private", test_created_private);
        g_test_add_func("/state-dir/repaired", test_repaired);
        g_test_add_func("/state-dir/refused", test_refused);
        return g_test_run();
}
