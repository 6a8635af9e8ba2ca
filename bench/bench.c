/* bench.c: the result table, timing and machine facts every figure of sectree-bench shares */
#include "bench.h"

#include <ftw.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>

#include "workload.h"

static const char *const verdict_table[_VERDICT_MAX] = {
        [VERDICT_NONE] = "",
        [VERDICT_PASS] = "PASS",
        [VERDICT_MISS] = "MISS",
        [VERDICT_PASS_INFO] = "(PASS)",
        [VERDICT_MISS_INFO] = "(MISS)",
};

const char *verdict_to_string(Verdict v) {
        return v >= 0 && v < _VERDICT_MAX ? verdict_table[v] : NULL;
}

void report_init(Report *r, const char *title) {
        *r = (Report) { .title = title };
}

void report_deinit(Report *r) {
        for (size_t i = 0; i < r->n_strings; i++)
                free(r->strings[i]);
        free(r->strings);
        free(r->rows);
        *r = (Report) {};
}

/* A copy of s owned by the report; NULL stays NULL. */
static int report_own(Report *r, const char **s) {
        char *copy;

        if (!*s)
                return 0;
        if (GROW(r->strings, r->n_strings_allocated, r->n_strings + 1) < 0)
                return -ENOMEM;
        copy = strdup(*s);
        if (!copy)
                return -ENOMEM;
        r->strings[r->n_strings++] = copy;
        *s = copy;
        return 0;
}

int report_add(Report *r, const BenchRow *row) {
        BenchRow copy = *row;

        if (report_own(r, &copy.figure) < 0 || report_own(r, &copy.unit) < 0 || report_own(r, &copy.ratio_to) < 0 ||
            report_own(r, &copy.target) < 0 || report_own(r, &copy.note) < 0)
                return log_oom();
        if (GROW(r->rows, r->n_rows_allocated, r->n_rows + 1) < 0)
                return log_oom();
        r->rows[r->n_rows++] = copy;
        if (copy.verdict == VERDICT_MISS)
                r->n_miss++;
        return 0;
}

int report_add_value(Report *r, size_t tasks, const char *figure, double value, const char *unit, double ratio,
                     const char *ratio_to, const char *target, Verdict verdict, const char *note) {
        return report_add(r, &(BenchRow) {
                .figure = figure,
                .tasks = tasks,
                .value = value,
                .unit = unit,
                .ratio = ratio,
                .ratio_to = ratio_to,
                .target = target,
                .verdict = verdict,
                .note = note,
        });
}

int report_add_ms(Report *r, size_t tasks, const char *figure, double msec, double ratio, const char *ratio_to,
                  const char *target, Verdict verdict, const char *note) {
        return report_add_value(r, tasks, figure, msec, "ms", ratio, ratio_to, target, verdict, note);
}

