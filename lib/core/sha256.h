/* sha256.h: SHA-256 through libgcrypt, the crypto library libsystemd already brings into every
 * process of the project: one handle per thread, kept */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_SIZE 32

/* A part of the bytes to hash. */
typedef struct Sha256Part {
        const void *data;
        size_t size;
} Sha256Part;

/* The SHA-256 of parts[0..n), one after the other, in out. Aborts if libgcrypt cannot make a
 * handle (an allocation failure): a digest is not optional anywhere it is used. */
void sha256_parts(const Sha256Part *parts, size_t n, uint8_t out[SHA256_SIZE]);
