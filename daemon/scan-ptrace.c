/* scan-ptrace.c: stub, being written */
#include "scan.h"
