/* test-disasm.c: disassembly of hand-written and libseccomp-built filters, and action spelling */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>

#include "core/disasm.h"
#include "core/prog.h"
#include "core/util.h"
#include "tests-util.h"

#define STMT(code, k) BPF_STMT((code), (k))
#define JUMP(code, k, jt, jf) BPF_JUMP((code), (k), (jt), (jf))

/* ---- helpers ---- */

typedef struct Exported {
        struct sock_filter *insns;
        size_t len;
} Exported;

static void exported_clear(Exported *e) {
        free(e->insns);
        *e = (Exported) {};
}

static Exported export_filter(scmp_filter_ctx ctx) {
        _cleanup_close_ int fd = memfd_create("sectree-test-filter", MFD_CLOEXEC);
        Exported e = {};
        off_t size;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(seccomp_export_bpf(ctx, fd), ==, 0);
        size = lseek(fd, 0, SEEK_CUR);
        g_assert_cmpint(size, >, 0);
        g_assert_cmpint(size % sizeof(struct sock_filter), ==, 0);

        e.len = (size_t) size / sizeof(struct sock_filter);
        e.insns = calloc(e.len, sizeof(struct sock_filter));
        g_assert_nonnull(e.insns);
        g_assert_cmpint(pread(fd, e.insns, (size_t) size, 0), ==, size);
        g_assert_cmpint(prog_validate(e.insns, e.len, NULL), ==, 0);
        return e;
}

/* The disassembly split into lines, asserting one line per instruction, each "NNNN: " numbered. */
static char **disassemble_lines(const struct sock_filter *insns, size_t n) {
        _cleanup_free_ char *text = prog_disassemble(insns, n);
        char **lines;

        g_assert_nonnull(text);
        g_test_message("\n%s", text);
        g_assert_true(n == 0 || g_str_has_suffix(text, "\n"));
        lines = g_strsplit(text, "\n", -1);
        g_assert_cmpuint(g_strv_length(lines), ==, n + 1); /* the text after the last newline is empty */
        g_assert_cmpstr(lines[n], ==, "");
        for (size_t i = 0; i < n; i++) {
                char prefix[32];
                snprintf(prefix, sizeof(prefix), "%04zu: ", i);
                g_assert_true(g_str_has_prefix(lines[i], prefix));
        }
        return lines;
}

static const char *line_comment(const char *line) {
        const char *c = strstr(line, "  ; ");
        return c ? c + 4 : "";
}

/* The absolute jump targets of a conditional jump line "NNNN: jxx ..., TTTT, FFFF ...". */
static void line_jump_targets(const char *line, size_t *jt, size_t *jf) {
        const char *p = strchr(line, ',');
        g_assert_nonnull(p);
        g_assert_cmpint(sscanf(p, ", %zu, %zu", jt, jf), ==, 2);
}

/* Finds the "jeq" line whose comment is exactly want; returns its index or -1. */
static ssize_t find_jeq(char **lines, const char *want) {
        for (size_t i = 0; lines[i]; i++)
                if (strstr(lines[i], ": jeq ") && streq(line_comment(lines[i]), want))
                        return (ssize_t) i;
        return -1;
}

/* The syscall check for want must lead, when taken, straight to a RET of action. */
static void assert_syscall_action(char **lines, const char *want, const char *action) {
        ssize_t i = find_jeq(lines, want);
        size_t jt, jf;

        if (i < 0) {
                g_test_fail_printf("no \"jeq\" annotated \"%s\"", want);
                return;
        }
        line_jump_targets(lines[i], &jt, &jf);
        g_assert_true(strstr(lines[jt], ": ret #0x"));
        g_assert_cmpstr(line_comment(lines[jt]), ==, action);
}

/* ---- actions ---- */