void report_check_failed(Report *r, const char *format, ...) {
        va_list ap;

        r->n_check_failed++;
        fputs("sectree-bench: CHECK FAILED: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputc('\n', stderr);
}

Verdict verdict_for(const BenchOptions *o, size_t tasks, double value, double limit, bool at_least) {
        bool pass = at_least ? value >= limit : value <= limit;

        if (tasks != o->target_size)
                return pass ? VERDICT_PASS_INFO : VERDICT_MISS_INFO;
        return pass ? VERDICT_PASS : VERDICT_MISS;
}

Verdict verdict_info(Verdict v) {
        return v == VERDICT_PASS ? VERDICT_PASS_INFO : v == VERDICT_MISS ? VERDICT_MISS_INFO : v;
}

static void format_value(char *buf, size_t size, double v) {
        if (v >= 100)
                snprintf(buf, size, "%.0f", v);
        else if (v >= 10)
                snprintf(buf, size, "%.1f", v);
        else if (v >= 1)
                snprintf(buf, size, "%.2f", v);
        else
                snprintf(buf, size, "%.3f", v);
}

/* Columns on screen: UTF-8 continuation bytes take none. */
static size_t display_width(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += ((unsigned char) *s & 0xC0) != 0x80;
        return n;
}

static void print_cell(FILE *f, const char *s, size_t width, bool right) {
        size_t w = display_width(s), pad = w < width ? width - w : 0;

        fprintf(f, "| %*s%s%*s ", right ? (int) pad : 0, "", s, right ? 0 : (int) pad, "");
}

typedef struct Column {
        const char *heading;
        size_t width;
        bool right;
} Column;

static const Column columns[] = {
        { "tasks", 6, true },
        { "figure", 28, false },
        { "value", 17, true },
        { "ratio to floor", 22, false },
        { "target", 24, false },
        { "", 26, true },
};

static void print_line(FILE *f, char cells[][96]) {
        for (size_t i = 0; i < ELEMENTSOF(columns); i++)
                print_cell(f, cells[i], columns[i].width, columns[i].right);
        fputs("|\n", f);
}

void report_print(const Report *r, FILE *f) {
        char cells[ELEMENTSOF(columns)][96];

        fprintf(f, "\n%s\n\n", r->title);
        for (size_t i = 0; i < ELEMENTSOF(columns); i++)
                snprintf(cells[i], sizeof(cells[i]), "%s", columns[i].heading);
        print_line(f, cells);
        for (size_t i = 0; i < ELEMENTSOF(columns); i++)
                fprintf(f, "|%s%.*s%s", columns[i].right ? "-" : ":",
                        (int) columns[i].width, "----------------------------------------",
                        columns[i].right ? ":" : "-");
        fputs("|\n", f);

        for (size_t i = 0; i < r->n_rows; i++) {
                const BenchRow *row = &r->rows[i];
                char value[32], ratio[32];

                format_value(value, sizeof(value), row->value);
                snprintf(cells[0], sizeof(cells[0]), "%zu", row->tasks);
                snprintf(cells[1], sizeof(cells[1]), "%s", row->figure);
                if (row->unavailable)
                        snprintf(cells[2], sizeof(cells[2]), "not yet available");
                else
                        snprintf(cells[2], sizeof(cells[2]), "%s %s", value, row->unit ?: "");
                cells[3][0] = 0;
                if (row->ratio > 0) {
                        format_value(ratio, sizeof(ratio), row->ratio);
                        snprintf(cells[3], sizeof(cells[3]), "%s× %s", ratio, row->ratio_to ?: "");
                }
                snprintf(cells[4], sizeof(cells[4]), "%s%s%s", row->target ?: "",
                         row->target && row->verdict != VERDICT_NONE ? " " : "",
                         row->target ? verdict_to_string(row->verdict) : "");
                snprintf(cells[5], sizeof(cells[5]), "%s", row->note ?: "");
                print_line(f, cells);
        }
        fputc('\n', f);
}

/* Field 10 of /proc/PID/stat: minor page faults so far. */
double bench_minor_faults(pid_t pid) {
        char path[64];
        unsigned long v = 0;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f || fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %lu", &v) != 1)
                return 0;
        return (double) v;
}

uint64_t now_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

double median(double *samples, size_t n) {
        if (n == 0)
                return 0;
        qsort(samples, n, sizeof(double), cmp_double);
        return n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

double percentile(double *samples, size_t n, double p) {
        size_t rank;

        if (n == 0)
                return 0;
        qsort(samples, n, sizeof(double), cmp_double);
        rank = (size_t) ((p / 100.0) * (double) n + 0.999999); /* ceil, 1-based */
        if (rank < 1)
                rank = 1;
        if (rank > n)
                rank = n;
        return samples[rank - 1];
}

int bench_mkdtemp(const char *what, char **ret) {
        const char *tmp = getenv("TMPDIR");
        char *path;

        if (asprintf(&path, "%s/sectree-bench-%s-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp", what) < 0)
                return log_oom();
        if (!mkdtemp(path)) {
                int r = log_error_errno(-errno, "Failed to make a temporary directory %s: %m", path);
                free(path);
                return r;
        }
        if (chmod(path, 0755) < 0) {
                int r = log_error_errno(-errno, "Failed to make %s reachable: %m", path);
                bench_rm_rf(path);
                free(path);
                return r;
        }
        *ret = path;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        if (remove(path) < 0)
                (void) log_warning_errno(-errno, "Failed to remove %s: %m", path);
        return 0;
}

void bench_rm_rf(const char *path) {
        if (path)
                (void) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void cpu_model(char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/cpuinfo", "re");
        char line[256];

        snprintf(buf, size, "unknown CPU");
        while (f && fgets(line, sizeof(line), f)) {
                char *colon = strchr(line, ':');
                if (!colon || strncmp(line, "model name", 10) != 0)
                        continue;
                colon += 1 + strspn(colon + 1, " \t");
                colon[strcspn(colon, "\n")] = 0;
                snprintf(buf, size, "%s", colon);
                return;
        }
}

static unsigned long read_ulong(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned long v = 0;

        if (!f || fscanf(f, "%lu", &v) != 1)
                return 0;
        return v;
}

#define FAULT_PROBE_BYTES (16U << 20)

/* µs per 4 KiB page: the first touch of fresh anonymous memory (a page fault each), and the same
 * populated in one call (MADV_POPULATE_WRITE); 0 when it cannot be measured. On virtual machines
 * where a fault traps to the hypervisor the first is many times the second. */
static void page_costs(double *ret_fault_usec, double *ret_populate_usec) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), pages = FAULT_PROBE_BYTES / page;
        char *p;
        uint64_t start;

        *ret_fault_usec = *ret_populate_usec = 0;
        p = mmap(NULL, FAULT_PROBE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return;
        start = now_nsec();
        for (size_t i = 0; i < FAULT_PROBE_BYTES; i += page)
                p[i] = 1;
        *ret_fault_usec = usec_since(start) / (double) pages;
        munmap(p, FAULT_PROBE_BYTES);

        p = mmap(NULL, FAULT_PROBE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return;
        start = now_nsec();
        if (madvise(p, FAULT_PROBE_BYTES, MADV_POPULATE_WRITE) == 0)
                *ret_populate_usec = usec_since(start) / (double) pages;
        munmap(p, FAULT_PROBE_BYTES);
}

void machine_facts_print(FILE *f) {
        struct utsname u = {};
        struct sysinfo si = {};
        char cpu[128];
        size_t tasks = 0;

        (void) uname(&u);
        (void) sysinfo(&si);
        (void) count_machine_tasks(&tasks);
        cpu_model(cpu, sizeof(cpu));
        fprintf(f, "machine: %ld cores (%s), kernel %s %s, %.1f GiB RAM, %zu tasks before the workload "
                "(pid_max %lu, threads-max %lu)\n",
                sysconf(_SC_NPROCESSORS_ONLN), cpu, u.release, u.machine,
                (double) si.totalram * si.mem_unit / (1024.0 * 1024 * 1024), tasks,
                read_ulong("/proc/sys/kernel/pid_max"), read_ulong("/proc/sys/kernel/threads-max"));
        double fault, populate;
        page_costs(&fault, &populate);
        fprintf(f, "memory: %.2f µs per page faulted in on first touch, %.2f µs per page populated in one call\n",
                fault, populate);
}
