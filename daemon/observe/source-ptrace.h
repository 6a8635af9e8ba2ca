/* source-ptrace.h: the ptrace backend as a source (source-ptrace.c) */
#pragma once

#include "observe/source-types.h"

int source_ptrace_new(const SourceOptions *o, Source **ret);