static void test_action_to_string(void) {
        static const struct {
                uint32_t ret;
                const char *s;
        } table[] = {
                { SECCOMP_RET_KILL_PROCESS, "KILL_PROCESS" },
                { SECCOMP_RET_KILL_PROCESS | 7, "KILL_PROCESS" },
                { SECCOMP_RET_KILL_THREAD, "KILL_THREAD" },
                { SECCOMP_RET_TRAP, "TRAP" },
                { SECCOMP_RET_TRAP | 42, "TRAP(42)" },
                { SECCOMP_RET_ERRNO | EPERM, "ERRNO(1)" },
                { SECCOMP_RET_ERRNO | 0, "ERRNO(0)" },
                { SECCOMP_RET_ERRNO | SECCOMP_RET_DATA, "ERRNO(65535)" },
                { SECCOMP_RET_USER_NOTIF, "USER_NOTIF" },
                { SECCOMP_RET_TRACE | 7, "TRACE(7)" },
                { SECCOMP_RET_TRACE, "TRACE(0)" },
                { SECCOMP_RET_LOG, "LOG" },
                { SECCOMP_RET_ALLOW, "ALLOW" },
                { 0x00010000, "UNKNOWN(0x00010000)" },
                { 0x80010005, "UNKNOWN(0x80010005)" },
                { 0x7ffe0000, "UNKNOWN(0x7ffe0000)" },
        };
        char buf[ACTION_STRING_MAX];

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                g_assert_cmpstr(action_to_string(table[i].ret, buf, sizeof(buf)), ==, table[i].s);
}

static void test_action_from_string(void) {
        static const struct {
                const char *s;
                int r;
                uint32_t ret;
        } table[] = {
                { "KILL_PROCESS", 0, SECCOMP_RET_KILL_PROCESS },
                { "kill_thread", 0, SECCOMP_RET_KILL_THREAD },
                { "KILL", 0, SECCOMP_RET_KILL_THREAD },
                { "TRAP", 0, SECCOMP_RET_TRAP },
                { "trap(3)", 0, SECCOMP_RET_TRAP | 3 },
                { "ERRNO(13)", 0, SECCOMP_RET_ERRNO | EACCES },
                { "errno(65535)", 0, SECCOMP_RET_ERRNO | 65535 },
                { "USER_NOTIF", 0, SECCOMP_RET_USER_NOTIF },
                { "TRACE(7)", 0, SECCOMP_RET_TRACE | 7 },
                { "Log", 0, SECCOMP_RET_LOG },
                { "allow", 0, SECCOMP_RET_ALLOW },
                { "UNKNOWN(0x00010000)", 0, 0x00010000 },
                { "ERRNO(65536)", -EINVAL, 0 },
                { "ERRNO(-1)", -EINVAL, 0 },
                { "ERRNO(1", -EINVAL, 0 },
                { "ERRNO(1)x", -EINVAL, 0 },
                { "ERRNO()", -EINVAL, 0 },
                { "ALLOW(1)", -EINVAL, 0 },
                { "ALLOWED", -EINVAL, 0 },
                { "UNKNOWN(12)", -EINVAL, 0 },
                { "", -EINVAL, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                uint32_t ret = 0xdeadbeef;
                g_assert_cmpint(action_from_string(table[i].s, &ret), ==, table[i].r);
                if (table[i].r == 0)
                        g_assert_cmphex(ret, ==, table[i].ret);
        }
        g_assert_cmpint(action_from_string(NULL, &(uint32_t) { 0 }), ==, -EINVAL);
}

static void test_action_roundtrip(void) {
        static const uint32_t values[] = {
                SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP, SECCOMP_RET_TRAP | 9,
                SECCOMP_RET_ERRNO | 4095, SECCOMP_RET_USER_NOTIF, SECCOMP_RET_TRACE | 65535, SECCOMP_RET_LOG,
                SECCOMP_RET_ALLOW, 0x00020000, 0xffff0000,
        };
        char buf[ACTION_STRING_MAX];

        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                uint32_t back;
                g_assert_cmpint(action_from_string(action_to_string(values[i], buf, sizeof(buf)), &back), ==, 0);
                g_assert_cmphex(back, ==, values[i]);
        }
}

/* ---- hand-written programs ---- */

