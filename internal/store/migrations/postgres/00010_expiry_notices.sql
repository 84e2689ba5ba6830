-- +goose Up
-- key_expiring is sent once per key and warning window: expiry_notice_for
-- is the expires_at the notices were sent for (a changed expiry starts
-- over), expiry_notice the smallest window (seconds) announced so far.
ALTER TABLE license_keys ADD COLUMN expiry_notice_for BIGINT;
ALTER TABLE license_keys ADD COLUMN expiry_notice BIGINT;

-- +goose Down
ALTER TABLE license_keys DROP COLUMN expiry_notice;
ALTER TABLE license_keys DROP COLUMN expiry_notice_for;
