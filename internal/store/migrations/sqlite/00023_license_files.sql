-- +goose Up
-- Issued license files (issue 23, docs/offline.md): every signed file the
-- server hands out, for listing and revoking, for borrowed seats of floating
-- keys (an unreturned file holds a seat until valid_until) and for the
-- single use of an air-gapped activation request's nonce. The file text is
-- kept so a repeated request answers with the same file. seq orders the
-- files as issued (issued_at is to the second).
CREATE TABLE license_files (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    app_id      TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    key_id      INTEGER NOT NULL REFERENCES license_keys(id) ON DELETE CASCADE,
    hwid        TEXT NOT NULL,
    kid         TEXT NOT NULL,
    source      TEXT NOT NULL,
    floating    BOOLEAN NOT NULL DEFAULT FALSE,
    nonce       TEXT,
    issued_at   INTEGER NOT NULL,
    valid_until INTEGER NOT NULL,
    returned_at INTEGER,
    revoked_at  INTEGER,
    file        TEXT NOT NULL
);
CREATE INDEX license_files_key ON license_files (key_id, seq);
CREATE UNIQUE INDEX license_files_nonce ON license_files (app_id, nonce) WHERE nonce IS NOT NULL;

-- +goose Down
DROP TABLE license_files;
