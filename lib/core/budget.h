/* budget.h: the per-uid budget of the live forest
 *
 * The daemon keeps every filter of the machine, but a filter's instructions only while the uid it
 * counts against stays within its budget, so that no user's processes, which may install as many
 * filters as the kernel lets them, can make the daemon big (or its passes, stores and calls slow)
 * for everyone. A filter counts against the uid of the thread that installed it (an event) or,
 * found by a full pass, the lowest uid among the processes whose chains reach it: a filter that
 * root's processes run under too counts against root. Filters of uid 0 are never counted. Over
 * budget, a filter keeps its id, parent, length, digest and flags; its instructions are dropped
 * (Filter.insns NULL) and Filter.over_budget says so, to every reader. A full pass applies the
 * budget afresh: each uid's filters nearest the roots of their chains (then the lowest ids) keep
 * their instructions, as events keep the first that come. */
#pragma once

#include "core/forest.h"

/* 131,072 instructions (1 MiB of programs) per uid: 32 chains as long as the kernel allows, or
 * hundreds of the filters that systemd, browsers and container runtimes install. */
#define BUDGET_DEFAULT_INSNS_PER_UID (UINT64_C(1) << 17)

typedef struct Budget {
        uint64_t insns_per_uid; /* 0: no budget, every filter keeps its instructions */
        Hashmap kept;           /* uid + 1 -> instructions kept (as a pointer-sized count) */
        size_t n_over;          /* filters over budget */
} Budget;

void budget_init(Budget *b, uint64_t insns_per_uid);
void budget_deinit(Budget *b);

/* Whether a new filter of len instructions that counts against uid keeps them; if it does, they
 * are counted. */
bool budget_take(Budget *b, uid_t uid, size_t len);
/* A filter that counted (budget_take() or budget_apply()) leaves. */
void budget_release(Budget *b, const Filter *flt);
/* Count the filters of f (linked) afresh: set each one's budget_uid, and drop the instructions of
 * those over budget (a count that finds no memory drops them too). A filter over budget already
 * stays so. -ENOMEM before anything changed. */
int budget_apply(Budget *b, Forest *f);
/* Count again what the filters of f say (budget_uid, over_budget), dropping nothing. */
int budget_recount(Budget *b, const Forest *f);
/* Instructions kept for uid. */
uint64_t budget_kept(const Budget *b, uid_t uid);
