-- +goose Up
-- One trial per device per app. The row outlives its key (key_id set to NULL
-- when the owner deletes the key), so a device never gets a second trial.
CREATE TABLE trials (
    id         BIGSERIAL PRIMARY KEY,
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    hwid       TEXT NOT NULL,
    key_id     BIGINT REFERENCES license_keys(id) ON DELETE SET NULL,
    ip         TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    UNIQUE (app_id, hwid)
);
CREATE INDEX trials_ip ON trials (app_id, ip, created_at);
CREATE INDEX trials_key ON trials (key_id);

-- +goose Down
DROP TABLE trials;
