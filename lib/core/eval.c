/* eval.c: run seccomp classic-BPF programs and whole chains the way the kernel does */
#include "core/eval.h"

#include <linux/audit.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/utsname.h>

#include "core/util.h"

#define X32_SYSCALL_BIT 0x40000000U /* __X32_SYSCALL_BIT */

/* What the kernel's converted program does where a classic program could go wrong: nothing of
 * this can happen to a program prog_validate() accepts, except division by X == 0. */
#define RUN_FAULT SECCOMP_RET_KILL_PROCESS

typedef struct Machine {
        uint32_t a, x;
        uint32_t mem[BPF_MEMWORDS];
        const struct seccomp_data *data;
} Machine;

/* Returns false on a load the kernel would have refused to install. */
static bool load_data_word(const Machine *m, uint32_t k, uint32_t *ret) {
        if (k >= sizeof(struct seccomp_data) || (k & 3))
                return false;
        memcpy(ret, (const uint8_t *) m->data + k, sizeof(*ret));
        return true;
}

static bool exec_ld(Machine *m, const struct sock_filter *f, uint32_t *dst) {
        if (BPF_SIZE(f->code) != BPF_W)
                return false;
        switch (BPF_MODE(f->code)) {
        case BPF_IMM:
                *dst = f->k;
                return true;
        case BPF_LEN: /* seccomp_check_filter() rewrites this to an immediate */
                *dst = sizeof(struct seccomp_data);
                return true;
        case BPF_MEM:
                if (f->k >= BPF_MEMWORDS)
                        return false;
                *dst = m->mem[f->k];
                return true;
        case BPF_ABS:
                return BPF_CLASS(f->code) == BPF_LD && load_data_word(m, f->k, dst);
        }
        return false;
}

/* Classic BPF arithmetic on A. DIV by X == 0 does not fault: the kernel's conversion makes the
 * program return 0 there, which *ret_early reports. Shifts by X use the low 5 bits, as the
 * 32-bit shifts of the BPF interpreter and of the x86 JIT do. */
static bool exec_alu(Machine *m, const struct sock_filter *f, bool *ret_early) {
        uint32_t v = BPF_SRC(f->code) == BPF_X ? m->x : f->k;

        if (f->code == (BPF_ALU | BPF_NEG | BPF_X))
                return false;
        switch (BPF_OP(f->code)) {
        case BPF_ADD: m->a += v; return true;
        case BPF_SUB: m->a -= v; return true;
        case BPF_MUL: m->a *= v; return true;
        case BPF_AND: m->a &= v; return true;
        case BPF_OR: m->a |= v; return true;
        case BPF_XOR: m->a ^= v; return true;
        case BPF_LSH: m->a <<= v & 31; return true;
        case BPF_RSH: m->a >>= v & 31; return true;
        case BPF_NEG: m->a = -m->a; return true;
        case BPF_DIV:
                if (v == 0) {
                        *ret_early = BPF_SRC(f->code) == BPF_X;
                        return *ret_early;
                }
                m->a /= v;
                return true;
        }
        return false; /* MOD and anything unknown: seccomp refuses those */
}

static bool jump_taken(const Machine *m, const struct sock_filter *f, bool *ok) {
        uint32_t v = BPF_SRC(f->code) == BPF_X ? m->x : f->k;

        *ok = true;
        switch (BPF_OP(f->code)) {
        case BPF_JEQ: return m->a == v;
        case BPF_JGT: return m->a > v;
        case BPF_JGE: return m->a >= v;
        case BPF_JSET: return (m->a & v) != 0;
        }
        *ok = false;
        return false;
}

/* Moves *pc on; false if the jump is one the kernel would not have installed. */
static bool exec_jmp(const Machine *m, const struct sock_filter *f, size_t n, size_t *pc) {
        uint64_t next;
        bool ok;

        if (BPF_OP(f->code) == BPF_JA)
                next = (uint64_t) *pc + 1 + f->k;
        else {
                bool taken = jump_taken(m, f, &ok);
                if (!ok)
                        return false;
                next = (uint64_t) *pc + 1 + (taken ? f->jt : f->jf);
        }
        if (next >= n)
                return false;
        *pc = next;
        return true;
}

static bool exec_store(Machine *m, const struct sock_filter *f) {
        if (f->k >= BPF_MEMWORDS)
                return false;
        m->mem[f->k] = f->code == BPF_ST ? m->a : m->x;
        return true;
}

static bool exec_misc(Machine *m, const struct sock_filter *f) {
        switch (BPF_MISCOP(f->code)) {
        case BPF_TAX: m->x = m->a; return true;
        case BPF_TXA: m->a = m->x; return true;
        }
        return false;
}

/* Executes the non-jump, non-return instruction at f; false on a fault. */
static bool exec_simple(Machine *m, const struct sock_filter *f, bool *ret_zero) {
        switch (BPF_CLASS(f->code)) {
        case BPF_LD:
                return exec_ld(m, f, &m->a);
        case BPF_LDX:
                return exec_ld(m, f, &m->x);
        case BPF_ST:
        case BPF_STX:
                return exec_store(m, f);
        case BPF_ALU:
                return exec_alu(m, f, ret_zero);
        case BPF_MISC:
                return exec_misc(m, f);
        }
        return false;
}

