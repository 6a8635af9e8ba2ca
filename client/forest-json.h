/* forest-json.h: the live forest as JSON for `tree --json` and `graph --json` */
#pragma once

#include <jansson.h>

#include "core/forest.h"

/* {"backend", "identity", "root", "filters": [...], "processes": [...]}; see docs/json.md. */
json_t *forest_to_json(const Forest *f);
