/* workload-root.c: the root of a benchmark's workload (workload.c), executed afresh by the
 * benchmark so that the workload's tasks share none of the benchmark's memory */
#include "workload.h"

int main(int argc, char *argv[]) {
        return workload_root_main(argc, argv);
}
