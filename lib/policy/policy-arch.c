/* policy-arch.c: the architectures a seccomp filter can tell apart, and the system calls
 * libseccomp names for each */
#include "policy/policy-arch.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <linux/audit.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define X32_SYSCALL_BIT 0x40000000U

/* Where each architecture's numbers lie, for asking libseccomp which it names: a window above a
 * base (the kernel's syscall tables are below 1024 entries), plus ARM's private calls. */
#define NR_WINDOW 1024
#define ARM_PRIVATE_BASE 0x0f0000
#define ARM_PRIVATE_COUNT 16

static const PolicyArch arch_table[] = {
        { SCMP_ARCH_X86_64, "x86_64", AUDIT_ARCH_X86_64, 0, X32_SYSCALL_BIT - 1 },
        { SCMP_ARCH_X86, "x86", AUDIT_ARCH_I386, 0, UINT32_MAX },
        { SCMP_ARCH_X32, "x32", AUDIT_ARCH_X86_64, X32_SYSCALL_BIT, UINT32_MAX },
        { SCMP_ARCH_AARCH64, "aarch64", AUDIT_ARCH_AARCH64, 0, UINT32_MAX },
        { SCMP_ARCH_ARM, "arm", AUDIT_ARCH_ARM, 0, UINT32_MAX },
        { SCMP_ARCH_RISCV64, "riscv64", AUDIT_ARCH_RISCV64, 0, UINT32_MAX },
        { SCMP_ARCH_PPC64LE, "ppc64le", AUDIT_ARCH_PPC64LE, 0, UINT32_MAX },
        { SCMP_ARCH_PPC64, "ppc64", AUDIT_ARCH_PPC64, 0, UINT32_MAX },
        { SCMP_ARCH_PPC, "ppc", AUDIT_ARCH_PPC, 0, UINT32_MAX },
        { SCMP_ARCH_S390X, "s390x", AUDIT_ARCH_S390X, 0, UINT32_MAX },
        { SCMP_ARCH_S390, "s390", AUDIT_ARCH_S390, 0, UINT32_MAX },
        { SCMP_ARCH_MIPS, "mips", AUDIT_ARCH_MIPS, 0, UINT32_MAX },
        { SCMP_ARCH_MIPSEL, "mipsel", AUDIT_ARCH_MIPSEL, 0, UINT32_MAX },
        { SCMP_ARCH_MIPS64, "mips64", AUDIT_ARCH_MIPS64, 0, UINT32_MAX },
        { SCMP_ARCH_MIPSEL64, "mipsel64", AUDIT_ARCH_MIPSEL64, 0, UINT32_MAX },
        { SCMP_ARCH_MIPS64N32, "mips64n32", AUDIT_ARCH_MIPS64N32, 0, UINT32_MAX },
        { SCMP_ARCH_MIPSEL64N32, "mipsel64n32", AUDIT_ARCH_MIPSEL64N32, 0, UINT32_MAX },
        { SCMP_ARCH_PARISC, "parisc", AUDIT_ARCH_PARISC, 0, UINT32_MAX },
        { SCMP_ARCH_PARISC64, "parisc64", AUDIT_ARCH_PARISC64, 0, UINT32_MAX },
};

_Static_assert(ELEMENTSOF(arch_table) <= POLICY_ARCH_MAX, "POLICY_ARCH_MAX too small");

const PolicyArch *policy_arch_lookup(uint32_t arch) {
        for (size_t i = 0; i < ELEMENTSOF(arch_table); i++)
                if (arch_table[i].arch == arch)
                        return &arch_table[i];
        return NULL;
}

const PolicyArch *policy_arch_from_name(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(arch_table); i++)
                if (streq(arch_table[i].name, name))
                        return &arch_table[i];
        /* the kernel's and Debian's spellings */
        if (streq(name, "i386") || streq(name, "i686"))
                return policy_arch_lookup(SCMP_ARCH_X86);
        if (streq(name, "amd64"))
                return policy_arch_lookup(SCMP_ARCH_X86_64);
        if (streq(name, "arm64"))
                return policy_arch_lookup(SCMP_ARCH_AARCH64);
        return NULL;
}

const PolicyArch *policy_arch_native(void) {
        return policy_arch_lookup(seccomp_arch_native());
}

/* ---- names ---- */

typedef struct NameList {
        PolicySyscallName *items;
        size_t n, allocated;
        bool done;
} NameList;

static NameList name_lists[ELEMENTSOF(arch_table)];
static pthread_mutex_t name_lists_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t nr_base(uint32_t arch) {
        switch (arch) {
        case SCMP_ARCH_X32: return X32_SYSCALL_BIT;
        case SCMP_ARCH_MIPS:
        case SCMP_ARCH_MIPSEL: return 4000;
        case SCMP_ARCH_MIPS64:
        case SCMP_ARCH_MIPSEL64: return 5000;
        case SCMP_ARCH_MIPS64N32:
        case SCMP_ARCH_MIPSEL64N32: return 6000;
        default: return 0;
        }
}

