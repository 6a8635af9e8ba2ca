/* scan-bpf-select.h: what a bpf pass reports (scan-bpf-select.c): processes as spans of the sorted
 * task records, which of them are members, which filters are kept */
#pragma once

#include "observe/bpf-scanner.h"

/* A process of the pass: its task records, sorted by process and thread. */
typedef struct ProcSpan {
        pid_t pid, ppid;
        size_t first, n; /* into the sorted task records */
        int8_t subtree;  /* in the root's subtree: 1 yes, -1 no, 0 not known yet */
        bool member;     /* reported */
} ProcSpan;

/* Sort the task records and group them by process, in pid order. */
int bpf_spans_build(PassRecords *r, ProcSpan **ret, size_t *ret_n);
ProcSpan *bpf_span_find(ProcSpan *spans, size_t n, pid_t pid);
/* Whether a task record is reported (it is not exiting). */
bool bpf_task_rec_reported(const struct scan_rec_task *t);
/* A leader that exited while threads of its process live on (Process.exited_leader). */
bool bpf_rec_is_exited_leader(const PassRecords *r, const ProcSpan *p, const struct scan_rec_task *t);
/* Decide which processes are reported (ProcSpan.member: the whole machine's processes under
 * seccomp, or root's subtree, and the holders of the listeners reported) and which filters are
 * kept (BpfFilter.keep). -ESRCH: root was not met. */
int bpf_scanner_select(BpfScanner *s, ProcSpan *spans, size_t n, pid_t root);