static void test_every_opcode(void) {
        const struct sock_filter p[] = {
                STMT(BPF_LD | BPF_W | BPF_ABS, 0),
                STMT(BPF_LD | BPF_W | BPF_ABS, 4),
                STMT(BPF_LD | BPF_W | BPF_ABS, 8),
                STMT(BPF_LD | BPF_W | BPF_ABS, 12),
                STMT(BPF_LD | BPF_W | BPF_ABS, 16),
                STMT(BPF_LD | BPF_W | BPF_ABS, 60),
                STMT(BPF_LD | BPF_W | BPF_ABS, 66),
                STMT(BPF_LD | BPF_H | BPF_ABS, 2),
                STMT(BPF_LD | BPF_B | BPF_IND, 3),
                STMT(BPF_LD | BPF_W | BPF_LEN, 0),
                STMT(BPF_LD | BPF_IMM, 0x1234),
                STMT(BPF_LD | BPF_MEM, 3),
                STMT(BPF_LDX | BPF_W | BPF_LEN, 0),
                STMT(BPF_LDX | BPF_IMM, 0xff),
                STMT(BPF_LDX | BPF_MEM, 15),
                STMT(BPF_LDX | BPF_B | BPF_MSH, 14),
                STMT(BPF_ST, 1),
                STMT(BPF_STX, 2),
                STMT(BPF_ALU | BPF_ADD | BPF_K, 1),
                STMT(BPF_ALU | BPF_SUB | BPF_X, 0),
                STMT(BPF_ALU | BPF_MUL | BPF_K, 3),
                STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
                STMT(BPF_ALU | BPF_MOD | BPF_K, 5),
                STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff),
                STMT(BPF_ALU | BPF_OR | BPF_X, 0),
                STMT(BPF_ALU | BPF_XOR | BPF_K, 0x55),
                STMT(BPF_ALU | BPF_LSH | BPF_K, 2),
                STMT(BPF_ALU | BPF_RSH | BPF_X, 0),
                STMT(BPF_ALU | BPF_NEG, 0),
                STMT(BPF_MISC | BPF_TAX, 0),
                STMT(BPF_MISC | BPF_TXA, 0),
                STMT(BPF_JMP | BPF_JA, 2),
                JUMP(BPF_JMP | BPF_JGT | BPF_K, 0x10, 0, 1),
                JUMP(BPF_JMP | BPF_JGE | BPF_X, 0, 1, 0),
                JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x4, 0, 0),
                STMT(0x85, 0x99),
                STMT(BPF_RET | BPF_A, 0),
                STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        };
        static const char *const expected[] = {
                "0000: ld [0]                            ; nr",
                "0001: ld [4]                            ; arch",
                "0002: ld [8]                            ; instruction_pointer lo",
                "0003: ld [12]                           ; instruction_pointer hi",
                "0004: ld [16]                           ; args[0] lo",
                "0005: ld [60]                           ; args[5] hi",
                "0006: ld [66]                           ; misaligned",
                "0007: ldh [2]",
                "0008: ldb [x + 3]",
                "0009: ld #len",
                "0010: ld #0x1234",
                "0011: ld M[3]",
                "0012: ldx #len",
                "0013: ldx #0xff",
                "0014: ldx M[15]",
                "0015: ldx 4*([14]&0xf)",
                "0016: st M[1]",
                "0017: stx M[2]",
                "0018: add #0x1",
                "0019: sub x",
                "0020: mul #0x3",
                "0021: div x",
                "0022: mod #0x5",
                "0023: and #0xfff",
                "0024: or x",
                "0025: xor #0x55",
                "0026: lsh #0x2",
                "0027: rsh x",
                "0028: neg",
                "0029: tax",
                "0030: txa",
                "0031: ja 0034",
                "0032: jgt #0x10, 0033, 0034",
                "0033: jge x, 0035, 0034",
                "0034: jset #0x4, 0035, 0035",
                "0035: .insn 0x0085, 0, 0, 0x00000099    ; invalid opcode",
                "0036: ret a",
                "0037: ret #0x0005000d                   ; ERRNO(13)",
        };
        g_auto(GStrv) lines = disassemble_lines(p, ELEMENTSOF(p));

        G_STATIC_ASSERT(G_N_ELEMENTS(expected) == G_N_ELEMENTS(p));
        for (size_t i = 0; i < ELEMENTSOF(p); i++)
                g_assert_cmpstr(lines[i], ==, expected[i]);
}

