/* ctl-args.h: sectreectl's command-line values and the usage-error convention */
#pragma once

#include "core/util.h"

#define EXIT_USAGE 2

/* A verb returns this (after saying why) for bad usage: main() then exits with EXIT_USAGE.
 * It lies outside the errno range, so it never collides with a failure. */
#define ERR_USAGE (-4096)

/* Say what is wrong with the command line, followed by "(try --help)", and return ERR_USAGE. */
int usage_error(const char *format, ...) _printf_(1, 2);
/* The same for a message that says itself what to do (a suggestion, the usage): no hint added. */
int usage_error_full(const char *format, ...) _printf_(1, 2);

/* Command line values: a tid or pid (> 0, fits pid_t) and a filter id (> 0). Usage errors. */
int parse_pid_arg(const char *what, const char *s, uint32_t *ret);
/* A task operand: "4711" (live: *ret_file NULL) or "FILE:4711", a task of a snapshot file (*ret_file
 * the file's name, malloc'ed). Usage errors; logs -ENOMEM. */
int parse_task_operand(const char *arg, char **ret_file, uint32_t *ret_tid);
int parse_filter_id_arg(const char *s, uint64_t *ret);
int parse_snapshot_id_arg(const char *s, uint64_t *ret);
/* A system call argument: decimal, hex with 0x, or negative decimal (a 64-bit two's complement). */
int parse_syscall_arg(const char *s, uint64_t *ret);
