/* scan-bpf-cache.c: what the bpf scanner keeps from pass to pass: the filters it was told about
 * (their programs, sent once per id) and a one-shot scanner's programs by their bytes, each
 * forgotten once no pass has met it for a while, and programs let go of when over budget */
#include <linux/seccomp.h>

#include "observe/scan-bpf-cache.h"

/* A filter no pass has met for this many passes is gone (every pass meets every live filter):
 * its instructions are dropped. Should it show up again after all, the kernel is asked for every
 * filter's instructions once more (a new epoch). More than the kernel's SWEEP_AFTER_PASSES. */
#define BPF_FILTER_KEEP_PASSES 8

static void bpf_filter_free(BpfFilter *f) {
        if (f)
                free(f->insns);
        free(f);
}

/* f without its instructions: only len and digest. */
static void filter_drop_insns(BpfFilter *f) {
        free(f->insns);
        f->insns = NULL;
        f->dropped = true;
}

struct sock_filter *bpf_filter_take_insns(BpfFilter *f) {
        struct sock_filter *insns = TAKE_PTR(f->insns);

        f->dropped = true;
        return insns;
}

/* A one-shot scanner keeps the programs met by this many of its last passes (see BpfProgram), and
 * at most this many instructions of them (4 MiB): a pass over programs that a uid's budget keeps
 * out of memory does not keep them here either, beyond that bound. */
#define BPF_PROGRAM_KEEP_PASSES 2
#define BPF_PROGRAM_KEEP_INSNS (1U << 19)

_Static_assert(sizeof(struct sock_filter) == sizeof(uint64_t), "an instruction is 8 bytes");

/* Where a program is kept by a one-shot scanner: a hash of its bytes. Two programs with the same
 * key are told apart by their bytes. */
static uint64_t program_key(const struct sock_filter *insns, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325) ^ len;

        for (size_t i = 0; i < len; i++) {
                uint64_t w;
                memcpy(&w, &insns[i], sizeof(w));
                h = (h ^ w) * UINT64_C(0x100000001b3);
                h ^= h >> 32;
        }
        return h;
}

static void program_keep(BpfScanner *s, uint64_t key, const struct sock_filter *insns, size_t len,
                         const uint8_t digest[PROG_DIGEST_SIZE]) {
        if (s->programs_insns + len > BPF_PROGRAM_KEEP_INSNS)
                return;
        BpfProgram *p = malloc(offsetof(BpfProgram, insns) + len * sizeof(struct sock_filter));

        if (!p)
                return; /* computed again next time */
        *p = (BpfProgram) { .seen_pass = s->pass, .len = len };
        memcpy(p->digest, digest, PROG_DIGEST_SIZE);
        memcpy(p->insns, insns, len * sizeof(struct sock_filter));
        if (hashmap_put(&s->programs, key, p) < 0)
                free(p);
        else
                s->programs_insns += len;
}

/* The digest of f's program: that of a filter this pass met before with the same bytes (compared
 * in full: the digest is a function of the bytes alone, so it is exact), else hashed. f came with
 * its instructions in this pass and stays until it ends (a filter a pass created is not replaced
 * in it: a record met again is skipped). */
static void pass_program_digest(BpfScanner *s, BpfFilter *f) {
        uint64_t key = program_key(f->insns, f->len);
        const BpfFilter *same = hashmap_get(&s->pass_programs, key);
        if (same && same->len == f->len && same->insns &&
            memcmp(same->insns, f->insns, f->len * sizeof(struct sock_filter)) == 0) {
                memcpy(f->digest, same->digest, PROG_DIGEST_SIZE);
                return;
        }
        prog_digest(f->insns, f->len, f->digest);
        if (!same)
                (void) hashmap_put(&s->pass_programs, key, f); /* else another program has that key */
}

/* The digest of a program, for a one-shot scanner that scans again: taken from the program it
 * kept with the same bytes, and the programs it had to hash kept. */
static void program_digest(BpfScanner *s, const struct sock_filter *insns, size_t len, uint8_t out[PROG_DIGEST_SIZE]) {
        uint64_t key = program_key(insns, len);
        BpfProgram *p = hashmap_get(&s->programs, key);
        if (p && p->len == len && memcmp(p->insns, insns, len * sizeof(struct sock_filter)) == 0) {
                memcpy(out, p->digest, PROG_DIGEST_SIZE);
                p->seen_pass = s->pass;
                return;
        }
        prog_digest(insns, len, out);
        if (!p) /* else another program has that key: this one is not kept */
                program_keep(s, key, insns, len, out);
}

static void programs_forget(BpfScanner *s, uint64_t key) {
        BpfProgram *p = hashmap_remove(&s->programs, key);
        if (p)
                s->programs_insns -= p->len;
        free(p);
}

static BpfFilter *bpf_filter_new(BpfScanner *s, const struct scan_rec_filter *rec) {
        _cleanup_free_ BpfFilter *f = malloc(sizeof(BpfFilter));
        _cleanup_free_ struct sock_filter *insns = NULL;

        if (!f)
                return NULL;
        if (rec->len > 0) {
                insns = malloc(rec->len * sizeof(struct sock_filter));
                if (!insns)
                        return NULL;
                memcpy(insns, rec->insns, rec->len * sizeof(struct sock_filter));
        }
        *f = (BpfFilter) {
                .id = rec->id,
                .parent_id = rec->parent_id,
                .log = rec->log,
                .wait_killable_recv = rec->wait_killable_recv,
                .len = rec->len,
                .insns = TAKE_PTR(insns),
        };
        if (s->oneshot && !s->once)
                program_digest(s, rec->insns, f->len, f->digest);
        else if (f->len > 0) /* a live scanner is sent a program once per filter; once: no next pass */
                pass_program_digest(s, f);
        else
                prog_digest(rec->insns, 0, f->digest);
        return TAKE_PTR(f);
}

