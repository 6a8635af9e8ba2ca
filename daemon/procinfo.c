/* procinfo.c: stub, being written */
#include "scan.h"
