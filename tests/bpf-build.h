/* bpf-build.h: classic-BPF seccomp programs written by hand in tests */
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>

#define STMT(code, k) BPF_STMT((code), (k))
#define JUMP(code, k, jt, jf) BPF_JUMP((code), (k), (jt), (jf))
#define RET(v) STMT(BPF_RET | BPF_K, (v))
#define LD_NR STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARCH STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))
#define LD_ARG_LO(i) STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define LD_ARG_HI(i) STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]) + 4)
/* nr == the syscall: go on; else skip the next skip instructions */
#define IF_NR(nr, skip) JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, (skip))
