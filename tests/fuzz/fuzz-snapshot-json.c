/* fuzz-snapshot-json.c: libFuzzer target for the snapshot JSON reader. Any input must be refused
 * with a message or read; what is read must write back to the same document, survive the SQLite
 * form unchanged and differ from itself in nothing. */
#include <stdint.h>

#include "fuzz-snapshot.h"
#include "snapshot/snapshot-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Forest *f = NULL;
        char *error = NULL;

        int r = snapshot_json_read((const char *) data, size, &f, &error);
        fuzz_check_result(r, f, error);
        if (r == 0)
                fuzz_check_forest(f);
        forest_free(f);
        free(error);
        return 0;
}
