-- The janitor deletes bridge callback ids older than a week. Without this index each of its
-- passes read the whole table (two rows per message sent), holding SQLite's write lock for over
-- a second once the table had two million rows.
CREATE INDEX bridge_events_by_age ON bridge_events (received_at);
