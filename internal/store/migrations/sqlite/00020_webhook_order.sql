-- +goose Up
-- Webhook order per subject. An event names the one thing it is about
-- (subject "key:42", NULL: none); its deliveries copy the subject, and a
-- delivery is claimed only when no earlier delivery (smaller event_id) to
-- the same destination about the same subject is still pending. Each
-- destination counts the deliveries fanned out to it (sequence, the last
-- number given) and every delivery carries its number in its body.
ALTER TABLE events ADD COLUMN subject TEXT;
ALTER TABLE webhook_destinations ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_deliveries ADD COLUMN subject TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0;
CREATE INDEX webhook_deliveries_subject_pending ON webhook_deliveries (destination_id, subject, event_id)
    WHERE status = 'pending' AND subject IS NOT NULL;

-- +goose Down
DROP INDEX webhook_deliveries_subject_pending;
ALTER TABLE webhook_deliveries DROP COLUMN sequence;
ALTER TABLE webhook_deliveries DROP COLUMN subject;
ALTER TABLE webhook_destinations DROP COLUMN sequence;
ALTER TABLE events DROP COLUMN subject;
