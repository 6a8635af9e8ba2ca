/* scan.c: backend names and what every backend shares */
#include "scan.h"

static const char *const backend_table[_BACKEND_MAX] = {
        [BACKEND_BPF] = "bpf",
        [BACKEND_PTRACE] = "ptrace",
};

const char *backend_to_string(Backend b) {
        return b >= 0 && b < _BACKEND_MAX ? backend_table[b] : NULL;
}

Backend backend_from_string(const char *s) {
        for (int i = 0; s && i < _BACKEND_MAX; i++)
                if (streq(backend_table[i], s))
                        return i;
        return _BACKEND_INVALID;
}
