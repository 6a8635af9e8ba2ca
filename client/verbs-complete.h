/* verbs-complete.h: the words the shell completions ask for (the hidden verb `__complete`) */
#pragma once

#include "context.h"

/* "WORD<TAB>DESCRIPTION" lines of pids, tids, filters, snapshots or syscalls (arg: an
 * architecture); a usage error for another kind. */
int complete_words(Context *c, const char *kind, const char *arg);
void complete_print_word(const char *word, const char *description);
