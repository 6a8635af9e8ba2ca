/* executor-run.h: one restore, from reading the request on stdin to the release */
#pragma once

/* Reads the request on stdin, restores, serves the caller until it releases; 0, or a negative
 * errno once the failure was logged and, where the caller can be told, reported to it. */
int executor_run(void);
