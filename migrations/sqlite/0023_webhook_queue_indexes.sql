-- The webhook worker's two queues get an index each, holding only their own rows: deliveries
-- waiting, by due time, and deliveries being posted, by the end of their claim. They replace
-- `(state, next_attempt_at)`, which held every delivery ever made and kept `claimed_until` out of
-- the key, so the look for lapsed claims read every claimed delivery's row on every claim.
-- (PostgreSQL is also told to vacuum the table sooner; SQLite has no such setting.)
DROP INDEX IF EXISTS webhook_deliveries_due;
CREATE INDEX webhook_deliveries_waiting ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_posting ON webhook_deliveries (claimed_until) WHERE state = 'claimed';
