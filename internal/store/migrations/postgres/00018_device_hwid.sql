-- +goose Up
-- Finding the keys a device is bound to (the dashboard's and keys.php's
-- hwid filter) without scanning every device.
CREATE INDEX devices_hwid ON devices (hwid);

-- +goose Down
DROP INDEX devices_hwid;
