-- state-002.sql: snapshots, stored in the state database next to (never mixed with) the live
-- tables of state-001.sql.
--
-- A snapshot is immutable: written once, in one transaction, by CreateSnapshot or ImportSnapshot,
-- and removed with all its rows by DeleteSnapshot (ON DELETE CASCADE). Unlike the live tables it
-- is not reconciled at start: snapshots survive restarts as they are. Each element table holds
-- what the snapshot format (schema/snapshot-v1.md) carries, one row per element, keyed by the
-- snapshot's id and the element's id, pid or tid; filter ids and listener ids are local to their
-- snapshot (1..n). References inside a snapshot (parent, filter, listener, pid) name rows of the
-- same snapshot: they are checked by sectreed before anything is stored (every snapshot, created
-- or imported, went through the snapshot validator) and are not declared as foreign keys, so that
-- storing 10,000 tasks costs no extra index lookups.

CREATE TABLE snapshots (
        id INTEGER PRIMARY KEY AUTOINCREMENT,   -- never reused, even after a DeleteSnapshot
        name TEXT,                              -- given by who took it; NULL = none
        created_usec INTEGER NOT NULL,          -- when the scan ended (the file's created_at)
        stored_usec INTEGER NOT NULL,           -- when this row was written (created or imported)
        origin TEXT NOT NULL CHECK (origin IN ('created', 'imported')),
        owner_uid INTEGER NOT NULL,             -- who may list, export and delete it (besides root)
        taken_by_uid INTEGER NOT NULL,          -- who took it; for an import, as the file says
        root_pid INTEGER NOT NULL,              -- the subtree's root, 0 = the whole machine
        backend TEXT NOT NULL CHECK (backend IN ('bpf', 'ptrace')),
        identity TEXT NOT NULL CHECK (identity IN ('exact', 'inferred')),
        consistency TEXT NOT NULL CHECK (consistency IN ('none', 'iterator', 'frozen')),
        host_kernel TEXT,                       -- uname -r, -m and the host name of the machine scanned
        host_arch TEXT,
        host_hostname TEXT,
        processes INTEGER NOT NULL,             -- counts, as ListSnapshots reports them
        threads INTEGER NOT NULL,
        filters INTEGER NOT NULL,
        listeners INTEGER NOT NULL,
        instructions INTEGER NOT NULL           -- sum of the filters' lengths (for per-uid quotas)
);
CREATE INDEX snapshots_owner ON snapshots (owner_uid);

-- The filters every chain of the snapshot reaches, as they were.
CREATE TABLE snapshot_filters (
        snapshot INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
        id INTEGER NOT NULL CHECK (id > 0),     -- 1..n, parents before children
        parent INTEGER,                         -- snapshot_filters.id of the same snapshot; NULL for a root
        length INTEGER NOT NULL,
        digest TEXT NOT NULL,                   -- 'sha256:<hex>' over program
        program BLOB NOT NULL,                  -- 8 bytes per instruction: code le16, jt, jf, k le32
        log INTEGER NOT NULL CHECK (log IN (0, 1)),
        wait_killable_recv INTEGER NOT NULL CHECK (wait_killable_recv IN (0, 1)),
        listener INTEGER,                       -- snapshot_listeners.id; NULL = none
        identity TEXT NOT NULL CHECK (identity IN ('exact', 'inferred')),
        PRIMARY KEY (snapshot, id)
);

CREATE TABLE snapshot_processes (
        snapshot INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
        pid INTEGER NOT NULL CHECK (pid > 0),
        ppid INTEGER NOT NULL,                  -- the real parent's pid at scan time, 0 for none
        start_time INTEGER NOT NULL,
        comm TEXT NOT NULL,
        exe TEXT,                               -- NULL = not known
        argv TEXT NOT NULL,                     -- a JSON array of strings ('[]' = not known); json_each() reads it
        uid INTEGER NOT NULL,
        gid INTEGER NOT NULL,
        no_new_privs INTEGER NOT NULL CHECK (no_new_privs IN (0, 1)),
        PRIMARY KEY (snapshot, pid)
);

CREATE TABLE snapshot_threads (
        snapshot INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
        tid INTEGER NOT NULL CHECK (tid > 0),
        pid INTEGER NOT NULL,                   -- snapshot_processes.pid of the same snapshot
        mode TEXT NOT NULL CHECK (mode IN ('disabled', 'strict', 'filter')),
        filter INTEGER,                         -- the head of its chain (snapshot_filters.id); NULL = none
        PRIMARY KEY (snapshot, tid)
) WITHOUT ROWID;

CREATE TABLE snapshot_listeners (
        snapshot INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
        id INTEGER NOT NULL CHECK (id > 0),
        filter INTEGER NOT NULL,                -- snapshot_filters.id
        PRIMARY KEY (snapshot, id)
) WITHOUT ROWID;

CREATE TABLE snapshot_holders (
        snapshot INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
        listener INTEGER NOT NULL,              -- snapshot_listeners.id
        position INTEGER NOT NULL,              -- order of the holders of one listener, from 0
        pid INTEGER NOT NULL,                   -- snapshot_processes.pid
        fd INTEGER NOT NULL,
        PRIMARY KEY (snapshot, listener, position)
) WITHOUT ROWID;

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
