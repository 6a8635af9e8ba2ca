/* help.h: sectreectl's help, made from the verb table, and suggestions for misspelt words */
#pragma once

#include <stdio.h>

#include "verb-table.h"

const Verb *verb_table_find(const VerbTable *t, const char *name);
/* The verb nearest to a misspelt name (edit distance, or a unique prefix); NULL if none is close. */
const Verb *verb_table_suggest(const VerbTable *t, const char *name);
/* The nearest of a NULL-terminated list of words, as above. */
const char *word_suggest(const char *const *words, const char *word);

/* `sectreectl --help`: every listed verb, by group, with its summary; then the common options. */
void help_print_overview(const VerbTable *t, FILE *out);
/* `sectreectl help VERB`: its usage forms, help and options. */
void help_print_verb(const Verb *v, FILE *out);
