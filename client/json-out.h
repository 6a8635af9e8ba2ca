/* json-out.h: --json output: the records of the API as JSON values, and printing documents */
#pragma once

#include <jansson.h>

#include "manager-calls.h"

/* Documents are held in json_auto_t (jansson's cleanup attribute). */

/* --json=MODE, as systemd spells it. */
typedef enum JsonMode {
        JSON_MODE_OFF,
        JSON_MODE_AUTO,   /* --json alone: pretty on a terminal, short otherwise */
        JSON_MODE_PRETTY, /* indented */
        JSON_MODE_SHORT,  /* one line */
        _JSON_MODE_MAX,
        _JSON_MODE_INVALID = -EINVAL,
} JsonMode;
JsonMode json_mode_from_string(const char *s);
/* How documents are printed from now on (JSON_MODE_AUTO unless set). */
void json_output_set_mode(JsonMode m);

/* One document on stdout, indented or on one line as the mode says; then a newline. Logs. */
int json_print_document(json_t *doc);
/* One record of a stream (monitor), flushed: on one line unless --json=pretty. Logs. */
int json_print_line(json_t *doc);

/* null for 0 (no filter / no parent), the number otherwise. */
json_t *json_id_or_null(uint64_t id);

json_t *json_task_record(const TaskRecord *t);
json_t *json_filter_record(const FilterRecord *f);
json_t *json_strv(char * const *l);
/* [[code, jt, jf, k], ...] as in the snapshot format. */
json_t *json_program(const struct sock_filter *insns, size_t n);

/* Steal v into o under key (v may be NULL: then -ENOMEM). */
int json_set(json_t *o, const char *key, json_t *v);
