/* disasm.c: seccomp classic-BPF disassembler, with syscall names from libseccomp and actions
 * spelled as the kernel spells them */
#include "core/disasm.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <strings.h>

#include "core/util.h"

#define X32_SYSCALL_BIT 0x40000000U /* __X32_SYSCALL_BIT: x32 syscalls run on AUDIT_ARCH_X86_64 */
#define COMMENT_COLUMN 32

/* ---- actions ---- */

typedef enum ActionData {
        ACTION_DATA_IGNORED,    /* the kernel ignores the data bits: print the name alone */
        ACTION_DATA_ALWAYS,     /* NAME(n) */
        ACTION_DATA_IF_NONZERO, /* NAME, or NAME(n) when n != 0 */
} ActionData;

typedef struct ActionName {
        uint32_t action;
        const char *name;
        ActionData data;
} ActionName;

static const ActionName action_table[] = {
        { SECCOMP_RET_KILL_PROCESS, "KILL_PROCESS", ACTION_DATA_IGNORED },
        { SECCOMP_RET_KILL_THREAD, "KILL_THREAD", ACTION_DATA_IGNORED },
        { SECCOMP_RET_TRAP, "TRAP", ACTION_DATA_IF_NONZERO }, /* data becomes si_errno of the SIGSYS */
        { SECCOMP_RET_ERRNO, "ERRNO", ACTION_DATA_ALWAYS },
        { SECCOMP_RET_USER_NOTIF, "USER_NOTIF", ACTION_DATA_IGNORED },
        { SECCOMP_RET_TRACE, "TRACE", ACTION_DATA_ALWAYS },
        { SECCOMP_RET_LOG, "LOG", ACTION_DATA_IGNORED },
        { SECCOMP_RET_ALLOW, "ALLOW", ACTION_DATA_IGNORED },
};

#define UNKNOWN_ACTION_NAME "UNKNOWN"

static const ActionName *action_lookup(uint32_t action) {
        for (size_t i = 0; i < ELEMENTSOF(action_table); i++)
                if (action_table[i].action == action)
                        return action_table + i;
        return NULL;
}

char *action_to_string(uint32_t ret, char *buf, size_t len) {
        const ActionName *a = action_lookup(ret & SECCOMP_RET_ACTION_FULL);
        uint32_t data = ret & SECCOMP_RET_DATA;

        if (!a)
                snprintf(buf, len, UNKNOWN_ACTION_NAME "(0x%08" PRIx32 ")", ret);
        else if (a->data == ACTION_DATA_ALWAYS || (a->data == ACTION_DATA_IF_NONZERO && data != 0))
                snprintf(buf, len, "%s(%" PRIu32 ")", a->name, data);
        else
                snprintf(buf, len, "%s", a->name);
        return buf;
}

