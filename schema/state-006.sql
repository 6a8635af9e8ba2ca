-- state-006.sql: what /proc shows of a restored tree, kept by snapshots.
--
-- no_new_privs is per thread: a thread's own bit, stored where it differs from its process's (the
-- leader's, which /proc/PID/status shows); NULL means the process's.
--
-- A leader that exited while its threads live on keeps showing its seccomp mode and number of
-- filters in /proc/PID/status (the filters themselves are released): both NULL when none is
-- recorded. Checked with comparisons, not an IN list (see state-005.sql).

ALTER TABLE snapshot_threads ADD COLUMN no_new_privs INTEGER
        CHECK (no_new_privs IS NULL OR no_new_privs = 0 OR no_new_privs = 1);
ALTER TABLE snapshot_processes ADD COLUMN exited_leader_mode TEXT
        CHECK (exited_leader_mode IS NULL OR exited_leader_mode = 'disabled' OR exited_leader_mode = 'strict'
               OR exited_leader_mode = 'filter');
ALTER TABLE snapshot_processes ADD COLUMN exited_leader_filters INTEGER
        CHECK (exited_leader_filters IS NULL OR exited_leader_filters >= 0);
