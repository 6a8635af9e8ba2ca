/* raw.h: system calls without libc, for code that runs in tasks created by raw clone(2) (they
 * share their creator's TLS, so nothing may touch errno or libc's locks): x86-64 only */
#pragma once

#include <stdint.h>

#if !defined(__x86_64__)
#error "sectree-restore's task runtime is written for x86-64"
#endif

static inline long raw_syscall6(long n, long a, long b, long c, long d, long e, long f) {
        register long r10 __asm__("r10") = d;
        register long r8 __asm__("r8") = e;
        register long r9 __asm__("r9") = f;
        long ret;

        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
        return ret;
}

#define raw_syscall0(n) raw_syscall6((n), 0, 0, 0, 0, 0, 0)
#define raw_syscall1(n, a) raw_syscall6((n), (long) (a), 0, 0, 0, 0, 0)
#define raw_syscall2(n, a, b) raw_syscall6((n), (long) (a), (long) (b), 0, 0, 0, 0)
#define raw_syscall3(n, a, b, c) raw_syscall6((n), (long) (a), (long) (b), (long) (c), 0, 0, 0)
#define raw_syscall4(n, a, b, c, d) raw_syscall6((n), (long) (a), (long) (b), (long) (c), (long) (d), 0, 0)
#define raw_syscall5(n, a, b, c, d, e) raw_syscall6((n), (long) (a), (long) (b), (long) (c), (long) (d), (long) (e), 0)

/* The thread pointer (glibc's TCB, whose first word points at itself), for CLONE_SETTLS. */
static inline unsigned long raw_thread_pointer(void) {
        unsigned long p;
        __asm__("mov %%fs:0, %0" : "=r"(p));
        return p;
}

