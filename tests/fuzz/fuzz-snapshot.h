/* fuzz-snapshot.h: the properties both snapshot fuzz targets check on what a reader returns */
#pragma once

#include "core/forest.h"

/* A reader's result: 0 with a forest and no message, -EINVAL with a message and no forest, or
 * -ENOMEM. Anything else aborts. */
void fuzz_check_result(int r, const Forest *f, const char *error);

/* An accepted snapshot: its JSON reads back to the same JSON, its SQLite form reads back to the
 * same JSON, both validate, and its diff with its copy is empty. Aborts otherwise. */
void fuzz_check_forest(const Forest *f);
