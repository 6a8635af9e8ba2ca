/* runtime-clone.h: clone(2) and clone3(2) of a thread on a stack of its own, written out in
 * assembly so that the executor knows exactly which system calls a task makes (x86-64 only) */
#pragma once

/* clone(2) and clone3(2) of a thread that starts on stack_top running fn(arg) and exits when fn
 * returns. They return the new tid or -errno (in the creator). */
long raw_clone_thread(unsigned long flags, void *stack_top, int *parent_tid, int *child_tid, unsigned long tls,
                      void (*fn)(void *), void *arg);
long raw_clone3_thread(void *clone_args, unsigned long size, void (*fn)(void *), void *arg);
