/* arena.c: a bump allocator for many small immutable objects freed all at once */
#include "core/arena.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK_SIZE (64 * 1024)
#define ARENA_ALIGN 16

struct ArenaBlock {
        ArenaBlock *next;
        size_t size;
        _Alignas(ARENA_ALIGN) unsigned char data[];
};

static size_t align_up(size_t n) {
        return (n + ARENA_ALIGN - 1) & ~(size_t) (ARENA_ALIGN - 1);
}

void *arena_alloc(Arena *a, size_t size) {
        size = align_up(size ? size : 1);
        if (!a->blocks || a->blocks->size - a->used < size) {
                size_t block = size > ARENA_BLOCK_SIZE ? size : ARENA_BLOCK_SIZE;
                ArenaBlock *b = malloc(sizeof(ArenaBlock) + block);
                if (!b)
                        return NULL;
                b->size = block;
                b->next = a->blocks;
                a->blocks = b;
                a->used = 0;
        }
        void *p = a->blocks->data + a->used;
        a->used += size;
        return memset(p, 0, size);
}

void *arena_memdup(Arena *a, const void *p, size_t size) {
        void *q = arena_alloc(a, size);
        return q && size > 0 ? memcpy(q, p, size) : q;
}

char *arena_strdup(Arena *a, const char *s) {
        return arena_memdup(a, s, strlen(s) + 1);
}

void arena_done(Arena *a) {
        while (a->blocks) {
                ArenaBlock *b = a->blocks;
                a->blocks = b->next;
                free(b);
        }
        a->used = 0;
}
