/* prog.c: the classic-BPF seccomp program value: validation with the kernel's rules, digest, equality */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* vasprintf */
#endif

#include "core/prog.h"

#include <linux/seccomp.h>
#include <stdarg.h>

#include "core/sha256.h"
#include "core/util.h"

/* The kernel checks a seccomp filter in two passes, and so do we, in the same order:
 * bpf_check_classic() (net/core/filter.c) — opcodes known to classic BPF, per-instruction
 * operand checks, a final RET, and scratch memory written before it is read on every path —
 * then seccomp_check_filter() (kernel/seccomp.c) — the narrower opcode set seccomp allows and
 * the bounds of loads from struct seccomp_data. Both only ever answer -EINVAL. */

_printf_(3, 4) static int prog_error(char **error, size_t pc, const char *format, ...) {
        _cleanup_free_ char *what = NULL;
        va_list ap;

        if (!error)
                return -EINVAL;

        va_start(ap, format);
        int r = vasprintf(&what, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;

        if (pc == SIZE_MAX)
                r = asprintf(error, "%s", what);
        else
                r = asprintf(error, "insn %zu: %s", pc, what);
        if (r < 0) {
                *error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

/* The opcodes bpf_check_classic() accepts (its chk_code_allowed() table). */
static bool opcode_is_classic(uint16_t code) {
        switch (code) {
        case BPF_ALU | BPF_ADD | BPF_K:
        case BPF_ALU | BPF_ADD | BPF_X:
        case BPF_ALU | BPF_SUB | BPF_K:
        case BPF_ALU | BPF_SUB | BPF_X:
        case BPF_ALU | BPF_MUL | BPF_K:
        case BPF_ALU | BPF_MUL | BPF_X:
        case BPF_ALU | BPF_DIV | BPF_K:
        case BPF_ALU | BPF_DIV | BPF_X:
        case BPF_ALU | BPF_MOD | BPF_K:
        case BPF_ALU | BPF_MOD | BPF_X:
        case BPF_ALU | BPF_AND | BPF_K:
        case BPF_ALU | BPF_AND | BPF_X:
        case BPF_ALU | BPF_OR | BPF_K:
        case BPF_ALU | BPF_OR | BPF_X:
        case BPF_ALU | BPF_XOR | BPF_K:
        case BPF_ALU | BPF_XOR | BPF_X:
        case BPF_ALU | BPF_LSH | BPF_K:
        case BPF_ALU | BPF_LSH | BPF_X:
        case BPF_ALU | BPF_RSH | BPF_K:
        case BPF_ALU | BPF_RSH | BPF_X:
        case BPF_ALU | BPF_NEG:
        case BPF_LD | BPF_W | BPF_ABS:
        case BPF_LD | BPF_H | BPF_ABS:
        case BPF_LD | BPF_B | BPF_ABS:
        case BPF_LD | BPF_W | BPF_LEN:
        case BPF_LD | BPF_W | BPF_IND:
        case BPF_LD | BPF_H | BPF_IND:
        case BPF_LD | BPF_B | BPF_IND:
        case BPF_LD | BPF_IMM:
        case BPF_LD | BPF_MEM:
        case BPF_LDX | BPF_W | BPF_LEN:
        case BPF_LDX | BPF_B | BPF_MSH:
        case BPF_LDX | BPF_IMM:
        case BPF_LDX | BPF_MEM:
        case BPF_ST:
        case BPF_STX:
        case BPF_MISC | BPF_TAX:
        case BPF_MISC | BPF_TXA:
        case BPF_RET | BPF_K:
        case BPF_RET | BPF_A:
        case BPF_JMP | BPF_JA:
        case BPF_JMP | BPF_JEQ | BPF_K:
        case BPF_JMP | BPF_JEQ | BPF_X:
        case BPF_JMP | BPF_JGE | BPF_K:
        case BPF_JMP | BPF_JGE | BPF_X:
        case BPF_JMP | BPF_JGT | BPF_K:
        case BPF_JMP | BPF_JGT | BPF_X:
        case BPF_JMP | BPF_JSET | BPF_K:
        case BPF_JMP | BPF_JSET | BPF_X:
                return true;
        default:
                return false;
        }
}

/* The opcodes seccomp_check_filter() lets through: classic BPF without packet loads other than
 * 32-bit absolute ones, without MSH, and without MOD. */
static bool opcode_is_seccomp(uint16_t code) {
        switch (code) {
        case BPF_LD | BPF_H | BPF_ABS:
        case BPF_LD | BPF_B | BPF_ABS:
        case BPF_LD | BPF_W | BPF_IND:
        case BPF_LD | BPF_H | BPF_IND:
        case BPF_LD | BPF_B | BPF_IND:
        case BPF_LDX | BPF_B | BPF_MSH:
        case BPF_ALU | BPF_MOD | BPF_K:
        case BPF_ALU | BPF_MOD | BPF_X:
                return false;
        default:
                return opcode_is_classic(code);
        }
}

static bool opcode_is_cond_jump(uint16_t code) {
        return BPF_CLASS(code) == BPF_JMP && BPF_OP(code) != BPF_JA;
}

static int check_jump_target(size_t pc, size_t n, uint64_t offset, const char *which, char **error) {
        if (offset < n - pc - 1)
                return 0;
        return prog_error(error, pc, "%s jump target %" PRIu64 " is out of range (program has %zu instructions)",
                          which, (uint64_t) pc + 1 + offset, n);
}

/* The operand checks bpf_check_classic() makes for one instruction. Loads from the packet with
 * k >= SKF_AD_OFF (ancillary data) are not singled out: seccomp rejects every one of them in
 * the second pass anyway, so the verdict is the same. */
static int check_insn_classic(const struct sock_filter *insns, size_t n, size_t pc, char **error) {
        const struct sock_filter *f = insns + pc;
        int r;

        if (!opcode_is_classic(f->code))
                return prog_error(error, pc, "unknown opcode 0x%04x", f->code);

        switch (f->code) {
        case BPF_ALU | BPF_DIV | BPF_K:
        case BPF_ALU | BPF_MOD | BPF_K:
                if (f->k == 0)
                        return prog_error(error, pc, "division by constant 0");
                return 0;
        case BPF_ALU | BPF_LSH | BPF_K:
        case BPF_ALU | BPF_RSH | BPF_K:
                if (f->k >= 32)
                        return prog_error(error, pc, "shift by constant %" PRIu32 " (must be below 32)", f->k);
                return 0;
        case BPF_LD | BPF_MEM:
        case BPF_LDX | BPF_MEM:
        case BPF_ST:
        case BPF_STX:
                if (f->k >= BPF_MEMWORDS)
                        return prog_error(error, pc, "scratch memory index %" PRIu32 " is out of range (M[0..%d])",
                                          f->k, BPF_MEMWORDS - 1);
                return 0;
        case BPF_JMP | BPF_JA:
                return check_jump_target(pc, n, f->k, "ja", error);
        }

        if (opcode_is_cond_jump(f->code)) {
                r = check_jump_target(pc, n, f->jt, "true", error);
                if (r < 0)
                        return r;
                return check_jump_target(pc, n, f->jf, "false", error);
        }
        return 0;
}

static int check_ends_in_ret(const struct sock_filter *insns, size_t n, char **error) {
        if (BPF_CLASS(insns[n - 1].code) == BPF_RET && opcode_is_classic(insns[n - 1].code))
                return 0;
        return prog_error(error, n - 1, "last instruction must be a RET (opcode 0x%04x is not)", insns[n - 1].code);
}

/* Like the kernel's check_load_and_stores(): a load from M[k] must be preceded, on every path
 * that reaches it, by a store to M[k]. All jumps go forward, so one pass propagating a bitmask
 * of written cells to each jump target suffices. */
static int check_scratch_initialized(const struct sock_filter *insns, size_t n, char **error) {
        _cleanup_free_ uint16_t *at = malloc(n * sizeof(uint16_t)); /* cells valid on all paths into pc */
        uint16_t valid = 0;

        if (!at)
                return -ENOMEM;
        memset(at, 0xff, n * sizeof(uint16_t));

        for (size_t pc = 0; pc < n; pc++) {
                const struct sock_filter *f = insns + pc;

                valid &= at[pc];
                switch (f->code) {
                case BPF_ST:
                case BPF_STX:
                        valid |= 1u << f->k;
                        break;
                case BPF_LD | BPF_MEM:
                case BPF_LDX | BPF_MEM:
                        if (!(valid & (1u << f->k)))
                                return prog_error(error, pc, "load from M[%" PRIu32 "] which is not stored on every path to it", f->k);
                        break;
                case BPF_JMP | BPF_JA:
                        at[pc + 1 + f->k] &= valid;
                        valid = UINT16_MAX;
                        break;
                default:
                        if (opcode_is_cond_jump(f->code)) {
                                at[pc + 1 + f->jt] &= valid;
                                at[pc + 1 + f->jf] &= valid;
                                valid = UINT16_MAX;
                        }
                }
        }
        return 0;
}

static int check_insn_seccomp(const struct sock_filter *f, size_t pc, char **error) {
        if (!opcode_is_seccomp(f->code))
                return prog_error(error, pc, "opcode 0x%04x is not allowed in a seccomp filter", f->code);

        if (f->code != (BPF_LD | BPF_W | BPF_ABS))
                return 0;
        if (f->k & 3)
                return prog_error(error, pc, "load from offset %" PRIu32 " is not 4-byte aligned", f->k);
        if (f->k >= sizeof(struct seccomp_data))
                return prog_error(error, pc, "load from offset %" PRIu32 " is past the end of struct seccomp_data (%zu bytes)",
                                  f->k, sizeof(struct seccomp_data));
        return 0;
}

int prog_validate(const struct sock_filter *insns, size_t n, char **error) {
        int r;

        if (error)
                *error = NULL;

        if (n == 0 || !insns)
                return prog_error(error, SIZE_MAX, "program is empty (a seccomp filter has 1..%d instructions)", PROG_MAX_INSNS);
        if (n > PROG_MAX_INSNS)
                return prog_error(error, SIZE_MAX, "program has %zu instructions, more than the limit of %d", n, PROG_MAX_INSNS);

        for (size_t pc = 0; pc < n; pc++) {
                r = check_insn_classic(insns, n, pc, error);
                if (r < 0)
                        return r;
        }

        r = check_ends_in_ret(insns, n, error);
        if (r < 0)
                return r;

        r = check_scratch_initialized(insns, n, error);
        if (r < 0)
                return r;

        for (size_t pc = 0; pc < n; pc++) {
                r = check_insn_seccomp(insns + pc, pc, error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void insn_to_wire(const struct sock_filter *f, uint8_t out[PROG_INSN_WIRE_SIZE]) {
        out[0] = f->code & 0xff;
        out[1] = f->code >> 8;
        out[2] = f->jt;
        out[3] = f->jf;
        for (size_t i = 0; i < 4; i++)
                out[4 + i] = (f->k >> (8 * i)) & 0xff;
}

size_t prog_to_wire(const struct sock_filter *insns, size_t n, uint8_t *out) {
        for (size_t i = 0; i < n; i++)
                insn_to_wire(insns + i, out + i * PROG_INSN_WIRE_SIZE);
        return n * PROG_INSN_WIRE_SIZE;
}

void prog_from_wire(const uint8_t *wire, size_t n, struct sock_filter *out) {
        for (size_t i = 0; i < n; i++, wire += PROG_INSN_WIRE_SIZE)
                out[i] = (struct sock_filter) {
                        .code = (uint16_t) (wire[0] | wire[1] << 8),
                        .jt = wire[2],
                        .jf = wire[3],
                        .k = (uint32_t) wire[4] | (uint32_t) wire[5] << 8 | (uint32_t) wire[6] << 16 |
                             (uint32_t) wire[7] << 24,
                };
}

_Static_assert(PROG_DIGEST_SIZE == SHA256_SIZE, "a program's digest is its SHA-256");

static _Atomic uint64_t n_digests;

uint64_t prog_digest_count(void) {
        return n_digests;
}

void prog_digest(const struct sock_filter *insns, size_t n, uint8_t out[PROG_DIGEST_SIZE]) {
        n_digests++;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* The wire form is the instructions' own little-endian layout. */
        _Static_assert(sizeof(struct sock_filter) == PROG_INSN_WIRE_SIZE, "struct sock_filter has no padding");
        sha256_parts(&(Sha256Part) { insns, n * sizeof(struct sock_filter) }, 1, out);
#else
        _cleanup_free_ uint8_t *wire = malloc(n * PROG_INSN_WIRE_SIZE + 1);
        if (!wire)
                abort(); /* as sha256_parts() does: a digest is not optional */
        for (size_t i = 0; i < n; i++)
                insn_to_wire(insns + i, wire + i * PROG_INSN_WIRE_SIZE);
        sha256_parts(&(Sha256Part) { wire, n * PROG_INSN_WIRE_SIZE }, 1, out);
#endif
}

#define DIGEST_PREFIX "sha256:"

/* The prefix and the first n bytes of digest in hex. */
static char *digest_to_string(const uint8_t *digest, size_t n, char *buf) {
        static const char hex[] = "0123456789abcdef";
        char *p = stpcpy(buf, DIGEST_PREFIX);

        for (size_t i = 0; i < n; i++) {
                *p++ = hex[digest[i] >> 4];
                *p++ = hex[digest[i] & 0xf];
        }
        *p = 0;
        return buf;
}

char *prog_digest_to_string(const uint8_t digest[PROG_DIGEST_SIZE], char *buf) {
        return digest_to_string(digest, PROG_DIGEST_SIZE, buf);
}

char *prog_digest_to_short_string(const uint8_t digest[PROG_DIGEST_SIZE], char *buf) {
        return digest_to_string(digest, PROG_DIGEST_SHORT_BYTES, buf);
}

int prog_digest_from_string(const char *s, uint8_t out[PROG_DIGEST_SIZE]) {
        uint8_t d[PROG_DIGEST_SIZE];

        if (!s || strncmp(s, DIGEST_PREFIX, strlen(DIGEST_PREFIX)) != 0)
                return -EINVAL;
        s += strlen(DIGEST_PREFIX);
        if (strlen(s) != 2 * PROG_DIGEST_SIZE)
                return -EINVAL;

        for (size_t i = 0; i < PROG_DIGEST_SIZE; i++) {
                int hi = unhex_char(s[2 * i]), lo = unhex_char(s[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                d[i] = (uint8_t) (hi << 4 | lo);
        }
        memcpy(out, d, sizeof(d));
        return 0;
}

bool prog_equal(const struct sock_filter *a, size_t na, const struct sock_filter *b, size_t nb) {
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (a[i].code != b[i].code || a[i].jt != b[i].jt || a[i].jf != b[i].jf || a[i].k != b[i].k)
                        return false;
        return true;
}
