-- state-001.sql: the first schema of sectreed's state database (<state-dir>/state.db).
--
-- Applied by daemon/store.c in one IMMEDIATE transaction, followed by the PRAGMA user_version
-- that schema/embed-sql.py appends (the migration's number) and, on a new file, PRAGMA
-- application_id = 0x53454354 ("SECT"). Never edit a migration that has shipped: add
-- state-002.sql instead. The tables mirror the live kernel state for admins; sectreed reconciles
-- them with a full scan at every start (a stale file is never trusted).
--
-- Conventions: times are CLOCK_REALTIME microseconds since the epoch (*_usec); booleans are 0/1;
-- start_time is /proc/PID/stat field 22 (clock ticks since boot); `generation` columns are
-- sectreed's mark-and-sweep bookkeeping for full reconciliations, not meant for queries.

-- One row: sectreed's own bookkeeping.
CREATE TABLE meta (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        max_filter_id INTEGER NOT NULL DEFAULT 0, -- highest filter id ever stored: ids are never reused,
                                                  -- a new filter may not take an id from history
        generation INTEGER NOT NULL DEFAULT 0,    -- bumped by every full reconciliation
        last_full_scan_usec INTEGER               -- when the last full reconciliation was stored
);
INSERT INTO meta (id) VALUES (1);

-- Live seccomp filters: one row per kernel filter object (identity 'exact') or per inferred one.
CREATE TABLE filters (
        id INTEGER PRIMARY KEY CHECK (id > 0),
        parent INTEGER REFERENCES filters (id),   -- the filter it was stacked on; NULL for a root
        length INTEGER NOT NULL,                  -- instructions
        digest TEXT NOT NULL,                     -- 'sha256:<hex>' over program
        program BLOB NOT NULL,                    -- 8 bytes per instruction: code le16, jt, jf, k le32
        log INTEGER NOT NULL CHECK (log IN (0, 1)),                                 -- SECCOMP_FILTER_FLAG_LOG
        wait_killable_recv INTEGER NOT NULL CHECK (wait_killable_recv IN (0, 1)),   -- ..._WAIT_KILLABLE_RECV
        has_listener INTEGER NOT NULL CHECK (has_listener IN (0, 1)),               -- ..._NEW_LISTENER
        identity TEXT NOT NULL CHECK (identity IN ('exact', 'inferred')),
        refs INTEGER,                             -- kernel reference counts, NULL when not visible
        users INTEGER,
        first_seen_usec INTEGER NOT NULL,
        last_seen_usec INTEGER NOT NULL,
        installer_tid INTEGER,                    -- who installed it, when sectreed saw it happen
        installer_tgid INTEGER,
        installer_comm TEXT,
        installer_exe TEXT,
        generation INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX filters_parent ON filters (parent);

-- Filters that existed and are gone; a filter keeps its id when it moves here.
CREATE TABLE history (
        id INTEGER PRIMARY KEY,
        parent INTEGER,                           -- may name a live filter or another history row
        length INTEGER NOT NULL,
        digest TEXT NOT NULL,
        program BLOB NOT NULL,
        log INTEGER NOT NULL,
        wait_killable_recv INTEGER NOT NULL,
        has_listener INTEGER NOT NULL,
        identity TEXT NOT NULL,
        refs INTEGER,
        users INTEGER,
        first_seen_usec INTEGER NOT NULL,
        last_seen_usec INTEGER NOT NULL,
        installer_tid INTEGER,
        installer_tgid INTEGER,
        installer_comm TEXT,
        installer_exe TEXT,
        gone_usec INTEGER NOT NULL
);

-- Processes (thread groups) with at least one thread in the tasks table.
CREATE TABLE processes (
        pid INTEGER PRIMARY KEY CHECK (pid > 0),
        ppid INTEGER NOT NULL,                    -- real parent's tgid, 0 for none
        start_time INTEGER,                       -- NULL until the leader itself has been seen
        comm TEXT NOT NULL,
        exe TEXT,
        uid INTEGER NOT NULL,
        gid INTEGER NOT NULL,
        no_new_privs INTEGER NOT NULL CHECK (no_new_privs IN (0, 1)),
        generation INTEGER NOT NULL DEFAULT 0
);

-- Threads and the head (newest filter) of their chain.
CREATE TABLE tasks (
        tid INTEGER PRIMARY KEY CHECK (tid > 0),
        tgid INTEGER NOT NULL REFERENCES processes (pid) ON DELETE CASCADE,
        start_time INTEGER NOT NULL,
        mode TEXT NOT NULL CHECK (mode = 'disabled' OR mode = 'strict' OR mode = 'filter'),
        filter INTEGER REFERENCES filters (id),   -- NULL unless mode = 'filter'
        last_seen_usec INTEGER NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX tasks_tgid ON tasks (tgid);
CREATE INDEX tasks_filter ON tasks (filter);

-- Seccomp user-notification listeners (fds grouped by kcmp(KCMP_FILE)) and who holds them.
-- Listener ids are local to the last full scan.
CREATE TABLE listeners (
        id INTEGER PRIMARY KEY,
        filter INTEGER NOT NULL REFERENCES filters (id) ON DELETE CASCADE,
        identity TEXT NOT NULL CHECK (identity IN ('exact', 'inferred'))
);
CREATE INDEX listeners_filter ON listeners (filter);

CREATE TABLE listener_holders (
        listener INTEGER NOT NULL REFERENCES listeners (id) ON DELETE CASCADE,
        pid INTEGER NOT NULL,
        fd INTEGER NOT NULL,
        PRIMARY KEY (listener, pid, fd)
) WITHOUT ROWID;
CREATE INDEX listener_holders_pid ON listener_holders (pid);

-- A process that is gone holds no fds.
CREATE TRIGGER processes_drop_holders AFTER DELETE ON processes
BEGIN
        DELETE FROM listener_holders WHERE pid = OLD.pid;
END;

-- Views for admins (sqlite3 -readonly /var/lib/sectree/state.db).

-- Each task's full chain: position 0 is the head (newest, evaluated first), the last the root.
CREATE VIEW task_chains AS
WITH RECURSIVE chain (tid, tgid, position, filter) AS (
        SELECT tid, tgid, 0, filter FROM tasks WHERE filter IS NOT NULL
        UNION ALL
        SELECT c.tid, c.tgid, c.position + 1, f.parent
        FROM chain c JOIN filters f ON f.id = c.filter
        WHERE f.parent IS NOT NULL AND c.position < 10000
)
SELECT c.tid, c.tgid, c.position, c.filter, f.digest, f.length
FROM chain c JOIN filters f ON f.id = c.filter;

-- Per filter: threads whose head it is, and threads and processes it applies to (anywhere in
-- their chain).
CREATE VIEW filter_task_counts AS
SELECT f.id AS filter,
       (SELECT count(*) FROM tasks t WHERE t.filter = f.id) AS head_tasks,
       count(c.tid) AS tasks,
       count(DISTINCT c.tgid) AS processes
FROM filters f LEFT JOIN task_chains c ON c.filter = f.id
GROUP BY f.id;

-- Filters with their depth (1 for a root) and path of ids from the root ('1/5/9');
-- ORDER BY path lists the forest depth-first.
CREATE VIEW filter_tree AS
WITH RECURSIVE up (id, ancestor, depth, path) AS (
        SELECT id, parent, 1, CAST(id AS TEXT) FROM filters
        UNION ALL
        SELECT up.id, f.parent, up.depth + 1, f.id || '/' || up.path
        FROM up JOIN filters f ON f.id = up.ancestor
        WHERE up.depth < 10000
)
SELECT up.id, f.parent, up.depth, up.path, f.length, f.digest, f.identity
FROM up JOIN filters f USING (id)
WHERE up.ancestor IS NULL;

-- Processes with their depth (0 for a process whose parent is not in the table) and path of
-- pids ('1/812/4711'); ORDER BY path lists the tree depth-first.
CREATE VIEW process_tree AS
WITH RECURSIVE up (pid, ancestor, depth, path) AS (
        SELECT pid, ppid, 0, CAST(pid AS TEXT) FROM processes
        UNION ALL
        SELECT up.pid, p.ppid, up.depth + 1, p.pid || '/' || up.path
        FROM up JOIN processes p ON p.pid = up.ancestor
        WHERE up.depth < 10000
)
SELECT up.pid, p.ppid, up.depth, up.path, p.comm, p.exe, p.uid
FROM up JOIN processes p USING (pid)
WHERE NOT EXISTS (SELECT 1 FROM processes q WHERE q.pid = up.ancestor);
