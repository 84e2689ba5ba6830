-- +goose Up
-- Nothing on SQLite: its session cache's triggers are TEMP triggers of the
-- write connection (store/sessioncache.go), created at every start. The
-- version exists so both engines stay at the same schema version (keyward
-- move compares them); PostgreSQL's 00024 creates its cache triggers.
SELECT 1;

-- +goose Down
SELECT 1;
