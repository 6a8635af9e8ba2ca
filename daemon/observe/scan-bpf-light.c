/* scan-bpf-light.c: the scan unit of a one-shot scanner loaded through a light skeleton (bpftool
 * gen skeleton -L, bpf/meson.build). libbpf's skeleton reads the kernel's BTF (~5 MiB) into the
 * process, parses it and matches each type the programs name against all of its ~125,000 types,
 * once per type, on every load: most of what a one-shot scan costs at idle (bench/README.md,
 * figure 7). A light skeleton hands the kernel a loader program instead; the kernel applies the
 * CO-RE relocations from the BTF it already holds parsed. Three are built: with the command-line
 * iterator, without it (--no-argv), and without it or the executables' code (the tree output), so
 * that a one-shot loads only what it runs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "observe/scan-bpf-light.h"
#include "observe/bpf/scan.skel.h"        /* the layout the scanner reads the sections with */
#include "observe/bpf/scan.lskel.h"
#include "observe/bpf/scan-noargv.lskel.h"
#include "observe/bpf/scan-tree.lskel.h"

/* The light skeletons come from scan.bpf.c, and the scanner reads and writes their sections
 * through libbpf's skeleton's layout: each field it touches must sit where that layout has it (the
 * compiler orders a section's globals its own way in each variant of the unit: equal sizes do not
 * make equal layouts). */
#define SAME_FIELD(L, sec, field)                                                                      \
        _Static_assert(__builtin_offsetof(__typeof__(*((struct L *) 0)->sec), field) ==                 \
                                       __builtin_offsetof(__typeof__(*((struct scan_bpf *) 0)->sec), field), \
                       #L ": " #sec "." #field " is not where scan.skel.h has it")
#define ASSERT_SAME_LAYOUT(L)                                                                          \
        _Static_assert(sizeof(*((struct L *) 0)->bss) == sizeof(*((struct scan_bpf *) 0)->bss), "bss");    \
        _Static_assert(sizeof(*((struct L *) 0)->data) == sizeof(*((struct scan_bpf *) 0)->data), "data"); \
        _Static_assert(sizeof(*((struct L *) 0)->data_ids) == sizeof(*((struct scan_bpf *) 0)->data_ids), \
                      "data_ids");                                                                     \
        _Static_assert(sizeof(*((struct L *) 0)->rodata) == sizeof(*((struct scan_bpf *) 0)->rodata), "rodata"); \
        SAME_FIELD(L, bss, stats);                                                                     \
        SAME_FIELD(L, bss, run);                                                                       \
        SAME_FIELD(L, data, insns_epoch);                                                              \
        SAME_FIELD(L, data_ids, pass);                                                                 \
        SAME_FIELD(L, data_ids, last_id);                                                              \
        SAME_FIELD(L, data_ids, listeners_created);                                                    \
        SAME_FIELD(L, data_ids, ids_stats);                                                            \
        SAME_FIELD(L, data_ids, pidns_self);                                                           \
        SAME_FIELD(L, rodata, mark_procs);                                                             \
        SAME_FIELD(L, rodata, forget_after_pass)
ASSERT_SAME_LAYOUT(scan_lskel);
ASSERT_SAME_LAYOUT(scan_noargv_lskel);
ASSERT_SAME_LAYOUT(scan_tree_lskel);

/* Open light skeleton l of type L, size, load and attach it, and describe it in u: everything but
 * the command-line iterator and its map, which only one of them has. */
#define LIGHT_LOAD(L, l, s, last_id, ring_size, u)                                                     \
        ({                                                                                             \
                int _r = -ENOMEM;                                                                      \
                (l) = L##__open();                                                                     \
                if (l) {                                                                               \
                        (l)->data_ids->last_id = (last_id);                                            \
                        bpf_pidns_self(&(l)->data_ids->pidns_self);                                    \
                        (l)->rodata->mark_procs = false; /* nothing reads the marks */                 \
                        (l)->rodata->forget_after_pass = true;                                         \
                        (l)->maps.filter_ids.max_entries = (s)->id_map_size;                            \
                        (l)->maps.seccomp_procs.max_entries = 1;                                       \
                        (l)->maps.records.max_entries = (ring_size); /* 0: as built */                 \
                        _r = L##__load(l);                                                             \
                        if (_r >= 0 && L##__attach(l) < 0)                                             \
                                _r = -errno;                                                           \
                }                                                                                      \
                if (_r >= 0)                                                                           \
                        *(u) = (BpfScanUnit) {                                                         \
                                .light = (l),                                                          \
                                .light_destroy = L##_destroy_void,                                     \
                                .bss = (struct scan_bpf__bss *) (l)->bss,                              \
                                .data = (struct scan_bpf__data *) (l)->data,                           \
                                .data_ids = (struct scan_bpf__data_ids *) (l)->data_ids,               \
                                .records_fd = (l)->maps.records.map_fd,                                \
                                .filter_ids_fd = (l)->maps.filter_ids.map_fd,                          \
                                .seccomp_procs_fd = (l)->maps.seccomp_procs.map_fd,                    \
                                .data_ids_fd = (l)->maps.data_ids.map_fd,                              \
                                .argv_want_fd = -1,                                                    \
                                .tasks_link_fd = (l)->links.scan_tasks_fd,                             \
                                .argv_link_fd = -1,                                                    \
                                .filter_ids_entries = (s)->id_map_size,                                \
                        };                                                                             \
                else if (l)                                                                            \
                        L##__destroy(l);                                                               \
                _r;                                                                                    \
        })

static void scan_lskel_destroy_void(void *l) {
        scan_lskel__destroy(l);
}

static void scan_noargv_lskel_destroy_void(void *l) {
        scan_noargv_lskel__destroy(l);
}

static void scan_tree_lskel_destroy_void(void *l) {
        scan_tree_lskel__destroy(l);
}

int bpf_scan_light_load(BpfScanner *s, uint64_t last_id, uint32_t ring_size) {
        BpfScanUnit u;
        int r;

        if (s->no_exe) {
                struct scan_tree_lskel *l;
                r = LIGHT_LOAD(scan_tree_lskel, l, s, last_id, ring_size, &u);
        } else if (s->no_argv) {
                struct scan_noargv_lskel *l;
                r = LIGHT_LOAD(scan_noargv_lskel, l, s, last_id, ring_size, &u);
        } else {
                struct scan_lskel *l;
                r = LIGHT_LOAD(scan_lskel, l, s, last_id, ring_size, &u);
                if (r >= 0) {
                        u.argv_want_fd = l->maps.argv_want.map_fd;
                        u.argv_link_fd = l->links.scan_argv_fd;
                }
        }
        if (r < 0)
                return r;
        s->unit = u;
        return 0;
}
