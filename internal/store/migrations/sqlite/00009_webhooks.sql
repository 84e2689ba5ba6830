-- +goose Up
-- Webhook destinations (app_id NULL: every app), the deliveries fanned out
-- from the events outbox (one per event and destination; the body is the
-- exact bytes signed and sent), and the log of every attempt.
CREATE TABLE webhook_destinations (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id      TEXT REFERENCES apps(id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    events      TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    enabled     INTEGER NOT NULL DEFAULT 1,
    failures    INTEGER NOT NULL DEFAULT 0,
    paused_at   INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX webhook_destinations_app ON webhook_destinations (app_id);

-- Events written before webhooks existed are not sent.
ALTER TABLE events ADD COLUMN dispatched_at INTEGER;
UPDATE events SET dispatched_at = created_at;
CREATE INDEX events_undispatched ON events (id) WHERE dispatched_at IS NULL;

CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    destination_id  INTEGER NOT NULL REFERENCES webhook_destinations(id) ON DELETE CASCADE,
    event_id        INTEGER NOT NULL,
    app_id          TEXT,
    event           TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    locked_until    INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (event_id, destination_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_dest ON webhook_deliveries (destination_id, created_at);

CREATE TABLE webhook_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    status_code INTEGER NOT NULL DEFAULT 0,
    duration_ms INTEGER NOT NULL,
    response    TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP INDEX events_undispatched;
ALTER TABLE events DROP COLUMN dispatched_at;
DROP TABLE webhook_destinations;
