/* store-migrate.h: the state database's migrations (store-migrate.c) */
#pragma once

#include "store/store-db-internal.h"

/* Apply the migrations the file lacks, in one transaction; nothing when it is current. */
int store_migrate(Store *s);
