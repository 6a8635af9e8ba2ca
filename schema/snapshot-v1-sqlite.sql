-- snapshot-v1-sqlite.sql: the SQLite snapshot file, format version 1 (see snapshot-v1.md).
--
-- A standalone database carrying exactly what the JSON form carries, one table per JSON array
-- (threads and holders, nested in JSON, are tables of their own) and one row of meta for the
-- top-level fields. Every table has a 0-based `position`: the element's index in its JSON array,
-- so that both forms name an element the same way ("filters[3]") and keep the same order.
-- Readers check the types of the values themselves (an imported file is hostile), and that ids,
-- pids, tids and holders are unique: the declared types say what sectree writes, not what a
-- reader relies on, and the file carries no constraints a reader would have to trust.
--
-- Embedded into lib/ at build time; the reader compares an imported file's schema with the one
-- this file creates.

PRAGMA application_id = 1397048147; -- 0x53454353, "SECS": a sectree snapshot file
PRAGMA user_version = 1;            -- the snapshot format version

-- The top-level fields: exactly one row.
CREATE TABLE meta (
        format TEXT NOT NULL,          -- "sectree-snapshot"
        version INTEGER NOT NULL,      -- 1
        created_at TEXT NOT NULL,      -- RFC 3339 UTC with microseconds, as in JSON
        host_kernel TEXT,              -- host.kernel, host.arch, host.hostname (NULL = null)
        host_arch TEXT,
        host_hostname TEXT,
        source_backend TEXT NOT NULL,  -- source.backend: bpf | ptrace
        source_identity TEXT NOT NULL, -- source.identity: exact | inferred
        root INTEGER NOT NULL,         -- 0 = the whole machine
        snapshot_name TEXT,            -- snapshot.name (NULL = null)
        snapshot_taken_by_uid INTEGER NOT NULL, -- snapshot.taken_by_uid
        snapshot_consistency TEXT NOT NULL      -- snapshot.consistency: none | iterator | frozen
);

-- filters[]: parents before children, as in JSON.
CREATE TABLE filters (
        position INTEGER PRIMARY KEY,
        id INTEGER NOT NULL,
        parent INTEGER,                -- NULL = null (a first filter)
        length INTEGER NOT NULL,
        program BLOB NOT NULL,         -- length records of 8 bytes: code le16, jt, jf, k le32
        digest TEXT NOT NULL,          -- "sha256:<64 hex>" over program, as it is
        log INTEGER NOT NULL,          -- booleans are 0 or 1
        wait_killable_recv INTEGER NOT NULL,
        listener INTEGER,              -- NULL = null
        identity TEXT NOT NULL         -- exact | inferred
);

-- processes[]
CREATE TABLE processes (
        position INTEGER PRIMARY KEY,
        pid INTEGER NOT NULL,
        ppid INTEGER NOT NULL,
        start_time INTEGER NOT NULL,
        comm TEXT NOT NULL,
        exe TEXT,                      -- NULL = null
        argv BLOB NOT NULL,            -- every argument followed by a NUL byte; empty = []
        uid INTEGER NOT NULL,
        gid INTEGER NOT NULL,
        no_new_privs INTEGER NOT NULL
);

-- processes[process].threads[position]
CREATE TABLE threads (
        process INTEGER NOT NULL REFERENCES processes (position),
        position INTEGER NOT NULL,
        tid INTEGER NOT NULL,
        mode TEXT NOT NULL,            -- disabled | strict | filter
        filter INTEGER,                -- NULL = null
        PRIMARY KEY (process, position)
);

-- listeners[]
CREATE TABLE listeners (
        position INTEGER PRIMARY KEY,
        id INTEGER NOT NULL,
        filter INTEGER NOT NULL
);

-- listeners[listener].holders[position]
CREATE TABLE holders (
        listener INTEGER NOT NULL REFERENCES listeners (position),
        position INTEGER NOT NULL,
        pid INTEGER NOT NULL,
        fd INTEGER NOT NULL,
        PRIMARY KEY (listener, position)
);
