/* scan-bpf-cache.h: what the bpf scanner keeps from pass to pass (scan-bpf-cache.c): its filters by
 * id, a one-shot scanner's programs by their bytes, and their eviction */
#pragma once

#include "observe/bpf-scanner.h"

/* Free every entry of a cache of programs (s->programs) and the map. */
void bpf_cache_clear(Hashmap *cache);
/* Free every filter of s->filters and the map. */
void bpf_filters_clear(Hashmap *filters);
/* f's instructions, for a forest to own: f keeps only len and digest (dropped). */
struct sock_filter *bpf_filter_take_insns(BpfFilter *f);
/* Forget the filters (and a one-shot scanner's programs) no pass has met for a while. */
int bpf_scanner_evict(BpfScanner *s);
/* A filter of the current pass, NULL if the pass did not meet it. */
BpfFilter *bpf_scanner_pass_filter(const BpfScanner *s, uint64_t id);
/* The filter a record names (f: what is kept under its id, or NULL), kept from an earlier pass
 * when the record leaves the instructions out. NULL (and records.insns_missing) if they are not
 * here: the pass is redone in a new epoch. */
int bpf_scanner_filter_from_rec(BpfScanner *s, BpfFilter *f, const struct scan_rec_filter *rec, BpfFilter **ret);
