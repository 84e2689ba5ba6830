-- +goose Up
-- Purchase orders, with the terms of the key they deliver copied from the
-- plan when ordered. id is the public ORD-… reference; keys holds the
-- delivered license keys (a JSON array) once the order is fulfilled, so a
-- repeated fulfilment answers the same keys.
CREATE TABLE orders (
    id           TEXT PRIMARY KEY,
    app_id       TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    plan_id      INTEGER REFERENCES price_plans(id) ON DELETE SET NULL,
    plan_name    TEXT NOT NULL,
    kind         TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    currency     TEXT NOT NULL,
    key_type     TEXT NOT NULL,
    duration     INTEGER NOT NULL,
    max_devices  INTEGER NOT NULL,
    features     TEXT NOT NULL DEFAULT '{}',
    email        TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    payment_ref  TEXT NOT NULL DEFAULT '',
    keys         TEXT NOT NULL DEFAULT '[]',
    created_at   INTEGER NOT NULL,
    fulfilled_at INTEGER,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX orders_app ON orders (app_id, created_at);

-- The SHA-256 of the app's fulfilment secret (the payment provider's
-- callback proves itself with it); empty until the owner creates one.
ALTER TABLE apps ADD COLUMN fulfillment_secret_hash TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE apps DROP COLUMN fulfillment_secret_hash;
DROP TABLE orders;
