-- +goose Up
-- Several admins: each app has members with a role (owner, admin, support,
-- viewer). Admins from before this migration keep what they had: every one of
-- them owns every existing app and is an operator (installation-wide
-- webhooks, the whole audit log).
ALTER TABLE admin_users ADD COLUMN email TEXT NOT NULL DEFAULT '';
ALTER TABLE admin_users ADD COLUMN operator BOOLEAN NOT NULL DEFAULT FALSE;
-- A JWT carries the generation it was issued under; a password change
-- moves it on, which ends every other sign-in.
ALTER TABLE admin_users ADD COLUMN token_gen INTEGER NOT NULL DEFAULT 0;
-- Two-factor: the confirmed TOTP secret, one waiting for confirmation, and the
-- last accepted time step (a code is accepted once).
ALTER TABLE admin_users ADD COLUMN totp_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE admin_users ADD COLUMN totp_pending TEXT NOT NULL DEFAULT '';
ALTER TABLE admin_users ADD COLUMN totp_last_step INTEGER NOT NULL DEFAULT 0;
UPDATE admin_users SET operator = TRUE;

CREATE TABLE app_members (
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES admin_users(id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, user_id)
);
CREATE INDEX app_members_user ON app_members (user_id, app_id);
INSERT INTO app_members (app_id, user_id, role, created_at)
    SELECT a.id, u.id, 'owner', a.created_at FROM apps a CROSS JOIN admin_users u;

CREATE TABLE admin_recovery_codes (
    user_id   TEXT NOT NULL REFERENCES admin_users(id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL,
    used_at   INTEGER,
    PRIMARY KEY (user_id, code_hash)
);

-- Personal access tokens: only the SHA-256 of the token is kept.
CREATE TABLE admin_tokens (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES admin_users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    hint         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX admin_tokens_user ON admin_tokens (user_id, created_at);

-- Signed-out JWTs, kept until they would have expired anyway.
CREATE TABLE admin_revoked_jwts (
    jti        TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE INDEX admin_revoked_jwts_expiry ON admin_revoked_jwts (expires_at);

-- The client's version, when its login sends one, for the sessions list.
ALTER TABLE sessions ADD COLUMN app_version TEXT NOT NULL DEFAULT '';

-- A revoked app refuses its clients until restored.
ALTER TABLE apps ADD COLUMN revoked_at INTEGER;

-- HWID reset requests: an app user account's (by username), and who
-- decided, when (status pending, approved or denied).
ALTER TABLE hwid_reset_requests ADD COLUMN account_id INTEGER REFERENCES accounts(id) ON DELETE CASCADE;
ALTER TABLE hwid_reset_requests ADD COLUMN decided_at INTEGER;
ALTER TABLE hwid_reset_requests ADD COLUMN decided_by TEXT NOT NULL DEFAULT '';
CREATE INDEX hwid_reset_requests_key ON hwid_reset_requests (key_id, status, decided_at);
CREATE INDEX hwid_reset_requests_account ON hwid_reset_requests (account_id, status, decided_at);

-- Audit: the personal access token an action came through, and filters by
-- actor and by action.
ALTER TABLE audit_log ADD COLUMN actor_token TEXT NOT NULL DEFAULT '';
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);
CREATE INDEX audit_log_app_action ON audit_log (app_id, action, id);

-- The audit log is append-only.
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER audit_log_no_delete;
DROP TRIGGER audit_log_no_update;
DROP INDEX audit_log_app_action;
DROP INDEX audit_log_actor;
ALTER TABLE audit_log DROP COLUMN actor_token;
DROP INDEX hwid_reset_requests_account;
DROP INDEX hwid_reset_requests_key;
ALTER TABLE hwid_reset_requests DROP COLUMN account_id;
ALTER TABLE hwid_reset_requests DROP COLUMN decided_by;
ALTER TABLE hwid_reset_requests DROP COLUMN decided_at;
ALTER TABLE apps DROP COLUMN revoked_at;
ALTER TABLE sessions DROP COLUMN app_version;
DROP TABLE admin_revoked_jwts;
DROP TABLE admin_tokens;
DROP TABLE admin_recovery_codes;
DROP TABLE app_members;
ALTER TABLE admin_users DROP COLUMN totp_last_step;
ALTER TABLE admin_users DROP COLUMN totp_pending;
ALTER TABLE admin_users DROP COLUMN totp_secret;
ALTER TABLE admin_users DROP COLUMN token_gen;
ALTER TABLE admin_users DROP COLUMN operator;
ALTER TABLE admin_users DROP COLUMN email;
