/* forest.c: stub, being written */
#include "util.h"
