#include "tests-util.h"
