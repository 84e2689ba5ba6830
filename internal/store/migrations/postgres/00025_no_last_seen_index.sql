-- +goose Up
-- Nothing on PostgreSQL: 00024 dropped sessions_last_seen there. The version
-- exists so both engines stay at the same schema version (keyward move
-- compares them); SQLite's 00025 drops its copy.
SELECT 1;

-- +goose Down
SELECT 1;
