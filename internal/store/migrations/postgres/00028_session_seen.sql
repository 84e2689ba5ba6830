-- +goose Up
-- Heartbeat times move out of the sessions table into a narrow one
-- (issue 21, point 4; SQLite's 00028 says why).
--
-- A live session has a row here, named by sessions.seen_key, and its
-- last-seen time is the row's. Its sessions.last_seen_at meanwhile holds
-- 9999-12-31T23:59:59.999Z, so that a reader that still takes the time
-- from there — a keyward older than this migration, still running during
-- a rolling upgrade — finds every live session fresh: its reaper ends
-- none and its heartbeat writes none. When the session ends, the row's
-- time moves back into sessions.last_seen_at and the row goes. The trigger
-- keeps all this true whatever statement inserts, ends or deletes a
-- session. Keys come from a sequence and are never reused (keyward move sets
-- it past the keys it copies, as for every serial column).
CREATE TABLE session_seen (
    seen_key     BIGSERIAL PRIMARY KEY,
    last_seen_at BIGINT NOT NULL
);
ALTER TABLE sessions ADD COLUMN seen_key BIGINT;
UPDATE sessions SET seen_key = nextval(pg_get_serial_sequence('session_seen', 'seen_key')) WHERE ended_at IS NULL;
INSERT INTO session_seen (seen_key, last_seen_at) SELECT seen_key, last_seen_at FROM sessions WHERE seen_key IS NOT NULL;
UPDATE sessions SET last_seen_at = 253402300799999 WHERE seen_key IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION keyward_session_seen_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    t bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.seen_key IS NULL AND NEW.ended_at IS NULL THEN
            INSERT INTO session_seen (last_seen_at) VALUES (NEW.last_seen_at) RETURNING seen_key INTO NEW.seen_key;
            NEW.last_seen_at := 253402300799999;
        END IF;
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL AND NEW.seen_key IS NOT NULL THEN
            DELETE FROM session_seen WHERE seen_key = NEW.seen_key RETURNING last_seen_at INTO t;
            NEW.last_seen_at := coalesce(t, least(NEW.last_seen_at, NEW.ended_at));
            NEW.seen_key := NULL;
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.seen_key IS NOT NULL THEN
        DELETE FROM session_seen WHERE seen_key = OLD.seen_key;
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER session_seen_insert BEFORE INSERT ON sessions
    FOR EACH ROW EXECUTE PROCEDURE keyward_session_seen_row();
CREATE TRIGGER session_seen_end BEFORE UPDATE OF ended_at ON sessions
    FOR EACH ROW EXECUTE PROCEDURE keyward_session_seen_row();
CREATE TRIGGER session_seen_delete AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE PROCEDURE keyward_session_seen_row();

-- The heartbeat flush (store.TouchSessions): each row by its key, as
-- 00026's function did by session id, for the reasons given there.
-- +goose StatementBegin
CREATE FUNCTION keyward_touch_seen(keys bigint[], seen bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
        UPDATE session_seen SET last_seen_at = seen[i] WHERE seen_key = keys[i] AND last_seen_at < seen[i];
    END LOOP;
END
$$;
-- +goose StatementEnd

-- 00026's function, which a keyward older than this migration calls to
-- flush what it buffered before it, now writes session_seen too.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION keyward_touch_sessions(ids text[], seen bigint[])
RETURNS TABLE (touched_token text, touched_at bigint) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. coalesce(array_length(ids, 1), 0) LOOP
        RETURN QUERY UPDATE session_seen x SET last_seen_at = seen[i]
            FROM sessions s
            WHERE s.id = ids[i] AND x.seen_key = s.seen_key AND x.last_seen_at < seen[i]
            RETURNING s.token_hash, x.last_seen_at;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION keyward_touch_sessions(ids text[], seen bigint[])
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
DROP FUNCTION keyward_touch_seen(bigint[], bigint[]);
DROP TRIGGER session_seen_delete ON sessions;
DROP TRIGGER session_seen_end ON sessions;
DROP TRIGGER session_seen_insert ON sessions;
DROP FUNCTION keyward_session_seen_row();
UPDATE sessions s SET last_seen_at = x.last_seen_at FROM session_seen x WHERE x.seen_key = s.seen_key;
ALTER TABLE sessions DROP COLUMN seen_key;
DROP TABLE session_seen;
