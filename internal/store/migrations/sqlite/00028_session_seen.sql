-- +goose Up
-- Heartbeat times move out of the sessions table into a narrow one
-- (issue 21, point 4). The heartbeat flush wrote each session's
-- last_seen_at in its sessions row, some 250 bytes wide, so a flush of
-- 2 500 sessions spread over 100 000 dirtied about 2 000 pages: 8 MiB of
-- WAL to write, checksum and later checkpoint, four times a second, some
-- 18 µs of CPU a session written. A row of session_seen is a key and a
-- time, a few hundred to a page, and the flush finds it by its integer key
-- without looking the session up: about 4 µs a session
-- (docs/performance.md, "Heartbeat times in their own table").
--
-- A live session has a row here, named by sessions.seen_key, and its
-- last-seen time is the row's. Its sessions.last_seen_at meanwhile holds
-- 9999-12-31T23:59:59.999Z, so that a reader that still takes the time
-- from there — a keyward older than this migration, still running during
-- a rolling upgrade — finds every live session fresh: its reaper ends
-- none and its heartbeat writes none. When the session ends, the row's
-- time moves back into sessions.last_seen_at and the row goes. The
-- triggers keep all this true whatever statement inserts, ends or deletes
-- a session. Keys are never reused (AUTOINCREMENT), so a heartbeat
-- buffered for a session that has since ended can only find its row gone.
CREATE TABLE session_seen (
    seen_key     INTEGER PRIMARY KEY AUTOINCREMENT,
    last_seen_at INTEGER NOT NULL
);
ALTER TABLE sessions ADD COLUMN seen_key INTEGER;
INSERT INTO session_seen (seen_key, last_seen_at) SELECT rowid, last_seen_at FROM sessions WHERE ended_at IS NULL;
UPDATE sessions SET seen_key = rowid, last_seen_at = 253402300799999 WHERE ended_at IS NULL;

-- +goose StatementBegin
CREATE TRIGGER session_seen_insert AFTER INSERT ON sessions
WHEN NEW.seen_key IS NULL AND NEW.ended_at IS NULL
BEGIN
    INSERT INTO session_seen (last_seen_at) VALUES (NEW.last_seen_at);
    UPDATE sessions SET seen_key = last_insert_rowid(), last_seen_at = 253402300799999 WHERE rowid = NEW.rowid;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER session_seen_end AFTER UPDATE OF ended_at ON sessions
WHEN OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL AND NEW.seen_key IS NOT NULL
BEGIN
    UPDATE sessions SET seen_key = NULL,
        last_seen_at = coalesce((SELECT last_seen_at FROM session_seen WHERE seen_key = NEW.seen_key), min(last_seen_at, ended_at))
        WHERE rowid = NEW.rowid;
    DELETE FROM session_seen WHERE seen_key = NEW.seen_key;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER session_seen_delete AFTER DELETE ON sessions
WHEN OLD.seen_key IS NOT NULL
BEGIN
    DELETE FROM session_seen WHERE seen_key = OLD.seen_key;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER session_seen_delete;
DROP TRIGGER session_seen_end;
DROP TRIGGER session_seen_insert;
UPDATE sessions SET last_seen_at = coalesce((SELECT x.last_seen_at FROM session_seen x WHERE x.seen_key = sessions.seen_key), last_seen_at)
    WHERE seen_key IS NOT NULL;
ALTER TABLE sessions DROP COLUMN seen_key;
DROP TABLE session_seen;
