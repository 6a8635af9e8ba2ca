/* chain.h: one task's filter chain fetched in full (GetTaskChain, then GetFilter for each) */
#pragma once

#include "manager.h"

typedef struct Chain {
        uint32_t tid;
        FilterDetail *filters; /* newest (the head) first */
        size_t n;
} Chain;

void chain_done(Chain *ch);

/* Logs. */
int chain_fetch(sd_bus *bus, uint32_t tid, Chain *ret);
