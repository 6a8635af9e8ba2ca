/* scan-bpf-load.h: the bpf scanner's units loaded (scan-bpf-load.c), and the process made ready */
#pragma once

#include "observe/bpf-scanner.h"

/* Once per process, in any thread: libbpf's log. (The heap is set up to keep the pages the BTF
 * takes, populated in one call, before the first load with libbpf's skeleton.) */
void bpf_scanner_process_prepare(void);
/* Populate the next `bytes` of the heap (at most what the heap keeps) in one call. */
void bpf_heap_populate_kept(size_t bytes);
/* A block of this thread's heap for what it will build next (the forest), held while another
 * thread populates it (bpf_heap_block_populate(), any thread) and freed with bpf_heap_block_free()
 * (this thread) before it builds: its allocations then take pages already there. Nothing is held
 * where the heap keeps nothing. */
typedef struct BpfHeapBlock {
        void *p;
        size_t bytes;
        bool stop; /* bpf_heap_block_stop() */
} BpfHeapBlock;
BpfHeapBlock bpf_heap_block_new(size_t tasks, size_t bytes_per_task);
/* What a one-shot scanner that scans once takes for each task of the machine (20,000 processes of
 * one thread, half of them with a filter of 50 instructions of their own): its pass's records and
 * filters (8.8 MiB there), then the forest (13 MiB). Blocks sized by these are populated ahead. */
#define BPF_HEAP_PASS_BYTES_PER_TASK 448U
#define BPF_HEAP_FOREST_BYTES_PER_TASK 672U
void bpf_heap_block_populate(const BpfHeapBlock *b);
/* A populate of b still running ends at its next step (256 KiB, or a huge page): where the memory
 * was slow to come (a huge page the hypervisor had taken back, ~4 ms each while the walks run
 * beside it), the thread that waits for it rather faults in the rest as it goes. */
void bpf_heap_block_stop(BpfHeapBlock *b);
void bpf_heap_block_free(BpfHeapBlock *b);
/* The entries of the kernel's id map for a live or a one-shot scanner. */
uint32_t bpf_scanner_id_map_size(bool oneshot);
/* Open, size and load the iterator unit into s->unit (and its ring buffer reader), continuing the
 * ids after last_id; one load at a time in the process. */
int bpf_scanner_load(BpfScanner *s, uint64_t last_id);
void bpf_scanner_unload(BpfScanner *s);
/* A one-shot scanner whose id map was too small loaded again with one four times as large.
 * -ENOBUFS: it was the largest. */
int bpf_scanner_grow_oneshot(BpfScanner *s);
/* The tracepoint unit (watch-bpf.c) loaded on the iterator unit's id maps. */
int bpf_scanner_load_watch(BpfScanner *s);
