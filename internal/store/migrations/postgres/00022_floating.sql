-- +goose Up
-- Floating keys (issue 23): a floating key binds no device; its max_devices
-- counts the live sessions on any machines (seats held while the app runs).
ALTER TABLE license_keys ADD COLUMN floating BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE license_keys DROP COLUMN floating;
