/* forest-iso.c: stub, being written */
#include "util.h"
