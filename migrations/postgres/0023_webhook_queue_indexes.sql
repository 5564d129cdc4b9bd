-- The webhook worker's two queues get an index each, holding only their own rows: deliveries
-- waiting, by due time, and deliveries being posted, by the end of their claim. They replace
-- `(state, next_attempt_at)`, which held every delivery ever made and kept `claimed_until` out of
-- the key: the look for lapsed claims read the row of every claimed delivery, and of every one
-- claimed and settled since vacuum last ran, on every claim. A drain of 40,000 events then slowed
-- from about 4,300 deliveries a second to under 1,000 as it went (BENCHMARKS.md).
DROP INDEX IF EXISTS webhook_deliveries_due;
CREATE INDEX webhook_deliveries_waiting ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_posting ON webhook_deliveries (claimed_until) WHERE state = 'claimed';
-- Every delivery is updated twice on its way through (claimed, then settled), so the table
-- gathers dead row versions as fast as it is written; vacuum it after a thousand of them rather
-- than after a fifth of the table.
ALTER TABLE webhook_deliveries SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
