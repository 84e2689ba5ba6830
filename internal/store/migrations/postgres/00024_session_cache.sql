-- +goose Up
-- The session cache on PostgreSQL (issue 21, point 4; store/pgcache.go):
-- each keyward process keeps the heartbeat's view of live sessions in
-- memory and must hear of every change to what that view reads, whichever
-- process (or psql session) makes it. These triggers announce each change
-- on the channel keyward_cache, delivered to every listening process when
-- the transaction commits, and, on a connection that asked for it
-- (keyward.cache_notice = on, keyward's own write connections), as a
-- NOTICE in the statement's reply too, so the process that made the change
-- knows it before its commit returns.
--
-- A payload is 's:' and a session's token hash, 'k:' and a key's id, 'a:'
-- and an account's id, or '*' (forget everything): a transaction changing
-- more than 10 000 rows (an expiry sweep over many keys) announces its
-- first 10 000 and then '*' once instead of flooding the queue.
--
-- Only columns the view reads fire them, and never the heartbeats' last-
-- seen writes. Ended sessions are not cached, so changes to them are not
-- announced (the daily purge of ended sessions stays silent). Inserts need
-- no trigger: a row that did not exist was never cached.

-- +goose StatementBegin
CREATE FUNCTION keyward_cache_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n integer := COALESCE(NULLIF(current_setting('keyward.cache_changes', true), ''), '0')::integer + 1;
    p text;
BEGIN
    PERFORM set_config('keyward.cache_changes', n::text, true);
    IF n > 10001 THEN
        RETURN NULL;
    ELSIF n = 10001 THEN
        p := '*';
    ELSIF TG_TABLE_NAME = 'sessions' THEN
        p := 's:' || OLD.token_hash;
        IF TG_OP = 'UPDATE' AND NEW.token_hash IS DISTINCT FROM OLD.token_hash THEN
            PERFORM pg_notify('keyward_cache', 's:' || NEW.token_hash);
            IF current_setting('keyward.cache_notice', true) = 'on' THEN
                RAISE NOTICE 'keyward_cache s:%', NEW.token_hash;
            END IF;
        END IF;
    ELSIF TG_TABLE_NAME = 'license_keys' THEN
        p := 'k:' || OLD.id;
    ELSE
        p := 'a:' || OLD.id;
    END IF;
    PERFORM pg_notify('keyward_cache', p);
    IF current_setting('keyward.cache_notice', true) = 'on' THEN
        RAISE NOTICE 'keyward_cache %', p;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER keyward_cache_session_update
    AFTER UPDATE OF id, token_hash, app_id, key_id, account_id, ended_at, end_reason ON sessions
    FOR EACH ROW WHEN (OLD.ended_at IS NULL) EXECUTE PROCEDURE keyward_cache_changed();
CREATE TRIGGER keyward_cache_session_delete
    AFTER DELETE ON sessions
    FOR EACH ROW WHEN (OLD.ended_at IS NULL) EXECUTE PROCEDURE keyward_cache_changed();
CREATE TRIGGER keyward_cache_key_update
    AFTER UPDATE OF id, status, expires_at, license_key ON license_keys
    FOR EACH ROW EXECUTE PROCEDURE keyward_cache_changed();
CREATE TRIGGER keyward_cache_key_delete
    AFTER DELETE ON license_keys
    FOR EACH ROW EXECUTE PROCEDURE keyward_cache_changed();
CREATE TRIGGER keyward_cache_account_update
    AFTER UPDATE OF id, status, expires_at ON accounts
    FOR EACH ROW EXECUTE PROCEDURE keyward_cache_changed();
CREATE TRIGGER keyward_cache_account_delete
    AFTER DELETE ON accounts
    FOR EACH ROW EXECUTE PROCEDURE keyward_cache_changed();

-- The heartbeats' last-seen writes (thousands of rows a second at 100 000
-- sessions) become HOT updates: with last_seen_at in no index, an update
-- of it writes no index entry, and the free space fillfactor leaves on each
-- page lets the new row version stay on its page. The reaper, the one
-- reader of that index, scans the live sessions instead, a few times a
-- minute (docs/performance.md, "The session cache on PostgreSQL").
DROP INDEX sessions_last_seen;
ALTER TABLE sessions SET (fillfactor = 70);

-- +goose Down
ALTER TABLE sessions RESET (fillfactor);
CREATE INDEX sessions_last_seen ON sessions (last_seen_at) WHERE ended_at IS NULL;
DROP TRIGGER keyward_cache_account_delete ON accounts;
DROP TRIGGER keyward_cache_account_update ON accounts;
DROP TRIGGER keyward_cache_key_delete ON license_keys;
DROP TRIGGER keyward_cache_key_update ON license_keys;
DROP TRIGGER keyward_cache_session_delete ON sessions;
DROP TRIGGER keyward_cache_session_update ON sessions;
DROP FUNCTION keyward_cache_changed();
