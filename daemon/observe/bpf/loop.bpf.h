/* loop.bpf.h: bounded_for(i, n), a loop over i = 0 .. n - 1 whose body the verifier checks until
 * its states converge, not once per iteration as it walks a plain bounded loop, and
 * bounded_while(cond, n). The body may break and continue as in any for loop. i is declared by
 * the caller, a __u64: a narrower one is widened and cut at each test, and the range of the
 * register that holds it grows with each iteration the verifier follows, which never converge.
 *
 * Two ways, one per build of the scan unit (meson.build):
 *   - SCAN_LOOP_MAY_GOTO: the verifier's may_goto instruction (Linux 6.9), which ends the loop
 *     once its budget is spent. The light skeletons (a one-shot scanner's) use it: an open-coded
 *     iterator's three kfuncs are each looked up by name in the kernel's BTF by the skeleton's
 *     loader, a linear walk over half of its 126,000 types, 0.28 ms each of every load. Where
 *     the kernel has no may_goto, the light skeleton fails to load and the scanner loads libbpf's
 *     skeleton instead (observe/scan-bpf-load.c);
 *   - otherwise, the open-coded number iterator (bpf_iter_num_new/next/destroy, Linux 6.4),
 *     destroyed when the loop's scope ends (libbpf's bpf_for() does the same). */
#pragma once

#include "observe/bpf/kernel.h"

#include <bpf/bpf_helpers.h>
#include <stdbool.h>

#ifdef SCAN_LOOP_MAY_GOTO

/* may_goto l_break, spelled in bytes as bpf_experimental.h does for compilers without the
 * mnemonic (clang < 19): opcode 0xe5, no registers, the jump's offset in instructions. */
#define can_loop                                                                                   \
        ({                                                                                         \
                __label__ l_break, l_continue;                                                     \
                bool ret_ = true;                                                                  \
                asm volatile goto("1:.byte 0xe5; .byte 0; .long ((%l[l_break] - 1b - 8) / 8) & 0xffff; .short 0" \
                                  :::: l_break);                                                   \
                goto l_continue;                                                                   \
        l_break:                                                                                   \
                ret_ = false;                                                                      \
        l_continue:;                                                                               \
                ret_;                                                                              \
        })

/* The counter starts from LOOP_ZERO, a zero the verifier cannot know (the includer defines it: a
 * global that user space leaves 0). Counting from a known 0, each iteration's state would hold a
 * number of its own and never match the one before: the verifier would walk the loop once per
 * value, to its bound (8,192 steps of a chain walk, then "too complex"). From an unknown value,
 * the second iteration's range lies within the first's and the walk ends there. */
#define bounded_for(i, n) for ((i) = (LOOP_ZERO); (i) < (n) && can_loop; (i)++)

/* while (cond), where cond fails by itself within n rounds (a set of bits that loses one each
 * round): no counter at all here, the may_goto budget bounds the loop for the verifier. */
#define bounded_while(cond, n) while ((cond) && can_loop)

#else

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

/* The iterator and a pointer that exists only to start it once; the reference to
 * bpf_iter_num_destroy has clang emit its BTF, which a cleanup function alone does not get. */
#define bounded_for(i, n)                                                                          \
        for (struct bpf_iter_num i##_it_ __attribute__((aligned(8), cleanup(bpf_iter_num_destroy))), \
             *i##_start_ __attribute__((unused)) =                                                 \
                     (bpf_iter_num_new(&i##_it_, 0, (n)), (void) bpf_iter_num_destroy, (void *) 0); \
             ({                                                                                    \
                     int *next_ = bpf_iter_num_next(&i##_it_);                                     \
                     next_ && ((i) = (__u64) *next_, true);                                        \
             });)

#define LOOP_CONCAT_(a, b) a##b
#define LOOP_CONCAT(a, b) LOOP_CONCAT_(a, b)
#define bounded_while(cond, n) bounded_while_(cond, n, LOOP_CONCAT(while_it_, __LINE__))
#define bounded_while_(cond, n, it)                                                                \
        for (struct bpf_iter_num it __attribute__((aligned(8), cleanup(bpf_iter_num_destroy))),       \
             *LOOP_CONCAT(it, _start) __attribute__((unused)) =                                    \
                     (bpf_iter_num_new(&it, 0, (n)), (void) bpf_iter_num_destroy, (void *) 0);       \
             (cond) && bpf_iter_num_next(&it);)

#endif
