/* program-fetch.c: the programs an analysis lacks, read again from the kernel for one call */
#include "service/program-fetch.h"

#include <stdlib.h>

#include "observe/source.h"

typedef struct FetchBound {
        const ProgWants *wants;
        uint64_t left; /* instructions the pass may still keep */
} FetchBound;

/* Called as the pass meets each filter: keep those wanted, while the bound allows. */
static bool fetch_wanted(const uint8_t *digest, size_t len, void *userdata) {
        FetchBound *b = userdata;
        if (len > b->left || !prog_wants_wanted(b->wants, digest, len))
                return false;
        b->left -= len;
        return true;
}

static int supply_from(ProgWants *w, Arena *arena, const Forest *f) {
        for (size_t i = 0; i < f->n_filters && prog_wants_missing(w) > 0; i++) {
                const Filter *x = f->filters[i];
                if (!x->insns || x->len == 0)
                        continue;
                int r = prog_wants_supply(w, arena, x->insns, x->len);
                if (r < 0)
                        return r;
        }
        return 0;
}

int program_fetch(Source *s, ProgWants *w, Arena *arena, uint64_t max_insns) {
        _cleanup_(forest_freep) Forest *f = NULL;
        if (prog_wants_missing(w) == 0)
                return 0;
        if (secure_getenv("SECTREE_TEST_NO_PROGRAM_FETCH")) /* tests: as where BPF is not available */
                return 0;
        FetchBound bound = { .wants = w, .left = max_insns };
        ScanOptions opts = { .root = 0, .allow_dropped = true, .wanted = fetch_wanted, .dropped_userdata = &bound };
        int r = source_scan_programs(s, &opts, &f);
        if (r < 0)
                return r;
        size_t before = prog_wants_missing(w);
        r = supply_from(w, arena, f);
        log_debug("Read %" PRIu64 " instructions of programs kept over budget again: %zu of %zu places filled.",
                  max_insns - bound.left, before - prog_wants_missing(w), before);
        return r;
}
