/* sectreed-service.h: the service as a module of its own, sectreed-service.so, which sectreed loads
 * only to run the service. `sectreed scan` then maps none of the libraries only the service needs
 * (libsystemd and four it pulls in, SQLite, libseccomp): eight libraries fewer, 1.7 ms of an idle
 * scan's 10 (bench/README.md, figure 7). The module holds its own copy of everything it uses,
 * its log settings included: sectreed hands it what it parsed, once. */
#pragma once

#include <stdint.h>

#include "observe/source-types.h"

/* Raised whenever ServiceArgs changes: a module of another build is refused. */
#define SECTREED_SERVICE_ABI 1

typedef struct ServiceArgs {
        unsigned abi;        /* SECTREED_SERVICE_ABI */
        const char *version; /* PACKAGE_VERSION of sectreed: the module must be of the same */
        Backend backend;
        const char *state_dir;        /* NULL: the default */
        uint64_t budget_insns;
        const char *restore_executor; /* as given with --restore-executor, NULL: auto */
        int log_level;                /* sectreed's, once its options and environment were read */
} ServiceArgs;

/* sectreed's exit status for bad usage (EXIT_SUCCESS and EXIT_FAILURE otherwise). */
#define SECTREED_EXIT_USAGE 2

/* What the module exports, by this name: runs the service until it stops, and returns the status
 * sectreed exits with (what went wrong is logged). */
#define SECTREED_SERVICE_RUN "sectreed_service_run"
typedef int (*SectreedServiceRun)(const ServiceArgs *a);
int sectreed_service_run(const ServiceArgs *a);

/* The module's own file name: next to sectreed in the build tree, in SECTREED_SERVICE_DIR once
 * installed. */
#define SECTREED_SERVICE_MODULE "sectreed-service.so"
