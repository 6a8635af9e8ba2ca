/* backends.h: the backends a source can be (backends.c): what each needs, and the one to load */
#pragma once

#include "observe/source-types.h"

/* NULL for an unknown backend. */
const SourceCapabilities *source_capabilities(Backend b);

/* Load the backend: -errno with a logged message when it cannot run here. */
int source_new(const SourceOptions *o, Source **ret);
