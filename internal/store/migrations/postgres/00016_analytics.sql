-- +goose Up
-- Hourly rollups of counted events (internal/analytics): n occurrences of a
-- metric and code (an error or kill code, or '') for an app in the hour
-- starting at hour (Unix ms, UTC). One row per app, metric, code and hour,
-- however many events, so a report reads at most hours × metrics rows.
-- Rollups go with their app.
CREATE TABLE app_usage (
    app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    code   TEXT NOT NULL DEFAULT '',
    hour   BIGINT NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (app_id, metric, code, hour)
);

-- Live sessions of each app, sampled by a leader job every few minutes.
CREATE TABLE session_samples (
    app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    at     BIGINT NOT NULL,
    live   BIGINT NOT NULL,
    PRIMARY KEY (app_id, at)
);

-- The version distribution counts devices by their latest check's version
-- within a range: with current in the index it never reads the table. The
-- index replaces update_checks_recent, of which it is an extension.
CREATE INDEX update_checks_versions ON update_checks (app_id, checked_at, current);
DROP INDEX update_checks_recent;

-- +goose Down
CREATE INDEX update_checks_recent ON update_checks (app_id, checked_at);
DROP INDEX update_checks_versions;
DROP TABLE session_samples;
DROP TABLE app_usage;
