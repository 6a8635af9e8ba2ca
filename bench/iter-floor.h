/* iter-floor.h: loads (through a light skeleton) and runs the pointer-only iterator floor: the task
 * iterator's walk (bpf/floor.bpf.c), or the open-coded task iterator's (bpf/floor-oc.bpf.c) */
#pragma once

#include "bpf/floor.h"
#include "core/util.h"

typedef struct IterFloor IterFloor;

int iter_floor_new(bool open_coded, IterFloor **ret);
IterFloor *iter_floor_free(IterFloor *f);
DEFINE_CLEANUP(IterFloor *, iter_floor_free);

/* How long iter_floor_new() took to open, load (verify) and attach the program. */
double iter_floor_load_msec(const IterFloor *f);

/* One pass over every task of the machine; the counts of that pass in *ret. */
int iter_floor_run(IterFloor *f, struct floor_counts *ret);
