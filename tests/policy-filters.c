/* policy-filters.c: real filters for the policy tests: containers-common's default profile,
 * systemd's SystemCallFilter= sets, and the sandboxes of firejail and bubblewrap */
#include "policy-filters.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "core/util.h"
#include "tests-util.h"

#define LD_WORD(offset) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (offset))

const struct sock_filter tests_prog_no_ptrace[4] = {
        LD_WORD(offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

const struct sock_filter tests_prog_traceme_only[8] = {
        LD_WORD(offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 5),
        LD_WORD(offsetof(struct seccomp_data, args[0]) + 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2),
        LD_WORD(offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0 /* PTRACE_TRACEME */, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

const char *const tests_podman_caps[] = {
        "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
        "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT", NULL,
};

TestProg tests_prog_container_profile(void) {
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(CONTAINERS_SECCOMP_JSON, &text, NULL, NULL));
        json_t *profile = tests_json_loads_u64(text);
        TestProg p = tests_profile_prog("containers-common default profile", profile, tests_podman_caps);
        json_decref(profile);
        return p;
}

/* ---- systemd ---- */

/* systemd-analyze syscall-filter: "@group" lines, then indented members and "# comments". */
static GHashTable *systemd_groups(void) {
        g_autofree char *out = NULL;
        const char *const args[] = { "syscall-filter", NULL };
        g_autoptr(GPtrArray) argv = tests_argv_new("systemd-analyze", args);
        g_assert_cmpint(tests_run_capture((char **) argv->pdata, &out, NULL), ==, 0);

        GHashTable *groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        GPtrArray *current = NULL;
        for (char **l = lines; *l; l++) {
                bool indented = (*l)[0] == ' ';
                const char *s = g_strstrip(*l);
                if (!*s || s[0] == '#')
                        continue;
                if (!indented && s[0] == '@') {
                        current = g_ptr_array_new_with_free_func(g_free);
                        g_hash_table_insert(groups, g_strdup(s), current);
                } else if (current)
                        g_ptr_array_add(current, g_strdup(s));
        }
        g_assert_cmpuint(g_hash_table_size(groups), >, 10);
        return groups;
}

static void systemd_expand(GHashTable *groups, const char *item, GHashTable *names) {
        if (item[0] != '@') {
                g_hash_table_add(names, g_strdup(item));
                return;
        }
        GPtrArray *members = g_hash_table_lookup(groups, item);
        g_assert_nonnull(members);
        for (size_t i = 0; i < members->len; i++)
                systemd_expand(groups, members->pdata[i], names);
}

size_t tests_progs_systemd(const char *const *sets, bool deny, TestProg *out, size_t max) {
        static const uint32_t archs[] = { SCMP_ARCH_X86, SCMP_ARCH_X32, SCMP_ARCH_X86_64 }; /* native last */
        g_autoptr(GHashTable) groups = systemd_groups();
        g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        size_t n = 0;

        g_assert_cmpint(seccomp_arch_native(), ==, SCMP_ARCH_X86_64);
        for (const char *const *s = sets; *s; s++)
                systemd_expand(groups, *s, names);
        for (size_t a = 0; a < ELEMENTSOF(archs) && n < max; a++) {
                scmp_filter_ctx ctx = seccomp_init(deny ? SCMP_ACT_ALLOW : SCMP_ACT_KILL_PROCESS);
                g_assert_nonnull(ctx);
                if (archs[a] != seccomp_arch_native()) {
                        g_assert_cmpint(seccomp_arch_remove(ctx, seccomp_arch_native()), ==, 0);
                        g_assert_cmpint(seccomp_arch_add(ctx, archs[a]), ==, 0);
                }
                g_assert_cmpint(seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW), ==, 0);
                g_assert_cmpint(seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0), ==, 0);
                GHashTableIter i;
                const char *name;
                g_hash_table_iter_init(&i, names);
                while (g_hash_table_iter_next(&i, (gpointer *) &name, NULL)) {
                        /* as systemd: the native number, and a call the architecture lacks is skipped */
                        int nr = seccomp_syscall_resolve_name(name);
                        if (nr == __NR_SCMP_ERROR)
                                continue;
                        (void) seccomp_rule_add_exact(ctx, deny ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_ALLOW, nr, 0);
                }
                g_autofree char *label = g_strdup_printf("systemd SystemCallFilter=%s%s (arch %#x)", deny ? "~" : "",
                                                         sets[0], archs[a]);
                out[n++] = test_prog_from_ctx(label, ctx);
        }
        return n;
}

/* ---- sandboxes ---- */

static bool read_file_line(const char *path, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f || !fgets(buf, (int) size, f))
                return false;
        buf[strcspn(buf, "\n")] = 0;
        return true;
}

