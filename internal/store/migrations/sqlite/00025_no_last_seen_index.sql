-- +goose Up
-- Every heartbeat written moved its session's entry in this index: a
-- quarter of the heartbeat flush's cost at 100 000 sessions
-- (BenchmarkTouchSessionsCached). Its one reader was the session reaper,
-- which now scans the live sessions on a read connection instead.
-- PostgreSQL dropped its copy in 00024.
DROP INDEX IF EXISTS sessions_last_seen;

-- +goose Down
CREATE INDEX sessions_last_seen ON sessions (last_seen_at) WHERE ended_at IS NULL;
