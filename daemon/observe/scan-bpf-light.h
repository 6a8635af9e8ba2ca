/* scan-bpf-light.h: a one-shot scanner's scan unit loaded through a light skeleton
 * (scan-bpf-light.c) */
#pragma once

#include "observe/bpf-scanner.h"

/* Load the scan unit of one-shot scanner s into s->unit through a light skeleton: with the
 * command-line iterator unless s->no_argv, the executables' code unless s->no_exe, its id map of s->id_map_size entries, the ids continuing
 * after last_id, the ring buffer ring_size bytes (0: as built). Nothing of s->unit is set on
 * failure (the caller falls back to libbpf's skeleton). */
int bpf_scan_light_load(BpfScanner *s, uint64_t last_id, uint32_t ring_size);
