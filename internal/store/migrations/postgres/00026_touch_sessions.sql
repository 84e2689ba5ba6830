-- +goose Up
-- The heartbeat flush's writes (store.TouchSessions): for each session of a
-- chunk, its last-seen time, looked up by primary key. One UPDATE joining
-- the chunk's rows (… FROM (VALUES …)) left PostgreSQL a choice of plans,
-- and with statistics that put few sessions live, or none at all (a table
-- never analysed), it chose to read every live session once per chunk, or
-- once per session in it: 46 to 290 ms a chunk at 100 000 sessions, where
-- lookups by key take 7 ms. An UPDATE of one session by its id has no
-- cheaper plan than the lookup, whatever the statistics.
--
-- Ended sessions are left alone, a time never moves backwards and unknown
-- ids are ignored. Each session written comes back with the time written,
-- so the process moves its cached sessions' times forward (pgcache.go).
-- +goose StatementBegin
CREATE FUNCTION keyward_touch_sessions(ids text[], seen bigint[])
RETURNS TABLE (touched_token text, touched_at bigint) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. coalesce(array_length(ids, 1), 0) LOOP
        RETURN QUERY UPDATE sessions s SET last_seen_at = seen[i]
            WHERE s.id = ids[i] AND s.ended_at IS NULL AND s.last_seen_at < seen[i]
            RETURNING s.token_hash, s.last_seen_at;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION keyward_touch_sessions(text[], bigint[]);
