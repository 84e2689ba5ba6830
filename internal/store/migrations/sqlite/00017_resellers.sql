-- +goose Up
-- Resellers: accounts an owner creates for an app, with a credit balance
-- and the products (key terms and a price in credits) they may sell. Only
-- the SHA-256 (hex) of a reseller's token is kept.
CREATE TABLE resellers (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    email      TEXT NOT NULL DEFAULT '',
    token_hash TEXT NOT NULL UNIQUE,
    token_hint TEXT NOT NULL,
    balance    INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
    products   TEXT NOT NULL DEFAULT '[]',
    status     TEXT NOT NULL DEFAULT 'active',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX resellers_app ON resellers (app_id, created_at);

-- Every change of a balance, with the balance it left.
CREATE TABLE reseller_ledger (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    reseller_id   TEXT NOT NULL REFERENCES resellers(id) ON DELETE CASCADE,
    at            INTEGER NOT NULL,
    delta         INTEGER NOT NULL,
    balance_after INTEGER NOT NULL,
    reason        TEXT NOT NULL,
    detail        TEXT NOT NULL DEFAULT '',
    actor         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX reseller_ledger_reseller ON reseller_ledger (reseller_id, id);

-- The reseller that generated a key; keys stay when it is deleted.
ALTER TABLE license_keys ADD COLUMN reseller_id TEXT REFERENCES resellers(id) ON DELETE SET NULL;
CREATE INDEX license_keys_reseller ON license_keys (reseller_id, id);

-- +goose Down
DROP INDEX license_keys_reseller;
ALTER TABLE license_keys DROP COLUMN reseller_id;
DROP TABLE reseller_ledger;
DROP TABLE resellers;
