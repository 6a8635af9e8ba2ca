/* disasm.h: seccomp classic-BPF disassembler, with syscall names from libseccomp and actions
 * spelled as the kernel spells them */
#pragma once

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

/* "KILL_PROCESS", "KILL_THREAD", "TRAP", "ERRNO(13)", "USER_NOTIF", "TRACE(7)", "LOG", "ALLOW",
 * or "UNKNOWN(0x...)" for a value the kernel would treat as KILL_PROCESS... Writes into buf of
 * size len, returns buf. */
#define ACTION_STRING_MAX 32
char *action_to_string(uint32_t ret, char *buf, size_t len);

/* Parse the spelling above back (also accepts lowercase); -EINVAL if unknown. */
int action_from_string(const char *s, uint32_t *ret);

/* Disassemble: one instruction per line, "NNNN: <mnemonic> <operands>  ; comment\n". Loads from
 * seccomp_data are named (nr, arch, instruction_pointer, args[i] lo/hi); comparisons of the
 * syscall number are annotated with the syscall name for the architecture the program last
 * checked (AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, x32 = X86_64 with nr >= 0x40000000), resolved
 * through libseccomp; RET k is printed with the action. Returns a malloc'ed string or NULL on
 * OOM. The input need not be valid: invalid opcodes are printed as ".insn" lines. */
char *prog_disassemble(const struct sock_filter *insns, size_t n);
