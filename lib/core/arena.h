/* arena.h: a bump allocator for many small immutable objects freed all at once (the policy
 * analysis keeps its expressions, exclusions and terms in one) */
#pragma once

#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;

typedef struct Arena {
        ArenaBlock *blocks; /* newest first */
        size_t used;        /* bytes used of the newest block */
} Arena;

/* size bytes, 16-byte aligned, zeroed; NULL when out of memory. */
void *arena_alloc(Arena *a, size_t size);
/* A copy of size bytes of p; NULL when out of memory. */
void *arena_memdup(Arena *a, const void *p, size_t size);
/* A copy of s; NULL when out of memory. */
char *arena_strdup(Arena *a, const char *s);
/* Free every block; the arena is empty and usable again. */
void arena_done(Arena *a);
