/* sha256.c: SHA-256 through libgcrypt (see sha256.h) */
#include "core/sha256.h"

#include <gcrypt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* libgcrypt wants its version checked before anything else, once. libsystemd, which may have set
 * it up first in the daemon, skips its own set-up once this one is finished, and the other way
 * round. No secure memory: nothing hashed here is secret. */
static pthread_once_t library_once = PTHREAD_ONCE_INIT;

static void library_init(void) {
        if (gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P))
                return;
        if (!gcry_check_version(GCRYPT_VERSION))
                abort();
        (void) gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
        (void) gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
}

/* One handle per thread, kept: opening one for each digest costs an allocation and the
 * algorithm's set-up, a fifth of the digest of a 50-instruction program. */
static _Thread_local gcry_md_hd_t thread_handle;
static pthread_key_t handle_key;
static pthread_once_t handle_key_once = PTHREAD_ONCE_INIT;

static void handle_free(void *h) {
        gcry_md_close(h);
}

static void handle_key_make(void) {
        if (pthread_key_create(&handle_key, handle_free) != 0)
                abort();
}

static gcry_md_hd_t handle(void) {
        if (thread_handle) {
                gcry_md_reset(thread_handle);
                return thread_handle;
        }
        (void) pthread_once(&library_once, library_init);
        (void) pthread_once(&handle_key_once, handle_key_make);
        if (gcry_md_open(&thread_handle, GCRY_MD_SHA256, 0) != 0 || pthread_setspecific(handle_key, thread_handle) != 0)
                abort();
        return thread_handle;
}

void sha256_parts(const Sha256Part *parts, size_t n, uint8_t out[SHA256_SIZE]) {
        gcry_md_hd_t h = handle();

        for (size_t i = 0; i < n; i++)
                gcry_md_write(h, parts[i].data, parts[i].size);
        memcpy(out, gcry_md_read(h, GCRY_MD_SHA256), SHA256_SIZE);
}