static void test_hand_written_arch_tracking(void) {
        /* i386 first: nr 11 is execve there (munmap on x86_64), nr 59 is execve on x86_64. */
        const struct sock_filter p[] = {
                STMT(BPF_LD | BPF_W | BPF_ABS, 4),
                JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 0, 2),
                STMT(BPF_LD | BPF_W | BPF_ABS, 0),
                JUMP(BPF_JMP | BPF_JEQ | BPF_K, 11, 4, 5),
                JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 5),
                STMT(BPF_LD | BPF_W | BPF_ABS, 0),
                JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 2, 0),
                JUMP(BPF_JMP | BPF_JEQ | BPF_K, 59, 0, 1),
                STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | 5),
                STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        };
        g_auto(GStrv) lines = disassemble_lines(p, ELEMENTSOF(p));

        g_assert_cmpstr(line_comment(lines[1]), ==, "AUDIT_ARCH_I386");
        g_assert_cmpstr(line_comment(lines[3]), ==, "execve (i386)");
        g_assert_true(strstr(lines[3], "jeq #11, 0008, 0009"));
        /* A still holds arch on the false branch of insn 1 */
        g_assert_cmpstr(line_comment(lines[4]), ==, "AUDIT_ARCH_X86_64");
        g_assert_cmpstr(line_comment(lines[6]), ==, "__X32_SYSCALL_BIT");
        g_assert_cmpstr(line_comment(lines[7]), ==, "execve");
        g_assert_cmpstr(line_comment(lines[8]), ==, "TRAP(5)");
        g_assert_cmpstr(line_comment(lines[10]), ==, "KILL_PROCESS");
}

static void test_invalid_input(void) {
        const struct sock_filter p[] = {
                STMT(0xffff, 1),
                JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 200, 0),
                STMT(BPF_JMP | BPF_JA, 7),
                STMT(BPF_RET | BPF_X, 0),
        };
        g_auto(GStrv) lines = disassemble_lines(p, ELEMENTSOF(p));
        _cleanup_free_ char *empty = prog_disassemble(p, 0);

        g_assert_true(g_str_has_prefix(lines[0], "0000: .insn 0xffff, 0, 0, 0x00000001"));
        g_assert_true(strstr(lines[1], "0202, 0002"));
        g_assert_cmpstr(line_comment(lines[1]), ==, "jump out of range");
        g_assert_cmpstr(line_comment(lines[2]), ==, "jump out of range");
        g_assert_true(g_str_has_prefix(lines[3], "0003: .insn 0x000e"));
        g_assert_nonnull(empty);
        g_assert_cmpstr(empty, ==, "");
}

/* ---- libseccomp-built filters ---- */

/* What a container runtime installs by default: allow all, but refuse the syscalls that reach
 * out of the container with EPERM, and kill a process that talks another architecture. */
static const char *const container_denied[] = {
        "mount", "umount2", "reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module",
        "delete_module", "ptrace", "bpf", "unshare", "setns", "keyctl", "add_key", "request_key",
        "pivot_root", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "adjtimex",
        "sethostname", "setdomainname", "iopl", "ioperm", "create_module", "quotactl", "nfsservctl",
        "lookup_dcookie", "perf_event_open", "userfaultfd", "open_by_handle_at", "fsopen", "move_mount",
};

static Exported build_container_profile(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        Exported e;

        g_assert_nonnull(ctx);
        g_assert_cmpint(seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), ==, 0);
        for (size_t i = 0; i < ELEMENTSOF(container_denied); i++) {
                int nr = seccomp_syscall_resolve_name(container_denied[i]);
                g_assert_cmpint(nr, >=, 0);
                g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0), ==, 0);
        }
        /* one rule with an argument: personality(2) only to query */
        g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                                         SCMP_A0(SCMP_CMP_NE, 0xffffffff)), ==, 0);
        e = export_filter(ctx);
        seccomp_release(ctx);
        return e;
}

