/* runtime-clone.c: clone(2) and clone3(2) of a thread that starts on a stack of its own, as libc's
 * clone() does, written out so that the executor knows exactly which system calls a task makes */
#include "runtime-clone.h"

#include "raw.h" /* only for its x86-64 check: the assembly below is x86-64 */

/* In the child every register but rax and rsp is the creator's: fn and arg travel in r12 and r13,
 * which the creator's side saves and restores. */
__asm__(".text\n"
        ".globl raw_clone_thread\n"
        ".type raw_clone_thread,@function\n"
        "raw_clone_thread:\n" /* rdi flags, rsi stack, rdx ptid, rcx ctid, r8 tls, r9 fn, 8(%rsp) arg */
        "        push %r12\n"
        "        push %r13\n"
        "        mov %r9, %r12\n"
        "        mov 24(%rsp), %r13\n"
        "        mov %rcx, %r10\n"
        "        and $-16, %rsi\n"
        "        mov $56, %eax\n" /* SYS_clone */
        "        syscall\n"
        "        test %rax, %rax\n"
        "        jnz 1f\n"
        "        xor %ebp, %ebp\n"
        "        mov %r13, %rdi\n"
        "        call *%r12\n"
        "        xor %edi, %edi\n"
        "        mov $60, %eax\n" /* SYS_exit */
        "        syscall\n"
        "        hlt\n"
        "1:      pop %r13\n"
        "        pop %r12\n"
        "        ret\n"
        ".size raw_clone_thread, .-raw_clone_thread\n"
        "\n"
        ".globl raw_clone3_thread\n"
        ".type raw_clone3_thread,@function\n"
        "raw_clone3_thread:\n" /* rdi args, rsi size, rdx fn, rcx arg */
        "        push %r12\n"
        "        push %r13\n"
        "        mov %rdx, %r12\n"
        "        mov %rcx, %r13\n"
        "        mov $435, %eax\n" /* SYS_clone3 */
        "        syscall\n"
        "        test %rax, %rax\n"
        "        jnz 2f\n"
        "        xor %ebp, %ebp\n"
        "        mov %r13, %rdi\n"
        "        call *%r12\n"
        "        xor %edi, %edi\n"
        "        mov $60, %eax\n"
        "        syscall\n"
        "        hlt\n"
        "2:      pop %r13\n"
        "        pop %r12\n"
        "        ret\n"
        ".size raw_clone3_thread, .-raw_clone3_thread\n");