/* A descendant of pid whose comm is "sleep" and that runs under seccomp filters. */
static pid_t find_sleeper(pid_t pid, unsigned depth) {
        char path[64], buf[4096], comm[32];
        snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
        if (depth > 0 && read_file_line(path, comm, sizeof(comm)) && streq(comm, "sleep")) {
                snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
                g_autofree char *status = NULL;
                if (g_file_get_contents(path, &status, NULL, NULL) && strstr(status, "\nSeccomp:\t2"))
                        return pid;
        }
        if (depth > 8)
                return 0;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) pid, (int) pid);
        if (!read_file_line(path, buf, sizeof(buf)))
                return 0;
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                pid_t found = find_sleeper((pid_t) atoi(t), depth + 1);
                if (found)
                        return found;
        }
        return 0;
}

static void sandbox_wait(TestSandbox *s, const char *tool) {
        for (unsigned i = 0; i < 300 && !s->sleeper; i++) {
                int status;
                if (waitpid(s->tool, &status, WNOHANG) == s->tool)
                        g_error("the sandbox exited at once (status %#x)", status);
                s->sleeper = find_sleeper(s->tool, 0);
                if (!s->sleeper)
                        g_usleep(50 * 1000);
        }
        g_assert_cmpint(s->sleeper, >, 0);
        g_autofree char *what = g_strdup_printf("%s %d, sleep %d", tool, (int) s->tool, (int) s->sleeper);
        tests_fail_point(tool, what);
}

static void bwrap_child_setup(gpointer fd) {
        tests_die_with_parent(NULL);
        dup2(GPOINTER_TO_INT(fd), 9);
}

void tests_sandbox_start_bwrap(TestSandbox *s) {
        const char *argv[] = { "bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                               "--die-with-parent", "--seccomp", "9", "--", "sleep", "1000", NULL };
        _cleanup_close_ int fd = open(BWRAP_EXAMPLE_FILTER, O_RDONLY | O_CLOEXEC);
        g_autoptr(GError) error = NULL;
        GPid pid;

        g_assert_cmpint(fd, >=, 0);
        *s = (TestSandbox) {};
        g_assert_true(g_spawn_async(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                                    G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_LEAVE_DESCRIPTORS_OPEN,
                                    bwrap_child_setup, GINT_TO_POINTER(fd), &pid, &error));
        g_assert_no_error(error);
        s->tool = pid;
        sandbox_wait(s, "bwrap");
}

void tests_sandbox_start_firejail(TestSandbox *s) {
        const char *argv[] = { "firejail", "--quiet", "sleep", "1000", NULL };
        g_autoptr(GError) error = NULL;
        GPid pid;

        *s = (TestSandbox) {};
        g_assert_true(g_spawn_async(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                                    G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                                    tests_die_with_parent, NULL, &pid, &error));
        g_assert_no_error(error);
        s->tool = pid;
        sandbox_wait(s, "firejail");
}

void tests_sandbox_stop(TestSandbox *s) {
        if (s->tool <= 0)
                return;
        if (s->sleeper > 0)
                (void) kill(s->sleeper, SIGKILL);
        (void) kill(s->tool, SIGTERM);
        for (unsigned i = 0; i < 100; i++) {
                if (waitpid(s->tool, NULL, WNOHANG) == s->tool) {
                        s->tool = 0;
                        return;
                }
                g_usleep(20 * 1000);
        }
        (void) kill(s->tool, SIGKILL);
        (void) waitpid(s->tool, NULL, 0);
        s->tool = 0;
}