/* The calls the kernel exempts from seccomp (seccomp_kernel_exempts()), named where libseccomp
 * (before 2.6) does not name them: they get decisions of their own, out of "other numbers". */
static char *name_fallback(uint32_t arch, uint32_t nr) {
        if (arch != SCMP_ARCH_X86_64)
                return NULL;
        return nr == SECCOMP_NR_URETPROBE_X86_64 ? strdup("uretprobe")
               : nr == SECCOMP_NR_UPROBE_X86_64  ? strdup("uprobe")
                                                 : NULL;
}

static int name_list_add(NameList *l, uint32_t arch, uint32_t nr) {
        char *name = seccomp_syscall_resolve_num_arch(arch, (int) nr);
        if (!name)
                name = name_fallback(arch, nr);
        if (!name)
                return 0;
        if (GROW(l->items, l->allocated, l->n + 1) < 0) {
                free(name);
                return -ENOMEM;
        }
        l->items[l->n++] = (PolicySyscallName) { .name = name, .nr = (int32_t) nr };
        return 0;
}

static int name_list_build(NameList *l, uint32_t arch) {
        uint32_t base = nr_base(arch);
        int r = 0;
        for (uint32_t i = 0; r >= 0 && i < NR_WINDOW; i++)
                r = name_list_add(l, arch, base + i);
        for (uint32_t i = 0; r >= 0 && arch == SCMP_ARCH_ARM && i < ARM_PRIVATE_COUNT; i++)
                r = name_list_add(l, arch, ARM_PRIVATE_BASE + i);
        return r;
}

int policy_arch_syscalls(const PolicyArch *a, const PolicySyscallName **ret, size_t *ret_n) {
        NameList *l = &name_lists[a - arch_table];
        int r = 0;

        pthread_mutex_lock(&name_lists_lock);
        if (!l->done) {
                r = name_list_build(l, a->arch);
                l->done = r >= 0;
        }
        pthread_mutex_unlock(&name_lists_lock);
        if (r < 0)
                return r;
        *ret = l->items;
        *ret_n = l->n;
        return 0;
}

/* ---- the architectures of a chain ---- */

/* Does the program compare the architecture word with token? A forward pass over the loop-free
 * program knows where A holds seccomp_data.arch: after "ld [4]", until A changes, and at a jump
 * target when it does on every path there. */
static bool prog_compares_arch(const struct sock_filter *insns, size_t n, uint32_t token) {
        const uint32_t arch_offset = offsetof(struct seccomp_data, arch);
        _cleanup_free_ uint8_t *in = calloc(n + 1, 1); /* bit 0: reached, bit 1: A is not the arch on some path */
        if (!in)
                return true; /* cannot tell: say yes, an extra architecture in a summary is harmless */
        in[0] = 1 | 2;
        for (size_t pc = 0; pc < n; pc++) {
                const struct sock_filter *f = &insns[pc];
                if (!(in[pc] & 1))
                        continue;
                bool arch = !(in[pc] & 2);
                uint16_t cls = BPF_CLASS(f->code);
                if (cls == BPF_RET)
                        continue;
                if (cls == BPF_JMP) {
                        if (BPF_OP(f->code) != BPF_JA && BPF_SRC(f->code) == BPF_K && arch && f->k == token)
                                return true;
                        size_t t = pc + 1 + (BPF_OP(f->code) == BPF_JA ? f->k : f->jt), e = pc + 1 + f->jf;
                        uint8_t out = 1 | (arch ? 0 : 2);
                        if (t < n)
                                in[t] |= out;
                        if (BPF_OP(f->code) != BPF_JA && e < n)
                                in[e] |= out;
                        continue;
                }
                if (cls == BPF_LD)
                        arch = f->code == (BPF_LD | BPF_W | BPF_ABS) && f->k == arch_offset;
                else if (cls == BPF_ALU || (cls == BPF_MISC && BPF_MISCOP(f->code) == BPF_TXA))
                        arch = false;
                if (pc + 1 < n)
                        in[pc + 1] |= 1 | (arch ? 0 : 2);
        }
        return false;
}

static bool chain_mentions(const ChainProgram *chain, size_t n, uint32_t token) {
        for (size_t i = 0; i < n; i++)
                if (prog_compares_arch(chain[i].insns, chain[i].len, token))
                        return true;
        return false;
}

bool policy_chain_checks_arch(const ChainProgram *chain, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(arch_table); i++)
                if (chain_mentions(chain, n, arch_table[i].token))
                        return true;
        return false;
}

