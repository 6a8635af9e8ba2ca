/* scan-bpf.c: stub, being written */
#include "scan.h"
