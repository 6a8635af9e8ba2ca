/* floor-oneshot.c: sectree-iter-floor, the whole-process floor of a one-shot scan: a process that
 * loads the pointer-only iterator (bpf/floor.bpf.c; with --open-coded, bpf/floor-oc.bpf.c), runs
 * one pass over every task and exits */
#include "iter-floor.h"

int main(int argc, char *argv[]) {
        _cleanup_(iter_floor_freep) IterFloor *f = NULL;
        struct floor_counts c;

        bool open_coded = argc == 2 && streq(argv[1], "--open-coded");
        if (argc > 1 && !open_coded) {
                fprintf(stderr, "Usage: %s [--open-coded]\n\nLoad the pointer-only task iterator (with --open-coded: "
                        "the open-coded task iterator's walk, in one run of its program), run one pass, print what it "
                        "counted and exit.\n", argv[0]);
                return argc == 2 && streq(argv[1], "--help") ? EXIT_SUCCESS : 2;
        }
        if (iter_floor_new(open_coded, &f) < 0 || iter_floor_run(f, &c) < 0)
                return EXIT_FAILURE;
        printf("%llu tasks, %llu filters; program loaded in %.2f ms\n", (unsigned long long) c.tasks,
               (unsigned long long) c.filters, iter_floor_load_msec(f));
        return EXIT_SUCCESS;
}
