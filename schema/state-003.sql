-- state-003.sql: history is bounded. sectreed keeps the filters that went away most recently (by
-- gone_usec, then id) up to a limit (50,000 rows) and drops older ones at each full pass; the
-- index lets it find the oldest rows without sorting the table. meta.max_filter_id keeps
-- remembering the ids of dropped rows, so ids are still never reused.

CREATE INDEX history_by_gone ON history (gone_usec, id);
