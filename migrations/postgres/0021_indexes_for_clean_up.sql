-- Indexes for the deletes that run every five minutes. Without them each read the whole of a
-- large table (two callback ids per message sent; every delivery ever settled) while it held
-- SQLite's write lock, for over a second once the tables held a million messages' rows.

-- The janitor: bridge callback ids older than a week.
CREATE INDEX bridge_events_by_age ON bridge_events (received_at);

-- The webhook worker: settled deliveries older than the retention. Only settled deliveries are
-- in it, each once, so the updates of a delivery on its way there do not touch it.
CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (updated_at) WHERE state IN ('delivered', 'failed');
