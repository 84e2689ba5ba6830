-- +goose Up
-- Lazy migration from an upstream service (issue 24): the admin token for
-- the upstream's API, sealed like the app secret (apps.upstream_token,
-- empty: none), and how many keys were imported from it on first use. The
-- upstream's URL, app id and on/off switch are ordinary settings.
ALTER TABLE apps ADD COLUMN upstream_token TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN upstream_imported INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE apps DROP COLUMN upstream_imported;
ALTER TABLE apps DROP COLUMN upstream_token;