static void test_container_profile(void) {
        _cleanup_(exported_clear) Exported e = build_container_profile();
        g_auto(GStrv) lines = disassemble_lines(e.insns, e.len);
        size_t jt, jf;

        /* the architecture check comes first, and a foreign one is killed */
        g_assert_cmpstr(lines[0], ==, "0000: ld [4]                            ; arch");
        g_assert_cmpstr(line_comment(lines[1]), ==, "AUDIT_ARCH_X86_64");
        line_jump_targets(lines[1], &jt, &jf);
        g_assert_cmpstr(line_comment(lines[jf]), ==, "KILL_PROCESS");
        g_assert_cmpstr(line_comment(lines[jt]), ==, "nr");

        for (size_t i = 0; i < ELEMENTSOF(container_denied); i++)
                assert_syscall_action(lines, container_denied[i], "ERRNO(1)");

        /* the personality check loads its argument's two halves */
        ssize_t p = find_jeq(lines, "personality");
        g_assert_cmpint(p, >=, 0);
        line_jump_targets(lines[p], &jt, &jf);
        g_assert_true(g_str_has_suffix(lines[jt], "; args[0] hi") || g_str_has_suffix(lines[jt], "; args[0] lo"));

        /* every annotated jeq names a syscall of the profile (argument compares carry no comment) */
        size_t named = 0;
        for (size_t i = 0; lines[i]; i++) {
                const char *c = line_comment(lines[i]);
                if (!strstr(lines[i], ": jeq #") || !*c || g_str_has_prefix(c, "AUDIT_ARCH_") || streq(c, "nr -1"))
                        continue;
                bool known = streq(c, "personality");
                for (size_t j = 0; j < ELEMENTSOF(container_denied); j++)
                        known = known || streq(c, container_denied[j]);
                if (!known)
                        g_test_fail_printf("unexpected annotation \"%s\" in: %s", c, lines[i]);
                named++;
        }
        g_assert_cmpuint(named, ==, ELEMENTSOF(container_denied) + 1);
        g_assert_true(strstr(lines[e.len - 1], ": ret #0x") != NULL);
}

static void test_multi_arch(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        _cleanup_(exported_clear) Exported e = {};

        g_assert_nonnull(ctx);
        g_assert_cmpint(seccomp_arch_add(ctx, SCMP_ARCH_X86), ==, 0);
        g_assert_cmpint(seccomp_arch_add(ctx, SCMP_ARCH_X32), ==, 0);
        g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mount), 0), ==, 0);
        g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_KILL_THREAD, SCMP_SYS(kexec_load), 0), ==, 0);
        g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_TRACE(7), SCMP_SYS(getpid), 0), ==, 0);
        g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_LOG, SCMP_SYS(uname), 0), ==, 0);
        g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(umask), 0), ==, 0);
        g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(getppid), 0), ==, 0);
        e = export_filter(ctx);
        seccomp_release(ctx);

        g_auto(GStrv) lines = disassemble_lines(e.insns, e.len);

        g_assert_cmpint(find_jeq(lines, "AUDIT_ARCH_X86_64"), >=, 0);
        g_assert_cmpint(find_jeq(lines, "AUDIT_ARCH_I386"), >=, 0);
        static const char *const suffixes[] = { "", " (i386)", " (x32)" };
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                g_autofree char *mount = g_strconcat("mount", suffixes[i], NULL);
                g_autofree char *kexec = g_strconcat("kexec_load", suffixes[i], NULL);
                g_autofree char *getpid = g_strconcat("getpid", suffixes[i], NULL);
                g_autofree char *uname = g_strconcat("uname", suffixes[i], NULL);
                g_autofree char *umask = g_strconcat("umask", suffixes[i], NULL);
                g_autofree char *getppid = g_strconcat("getppid", suffixes[i], NULL);

                assert_syscall_action(lines, mount, "ERRNO(1)");
                assert_syscall_action(lines, kexec, "KILL_THREAD");
                assert_syscall_action(lines, getpid, "TRACE(7)");
                assert_syscall_action(lines, uname, "LOG");
                assert_syscall_action(lines, umask, "TRAP");
                assert_syscall_action(lines, getppid, "USER_NOTIF");
        }
        /* i386 mount is 21, x86_64's access: had the arch been lost, "access" would show */
        for (size_t i = 0; lines[i]; i++)
                g_assert_null(strstr(line_comment(lines[i]), "access"));
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/disasm/action/to-string", test_action_to_string);
        g_test_add_func("/disasm/action/from-string", test_action_from_string);
        g_test_add_func("/disasm/action/roundtrip", test_action_roundtrip);
        g_test_add_func("/disasm/every-opcode", test_every_opcode);
        g_test_add_func("/disasm/arch-tracking", test_hand_written_arch_tracking);
        g_test_add_func("/disasm/invalid-input", test_invalid_input);
        g_test_add_func("/disasm/libseccomp/container-profile", test_container_profile);
        g_test_add_func("/disasm/libseccomp/multi-arch", test_multi_arch);
        return g_test_run();
}
