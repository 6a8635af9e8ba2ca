/* scan-bpf-side.h: an iterator read in a thread of its own beside the one this thread reads, both
 * writing into one ring buffer that this thread drains (scan-bpf-side.c) */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct BpfSideRun {
        int fd; /* the iterator's, owned */
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        uint64_t drains; /* the ring buffer drained so often (this thread) */
        bool waiting;    /* the side found it full and waits for a drain */
        bool done;       /* the side ended: error says how */
        int error;       /* 0: the iterator ran to its end; else a negative errno */
        bool wrote;      /* the program wrote text into the iterator's file */
        volatile uint32_t *tid; /* where the side puts its thread id before it reads, or NULL */
        void (*then)(void *userdata); /* what the side does once its iterator ended, or NULL */
        void *then_userdata;
} BpfSideRun;

/* Start reading iterator link link_fd in a thread; it puts its thread id in *tid (unless NULL)
 * before its first read, so that the program can tell its runs from this thread's. After its
 * iterator ended, the side calls then(then_userdata) unless NULL: work for a free CPU while this
 * thread's iterator goes on. */
int bpf_side_start(BpfSideRun *r, int link_fd, volatile uint32_t *tid, void (*then)(void *userdata),
                   void *then_userdata);
/* The ring buffer was drained: a side waiting for room goes on. */
void bpf_side_drained(BpfSideRun *r);
/* Wait until the side waits for room or has ended; *ret_done tells which. */
void bpf_side_wait(BpfSideRun *r, bool *ret_done);
/* The side's end, once it has ended (after bpf_side_wait() said so): 0 or a negative errno
 * (-EBADMSG: the program wrote text). Frees what bpf_side_start() took. */
int bpf_side_join(BpfSideRun *r);
