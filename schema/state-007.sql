-- state-007.sql: the units of a stored snapshot's processes (snapshot format version 2).
--
-- The systemd unit, user unit and machine (container) name read from each process's cgroup when
-- the snapshot was taken; NULL: none (or a snapshot stored before they were recorded).

ALTER TABLE snapshot_processes ADD COLUMN unit TEXT;
ALTER TABLE snapshot_processes ADD COLUMN user_unit TEXT;
ALTER TABLE snapshot_processes ADD COLUMN machine TEXT;
