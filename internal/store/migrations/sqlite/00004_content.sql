-- +goose Up
-- Remote content an app shows its users: named texts (app defaults and
-- per-key overrides), announcement slides, social links with click counts,
-- and changelog entries.
CREATE TABLE app_texts (
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, name)
);

CREATE TABLE key_texts (
    key_id     INTEGER NOT NULL REFERENCES license_keys(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (key_id, name)
);

CREATE TABLE slides (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL DEFAULT '',
    image_url  TEXT NOT NULL DEFAULT '',
    link_url   TEXT NOT NULL DEFAULT '',
    position   INTEGER NOT NULL DEFAULT 0,
    active     INTEGER NOT NULL DEFAULT 0,
    starts_at  INTEGER,
    ends_at    INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX slides_app ON slides (app_id, position, id);

CREATE TABLE social_links (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    platform   TEXT NOT NULL,
    url        TEXT NOT NULL,
    label      TEXT NOT NULL DEFAULT '',
    position   INTEGER NOT NULL DEFAULT 0,
    clicks     INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX social_links_app ON social_links (app_id, position, id);

CREATE TABLE changelog_entries (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id       TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    version      TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL,
    body         TEXT NOT NULL DEFAULT '',
    category     TEXT NOT NULL,
    published_at INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX changelog_entries_app ON changelog_entries (app_id, published_at);

-- +goose Down
DROP TABLE changelog_entries;
DROP TABLE social_links;
DROP TABLE slides;
DROP TABLE key_texts;
DROP TABLE app_texts;
