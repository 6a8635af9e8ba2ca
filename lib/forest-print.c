/* forest-print.c: stub, being written */
#include "util.h"
