/* floor.bpf.c: the pointer-only iterator floor: an iter/task program that walks each task's
 * seccomp filter chain (task->seccomp.filter, then ->prev) and only counts the filters. It reads
 * no instructions, names nothing and sends no records: what a full scan cannot go below. */
#include "floor-walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct floor_counts counts;

SEC("iter/task")
int floor_tasks(struct bpf_iter__task *ctx) {
        if (ctx->task)
                floor_count(&counts, ctx->task);
        return 0;
}
