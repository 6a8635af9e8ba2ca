/* scan-bpf-pass.h: one pass of the bpf scanner (scan-bpf-pass.c): records, iterator runs, checks */
#pragma once

#include "observe/scan-bpf-select.h"

void bpf_pass_records_free(PassRecords *r);
/* The scan ring buffer's callback (userdata: the scanner): one record into s->records. */
int bpf_scanner_on_record(void *userdata, void *data, size_t size);
/* Run the task iterator (every task: all_tasks, else those under seccomp and their processes)
 * and, when listeners may exist, the task_file one, into s->records. -ENOENT or -ENOBUFS: the
 * pass is to be run again (the kernel was asked for every program once more; the id map is swept
 * first); -ELOOP: a chain deeper than the walk bound. */
int bpf_scanner_pass_run(BpfScanner *s, bool all_tasks, bool want_exe);
/* The listener records whose fd /proc says is a seccomp listener now, the others dropped: the table
 * walk reads file tables without a reference (scan.bpf.c), and one that a thread's
 * unshare(CLONE_FILES) or exit freed under it may have been reused by another process's and name
 * that one's listener; a holder that closed the fd or exited since is not one either. Before
 * anything selects holders by them. */
void bpf_records_check_listeners(PassRecords *r);
/* The command lines of the member processes, by the argv iterator. */
int bpf_scanner_argv_pass(BpfScanner *s, const ProcSpan *spans, size_t n);
/* The last record of tgid in recs (sorted by the pass), or NULL. */
const ProcRec *bpf_proc_rec_find(const ProcRec *recs, size_t n, pid_t tgid);