uint32_t prog_run(const struct sock_filter *insns, size_t n, const struct seccomp_data *data) {
        Machine m = { .data = data }; /* the kernel clears A and X; M[] is only read after a store */
        size_t pc = 0;

        while (pc < n) {
                const struct sock_filter *f = insns + pc;
                bool ret_zero = false;

                switch (BPF_CLASS(f->code)) {
                case BPF_RET:
                        if (f->code == (BPF_RET | BPF_A))
                                return m.a;
                        return f->code == (BPF_RET | BPF_K) ? f->k : RUN_FAULT;
                case BPF_JMP:
                        if (!exec_jmp(&m, f, n, &pc))
                                return RUN_FAULT;
                        continue;
                }
                if (!exec_simple(&m, f, &ret_zero))
                        return RUN_FAULT;
                if (ret_zero)
                        return 0;
                pc++;
        }
        return RUN_FAULT; /* ran off the end: the kernel requires a final RET */
}

/* seccomp_run_filters(): ACTION_ONLY() compares the action bits as a signed 32-bit number, the
 * lowest wins, and only a strictly lower one replaces the current winner. */
static int32_t action_only(uint32_t ret) {
        return (int32_t) (ret & SECCOMP_RET_ACTION_FULL);
}

bool action_outranks(uint32_t cur, uint32_t best) {
        return action_only(cur) < action_only(best);
}

#define KV(a, b, c) (((uint32_t) (a) << 16) + ((uint32_t) (b) << 8) + (uint32_t) (c))

uint32_t kernel_version_parse(const char *release) {
        unsigned a = 0, b = 0, c = 0;
        if (!release || sscanf(release, "%u.%u.%u", &a, &b, &c) < 2 || a > 255 || b > 255)
                return 0;
        return KV(a, b, MIN(c, 255U));
}

uint32_t kernel_version_running(void) {
        static uint32_t cached; /* a race writes the same value */
        uint32_t v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
        struct utsname u;
        if (v)
                return v;
        v = uname(&u) < 0 ? 0 : kernel_version_parse(u.release);
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
        return v;
}

bool seccomp_kernel_exempts(uint32_t kernel, const struct seccomp_data *data) {
        if (kernel == 0)
                kernel = kernel_version_running();
        if (data->arch != AUDIT_ARCH_X86_64)
                return false;
        return (data->nr == SECCOMP_NR_URETPROBE_X86_64 && kernel >= KV(6, 14, 0)) ||
               (data->nr == SECCOMP_NR_UPROBE_X86_64 && kernel >= KV(6, 18, 0));
}

EvalResult chain_evaluate(const ChainProgram *chain, size_t n, const struct seccomp_data *data) {
        return chain_evaluate_kernel(chain, n, data, 0);
}

EvalResult chain_evaluate_kernel(const ChainProgram *chain, size_t n, const struct seccomp_data *data, uint32_t kernel) {
        EvalResult r = { .ret = SECCOMP_RET_ALLOW, .decided_by = 0 };

        if (seccomp_kernel_exempts(kernel, data))
                return r;
        for (size_t i = 0; i < n; i++) {
                uint32_t cur = prog_run(chain[i].insns, chain[i].len, data);

                if (action_outranks(cur, r.ret)) {
                        r.ret = cur;
                        r.decided_by = i;
                }
        }
        return r;
}

static int resolve_syscall(const char *syscall, uint32_t scmp_arch, int32_t *ret) {
        int32_t nr;

        if (safe_atoi32(syscall, &nr) >= 0) {
                if (scmp_arch == SCMP_ARCH_X32 && nr >= 0)
                        nr |= X32_SYSCALL_BIT;
                *ret = nr;
                return 0;
        }

        nr = seccomp_syscall_resolve_name_arch(scmp_arch, syscall);
        if (nr < 0 && scmp_arch == SCMP_ARCH_X86_64 && streq(syscall, "uretprobe"))
                nr = SECCOMP_NR_URETPROBE_X86_64; /* libseccomp before 2.6 does not name them */
        if (nr < 0 && scmp_arch == SCMP_ARCH_X86_64 && streq(syscall, "uprobe"))
                nr = SECCOMP_NR_UPROBE_X86_64;
        if (nr < 0) /* __NR_SCMP_ERROR, or a pseudo-syscall libseccomp knows not to exist here */
                return -EINVAL;
        *ret = nr;
        return 0;
}

int seccomp_data_from_syscall(const char *syscall, uint32_t arch, const uint64_t *args, size_t n_args,
                              struct seccomp_data *ret) {
        uint32_t scmp_arch = arch ? arch : seccomp_arch_native();
        struct seccomp_data d = {
                /* x32 tasks report the x86_64 audit arch, and tell themselves apart by the nr bit */
                .arch = scmp_arch == SCMP_ARCH_X32 ? AUDIT_ARCH_X86_64 : scmp_arch,
        };
        int r;

        if (!syscall || n_args > ELEMENTSOF(d.args) || (n_args > 0 && !args))
                return -EINVAL;

        r = resolve_syscall(syscall, scmp_arch, &d.nr);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n_args; i++)
                d.args[i] = args[i];
        *ret = d;
        return 0;
}
