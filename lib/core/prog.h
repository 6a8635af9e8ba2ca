/* prog.h: the classic-BPF seccomp program value: validation with the kernel's rules, digest, equality */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROG_MAX_INSNS 4096 /* BPF_MAXINSNS: the kernel's limit for one seccomp filter */
#define PROG_DIGEST_SIZE 32 /* SHA-256 */
#define PROG_DIGEST_STRING_MAX (sizeof("sha256:") + 2 * PROG_DIGEST_SIZE)

/* Check insns[0..n) with the rules seccomp_check_filter() and bpf_check_classic() apply to a
 * seccomp filter: 1..4096 instructions, only opcodes seccomp allows, loads only from struct
 * seccomp_data at 4-byte aligned offsets inside it, jumps in range, ends in RET, no division by
 * a constant zero, scratch memory indices in range. Returns 0 if valid; otherwise -EINVAL and,
 * if error is not NULL, *error is a malloc'ed message naming the instruction index and the
 * problem (e.g. "insn 3: load from offset 66 is not 4-byte aligned"). */
int prog_validate(const struct sock_filter *insns, size_t n, char **error);

/* The instructions as the kernel stores them and the digest covers them, 8 bytes each (code
 * le16, jt, jf, k le32): n instructions into out (n * PROG_INSN_WIRE_SIZE bytes), returning the
 * bytes written; and n instructions back from wire. The state database and the SQLite snapshot
 * file store programs so. */
#define PROG_INSN_WIRE_SIZE 8
size_t prog_to_wire(const struct sock_filter *insns, size_t n, uint8_t *out);
void prog_from_wire(const uint8_t *wire, size_t n, struct sock_filter *out);

/* SHA-256 over the instructions as the kernel stores them (8 bytes each: code le16, jt, jf,
 * k le32). */
void prog_digest(const struct sock_filter *insns, size_t n, uint8_t out[PROG_DIGEST_SIZE]);
/* How many programs prog_digest() hashed in this process so far: a filter's digest is computed
 * once, where it enters the model, and carried from there (tests check it). */
uint64_t prog_digest_count(void);

/* "sha256:<64 lowercase hex>" into buf (at least PROG_DIGEST_STRING_MAX bytes); returns buf. */
char *prog_digest_to_string(const uint8_t digest[PROG_DIGEST_SIZE], char *buf);
/* The same cut to its first 12 hex digits, as the text views show a digest: "sha256:1a2b3c4d5e6f"
 * (PROG_DIGEST_SHORT_STRING_MAX bytes with its NUL); returns buf. */
#define PROG_DIGEST_SHORT_BYTES 6
#define PROG_DIGEST_SHORT_STRING_MAX (sizeof("sha256:") + 2 * PROG_DIGEST_SHORT_BYTES)
char *prog_digest_to_short_string(const uint8_t digest[PROG_DIGEST_SIZE], char *buf);

/* Parse "sha256:<hex>"; -EINVAL if malformed. */
int prog_digest_from_string(const char *s, uint8_t out[PROG_DIGEST_SIZE]);

bool prog_equal(const struct sock_filter *a, size_t na, const struct sock_filter *b, size_t nb);
