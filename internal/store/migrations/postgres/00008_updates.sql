-- +goose Up
-- Releases of an app and their per-platform artifacts (bytes in the blob
-- store under blob_key). version is canonical semver text; version_key is
-- the same without build metadata, which semver precedence ignores, so
-- 1.0.0+a and 1.0.0+b cannot both exist.
CREATE TABLE releases (
    id           BIGSERIAL PRIMARY KEY,
    app_id       TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    version      TEXT NOT NULL,
    version_key  TEXT NOT NULL,
    channel      TEXT NOT NULL,
    changelog    TEXT NOT NULL DEFAULT '',
    mandatory    BOOLEAN NOT NULL DEFAULT FALSE,
    min_version  TEXT NOT NULL DEFAULT '',
    rollout      INTEGER NOT NULL,
    salt         TEXT NOT NULL,
    published    BOOLEAN NOT NULL DEFAULT FALSE,
    halted       BOOLEAN NOT NULL DEFAULT FALSE,
    yanked       BOOLEAN NOT NULL DEFAULT FALSE,
    published_at BIGINT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    UNIQUE (app_id, version_key)
);

CREATE TABLE release_artifacts (
    id         BIGSERIAL PRIMARY KEY,
    release_id BIGINT NOT NULL REFERENCES releases(id) ON DELETE CASCADE,
    os         TEXT NOT NULL DEFAULT '',
    arch       TEXT NOT NULL DEFAULT '',
    file_name  TEXT NOT NULL,
    size       BIGINT NOT NULL,
    sha256     TEXT NOT NULL,
    blob_key   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (release_id, os, arch)
);

-- The app's min_supported_version per channel.
CREATE TABLE update_floors (
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    channel    TEXT NOT NULL,
    version    TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (app_id, channel)
);

-- The latest update check of each device (device = hash of hwid or key).
CREATE TABLE update_checks (
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    device     TEXT NOT NULL,
    current    TEXT NOT NULL,
    channel    TEXT NOT NULL,
    os         TEXT NOT NULL DEFAULT '',
    arch       TEXT NOT NULL DEFAULT '',
    offered    TEXT NOT NULL DEFAULT '',
    checked_at BIGINT NOT NULL,
    PRIMARY KEY (app_id, device)
);
CREATE INDEX update_checks_recent ON update_checks (app_id, checked_at);

-- +goose Down
DROP TABLE update_checks;
DROP TABLE update_floors;
DROP TABLE release_artifacts;
DROP TABLE releases;
