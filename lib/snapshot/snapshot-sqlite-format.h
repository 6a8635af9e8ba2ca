/* snapshot-sqlite-format.h: what the SQLite snapshot file's writer and reader share: its magic,
 * application id and the columns added only when needed */
#pragma once

#define SNAPSHOT_SQLITE_MAGIC "SQLite format 3"   /* the first 16 bytes of every SQLite file, NUL included */
#define SNAPSHOT_SQLITE_APPLICATION_ID 0x53454353 /* "SECS"; the state database is 0x53454354 "SECT" */

/* Threads whose own no_new_privs differs from their process's: only then does the file's threads
 * table get this last column (NULL: the process's; 0 or 1), so that every other snapshot stays
 * exactly schema/snapshot-v1-sqlite.sql. */
#define SNAPSHOT_SQLITE_ADD_THREAD_NNP "ALTER TABLE threads ADD COLUMN no_new_privs INTEGER"
#define SNAPSHOT_SQLITE_THREAD_NNP_COLUMN "no_new_privs INTEGER"
/* Likewise processes' last two columns, only when some process records a leader that exited while
 * its threads live on (processes[].exited_leader: NULL, NULL for none). */
#define SNAPSHOT_SQLITE_ADD_EXITED_LEADER                                                        \
        "ALTER TABLE processes ADD COLUMN exited_leader_mode TEXT; "                             \
        "ALTER TABLE processes ADD COLUMN exited_leader_filters INTEGER"
#define SNAPSHOT_SQLITE_EXITED_LEADER_COLUMNS { "exited_leader_mode TEXT", "exited_leader_filters INTEGER" }
/* Format version 2: a table of the processes' units, one row for each process that records any
 * (processes[process].units in JSON; NULL: none). A file without it is version 1. */
#define SNAPSHOT_SQLITE_ADD_UNITS                                                                  \
        "CREATE TABLE units (process INTEGER PRIMARY KEY REFERENCES processes (position), "        \
        "unit TEXT, user_unit TEXT, machine TEXT); PRAGMA user_version = 2"
