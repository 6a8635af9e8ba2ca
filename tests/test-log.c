/* test-log.c: the log helper (lib/core/util.c): every line is one line, with the control characters of
 * the strings in it escaped, so that no caller's string forges log lines or acts on a terminal */
#include <glib.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/util.h"

/* What fn printed on stderr. */
static char *stderr_of(void (*fn)(void)) {
        int mem = memfd_create("log", MFD_CLOEXEC), saved = dup(STDERR_FILENO);
        g_assert_cmpint(mem, >=, 0);
        g_assert_cmpint(saved, >=, 0);
        fflush(stderr);
        g_assert_cmpint(dup2(mem, STDERR_FILENO), ==, STDERR_FILENO);
        fn();
        fflush(stderr);
        g_assert_cmpint(dup2(saved, STDERR_FILENO), ==, STDERR_FILENO);
        close(saved);
        off_t n = lseek(mem, 0, SEEK_END);
        char *text = g_malloc0((size_t) n + 1);
        g_assert_cmpint(pread(mem, text, (size_t) n, 0), ==, n);
        close(mem);
        return text;
}

static void log_hostile(void) {
        /* a comm and an argv as a hostile snapshot or caller could name them */
        log_info("Restore 1: difference: process 12 comm %s, argv %s", "ev\nil", "\x1b]0;title\x07\x1b[2J\r\tx\\");
}

static void log_errno(void) {
        (void) log_error_errno(-ENOENT, "Cannot open %s: %m", "caf\xc3\xa9");
}

static void test_escaped(void) {
        g_autofree char *out = stderr_of(log_hostile);
        g_assert_cmpstr(out, ==, "Restore 1: difference: process 12 comm ev\\nil, argv \\e]0;title\\x07\\e[2J\\r\\tx\\\\\n");
}

static void test_plain(void) {
        g_autofree char *out = stderr_of(log_errno);
        g_assert_cmpstr(out, ==, "Cannot open caf\xc3\xa9: No such file or directory\n");
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/log/escaped", test_escaped);
        g_test_add_func("/log/plain", test_plain);
        return g_test_run();
}
