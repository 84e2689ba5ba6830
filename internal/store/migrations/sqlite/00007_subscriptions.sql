-- +goose Up
-- A subscription renews the key a level order delivered, every period,
-- through renewal orders. renewal_order_id is the pending renewal order,
-- made ahead of renews_at.
CREATE TABLE subscriptions (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id           TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    plan_id          INTEGER REFERENCES price_plans(id) ON DELETE SET NULL,
    plan_name        TEXT NOT NULL,
    period           TEXT NOT NULL,
    period_days      INTEGER NOT NULL,
    amount_cents     INTEGER NOT NULL,
    currency         TEXT NOT NULL,
    license_key      TEXT NOT NULL,
    email            TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL,
    renews_at        INTEGER NOT NULL,
    renewal_order_id TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX subscriptions_app ON subscriptions (app_id, id);
CREATE INDEX subscriptions_key ON subscriptions (app_id, license_key);
CREATE INDEX subscriptions_due ON subscriptions (status, renews_at);

ALTER TABLE orders ADD COLUMN subscription_id INTEGER;

-- +goose Down
ALTER TABLE orders DROP COLUMN subscription_id;
DROP TABLE subscriptions;
