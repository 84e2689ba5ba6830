-- +goose Up
-- The expiry sweeps walk active keys by (expires_at, id) from a cursor; the
-- id in the index keeps a batch from sorting every key with the same expiry.
CREATE INDEX license_keys_expiry_walk ON license_keys (expires_at, id) WHERE status = 'active' AND expires_at IS NOT NULL;
DROP INDEX license_keys_expiry;

-- +goose Down
CREATE INDEX license_keys_expiry ON license_keys (expires_at) WHERE status = 'active' AND expires_at IS NOT NULL;
DROP INDEX license_keys_expiry_walk;
