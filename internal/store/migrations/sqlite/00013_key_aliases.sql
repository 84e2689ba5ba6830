-- +goose Up
-- After a key is rotated for a suspected leak, its old string keeps working
-- for the one device it stays bound to (login and heartbeat), and for no
-- other: alias → key, for hwid.
CREATE TABLE key_aliases (
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    alias      TEXT NOT NULL,
    hwid       TEXT NOT NULL,
    key_id     INTEGER NOT NULL REFERENCES license_keys(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, alias, hwid)
);
CREATE INDEX key_aliases_key ON key_aliases (key_id);

-- +goose Down
DROP TABLE key_aliases;
