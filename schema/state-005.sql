-- state-005.sql: a snapshot's thread rows are checked without an IN list.
--
-- SQLite checks `mode IN ('disabled', 'strict', 'filter')` (a list of more than two values) by
-- building a temporary b-tree of the list for every row it inserts: storing the 10,000 threads of
-- a snapshot spent more in that than in the rows themselves. The same values are checked with
-- comparisons instead. A CHECK cannot be changed in place, so the table is made anew and its rows
-- copied; the view that reads it goes and comes back as state-002.sql made it.

DROP VIEW snapshot_task_chains;

CREATE TABLE snapshot_threads_005 (
        snapshot INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
        tid INTEGER NOT NULL CHECK (tid > 0),
        pid INTEGER NOT NULL,                   -- snapshot_processes.pid of the same snapshot
        mode TEXT NOT NULL CHECK (mode = 'disabled' OR mode = 'strict' OR mode = 'filter'),
        filter INTEGER,                         -- the head of its chain (snapshot_filters.id); NULL = none
        PRIMARY KEY (snapshot, tid)
) WITHOUT ROWID;
INSERT INTO snapshot_threads_005 (snapshot, tid, pid, mode, filter)
        SELECT snapshot, tid, pid, mode, filter FROM snapshot_threads;
DROP TABLE snapshot_threads;
ALTER TABLE snapshot_threads_005 RENAME TO snapshot_threads;

-- Each thread's full chain in a snapshot: position 0 is the head, the last the root.
CREATE VIEW snapshot_task_chains AS
WITH RECURSIVE chain (snapshot, tid, pid, position, filter) AS (
        SELECT snapshot, tid, pid, 0, filter FROM snapshot_threads WHERE filter IS NOT NULL
        UNION ALL
        SELECT c.snapshot, c.tid, c.pid, c.position + 1, f.parent
        FROM chain c JOIN snapshot_filters f ON f.snapshot = c.snapshot AND f.id = c.filter
        WHERE f.parent IS NOT NULL AND c.position < 10000
)
SELECT c.snapshot, c.tid, c.pid, c.position, c.filter, f.digest, f.length
FROM chain c JOIN snapshot_filters f ON f.snapshot = c.snapshot AND f.id = c.filter;
