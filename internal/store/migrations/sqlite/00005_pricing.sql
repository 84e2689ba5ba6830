-- +goose Up
-- What an app sells: subscription levels (kind 'level', renewing every
-- interval) and one-off plans (kind 'plan'). A purchase delivers a key of
-- key_type / duration / max_devices with these features.
CREATE TABLE price_plans (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id      TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    price_cents INTEGER NOT NULL,
    currency    TEXT NOT NULL,
    period      TEXT NOT NULL,
    key_type    TEXT NOT NULL,
    duration    INTEGER NOT NULL DEFAULT 0,
    max_devices INTEGER NOT NULL DEFAULT 1,
    features    TEXT NOT NULL DEFAULT '{}',
    position    INTEGER NOT NULL DEFAULT 0,
    active      INTEGER NOT NULL DEFAULT 1,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX price_plans_app ON price_plans (app_id, kind, position, id);

-- +goose Down
DROP TABLE price_plans;