/* Every entry of cache freed with free_value(), and the map. */
static void cache_clear(Hashmap *cache, void (*free_value)(void *)) {
        uint64_t key;
        void *v;

        for (size_t i = 0; hashmap_next(cache, &i, &key, &v);)
                free_value(v);
        hashmap_deinit(cache);
}

static void filter_free_value(void *v) {
        bpf_filter_free(v);
}

void bpf_filters_clear(Hashmap *filters) {
        cache_clear(filters, filter_free_value);
}

void bpf_cache_clear(Hashmap *cache) {
        cache_clear(cache, free);
}

static uint64_t filter_seen(const void *v) {
        return ((const BpfFilter *) v)->seen_pass;
}

static uint64_t program_seen(const void *v) {
        return ((const BpfProgram *) v)->seen_pass;
}

static void filters_forget(BpfScanner *s, uint64_t id) {
        bpf_filter_free(hashmap_remove(&s->filters, id));
}

/* Forget the entries of a cache that no pass has met for keep_passes passes (seen(): the last pass
 * that met one). They are collected first: the map is not changed while it is walked. */
static int cache_evict(BpfScanner *s, Hashmap *cache, uint64_t (*seen)(const void *v), uint64_t keep_passes,
                       void (*forget)(BpfScanner *s, uint64_t key)) {
        _cleanup_free_ uint64_t *gone = NULL;
        size_t n = 0, allocated = 0;
        uint64_t key;
        void *v;

        for (size_t i = 0; hashmap_next(cache, &i, &key, &v);) {
                if (seen(v) + keep_passes > s->pass)
                        continue;
                if (GROW(gone, allocated, n + 1) < 0)
                        return -ENOMEM;
                gone[n++] = key;
        }
        for (size_t i = 0; i < n; i++)
                forget(s, gone[i]);
        return 0;
}

int bpf_scanner_evict(BpfScanner *s) {
        if (s->once)
                return 0; /* no next pass: the scanner is freed with everything it has */
        int k = cache_evict(s, &s->filters, filter_seen, BPF_FILTER_KEEP_PASSES, filters_forget);
        if (k >= 0 && s->oneshot)
                k = cache_evict(s, &s->programs, program_seen, BPF_PROGRAM_KEEP_PASSES, programs_forget);
        return k;
}

/* A filter of the current pass, NULL if the pass did not meet it. */
BpfFilter *bpf_scanner_pass_filter(const BpfScanner *s, uint64_t id) {
        const PassRecords *r = &s->records;
        BpfFilter *f;

        if (id >= r->by_id_base && id - r->by_id_base < r->n_by_id)
                f = r->by_id[id - r->by_id_base];
        else
                f = id == 0 ? NULL : hashmap_get(&s->filters, id);

        return f && f->seen_pass == s->pass ? f : NULL;
}

/* Whether a filter met for the first time comes without its program (ScanOptions.dropped, .wanted). */
static bool filter_unwanted(const ScanOptions *o, const BpfFilter *f) {
        if (o->dropped && o->dropped(f->id, o->dropped_userdata))
                return true;
        return o->wanted && !o->wanted(f->digest, f->len, o->dropped_userdata);
}

/* The filter a record names (f: what is kept under its id, or NULL), kept from an earlier pass
 * when the record leaves the instructions out. NULL (and records.insns_missing) if they are not
 * here: the pass is redone in a new epoch. */
int bpf_scanner_filter_from_rec(BpfScanner *s, BpfFilter *f, const struct scan_rec_filter *rec, BpfFilter **ret) {
        BpfFilter *fresh;
        int k;

        bool allow_dropped = s->opts && s->opts->allow_dropped;
        bool usable = f && f->len == rec->len && (!f->dropped || allow_dropped);
        if (!rec->has_insns && rec->len > 0) {
                if (!usable)
                        s->records.insns_missing = true;
                *ret = usable ? f : NULL;
                return 0;
        }
        if (usable && !f->dropped && (f->len == 0 || memcmp(f->insns, rec->insns, rec->len * sizeof(struct sock_filter)) == 0)) {
                *ret = f;
                return 0;
        }
        if (usable && f->dropped) { /* sent again: the same program stays dropped */
                uint8_t digest[PROG_DIGEST_SIZE];
                prog_digest(rec->insns, rec->len, digest);
                if (memcmp(digest, f->digest, sizeof(digest)) == 0) {
                        *ret = f;
                        return 0;
                }
        }
        /* New, or sent again with other instructions than kept (the kernel could not read them
         * before): the record's are the truth. */
        fresh = bpf_filter_new(s, rec);
        if (!fresh)
                return -ENOMEM;
        if (allow_dropped && filter_unwanted(s->opts, fresh))
                filter_drop_insns(fresh);
        k = hashmap_replace(&s->filters, rec->id, fresh);
        if (k < 0) {
                bpf_filter_free(fresh);
                return k;
        }
        bpf_filter_free(f);
        *ret = fresh;
        return 0;
}

void bpf_scanner_drop_programs(BpfScanner *s, bool (*drop)(uint64_t id, void *userdata), void *userdata) {
        uint64_t id;
        void *v;

        for (size_t i = 0; hashmap_next(&s->filters, &i, &id, &v);) {
                BpfFilter *f = v;
                if (!f->dropped && f->len > 0 && drop(id, userdata))
                        filter_drop_insns(f);
        }
}
