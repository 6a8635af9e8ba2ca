/* floor-oc.bpf.c: the pointer-only floor walked with the open-coded task iterator (Linux 6.7 and
 * later): the same count as floor.bpf.c, but one run of the program, attached to the reading
 * thread alone, walks every thread of the machine itself (bpf_iter_task_new/next/destroy over
 * BPF_TASK_ITER_ALL_THREADS, under RCU). The task iterator's own work per task, a pid looked up
 * and a reference taken and dropped (get_pid_task(), pid_nr_ns()), is not done: at 20,000 tasks
 * about half of the walk. Its three kfuncs are looked up by name when it loads, so on a machine of
 * few tasks it costs more than floor.bpf.c, on one of many less; the benchmark takes the cheaper as
 * the floor. It can do this because it sends nothing: a walk that fills a ring buffer could not
 * stop and go on where it stopped, as the task iterator's read() does. */
#include "floor-walk.bpf.h"
#include "observe/bpf/task-iter.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct floor_counts counts;

SEC("iter/task")
int floor_tasks_oc(struct bpf_iter__task *ctx) {
        struct bpf_iter_task it;
        struct task_struct *t;

        if (!ctx->task)
                return 0; /* the end of the one task it is attached to */
        bpf_iter_task_new(&it, NULL, BPF_TASK_ITER_ALL_THREADS);
        while ((t = bpf_iter_task_next(&it)))
                floor_count(&counts, t);
        bpf_iter_task_destroy(&it);
        return 0;
}
