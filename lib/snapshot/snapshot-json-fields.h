/* snapshot-json-fields.h: the fields of every object of the snapshot JSON format, with their types
 * and ranges: the one table both JSON readers check a document against */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "snapshot/snapshot-format.h"

typedef enum FieldKind {
        FIELD_INTEGER,
        FIELD_BOOLEAN,
        FIELD_STRING,
        FIELD_ARRAY,
        FIELD_OBJECT,
} FieldKind;

typedef struct FieldSpec {
        const char *name;
        FieldKind kind;
        bool nullable;
        bool optional; /* may be absent */
        int64_t min, max; /* integers */
} FieldSpec;

#define INTEGER(n, lo, hi) { .name = (n), .kind = FIELD_INTEGER, .min = (lo), .max = (hi) }
#define ID_OR_NULL(n) { .name = (n), .kind = FIELD_INTEGER, .nullable = true, .min = 1, .max = INT64_MAX }
#define BOOLEAN(n) { .name = (n), .kind = FIELD_BOOLEAN }
#define OPTIONAL_BOOLEAN(n) { .name = (n), .kind = FIELD_BOOLEAN, .optional = true }
#define STRING(n) { .name = (n), .kind = FIELD_STRING }
#define STRING_OR_NULL(n) { .name = (n), .kind = FIELD_STRING, .nullable = true }
#define ARRAY(n) { .name = (n), .kind = FIELD_ARRAY }
#define OBJECT(n) { .name = (n), .kind = FIELD_OBJECT }
#define OPTIONAL_OBJECT(n) { .name = (n), .kind = FIELD_OBJECT, .optional = true }

/* Each table is indexed by its enum: the fast reader takes values by position. */
enum { TOP_FORMAT, TOP_VERSION, TOP_CREATED_AT, TOP_SNAPSHOT, TOP_HOST, TOP_SOURCE, TOP_ROOT, TOP_FILTERS,
       TOP_PROCESSES, TOP_LISTENERS, _TOP_MAX };
static const FieldSpec __attribute__((unused)) top_fields[_TOP_MAX] = {
        [TOP_FORMAT] = STRING("format"),
        [TOP_VERSION] = INTEGER("version", INT64_MIN, INT64_MAX),
        [TOP_CREATED_AT] = STRING("created_at"),
        [TOP_SNAPSHOT] = OBJECT("snapshot"),
        [TOP_HOST] = OBJECT("host"),
        [TOP_SOURCE] = OBJECT("source"),
        [TOP_ROOT] = INTEGER("root", 0, SNAPSHOT_MAX_PID),
        [TOP_FILTERS] = ARRAY("filters"),
        [TOP_PROCESSES] = ARRAY("processes"),
        [TOP_LISTENERS] = ARRAY("listeners"),
};

enum { HOST_KERNEL, HOST_ARCH, HOST_HOSTNAME, _HOST_MAX };
static const FieldSpec __attribute__((unused)) host_fields[_HOST_MAX] = {
        [HOST_KERNEL] = STRING_OR_NULL("kernel"),
        [HOST_ARCH] = STRING_OR_NULL("arch"),
        [HOST_HOSTNAME] = STRING_OR_NULL("hostname"),
};

enum { SOURCE_BACKEND, SOURCE_IDENTITY, _SOURCE_MAX };
static const FieldSpec __attribute__((unused)) source_fields[_SOURCE_MAX] = {
        [SOURCE_BACKEND] = STRING("backend"),
        [SOURCE_IDENTITY] = STRING("identity"),
};

enum { INFO_NAME, INFO_TAKEN_BY_UID, INFO_CONSISTENCY, _INFO_MAX };
static const FieldSpec __attribute__((unused)) snapshot_fields[_INFO_MAX] = {
        [INFO_NAME] = STRING_OR_NULL("name"),
        [INFO_TAKEN_BY_UID] = INTEGER("taken_by_uid", 0, SNAPSHOT_MAX_UID),
        [INFO_CONSISTENCY] = STRING("consistency"),
};

enum { FILTER_ID, FILTER_PARENT, FILTER_LENGTH, FILTER_PROGRAM, FILTER_DIGEST, FILTER_LOG, FILTER_WAIT_KILLABLE_RECV,
       FILTER_LISTENER, FILTER_IDENTITY, _FILTER_MAX };
