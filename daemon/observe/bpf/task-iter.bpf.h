/* task-iter.bpf.h: the open-coded task iterator (kernel/bpf/task_iter.c, Linux 6.7), as the kernel
 * declares it: the watch unit walks one process's threads with it, the benchmark's floor every
 * thread of the machine. Each of its three kfuncs is looked up by name in the kernel's BTF when a
 * program that calls it loads. */
#pragma once

#include <bpf/bpf_helpers.h>

#include "observe/bpf/kernel.h"

struct bpf_iter_task {
        __u64 __opaque[3];
} __attribute__((aligned(8)));

extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task, unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;

/* bpf_iter_task_new()'s flags */
#define BPF_TASK_ITER_ALL_PROCS 0
#define BPF_TASK_ITER_ALL_THREADS 1
#define BPF_TASK_ITER_PROC_THREADS 2