static size_t arch_list_add(const PolicyArch **list, size_t n, size_t max, const PolicyArch *a) {
        for (size_t i = 0; i < n; i++)
                if (list[i] == a)
                        return n;
        if (n < max)
                list[n++] = a;
        return n;
}

/* (native, compat): the system call ABIs a kernel of the first architecture also runs. */
static const uint32_t compat_arches[][2] = {
        { SCMP_ARCH_X86_64, SCMP_ARCH_X86 },
        { SCMP_ARCH_X86_64, SCMP_ARCH_X32 },
        { SCMP_ARCH_AARCH64, SCMP_ARCH_ARM },
        { SCMP_ARCH_PPC64, SCMP_ARCH_PPC },
        { SCMP_ARCH_S390X, SCMP_ARCH_S390 },
        { SCMP_ARCH_MIPS64, SCMP_ARCH_MIPS },
        { SCMP_ARCH_MIPSEL64, SCMP_ARCH_MIPSEL },
};

size_t policy_chain_arches(const ChainProgram *chain, size_t n, const PolicyArch **ret, size_t max) {
        const PolicyArch *native = policy_arch_native();
        size_t count = 0;

        if (native)
                count = arch_list_add(ret, count, max, native);
        /* the other ABIs the kernel runs on this machine (its compat ones) reach the filters too */
        for (size_t i = 0; native && i < ELEMENTSOF(compat_arches); i++)
                if (compat_arches[i][0] == native->arch)
                        count = arch_list_add(ret, count, max, policy_arch_lookup(compat_arches[i][1]));
        for (size_t i = 0; i < ELEMENTSOF(arch_table); i++)
                if (chain_mentions(chain, n, arch_table[i].token))
                        count = arch_list_add(ret, count, max, &arch_table[i]);
        return count;
}

uint32_t policy_arch_strict_verdict(const PolicyArch *a, int32_t nr) {
        return policy_arch_strict_verdict_kernel(a, nr, 0);
}

uint32_t policy_arch_strict_verdict_kernel(const PolicyArch *a, int32_t nr, uint32_t kernel) {
        struct seccomp_data d = { .nr = nr, .arch = a ? a->token : 0 };
        if (a && a->arch != SCMP_ARCH_X32 && seccomp_kernel_exempts(kernel, &d))
                return SECCOMP_RET_ALLOW;
        /* the kernel's mode1_syscalls, and mode1_syscalls_32 for the compat ABIs; x32 is a compat
         * ABI too, whose numbers (with __X32_SYSCALL_BIT) never equal the i386 ones the kernel
         * compares them with: strict mode allows none of them */
        if (a && a->arch == SCMP_ARCH_X32)
                return SECCOMP_RET_KILL_THREAD;
        bool compat = a && (a->arch == SCMP_ARCH_X86 || a->arch == SCMP_ARCH_ARM);
        const char *const allowed[] = { "read", "write", "exit", compat ? "sigreturn" : "rt_sigreturn" };
        for (size_t i = 0; a && i < ELEMENTSOF(allowed); i++)
                if (seccomp_syscall_resolve_name_arch(a->arch, allowed[i]) == nr)
                        return SECCOMP_RET_ALLOW;
        return SECCOMP_RET_KILL_THREAD;
}

size_t policy_strict_program(struct sock_filter *out) {
        static const char *const calls[] = { "read", "write", "exit", "rt_sigreturn", "sigreturn" };
        const PolicyArch *arches[POLICY_ARCH_MAX];
        size_t n_arches = policy_chain_arches(NULL, 0, arches, ELEMENTSOF(arches)), n = 0;

        /* per architecture: "ld arch; jne token, next; ld nr; jeq allowed... ; ret KILL_THREAD" */
        for (size_t i = 0; i < n_arches; i++) {
                int32_t allowed[ELEMENTSOF(calls)];
                size_t k = 0;
                for (size_t j = 0; j < ELEMENTSOF(calls); j++) {
                        int nr = seccomp_syscall_resolve_name_arch(arches[i]->arch, calls[j]);
                        if (nr >= 0 && policy_arch_strict_verdict(arches[i], nr) == SECCOMP_RET_ALLOW)
                                allowed[k++] = nr;
                }
                bool split = arches[i]->nr_lo || arches[i]->nr_hi != UINT32_MAX; /* x86_64 and x32 share a token */
                uint8_t len = (uint8_t) (3 + split + k + 2), next = (uint8_t) (len - 4);
                out[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
                out[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arches[i]->token, 0, (uint8_t) (len - 2));
                out[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
                if (split)
                        out[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT,
                                                                 arches[i]->nr_lo ? 0 : next, arches[i]->nr_lo ? next : 0);
                for (size_t j = 0; j < k; j++)
                        out[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) allowed[j],
                                                                 (uint8_t) (k - j), 0);
                out[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_THREAD);
                out[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        }
        out[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_THREAD);
        return n;
}
