/* snapshot-json.c: stub, being written */
#include "util.h"
