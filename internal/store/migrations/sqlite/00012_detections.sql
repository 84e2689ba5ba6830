-- +goose Up
-- Where each key was seen from (logins and device refusals): kind is hwid
-- or ip, value a hash of it. Leak detection counts distinct values by time.
CREATE TABLE key_sightings (
    app_id      TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    license_key TEXT NOT NULL,
    kind        TEXT NOT NULL,
    value       TEXT NOT NULL,
    last_seen   INTEGER NOT NULL,
    PRIMARY KEY (app_id, license_key, kind, value)
);
CREATE INDEX key_sightings_seen ON key_sightings (last_seen);

-- What leak and abuse detection found, for the admin API.
CREATE TABLE detections (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    subject    TEXT NOT NULL,
    details    TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX detections_app ON detections (app_id, id);
CREATE INDEX detections_subject ON detections (app_id, kind, subject, created_at);

-- +goose Down
DROP TABLE detections;
DROP TABLE key_sightings;
