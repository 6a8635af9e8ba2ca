/* help.c: sectreectl's help, made from the verb table, and suggestions for misspelt words */
#include "help.h"

#define SYNOPSIS_WIDTH 24 /* the column where summaries start; summaries fit in 56 more */

static const char *const group_titles[_VERB_GROUP_MAX] = {
        [VERB_GROUP_LIVE] = "The live forest (asks sectreed):",
        [VERB_GROUP_SNAPSHOT] = "Snapshots that sectreed stores:",
        [VERB_GROUP_FILE] = "Snapshot files, without the daemon:",
        [VERB_GROUP_OTHER] = "Other verbs:",
};

static const char common_options[] =
        "Common options:\n"
        "     --json[=MODE]        Print JSON: pretty (indented), short (one line), off;\n"
        "                          alone: pretty on a terminal, short otherwise\n"
        "     --no-legend          Leave out column headers and footers\n"
        "     --no-pager           Do not pipe output into a pager\n"
        "     --output=COLS        The columns of a table, in this order (ps, snapshots,\n"
        "                          restores, units)\n"
        "  -h --help               Show the help (of VERB, with a verb)\n"
        "     --version            Show the version\n";

const Verb *verb_table_find(const VerbTable *t, const char *name) {
        for (size_t i = 0; i < t->n; i++)
                if (streq(t->verbs[i].name, name))
                        return &t->verbs[i];
        return NULL;
}

/* The edit distance of a and b counting a swap of two neighbours as one edit (optimal string
 * alignment), for words of up to 32 characters; anything above max is max + 1. */
static size_t edit_distance(const char *a, const char *b, size_t max) {
        size_t la = strlen(a), lb = strlen(b), d[33][33];
        if (la > 32 || lb > 32 || (la > lb ? la - lb : lb - la) > max)
                return max + 1;
        for (size_t i = 0; i <= la; i++)
                d[i][0] = i;
        for (size_t j = 0; j <= lb; j++)
                d[0][j] = j;
        for (size_t i = 1; i <= la; i++)
                for (size_t j = 1; j <= lb; j++) {
                        size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
                        if (d[i - 1][j] + 1 < best)
                                best = d[i - 1][j] + 1;
                        if (d[i][j - 1] + 1 < best)
                                best = d[i][j - 1] + 1;
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                                best = d[i - 2][j - 2] + 1;
                        d[i][j] = best;
                }
        return d[la][lb] > max ? max + 1 : d[la][lb];
}

const char *word_suggest(const char *const *words, const char *word) {
        size_t len = strlen(word), best = SIZE_MAX, n_prefix = 0;
        const char *nearest = NULL, *prefixed = NULL;
        /* one edit in a word of three or four letters, two beyond; none in shorter words */
        size_t max = len <= 4 ? 1 : 2;
        for (const char *const *w = words; *w; w++) {
                size_t d = len >= 3 ? edit_distance(word, *w, max) : max + 1;
                if (d <= max && d < best) {
                        best = d;
                        nearest = *w;
                }
                if (len >= 2 && strncmp(*w, word, len) == 0) {
                        n_prefix++;
                        prefixed = *w;
                }
        }
        if (nearest)
                return nearest;
        return n_prefix == 1 ? prefixed : NULL;
}

const Verb *verb_table_suggest(const VerbTable *t, const char *name) {
        const char *words[t->n + 1];
        size_t n = 0;
        for (size_t i = 0; i < t->n; i++)
                if (t->verbs[i].group != VERB_GROUP_HIDDEN)
                        words[n++] = t->verbs[i].name;
        words[n] = NULL;
        const char *w = word_suggest(words, name);
        return w ? verb_table_find(t, w) : NULL;
}

/* The first line of a verb's usage: its arguments in the overview. */
static size_t first_line(const char *s) {
        return s ? strcspn(s, "\n") : 0;
}

static void print_overview_row(const Verb *v, FILE *out) {
        int n = fprintf(out, "  %s%s%.*s", v->name, v->usage && *v->usage ? " " : "", (int) first_line(v->usage),
                        v->usage ? v->usage : "");
        if (!v->summary) {
                fputc('\n', out);
                return;
        }
        if (n >= SYNOPSIS_WIDTH)
                fprintf(out, "\n%*s", SYNOPSIS_WIDTH, "");
        else
                fprintf(out, "%*s", SYNOPSIS_WIDTH - n, "");
        fprintf(out, "%s\n", v->summary);
}

/* The live verbs that also read a snapshot file: "show|tree|... --file=FILE ...". */
static void print_file_forms(const VerbTable *t, FILE *out) {
        const char *sep = "";
        fputs("  ", out);
        for (size_t i = 0; i < t->n; i++)
                if (t->verbs[i].options & VERB_FILE) {
                        fprintf(out, "%s%s", sep, t->verbs[i].name);
                        sep = "|";
                }
        fprintf(out, " --file=FILE ...\n%*sThe live verbs, on a snapshot file (- for stdin)\n", SYNOPSIS_WIDTH, "");
}

void help_print_overview(const VerbTable *t, FILE *out) {
        fputs("Usage: sectreectl [OPTIONS] [VERB [ARGS...]]\n"
              "\n"
              "Ask sectreed (org.sectree1 on the system bus) about the seccomp filter forest\n"
              "of this machine: which filters exist, which filter each was stacked on, which\n"
              "threads run under them. Without a verb, shows the daemon's status.\n",
              out);
        static const VerbGroup order[] = { VERB_GROUP_LIVE, VERB_GROUP_SNAPSHOT, VERB_GROUP_FILE, VERB_GROUP_OTHER };
        for (size_t g = 0; g < ELEMENTSOF(order); g++) {
                bool title = false;
                for (size_t i = 0; i < t->n; i++) {
                        if (t->verbs[i].group != order[g])
                                continue;
                        if (!title)
                                fprintf(out, "\n%s\n", group_titles[order[g]]);
                        title = true;
                        print_overview_row(&t->verbs[i], out);
                }
                if (order[g] == VERB_GROUP_FILE)
                        print_file_forms(t, out);
        }
        fprintf(out, "\n%s\n", common_options);
        fputs("A verb's own options: sectreectl help VERB, or sectreectl VERB --help; all\n"
              "of it in sectreectl(1). Exit status: 0 success, 1 failure, 2 bad usage (diff:\n"
              "0 same, 1 different, 2 trouble).\n",
              out);
}

void help_print_verb(const Verb *v, FILE *out) {
        const char *u = v->usage ? v->usage : "";
        const char *lead = "Usage:";
        do {
                size_t l = first_line(u);
                fprintf(out, "%s sectreectl %s%s%.*s\n", lead, v->name, l ? " " : "", (int) l, u);
                lead = "      ";
                u += l + (u[l] == '\n');
        } while (*u);
        if (v->summary)
                fprintf(out, "\n%s.\n", v->summary);
        if (v->help)
                fprintf(out, "\n%s", v->help);
        fprintf(out, "\n%s", common_options);
}
