/* tracefs.c: stub, being written */
#include "scan.h"
