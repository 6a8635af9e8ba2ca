-- state-004.sql: snapshots are counted in bytes for their owner's budget, and a large import is
-- written in steps.
--
-- bytes: what a snapshot takes in the database, roughly, for the per-uid budget of the bytes a
-- user may store: 8 per filter instruction, the bytes of its strings (name, host, comm, exe, argv
-- as stored), and 128 per row (ids, digests, flags and the indexes). sectreed counts the same when
-- it stores one (store_snapshot_bytes()); here it is counted for the snapshots already stored.
--
-- complete: 0 while sectreed is still writing the snapshot's rows, one transaction of a few
-- thousand rows at a time, so that storing a large import never holds the event loop for long.
-- Such a snapshot counts for its owner's quota but is not listed, exported or deleted; a daemon
-- that stopped half-way leaves it to the next start, which deletes it.

ALTER TABLE snapshots ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN complete INTEGER NOT NULL DEFAULT 1 CHECK (complete IN (0, 1));

UPDATE snapshots SET bytes =
        8 * instructions
        + coalesce(length(CAST(name AS BLOB)), 0) + coalesce(length(CAST(host_kernel AS BLOB)), 0)
        + coalesce(length(CAST(host_arch AS BLOB)), 0) + coalesce(length(CAST(host_hostname AS BLOB)), 0)
        + coalesce((SELECT sum(length(CAST(comm AS BLOB)) + coalesce(length(CAST(exe AS BLOB)), 0)
                               + length(CAST(argv AS BLOB)))
                    FROM snapshot_processes WHERE snapshot = snapshots.id), 0)
        + 128 * (1 + filters + processes + threads + listeners
                 + (SELECT count(*) FROM snapshot_holders WHERE snapshot = snapshots.id));
