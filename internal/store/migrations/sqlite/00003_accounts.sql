-- +goose Up
-- App user accounts: end users who sign in with a username and password and
-- hold license time themselves (from redeemed keys). username_key is the
-- lower-cased username, unique per app; email_key the lower-cased e-mail
-- (lower-cased in Go: SQLite's LOWER knows only ASCII). expires_at NULL means lifetime; an
-- account without time has an expiry in the past.
CREATE TABLE accounts (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id                  TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    username                TEXT NOT NULL,
    username_key            TEXT NOT NULL,
    email                   TEXT NOT NULL DEFAULT '',
    email_key               TEXT NOT NULL DEFAULT '',
    password_hash           TEXT NOT NULL,
    password_reset_required INTEGER NOT NULL DEFAULT 0,
    status                  TEXT NOT NULL,
    max_devices             INTEGER NOT NULL DEFAULT 1,
    features                TEXT NOT NULL DEFAULT '{}',
    license_key             TEXT NOT NULL DEFAULT '',
    expires_at              INTEGER,
    last_login_at           INTEGER,
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL,
    UNIQUE (app_id, username_key)
);
CREATE INDEX accounts_app ON accounts (app_id, id);

-- A key redeemed onto an account: what it added (added_seconds: how far it
-- moved the expiry), so banning the key can take it back and unbanning can
-- give it again. The row outlives its account (account_id NULL), so the key
-- stays recognisably redeemed.
CREATE TABLE account_redemptions (
    key_id           INTEGER PRIMARY KEY REFERENCES license_keys(id) ON DELETE CASCADE,
    account_id       INTEGER REFERENCES accounts(id) ON DELETE SET NULL,
    days_added       INTEGER NOT NULL,
    added_seconds    INTEGER NOT NULL DEFAULT 0,
    lifetime         INTEGER NOT NULL DEFAULT 0,
    prior_expires_at INTEGER,
    created_at       INTEGER NOT NULL
);
CREATE INDEX account_redemptions_account ON account_redemptions (account_id);

CREATE TABLE account_devices (
    account_id   INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    hwid         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, hwid)
);

-- A session belongs to a key (key_id) or to an account (account_id).
ALTER TABLE sessions ADD COLUMN account_id INTEGER REFERENCES accounts(id) ON DELETE SET NULL;
CREATE INDEX sessions_account_live ON sessions (account_id, created_at) WHERE ended_at IS NULL;

-- Failure counters and lockouts shared by every keyward process: sign-in
-- failures per account, per admin and per IP, and rate-limited actions.
CREATE TABLE lockouts (
    scope        TEXT NOT NULL,
    subject      TEXT NOT NULL,
    failures     INTEGER NOT NULL DEFAULT 0,
    window_start INTEGER NOT NULL,
    locked_until INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, subject)
);
CREATE INDEX lockouts_expiry ON lockouts (window_start);

-- +goose Down
DROP TABLE lockouts;
DROP INDEX sessions_account_live;
-- SQLite cannot drop a column that carries a foreign key: account_id stays, unused.
UPDATE sessions SET account_id = NULL;
DROP TABLE account_devices;
DROP TABLE account_redemptions;
DROP TABLE accounts;
