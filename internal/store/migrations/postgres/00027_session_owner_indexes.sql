-- +goose Up
-- Deleting a license key or an account sets the key_id or account_id of
-- its sessions, ended ones too, to NULL (ON DELETE SET NULL). The only
-- indexes on those columns were partial (live sessions), which a foreign
-- key's lookup cannot use, so each deleted key read the whole sessions
-- table: deleting an app with 100 000 keys and 100 000 sessions read it
-- 100 000 times and did not finish. TestForeignKeysHaveIndexes checks
-- every foreign key's column. (Tried first as 7b13e2d and taken back out
-- for a slower PostgreSQL heartbeat; the cause was the flush's plan, which
-- 00026 fixed, not these indexes.)
CREATE INDEX sessions_key ON sessions (key_id);
CREATE INDEX sessions_account ON sessions (account_id);

-- +goose Down
DROP INDEX sessions_account;
DROP INDEX sessions_key;