/* Parses "(n)" at s, with n decimal (or hex with 0x when hex is set) up to max, and nothing after. */
static int parse_paren_number(const char *s, bool hex, uint64_t max, uint64_t *ret) {
        char *end;

        if (*s != '(' || !(hex ? s[1] == '0' && (s[2] == 'x' || s[2] == 'X') : s[1] >= '0' && s[1] <= '9'))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s + 1, &end, hex ? 16 : 10);
        if (errno != 0 || v > max || end[0] != ')' || end[1] != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

int action_from_string(const char *s, uint32_t *ret) {
        size_t l = s ? strcspn(s, "(") : 0;
        uint64_t v = 0;

        if (!s)
                return -EINVAL;

        if (l == strlen(UNKNOWN_ACTION_NAME) && strncasecmp(s, UNKNOWN_ACTION_NAME, l) == 0) {
                if (parse_paren_number(s + l, true, UINT32_MAX, &v) < 0)
                        return -EINVAL;
                *ret = (uint32_t) v;
                return 0;
        }
        if (strcasecmp(s, "KILL") == 0) { /* libseccomp's and the old kernel spelling of KILL_THREAD */
                *ret = SECCOMP_RET_KILL_THREAD;
                return 0;
        }

        for (size_t i = 0; i < ELEMENTSOF(action_table); i++) {
                const ActionName *a = action_table + i;

                if (strlen(a->name) != l || strncasecmp(s, a->name, l) != 0)
                        continue;
                if (s[l] != 0 && (a->data == ACTION_DATA_IGNORED ||
                                  parse_paren_number(s + l, false, SECCOMP_RET_DATA, &v) < 0))
                        return -EINVAL;
                *ret = a->action | (uint32_t) v;
                return 0;
        }
        return -EINVAL;
}

/* ---- architectures ---- */

typedef struct ArchName {
        uint32_t arch; /* AUDIT_ARCH_* (SCMP_ARCH_* has the same values), SCMP_ARCH_X32 for x32 */
        const char *name;
        const char *audit_name;
} ArchName;

static const ArchName arch_table[] = {
        { AUDIT_ARCH_X86_64, "x86_64", "AUDIT_ARCH_X86_64" },
        { AUDIT_ARCH_I386, "i386", "AUDIT_ARCH_I386" },
        { SCMP_ARCH_X32, "x32", NULL },
        { AUDIT_ARCH_AARCH64, "aarch64", "AUDIT_ARCH_AARCH64" },
        { AUDIT_ARCH_ARM, "arm", "AUDIT_ARCH_ARM" },
        { AUDIT_ARCH_RISCV64, "riscv64", "AUDIT_ARCH_RISCV64" },
        { AUDIT_ARCH_PPC64LE, "ppc64le", "AUDIT_ARCH_PPC64LE" },
        { AUDIT_ARCH_S390X, "s390x", "AUDIT_ARCH_S390X" },
};

static const ArchName *arch_lookup(uint32_t arch) {
        for (size_t i = 0; i < ELEMENTSOF(arch_table); i++)
                if (arch_table[i].arch == arch)
                        return arch_table + i;
        return NULL;
}

/* ---- data flow: what A holds, and which architecture the path checked ---- */

#define A_UNKNOWN (-1)

typedef struct FlowState {
        bool reached;
        int a_offset;  /* offset into struct seccomp_data whose word A holds, or A_UNKNOWN */
        uint32_t arch; /* AUDIT_ARCH_* established by a taken "jeq arch", 0 if none or paths disagree */
} FlowState;

static void flow_merge(FlowState *into, const FlowState *from) {
        if (!into->reached) {
                *into = *from;
                return;
        }
        if (into->a_offset != from->a_offset)
                into->a_offset = A_UNKNOWN;
        if (into->arch != from->arch)
                into->arch = 0;
}

static void flow_edge(FlowState *states, size_t n, size_t target, const FlowState *out) {
        if (target < n)
                flow_merge(states + target, out);
}

static bool is_word_load_from_data(const struct sock_filter *f) {
        return f->code == (BPF_LD | BPF_W | BPF_ABS) && f->k < sizeof(struct seccomp_data) && (f->k & 3) == 0;
}

/* A taken "jeq #AUDIT_ARCH_..." on the arch word fixes the architecture for that branch. */
static void flow_jump(const struct sock_filter *f, size_t n, size_t pc, const FlowState *out, FlowState *states) {
        FlowState taken = *out;

        if (out->a_offset == offsetof(struct seccomp_data, arch) && f->code == (BPF_JMP | BPF_JEQ | BPF_K))
                taken.arch = f->k;
        flow_edge(states, n, pc + 1 + f->jt, &taken);
        flow_edge(states, n, pc + 1 + f->jf, out);
}

static void flow_step(const struct sock_filter *insns, size_t n, size_t pc, FlowState *states) {
        const struct sock_filter *f = insns + pc;
        FlowState out = states[pc];

        out.reached = true;
        switch (BPF_CLASS(f->code)) {
        case BPF_RET:
                return;
        case BPF_LD:
                out.a_offset = is_word_load_from_data(f) ? (int) f->k : A_UNKNOWN;
                break;
        case BPF_ALU:
                out.a_offset = A_UNKNOWN;
                break;
        case BPF_MISC:
                if (BPF_MISCOP(f->code) == BPF_TXA)
                        out.a_offset = A_UNKNOWN;
                break;
        case BPF_JMP:
                if (BPF_OP(f->code) == BPF_JA) {
                        flow_edge(states, n, pc + 1 + (size_t) f->k, &out);
                        return;
                }
                flow_jump(f, n, pc, &out, states);
                return;
        }
        flow_edge(states, n, pc + 1, &out);
}

static FlowState *flow_analyze(const struct sock_filter *insns, size_t n) {
        FlowState *states = calloc(n ? n : 1, sizeof(FlowState));

        if (!states)
                return NULL;
        for (size_t pc = 0; pc < n; pc++)
                states[pc].a_offset = A_UNKNOWN;
        if (n > 0)
                states[0].reached = true;
        for (size_t pc = 0; pc < n; pc++)
                if (states[pc].reached)
                        flow_step(insns, n, pc, states);
        return states;
}

/* ---- formatting ---- */

typedef struct Line {
        char text[64];
        char comment[128];
} Line;

static void line_comment(Line *l, const char *format, ...) _printf_(2, 3);
static void line_comment(Line *l, const char *format, ...) {
        size_t used = strlen(l->comment);
        va_list ap;

        if (used > 0 && used + 2 < sizeof(l->comment)) {
                strcpy(l->comment + used, ", ");
                used += 2;
        }
        va_start(ap, format);
        vsnprintf(l->comment + used, sizeof(l->comment) - used, format, ap);
        va_end(ap);
}

static void data_field_name(uint32_t k, Line *l) {
        const bool le = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
        const uint32_t args = offsetof(struct seccomp_data, args);
        const uint32_t ip = offsetof(struct seccomp_data, instruction_pointer);

        if (k & 3)
                line_comment(l, "misaligned");
        else if (k >= sizeof(struct seccomp_data))
                line_comment(l, "beyond seccomp_data");
        else if (k == offsetof(struct seccomp_data, nr))
                line_comment(l, "nr");
        else if (k == offsetof(struct seccomp_data, arch))
                line_comment(l, "arch");
        else if (k < args)
                line_comment(l, "instruction_pointer %s", ((k - ip) == 0) == le ? "lo" : "hi");
        else
                line_comment(l, "args[%" PRIu32 "] %s", (k - args) / 8, ((k - args) % 8 == 0) == le ? "lo" : "hi");
}

static bool format_ld(const struct sock_filter *f, Line *l) {
        static const char *const size_suffix[4] = { [BPF_W >> 3] = "", [BPF_H >> 3] = "h", [BPF_B >> 3] = "b" };
        const char *sfx = size_suffix[BPF_SIZE(f->code) >> 3];

        switch (BPF_MODE(f->code)) {
        case BPF_ABS:
                if (!sfx)
                        return false;
                snprintf(l->text, sizeof(l->text), "ld%s [%" PRIu32 "]", sfx, f->k);
                if (BPF_SIZE(f->code) == BPF_W) /* seccomp only has word loads */
                        data_field_name(f->k, l);
                return true;
        case BPF_IND:
                if (!sfx)
                        return false;
                snprintf(l->text, sizeof(l->text), "ld%s [x + %" PRIu32 "]", sfx, f->k);
                return true;
        case BPF_LEN:
                snprintf(l->text, sizeof(l->text), "ld #len");
                return BPF_SIZE(f->code) == BPF_W;
        case BPF_IMM:
                snprintf(l->text, sizeof(l->text), "ld #0x%" PRIx32, f->k);
                return BPF_SIZE(f->code) == BPF_W;
        case BPF_MEM:
                snprintf(l->text, sizeof(l->text), "ld M[%" PRIu32 "]", f->k);
                return BPF_SIZE(f->code) == BPF_W;
        }
        return false;
}

static bool format_ldx(const struct sock_filter *f, Line *l) {
        switch (f->code) {
        case BPF_LDX | BPF_W | BPF_LEN:
                snprintf(l->text, sizeof(l->text), "ldx #len");
                return true;
        case BPF_LDX | BPF_W | BPF_IMM:
                snprintf(l->text, sizeof(l->text), "ldx #0x%" PRIx32, f->k);
                return true;
        case BPF_LDX | BPF_W | BPF_MEM:
                snprintf(l->text, sizeof(l->text), "ldx M[%" PRIu32 "]", f->k);
                return true;
        case BPF_LDX | BPF_B | BPF_MSH:
                snprintf(l->text, sizeof(l->text), "ldx 4*([%" PRIu32 "]&0xf)", f->k);
                return true;
        }
        return false;
}

static bool format_store(const struct sock_filter *f, Line *l) {
        if (f->code != BPF_ST && f->code != BPF_STX)
                return false;
        snprintf(l->text, sizeof(l->text), "%s M[%" PRIu32 "]", f->code == BPF_ST ? "st" : "stx", f->k);
        return true;
}

static const char *const alu_op_table[16] = {
        [BPF_ADD >> 4] = "add", [BPF_SUB >> 4] = "sub", [BPF_MUL >> 4] = "mul", [BPF_DIV >> 4] = "div",
        [BPF_OR >> 4] = "or",   [BPF_AND >> 4] = "and", [BPF_LSH >> 4] = "lsh", [BPF_RSH >> 4] = "rsh",
        [BPF_NEG >> 4] = "neg", [BPF_MOD >> 4] = "mod", [BPF_XOR >> 4] = "xor",
};

static bool format_alu(const struct sock_filter *f, Line *l) {
        const char *op = alu_op_table[BPF_OP(f->code) >> 4];

        if (!op)
                return false;
        if (BPF_OP(f->code) == BPF_NEG) {
                snprintf(l->text, sizeof(l->text), "neg");
                return BPF_SRC(f->code) == BPF_K;
        }
        if (BPF_SRC(f->code) == BPF_X)
                snprintf(l->text, sizeof(l->text), "%s x", op);
        else
                snprintf(l->text, sizeof(l->text), "%s #0x%" PRIx32, op, f->k);
        return true;
}

static const char *const jmp_op_table[16] = {
        [BPF_JA >> 4] = "ja", [BPF_JEQ >> 4] = "jeq", [BPF_JGT >> 4] = "jgt", [BPF_JGE >> 4] = "jge", [BPF_JSET >> 4] = "jset",
};

/* The architecture the syscall numbers at this point belong to. */
static uint32_t nr_arch(const FlowState *s, uint32_t last_arch_compared, uint32_t k) {
        uint32_t arch = s->arch ? s->arch : last_arch_compared ? last_arch_compared : AUDIT_ARCH_X86_64;

        if (arch == AUDIT_ARCH_X86_64 && (k & X32_SYSCALL_BIT))
                return SCMP_ARCH_X32;
        return arch;
}

static void annotate_syscall(uint32_t arch, uint32_t nr, Line *l) {
        const ArchName *a = arch_lookup(arch);
        char *name = seccomp_syscall_resolve_num_arch(arch, (int) nr);

        if (!name)
                line_comment(l, "unknown syscall (%s)", a ? a->name : "unknown arch");
        else if (arch == AUDIT_ARCH_X86_64)
                line_comment(l, "%s", name);
        else
                line_comment(l, "%s (%s)", name, a ? a->name : "unknown arch");
        free(name);
}

static void annotate_compare(const struct sock_filter *f, const FlowState *s, uint32_t last_arch_compared, Line *l) {
        if (BPF_SRC(f->code) != BPF_K)
                return;

        if (s->a_offset == offsetof(struct seccomp_data, arch)) {
                const ArchName *a = arch_lookup(f->k);
                if (a && a->audit_name)
                        line_comment(l, "%s", a->audit_name);
        } else if (s->a_offset == offsetof(struct seccomp_data, nr)) {
                if (BPF_OP(f->code) == BPF_JEQ && (int32_t) f->k < 0)
                        line_comment(l, "nr %" PRIi32, (int32_t) f->k); /* e.g. syscall(-1), never a syscall */
                else if (BPF_OP(f->code) == BPF_JEQ)
                        annotate_syscall(nr_arch(s, last_arch_compared, f->k), f->k, l);
                else if (f->k == X32_SYSCALL_BIT || (BPF_OP(f->code) == BPF_JGT && f->k == X32_SYSCALL_BIT - 1))
                        line_comment(l, "__X32_SYSCALL_BIT");
        }
}

static bool format_jmp(const struct sock_filter *f, size_t pc, size_t n, const FlowState *s,
                       uint32_t last_arch_compared, Line *l) {
        const char *op = jmp_op_table[BPF_OP(f->code) >> 4];
        uint64_t jt = (uint64_t) pc + 1 + f->jt, jf = (uint64_t) pc + 1 + f->jf;

        if (!op)
                return false;
        if (BPF_OP(f->code) == BPF_JA) {
                uint64_t target = (uint64_t) pc + 1 + f->k;
                snprintf(l->text, sizeof(l->text), "ja %04" PRIu64, target);
                if (target >= n)
                        line_comment(l, "jump out of range");
                return BPF_SRC(f->code) == BPF_K;
        }

        if (BPF_SRC(f->code) == BPF_X)
                snprintf(l->text, sizeof(l->text), "%s x, %04" PRIu64 ", %04" PRIu64, op, jt, jf);
        else if (s->a_offset == offsetof(struct seccomp_data, nr) && f->k <= UINT16_MAX)
                snprintf(l->text, sizeof(l->text), "%s #%" PRIu32 ", %04" PRIu64 ", %04" PRIu64, op, f->k, jt, jf);
        else
                snprintf(l->text, sizeof(l->text), "%s #0x%" PRIx32 ", %04" PRIu64 ", %04" PRIu64, op, f->k, jt, jf);

        annotate_compare(f, s, last_arch_compared, l);
        if (jt >= n || jf >= n)
                line_comment(l, "jump out of range");
        return true;
}

static bool format_ret(const struct sock_filter *f, Line *l) {
        char action[ACTION_STRING_MAX];

        switch (BPF_RVAL(f->code)) {
        case BPF_K:
                snprintf(l->text, sizeof(l->text), "ret #0x%08" PRIx32, f->k);
                line_comment(l, "%s", action_to_string(f->k, action, sizeof(action)));
                break;
        case BPF_A:
                snprintf(l->text, sizeof(l->text), "ret a");
                break;
        default:
                return false;
        }
        return f->code == (BPF_RET | BPF_RVAL(f->code));
}

static bool format_misc(const struct sock_filter *f, Line *l) {
        switch (f->code) {
        case BPF_MISC | BPF_TAX:
                snprintf(l->text, sizeof(l->text), "tax");
                return true;
        case BPF_MISC | BPF_TXA:
                snprintf(l->text, sizeof(l->text), "txa");
                return true;
        }
        return false;
}

static void format_insn(const struct sock_filter *insns, size_t n, size_t pc, const FlowState *s,
                        uint32_t last_arch_compared, Line *l) {
        const struct sock_filter *f = insns + pc;
        bool ok = false;

        *l = (Line) {};
        switch (f->code > UINT8_MAX ? UINT16_MAX : BPF_CLASS(f->code)) {
        case BPF_LD:
                ok = format_ld(f, l);
                break;
        case BPF_LDX:
                ok = format_ldx(f, l);
                break;
        case BPF_ST:
        case BPF_STX:
                ok = format_store(f, l);
                break;
        case BPF_ALU:
                ok = format_alu(f, l);
                break;
        case BPF_JMP:
                ok = format_jmp(f, pc, n, s, last_arch_compared, l);
                break;
        case BPF_RET:
                ok = format_ret(f, l);
                break;
        case BPF_MISC:
                ok = format_misc(f, l);
                break;
        }

        if (!ok) {
                *l = (Line) {};
                snprintf(l->text, sizeof(l->text), ".insn 0x%04x, %u, %u, 0x%08" PRIx32, f->code, f->jt, f->jf, f->k);
                line_comment(l, "invalid opcode");
        }
}

static uint32_t update_last_arch(const struct sock_filter *f, const FlowState *s, uint32_t last) {
        if (f->code == (BPF_JMP | BPF_JEQ | BPF_K) && s->a_offset == offsetof(struct seccomp_data, arch))
                return f->k;
        return last;
}

char *prog_disassemble(const struct sock_filter *insns, size_t n) {
        _cleanup_free_ FlowState *states = flow_analyze(insns, n);
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        uint32_t last_arch = 0;
        FILE *f;

        if (!states)
                return NULL;
        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;

        for (size_t pc = 0; pc < n; pc++) {
                const FlowState *s = states + pc;
                Line l;

                format_insn(insns, n, pc, s, last_arch, &l);
                if (l.comment[0])
                        fprintf(f, "%04zu: %-*s  ; %s\n", pc, COMMENT_COLUMN, l.text, l.comment);
                else
                        fprintf(f, "%04zu: %s\n", pc, l.text);
                last_arch = update_last_arch(insns + pc, s, last_arch);
        }

        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}
