/* test-snapshot-fds.c: ExportSnapshot and ImportSnapshot read and write the caller's fd with the
 * daemon's credentials, so they take only regular files, pipes and stream sockets: a file of /proc
 * (checked against the reader when read), a datagram socket (SO_PASSCRED would say uid 0), a
 * terminal, a device, a directory or an eventfd is refused naming what was given, before a byte
 * moves, as is an fd not open for reading (import) or writing (export); and no message quotes
 * what a file holds. The caller is nobody. */
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "tests-util.h"

typedef struct Fds {
        pid_t mine;   /* nobody's process */
        pid_t roots;  /* root's */
} Fds;

static void assert_refused_saying(sd_bus *bus, const char *member, int fd, const char *want) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = streq(member, "ImportSnapshot") ? bus_client_call(bus, member, &error, NULL, "h", fd)
                                                : bus_client_call(bus, member, &error, NULL, "ths", (uint64_t) 1, fd,
                                                                  "json");
        if (r >= 0 || !streq_ptr(error.message, want))
                g_error("%s: expected InvalidArgs \"%s\", got %s: %s", member, want, error.name, error.message);
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
}

static void assert_refused(sd_bus *bus, const char *member, int fd, const char *kind) {
        g_autofree char *want = g_strdup_printf("%s needs a regular file, a pipe or a stream socket, not %s.", member,
                                                kind);
        assert_refused_saying(bus, member, fd, want);
}

static void nobody_part(void *userdata) {
        const Fds *x = userdata;
        sd_bus *bus = bus_client_open();
        uint64_t id = bus_client_create_ok(bus, x->mine, NULL);
        g_assert_cmpuint(id, ==, 1); /* assert_refused() exports snapshot 1 */

        /* /proc/PID/timerslack_ns of root's process opens for anyone; reading it checks the reader */
        g_autofree char *slack = g_strdup_printf("/proc/%d/timerslack_ns", x->roots);
        int fd = open(slack, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        assert_refused(bus, "ImportSnapshot", fd, "a file of /proc");
        close(fd);
        fd = open(slack, O_WRONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        assert_refused(bus, "ExportSnapshot", fd, "a file of /proc");
        close(fd);

        /* a datagram socket with SO_PASSCRED on the reading end: nothing arrives */
        int sv[2], on = 1;
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_assert_cmpint(setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)), ==, 0);
        assert_refused(bus, "ExportSnapshot", sv[1], "a datagram socket");
        char c;
        g_assert_cmpint(recv(sv[0], &c, 1, MSG_DONTWAIT), <, 0);
        g_assert_cmpint(errno, ==, EAGAIN);
        assert_refused(bus, "ImportSnapshot", sv[0], "a datagram socket");
        close(sv[0]);
        close(sv[1]);
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
        assert_refused(bus, "ExportSnapshot", sv[1], "a seqpacket socket");
        close(sv[0]);
        close(sv[1]);

        /* a terminal, a device, a directory, an eventfd */
        int master, slave;
        g_assert_cmpint(openpty(&master, &slave, NULL, NULL, NULL), ==, 0);
        assert_refused(bus, "ExportSnapshot", slave, "a terminal");
        assert_refused(bus, "ImportSnapshot", slave, "a terminal");
        close(master);
        close(slave);
        fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        assert_refused(bus, "ImportSnapshot", fd, "a character device");
        close(fd);
        fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_refused(bus, "ImportSnapshot", fd, "a directory");
        close(fd);
        fd = eventfd(0, EFD_CLOEXEC);
        assert_refused(bus, "ExportSnapshot", fd, "an fd that is no file (an eventfd, a pidfd or another anonymous inode)");
        close(fd);

        /* the wrong end of a pipe, a file open the wrong way, an O_PATH fd: refused at once, not
         * after the transfer's timeout or with EBADF */
        int p[2];
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        assert_refused_saying(bus, "ImportSnapshot", p[1],
                              "ImportSnapshot needs an fd open for reading; this one is open for writing only.");
        assert_refused_saying(bus, "ExportSnapshot", p[0],
                              "ExportSnapshot needs an fd open for writing; this one is open for reading only.");
        close(p[0]);
        close(p[1]);
        g_autofree char *path = g_strdup_printf("/tmp/sectree-fds-%d", (int) getpid());
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        assert_refused_saying(bus, "ImportSnapshot", fd,
                              "ImportSnapshot needs an fd open for reading; this one is open for writing only.");
        close(fd);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        assert_refused_saying(bus, "ExportSnapshot", fd,
                              "ExportSnapshot needs an fd open for writing; this one is open for reading only.");
        close(fd);
        fd = open(path, O_PATH | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        assert_refused_saying(bus, "ImportSnapshot", fd, "ImportSnapshot needs an fd open for reading; this one is an O_PATH fd.");
        close(fd);
        g_assert_cmpint(unlink(path), ==, 0);

        /* a stream socket is fine */
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        BusPending pending = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "ExportSnapshot", bus_client_on_reply, &pending, "ths", id, sv[1],
                                                 "json"),
                        >=, 0);
        close(sv[1]);
        GString *got = g_string_new(NULL);
        for (;;) {
                char buf[4096];
                ssize_t k = read(sv[0], buf, sizeof(buf));
                if (k <= 0)
                        break;
                g_string_append_len(got, buf, k);
        }
        bus_client_wait(bus, &pending, 10000, "ExportSnapshot into a stream socket");
        g_assert_false(sd_bus_error_is_set(&pending.error));
        g_assert_nonnull(strstr(got->str, "\"format\""));
        g_string_free(got, true);
        close(sv[0]);
        sd_bus_flush_close_unref(bus);
}

static void test_fd_kinds(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        Fds x = { .mine = tests_spawn_nobody("fds-mine", false) };
        x.roots = fork();
        g_assert_cmpint(x.roots, >=, 0);
        if (x.roots == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                prctl(PR_SET_TIMERSLACK, 50000);
                pause();
                _exit(0);
        }
        g_assert_true(bus_fixture_start_all(&b, NULL, NULL));
        g_assert_cmpint(tests_as_nobody(nobody_part, &x), ==, 0);
        kill(x.mine, SIGKILL);
        kill(x.roots, SIGKILL);
        waitpid(x.mine, NULL, 0);
        waitpid(x.roots, NULL, 0);
        bus_fixture_finish(&b);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/snapshot-fds/kinds", test_fd_kinds);
        return g_test_run();
}
