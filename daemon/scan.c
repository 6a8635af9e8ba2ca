/* scan.c: stub, being written */
#include "scan.h"
