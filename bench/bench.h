/* bench.h: what every figure of sectree-bench shares: its options, timing, and the result table */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/util.h"

#define BENCH_MAX_SIZES 16
#define BENCH_MAX_PASSES 101
#define BENCH_MAX_RATES 8

typedef struct BenchOptions {
        size_t sizes[BENCH_MAX_SIZES]; /* task counts, each measured in turn */
        size_t n_sizes;
        size_t target_size;         /* the size the targets are stated for */
        unsigned passes;            /* measured passes per figure and size, after one warm-up */
        size_t threads_per_process; /* workload shape */
        size_t filter_len;
        unsigned rates[BENCH_MAX_RATES]; /* watch figure: filter installs per second, each in turn */
        size_t n_rates;
        double watch_seconds;            /* how long each rate runs */
        bool smoke;
        bool long_run;                   /* --long: the figures that take minutes (memory under churn) */
} BenchOptions;

typedef enum Verdict {
        VERDICT_NONE, /* no target for this row */
        VERDICT_PASS,
        VERDICT_MISS,
        VERDICT_PASS_INFO, /* measured against a target stated for another size: shown, not counted */
        VERDICT_MISS_INFO,
        _VERDICT_MAX,
} Verdict;
const char *verdict_to_string(Verdict v);

/* One line of the table. ratio_to names the floor (or other figure) ratio is taken against;
 * ratio 0 prints nothing. */
typedef struct BenchRow {
        const char *figure;
        size_t tasks;
        double value;
        const char *unit;
        double ratio;
        const char *ratio_to;
        const char *target; /* e.g. "<= 3x", NULL for none */
        Verdict verdict;
        const char *note;   /* e.g. what a check found wrong, NULL for none */
        bool unavailable;   /* the capability is not there yet: "not yet available" instead of a value */
} BenchRow;

typedef struct Report {
        const char *title;
        BenchRow *rows;
        size_t n_rows, n_rows_allocated;
        char **strings; /* owned copies of the rows' strings */
        size_t n_strings, n_strings_allocated;
        unsigned n_miss, n_check_failed;
} Report;

void report_init(Report *r, const char *title);
void report_deinit(Report *r);
/* Copies row and its strings. */
int report_add(Report *r, const BenchRow *row);
/* A row of value in unit; ratio 0, ratio_to, target and note NULL when there is none. */
int report_add_value(Report *r, size_t tasks, const char *figure, double value, const char *unit, double ratio,
                     const char *ratio_to, const char *target, Verdict verdict, const char *note);
/* The same in milliseconds. */
int report_add_ms(Report *r, size_t tasks, const char *figure, double msec, double ratio, const char *ratio_to,
                  const char *target, Verdict verdict, const char *note);
/* A check of a figure's result failed (wrong task or filter count, a leftover task): counted
 * and printed, never fatal, since the figures measured are still worth showing. */
void report_check_failed(Report *r, const char *format, ...) _printf_(2, 3);
void report_print(const Report *r, FILE *f);

/* PASS or MISS for value <= limit (or >= limit when at_least); the _INFO kinds when tasks is not the
 * size the target is stated for. */
Verdict verdict_for(const BenchOptions *o, size_t tasks, double value, double limit, bool at_least);
/* The same verdict, shown for information only (the target is judged on another row). */
Verdict verdict_info(Verdict v);

/* Timing: CLOCK_MONOTONIC in nanoseconds, and the median of n samples (sorts them). */
uint64_t now_nsec(void);
/* The minor page faults of process pid so far (field 10 of /proc/PID/stat); 0 if unknown. */
double bench_minor_faults(pid_t pid);
/* Time since start (a now_nsec() value), in µs and in ms. */
static inline double usec_since(uint64_t start) {
        return (double) (now_nsec() - start) / 1e3;
}
static inline double msec_since(uint64_t start) {
        return (double) (now_nsec() - start) / 1e6;
}
double median(double *samples, size_t n);
/* The nearest-rank percentile p (0 < p <= 100) of n samples (sorts them); 0 when n == 0. */
double percentile(double *samples, size_t n, double p);

/* A temporary directory for a figure (mode 0755: unprivileged clients may reach a socket in it),
 * and its removal with everything in it. */
int bench_mkdtemp(const char *what, char **ret);
void bench_rm_rf(const char *path);

/* The machine a table was measured on: cores, CPU, kernel, memory, tasks and their limits. */
void machine_facts_print(FILE *f);
