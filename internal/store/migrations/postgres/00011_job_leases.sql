-- +goose Up
-- One leader at a time per scheduled job across keyward processes: a job
-- runs where it holds the lease (until, Unix ms), renewed on each run.
CREATE TABLE job_leases (
    name   TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until  BIGINT NOT NULL
);
-- Retention sweeps delete old deliveries and dispatched events by time.
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (updated_at) WHERE status <> 'pending';
CREATE INDEX events_dispatched ON events (created_at) WHERE dispatched_at IS NOT NULL;

-- +goose Down
DROP INDEX events_dispatched;
DROP INDEX webhook_deliveries_done;
DROP TABLE job_leases;