static const FieldSpec __attribute__((unused)) filter_fields[_FILTER_MAX] = {
        [FILTER_ID] = INTEGER("id", 1, INT64_MAX),
        [FILTER_PARENT] = ID_OR_NULL("parent"),
        [FILTER_LENGTH] = INTEGER("length", 0, INT64_MAX),
        [FILTER_PROGRAM] = ARRAY("program"),
        [FILTER_DIGEST] = STRING("digest"),
        [FILTER_LOG] = BOOLEAN("log"),
        [FILTER_WAIT_KILLABLE_RECV] = BOOLEAN("wait_killable_recv"),
        [FILTER_LISTENER] = ID_OR_NULL("listener"),
        [FILTER_IDENTITY] = STRING("identity"),
};

enum { PROCESS_PID, PROCESS_PPID, PROCESS_START_TIME, PROCESS_COMM, PROCESS_EXE, PROCESS_ARGV, PROCESS_UID,
       PROCESS_GID, PROCESS_NO_NEW_PRIVS, PROCESS_THREADS, PROCESS_EXITED_LEADER, PROCESS_UNITS, _PROCESS_MAX };
static const FieldSpec __attribute__((unused)) process_fields[_PROCESS_MAX] = {
        [PROCESS_PID] = INTEGER("pid", 1, SNAPSHOT_MAX_PID),
        [PROCESS_PPID] = INTEGER("ppid", 0, SNAPSHOT_MAX_PID),
        [PROCESS_START_TIME] = INTEGER("start_time", 0, INT64_MAX),
        [PROCESS_COMM] = STRING("comm"),
        [PROCESS_EXE] = STRING_OR_NULL("exe"),
        [PROCESS_ARGV] = ARRAY("argv"),
        [PROCESS_UID] = INTEGER("uid", 0, UINT32_MAX),
        [PROCESS_GID] = INTEGER("gid", 0, UINT32_MAX),
        [PROCESS_NO_NEW_PRIVS] = BOOLEAN("no_new_privs"),
        [PROCESS_THREADS] = ARRAY("threads"),
        [PROCESS_EXITED_LEADER] = OPTIONAL_OBJECT("exited_leader"),
        [PROCESS_UNITS] = OPTIONAL_OBJECT("units"), /* version 2 */
};

enum { UNITS_UNIT, UNITS_USER_UNIT, UNITS_MACHINE, _UNITS_MAX };
static const FieldSpec __attribute__((unused)) units_fields[_UNITS_MAX] = {
        [UNITS_UNIT] = STRING_OR_NULL("unit"),
        [UNITS_USER_UNIT] = STRING_OR_NULL("user_unit"),
        [UNITS_MACHINE] = STRING_OR_NULL("machine"),
};

enum { LEADER_MODE, LEADER_FILTERS, _LEADER_MAX };
static const FieldSpec __attribute__((unused)) exited_leader_fields[_LEADER_MAX] = {
        [LEADER_MODE] = STRING("mode"),
        [LEADER_FILTERS] = INTEGER("filters", 0, SNAPSHOT_MAX_PATH_INSNS),
};

enum { THREAD_TID, THREAD_MODE, THREAD_FILTER, THREAD_NO_NEW_PRIVS, _THREAD_MAX };
static const FieldSpec __attribute__((unused)) thread_fields[_THREAD_MAX] = {
        [THREAD_TID] = INTEGER("tid", 1, SNAPSHOT_MAX_PID),
        [THREAD_MODE] = STRING("mode"),
        [THREAD_FILTER] = ID_OR_NULL("filter"),
        [THREAD_NO_NEW_PRIVS] = OPTIONAL_BOOLEAN("no_new_privs"),
};

enum { LISTENER_ID, LISTENER_FILTER, LISTENER_HOLDERS, _LISTENER_MAX };
static const FieldSpec __attribute__((unused)) listener_fields[_LISTENER_MAX] = {
        [LISTENER_ID] = INTEGER("id", 1, INT64_MAX),
        [LISTENER_FILTER] = INTEGER("filter", 1, INT64_MAX),
        [LISTENER_HOLDERS] = ARRAY("holders"),
};

enum { HOLDER_PID, HOLDER_FD, _HOLDER_MAX };
static const FieldSpec __attribute__((unused)) holder_fields[_HOLDER_MAX] = {
        [HOLDER_PID] = INTEGER("pid", 1, SNAPSHOT_MAX_PID),
        [HOLDER_FD] = INTEGER("fd", 0, INT32_MAX),
};
