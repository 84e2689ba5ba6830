-- +goose Up
-- Nothing on SQLite: PostgreSQL's 00026 adds the function its heartbeat
-- flush calls. The version exists so both engines stay at the same schema
-- version (keyward move compares them).
SELECT 1;

-- +goose Down
SELECT 1;
