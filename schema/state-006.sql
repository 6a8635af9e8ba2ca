-- state-006.sql: no_new_privs is per thread.
--
-- A thread's own no_new_privs bit, stored where it differs from its process's (the leader's, which
-- /proc/PID/status shows): NULL means the process's. A restore sets it thread by thread. Checked
-- with comparisons, not an IN list (see state-005.sql).

ALTER TABLE snapshot_threads ADD COLUMN no_new_privs INTEGER
        CHECK (no_new_privs IS NULL OR no_new_privs = 0 OR no_new_privs = 1);
