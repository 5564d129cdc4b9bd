-- Retention (MSGLINE_RETENTION_DAYS): the janitor deletes old messages with the rows that hang
-- from them, and old events with their webhook deliveries and attempts. Until now none of these
-- was ever deleted but by age or with its endpoint. Each index below lets the deletes find a
-- batch's rows by the id they hang from, and lets the foreign keys that remain (all of them on
-- SQLite; polls, votes and agent runs on PostgreSQL) check a deleted parent without reading the
-- whole child table, once per deleted row. Messages and events need no index of their own: their
-- ids begin with their creation time, so their primary keys give the old ones in order.
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id);
CREATE INDEX poll_votes_by_message ON poll_votes (message_id);
CREATE INDEX agent_runs_by_trigger ON agent_runs (trigger_message_id);
