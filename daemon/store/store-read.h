/* store-read.h: the state database's open checks and read-back (store-read.c) */
#pragma once

#include "store/store-db-internal.h"

typedef struct StoreHeader {
        int64_t application_id;
        int64_t user_version;
        int64_t n_objects; /* tables, indexes, views, triggers */
} StoreHeader;

/* The header fields, by a one-shot statement that writes nothing. -EMEDIUMTYPE: not SQLite. */
int store_read_header(Store *s, StoreHeader *ret);
/* -EMEDIUMTYPE: another application's; -EPROTONOSUPPORT: a schema newer than this build's. */
int store_check_header(Store *s, const StoreHeader *h);
int store_check_format(Store *s);
/* s->generation from the meta row. */
int store_load_generation(Store *s);
