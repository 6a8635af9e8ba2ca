/* policy-check.h: what the policy tests share: filters built with libseccomp, profiles in the
 * seccomp.json format loaded through libseccomp as container runtimes load them, and the check
 * that a decision agrees with the concrete evaluator at the boundaries of every case */
#pragma once

#include <glib.h>
#include <jansson.h>
#include <linux/filter.h>
#include <seccomp.h>

#include "core/eval.h"
#include "policy/policy.h"

typedef struct TestProg {
        char *name;
        struct sock_filter *insns;
        size_t len;
} TestProg;

void test_prog_clear(TestProg *p);
/* The program ctx exports (seccomp_export_bpf), named; releases ctx. */
TestProg test_prog_from_ctx(const char *name, scmp_filter_ctx ctx);
TestProg test_prog_copy(const char *name, const struct sock_filter *insns, size_t len);

/* A chain of test programs, newest first, as the evaluators take it. progs[] are borrowed. */
typedef struct TestChain {
        ChainProgram progs[16];
        size_t n;
        const char *name;
} TestChain;
/* chain from programs given oldest first (the order they are installed in). */
void test_chain_init(TestChain *c, const char *name, const TestProg *const *oldest_first, size_t n);

/* The filter of a profile in the seccomp.json format as runc builds it
 * (policy_profile_build()), for capabilities caps; fails the test if it is refused. */
TestProg tests_profile_prog(const char *name, const json_t *profile, const char *const *caps);
/* JSON text whose numbers may exceed INT64_MAX (policy_profile_parse()); fails the test on junk. */
json_t *tests_json_loads_u64(const char *text);

/* A valid program of up to 40 instructions: M[0] and M[1] set first, loads of nr, arch, the
 * arguments and (with_ip) the instruction pointer, every ALU operation, scratch memory, X, forward
 * jumps with constants from pool and others, RETs of every action, and a final RET. */
typedef struct TestRandomProg {
        struct sock_filter insns[48];
        size_t len;
} TestRandomProg;
void tests_random_prog(GRand *r, bool with_ip, const uint32_t *pool, size_t n_pool, TestRandomProg *ret);

/* Every case of dec against chain_evaluate(): the witness of every term, each word moved through
 * the boundaries of its domain (inside and just outside), and random values. Every sample must
 * fall in exactly one term, and that term's case must give the value the concrete evaluator
 * gives. Fails the test (goes on, listing each mismatch). Returns how many samples it checked;
 * calls sample(data, value, userdata) for each when not NULL. */
typedef void (*PolicySampleFunc)(const struct seccomp_data *d, uint32_t ret, void *userdata);
size_t policy_check_decision(const TestChain *chain, const PolicyDecision *dec, GRand *rand,
                             PolicySampleFunc sample, void *userdata);

/* The chain's OCI profile (policy_oci_profile()) as text, loaded through libseccomp as runc loads
 * it, against the chain: every syscall of every listed architecture at the boundaries of every
 * case of the chain's decision, and the numbers libseccomp does not name, must get the same
 * effective value (policy_ret_effective()). When the exact profile is refused, *ret_problems
 * says why, and the approximate one is checked on the syscalls and architectures no problem
 * names. Returns the samples compared. */
size_t policy_check_oci(const TestChain *chain, GRand *rand, char ***ret_problems);
/* The same for a profile given as text (problems: the syscalls and architectures to leave out,
 * as policy_oci_profile() names them; may be NULL). */
size_t policy_check_profile(const TestChain *chain, const char *text, char *const *problems, GRand *rand);

/* policy_check_decision() for every syscall of every architecture of the chain's summary, and
 * for the other numbers. Returns the samples checked. */
size_t policy_check_chain(const TestChain *chain, GRand *rand);
