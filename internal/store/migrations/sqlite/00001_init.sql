-- +goose Up
CREATE TABLE apps (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    version     TEXT NOT NULL DEFAULT '',
    secret      TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    settings    TEXT NOT NULL DEFAULT '{}',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE license_keys (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id             TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    license_key        TEXT NOT NULL,
    status             TEXT NOT NULL,
    key_type           TEXT NOT NULL,
    duration           INTEGER NOT NULL DEFAULT 0,
    max_devices        INTEGER NOT NULL DEFAULT 1,
    note               TEXT NOT NULL DEFAULT '',
    features           TEXT NOT NULL DEFAULT '{}',
    activated_at       INTEGER,
    expires_at         INTEGER,
    last_self_reset_at INTEGER,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    UNIQUE (app_id, license_key)
);
CREATE INDEX license_keys_app_status ON license_keys (app_id, status, id);
CREATE INDEX license_keys_expiry ON license_keys (expires_at) WHERE status = 'active' AND expires_at IS NOT NULL;

CREATE TABLE devices (
    key_id       INTEGER NOT NULL REFERENCES license_keys(id) ON DELETE CASCADE,
    hwid         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    PRIMARY KEY (key_id, hwid)
);

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    token_hash   TEXT NOT NULL UNIQUE,
    app_id       TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    key_id       INTEGER REFERENCES license_keys(id) ON DELETE SET NULL,
    hwid         TEXT NOT NULL,
    ip           TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    ended_at     INTEGER,
    end_reason   TEXT
);
CREATE INDEX sessions_key_live ON sessions (key_id, created_at) WHERE ended_at IS NULL;
CREATE INDEX sessions_app_live ON sessions (app_id, id) WHERE ended_at IS NULL;
CREATE INDEX sessions_last_seen ON sessions (last_seen_at) WHERE ended_at IS NULL;
CREATE INDEX sessions_ended ON sessions (ended_at) WHERE ended_at IS NOT NULL;

CREATE TABLE hwid_reset_requests (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id      TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    key_id      INTEGER REFERENCES license_keys(id) ON DELETE CASCADE,
    license_key TEXT NOT NULL DEFAULT '',
    username    TEXT NOT NULL DEFAULT '',
    hwid        TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT 'pending',
    created_at  INTEGER NOT NULL
);
CREATE INDEX hwid_reset_requests_app ON hwid_reset_requests (app_id, status, id);

CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id     TEXT,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id   TEXT NOT NULL DEFAULT '',
    actor_name TEXT NOT NULL DEFAULT '',
    ip         TEXT NOT NULL DEFAULT '',
    action     TEXT NOT NULL,
    app_id     TEXT,
    target     TEXT NOT NULL DEFAULT '',
    details    TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_app ON audit_log (app_id, id);

CREATE TABLE admin_users (
    id            TEXT PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);

CREATE TABLE server_secrets (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE envelope_replays (
    app_id     TEXT NOT NULL,
    mac        TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    reply      TEXT,
    PRIMARY KEY (app_id, mac)
);
CREATE INDEX envelope_replays_expiry ON envelope_replays (expires_at);

-- +goose Down
DROP TABLE envelope_replays;
DROP TABLE server_secrets;
DROP TABLE admin_users;
DROP TABLE audit_log;
DROP TABLE events;
DROP TABLE hwid_reset_requests;
DROP TABLE sessions;
DROP TABLE devices;
DROP TABLE license_keys;
DROP TABLE apps;
