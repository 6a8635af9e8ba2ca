/* verb-table.h: what a row of sectreectl's verb table says: arguments, options, and its help */
#pragma once

#include "context.h"

typedef int (*VerbFunction)(Context *c, char **args, size_t n_args);

/* The verb-specific options; a verb refuses, as bad usage, those it does not list. */
typedef enum VerbOptions {
        VERB_FILE = 1 << 0,    /* --file=FILE */
        VERB_SNAPSHOT = 1 << 1, /* --name=NAME, --no-argv */
        VERB_FORMAT = 1 << 2,  /* --format=FORMAT */
        VERB_COUNTS = 1 << 3,  /* --counts */
        VERB_PID = 1 << 4,     /* --pid=PID */
        VERB_COMM = 1 << 5,    /* --comm=NAME */
        VERB_RAW = 1 << 6,     /* --raw */
        VERB_ARCH = 1 << 7,    /* --arch=ARCH */
        VERB_APPROXIMATE = 1 << 8, /* --approximate */
        VERB_ACTION = 1 << 9,  /* --action=ACTION */
        VERB_RESTORE = 1 << 10, /* --exec=PID=CMD, --original-uids, --pid-namespace */
        VERB_LIKE = 1 << 11,   /* --like=PID */
        VERB_AUDIT = 1 << 12,  /* --severity=LEVEL, --baseline=FILE */
        VERB_UNITS = 1 << 13,  /* --unit=GLOB, --machine=GLOB, --user=USER */
        VERB_ALL = 1 << 14,    /* --all */
        VERB_SUBTREE = 1 << 15, /* --subtree=PID */
} VerbOptions;

/* An option as the completions offer it, and how a verb tells it was given: its name ("--arch"),
 * the VerbOptions bit of the verbs that take it (0: every verb; OPTION_BEFORE_VERB: only before
 * a verb), what it does, and whether the command line has it (NULL for the common options). */
#define OPTION_BEFORE_VERB (1u << 31)
typedef struct OptionWord {
        const char *name;
        unsigned verb_option;
        const char *description;
        bool (*given)(const Context *c);
} OptionWord;

/* Where `sectreectl --help` lists a verb. */
typedef enum VerbGroup {
        VERB_GROUP_OTHER,    /* a row that does not say */
        VERB_GROUP_LIVE,     /* the live forest, from the daemon */
        VERB_GROUP_SNAPSHOT, /* snapshots the daemon stores */
        VERB_GROUP_FILE,     /* snapshot files, without the daemon */
        VERB_GROUP_HIDDEN,   /* not listed (the shell completion's helper) */
        _VERB_GROUP_MAX,
} VerbGroup;

#define VERB_ARGS_ANY SIZE_MAX

typedef struct Verb {
        const char *name;
        size_t min_args, max_args;
        size_t min_args_file; /* with --file */
        unsigned options;     /* VerbOptions */
        int failure_status;   /* the exit status of a failure: EXIT_FAILURE unless set */
        VerbFunction run;
        /* Its help, next to its row: */
        VerbGroup group;
        const char *usage;    /* the arguments, one form per line: "[PID]\n--file=FILE [PID]" */
        const char *summary;  /* one line for `sectreectl --help` */
        const char *help;     /* `sectreectl help VERB`, `VERB --help`: what it prints, its options */
        /* What the shell completions offer for its arguments, one kind per position separated by
         * spaces, alternatives joined by '|', the last one repeated if it ends in "...": pids,
         * tids, filters, snapshots, restores (the daemon's; none with --file), syscalls (of --arch),
         * verbs, files, commands. NULL: no arguments to complete. */
        const char *complete;
} Verb;

typedef struct VerbTable {
        const Verb *verbs;
        size_t n;
} VerbTable;
