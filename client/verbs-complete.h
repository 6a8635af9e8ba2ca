/* verbs-complete.h: the words the shell completions ask for (the hidden verb `__complete`) */
#pragma once

#include <getopt.h>

#include "context.h"
#include "verb-table.h"

/* "WORD<TAB>DESCRIPTION" lines of pids or tids (arg: what is typed of one; none are offered when
 * more than a thousand begin with it), filters, snapshots, restores or syscalls (arg: an
 * architecture, as --arch takes it); a usage error for another kind. */
int complete_words(Context *c, const char *kind, const char *arg);
void complete_print_word(const char *word, const char *description);

/* What the completion of a whole command line knows of sectreectl: its verbs, getopt's table
 * (which options take a value, and whether it is optional), and the option words with the
 * verbs that take them. */
typedef struct CompleteTables {
        const VerbTable *verbs;
        const struct option *options;
        const OptionWord *option_words;
        size_t n_option_words;
} CompleteTables;

/* `__complete line -- WORD...`: the words after "sectreectl" up to the cursor, the last being the
 * one completed ("" for a new one), as the shell has them (bash's split at '=' put back together).
 * Prints what fits there, whatever came before, one "WORD<TAB>DESCRIPTION" per line: verbs; the
 * options of the verb given (an option that takes a value as "--name="); an option's values
 * (for "--name=VALUE" and "--name VALUE" alike: the value only); the verb's arguments by
 * position. Lines "@files" and "@commands" ask the shell for file or command names there too.
 * The shells filter by what is typed; pids and tids are filtered here already, and not offered at
 * all when more than a thousand match. */
int complete_line(Context *c, const CompleteTables *t, char **words, size_t n_words);
